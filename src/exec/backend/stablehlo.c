/* stablehlo: program text and compile options for the PJRT backend (see stablehlo.h and docs/pjrt.md). */
#include "exec/backend/stablehlo.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/buf.h"

#define PROGRAM_MAX 16384

/* "tensor<1024xf32>", "tensor<64x32xf32>", "tensor<f32>" into out. */
static void tensor(char *out, size_t outsz, uint64_t rows, uint64_t cols, const char *type)
{
	if (rows == 0 && cols == 0)
		snprintf(out, outsz, "tensor<%s>", type);
	else if (rows == 0)
		snprintf(out, outsz, "tensor<%" PRIu64 "x%s>", cols, type);
	else
		snprintf(out, outsz, "tensor<%" PRIu64 "x%" PRIu64 "x%s>", rows, cols, type);
}

/* A scalar operand broadcast to shape t into %name. */
static void broadcast(struct buf *b, const char *name, const char *arg, const char *t)
{
	buf_printf(b,
		   "    %%%s = \"stablehlo.broadcast_in_dim\"(%%%s) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> "
		   "%s\n",
		   name, arg, t);
}

static void binary(struct buf *b, const char *name, const char *op, const char *x, const char *y, const char *t)
{
	buf_printf(b, "    %%%s = \"stablehlo.%s\"(%%%s, %%%s) : (%s, %s) -> %s\n", name, op, x, y, t, t, t);
}

/* A reduction of %x over dims with init %init by op into %name (the region adds or takes the maximum). */
static void reduce(struct buf *b, const char *name, const char *x, const char *init, const char *op, const char *dims,
		   const char *from, const char *to)
{
	buf_printf(b,
		   "    %%%s = \"stablehlo.reduce\"(%%%s, %%%s) ({\n"
		   "    ^bb0(%%%s_a: tensor<f32>, %%%s_b: tensor<f32>):\n"
		   "      %%%s_r = \"stablehlo.%s\"(%%%s_a, %%%s_b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
		   "      \"stablehlo.return\"(%%%s_r) : (tensor<f32>) -> ()\n"
		   "    }) {dimensions = array<i64: %s>} : (%s, tensor<f32>) -> %s\n",
		   name, x, init, name, name, name, op, name, name, name, dims, from, to);
}

static void constant(struct buf *b, const char *name, const char *value)
{
	buf_printf(b, "    %%%s = \"stablehlo.constant\"() {value = dense<%s> : tensor<f32>} : () -> tensor<f32>\n", name,
		   value);
}

static void vector(struct buf *b, enum kernel_id k, const struct kernel_shape *s)
{
	char t[64];

	tensor(t, sizeof(t), 0, s->n, "f32");
	if (k == KERNEL_DOT) {
		buf_printf(b, "  func.func public @main(%%arg0: %s, %%arg1: %s) -> tensor<f32> {\n", t, t);
		binary(b, "prod", "multiply", "arg0", "arg1", t);
		constant(b, "zero", "0.000000e+00");
		reduce(b, "sum", "prod", "zero", "add", "0", t, "tensor<f32>");
		buf_printf(b, "    func.return %%sum : tensor<f32>\n  }\n");
		return;
	}
	buf_printf(b, "  func.func public @main(%%arg0: tensor<f32>, %%arg1: %s, %%arg2: %s) -> %s {\n", t, t, t);
	broadcast(b, "scale", "arg0", t);
	if (k == KERNEL_SAXPY) { /* alpha * x + y */
		binary(b, "scaled", "multiply", "scale", "arg1", t);
		binary(b, "out", "add", "scaled", "arg2", t);
	} else { /* triad: b + scale * c */
		binary(b, "scaled", "multiply", "scale", "arg2", t);
		binary(b, "out", "add", "arg1", "scaled", t);
	}
	buf_printf(b, "    func.return %%out : %s\n  }\n", t);
}

static void sgemm(struct buf *b, const struct kernel_shape *s, bool with_c, enum stablehlo_dot dot)
{
	static const char *const precision[] = {"HIGHEST", "DEFAULT", "DEFAULT"};
	char ta[64], tb[64], tc[64], ta16[64], tb16[64];
	const char *lhs = "a";
	const char *rhs = "b";

	tensor(ta, sizeof(ta), s->m, s->k, "f32");
	tensor(tb, sizeof(tb), s->k, s->n, "f32");
	tensor(tc, sizeof(tc), s->m, s->n, "f32");
	tensor(ta16, sizeof(ta16), s->m, s->k, "bf16");
	tensor(tb16, sizeof(tb16), s->k, s->n, "bf16");
	if (with_c)
		buf_printf(b,
			   "  func.func public @main(%%alpha: tensor<f32>, %%beta: tensor<f32>, %%a: %s, %%b: %s, %%c: %s) "
			   "-> %s {\n",
			   ta, tb, tc, tc);
	else
		buf_printf(b, "  func.func public @main(%%alpha: tensor<f32>, %%a: %s, %%b: %s) -> %s {\n", ta, tb, tc);
	if (dot == STABLEHLO_DOT_BF16) {
		buf_printf(b, "    %%a16 = \"stablehlo.convert\"(%%a) : (%s) -> %s\n", ta, ta16);
		buf_printf(b, "    %%b16 = \"stablehlo.convert\"(%%b) : (%s) -> %s\n", tb, tb16);
		lhs = "a16";
		rhs = "b16";
	}
	buf_printf(b,
		   "    %%prod = \"stablehlo.dot_general\"(%%%s, %%%s) {\n"
		   "      dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
		   "rhs_contracting_dimensions = [0]>,\n"
		   "      precision_config = [#stablehlo<precision %s>, #stablehlo<precision %s>]\n"
		   "    } : (%s, %s) -> %s\n",
		   lhs, rhs, precision[dot], precision[dot], dot == STABLEHLO_DOT_BF16 ? ta16 : ta,
		   dot == STABLEHLO_DOT_BF16 ? tb16 : tb, tc);
	broadcast(b, "alpha_b", "alpha", tc);
	binary(b, "scaled", "multiply", "alpha_b", "prod", tc);
	if (with_c) {
		broadcast(b, "beta_b", "beta", tc);
		binary(b, "c_scaled", "multiply", "beta_b", "c", tc);
		binary(b, "out", "add", "scaled", "c_scaled", tc);
		buf_printf(b, "    func.return %%out : %s\n  }\n", tc);
	} else {
		buf_printf(b, "    func.return %%scaled : %s\n  }\n", tc);
	}
}

static void softmax(struct buf *b, const struct kernel_shape *s)
{
	char t[64], rows[64];

	tensor(t, sizeof(t), s->m, s->n, "f32");
	tensor(rows, sizeof(rows), 0, s->m, "f32");
	buf_printf(b, "  func.func public @main(%%x: %s) -> %s {\n", t, t);
	constant(b, "ninf", "0xFF800000");
	reduce(b, "rmax", "x", "ninf", "maximum", "1", t, rows);
	buf_printf(b,
		   "    %%rmax_b = \"stablehlo.broadcast_in_dim\"(%%rmax) {broadcast_dimensions = array<i64: 0>} : (%s) -> "
		   "%s\n",
		   rows, t);
	binary(b, "shifted", "subtract", "x", "rmax_b", t);
	buf_printf(b, "    %%e = \"stablehlo.exponential\"(%%shifted) : (%s) -> %s\n", t, t);
	constant(b, "zero", "0.000000e+00");
	reduce(b, "rsum", "e", "zero", "add", "1", t, rows);
	buf_printf(b,
		   "    %%rsum_b = \"stablehlo.broadcast_in_dim\"(%%rsum) {broadcast_dimensions = array<i64: 0>} : (%s) -> "
		   "%s\n",
		   rows, t);
	binary(b, "out", "divide", "e", "rsum_b", t);
	buf_printf(b, "    func.return %%out : %s\n  }\n", t);
}

/* The function that writes each kernel's main. */
typedef void emit_fn(struct buf *b, enum kernel_id k, const struct kernel_shape *s, bool with_c,
		     enum stablehlo_dot dot);

static void emit_vector(struct buf *b, enum kernel_id k, const struct kernel_shape *s, bool with_c,
			enum stablehlo_dot dot)
{
	(void)with_c;
	(void)dot;
	vector(b, k, s);
}

static void emit_sgemm(struct buf *b, enum kernel_id k, const struct kernel_shape *s, bool with_c,
		       enum stablehlo_dot dot)
{
	(void)k;
	sgemm(b, s, with_c, dot);
}

static void emit_softmax(struct buf *b, enum kernel_id k, const struct kernel_shape *s, bool with_c,
			 enum stablehlo_dot dot)
{
	(void)k;
	(void)with_c;
	(void)dot;
	softmax(b, s);
}

static emit_fn *const emitters[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = emit_vector, [KERNEL_TRIAD] = emit_vector,	[KERNEL_DOT] = emit_vector,
	[KERNEL_SGEMM] = emit_sgemm,  [KERNEL_SOFTMAX] = emit_softmax,
};

bool stablehlo_has(enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT && emitters[k] != NULL;
}

char *stablehlo_program(enum kernel_id k, const struct kernel_shape *s, bool with_c, enum stablehlo_dot dot,
			size_t *len)
{
	struct buf b;

	buf_init(&b, PROGRAM_MAX);
	buf_printf(&b, "module @acceld_%s {\n", kernel_name(k));
	if (stablehlo_has(k))
		emitters[k](&b, k, s, with_c, dot);
	buf_printf(&b, "}\n");
	return buf_detach(&b, len);
}

unsigned stablehlo_operands(enum kernel_id k, bool with_c)
{
	switch (k) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
		return 3;
	case KERNEL_DOT:
		return 2;
	case KERNEL_SGEMM:
		return with_c ? 5 : 3;
	case KERNEL_SOFTMAX:
	case KERNEL_COUNT:
		break;
	}
	return 1;
}

/* --- protocol buffers: just what the compile options need --- */

static size_t varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	return n;
}

/* field = value (varint wire type) */
static size_t put_int(unsigned char *p, unsigned field, int64_t value)
{
	size_t n = varint(p, (uint64_t)field << 3);

	return n + varint(p + n, (uint64_t)value);
}

/* field = bytes (length-delimited wire type) */
static size_t put_bytes(unsigned char *p, unsigned field, const unsigned char *data, size_t len)
{
	size_t n = varint(p, ((uint64_t)field << 3) | 2);

	n += varint(p + n, len);
	memcpy(p + n, data, len);
	return n + len;
}

size_t stablehlo_compile_options(int64_t device_id, unsigned char out[STABLEHLO_OPTIONS_MAX])
{
	unsigned char id[16], computation[24], assignment[40], build[56];
	size_t nid = varint(id, (uint64_t)device_id);
	size_t ncomp = put_bytes(computation, 1, id, nid);   /* ComputationDevice.replica_device_ids, packed */
	size_t nassign = put_int(assignment, 1, 1);           /* DeviceAssignmentProto.replica_count */
	size_t nbuild;

	nassign += put_int(assignment + nassign, 2, 1);       /* computation_count */
	nassign += put_bytes(assignment + nassign, 3, computation, ncomp); /* computation_devices */
	nbuild = put_int(build, 1, -1);                        /* ExecutableBuildOptionsProto.device_ordinal: unset */
	nbuild += put_int(build + nbuild, 4, 1);               /* num_replicas */
	nbuild += put_int(build + nbuild, 5, 1);               /* num_partitions */
	nbuild += put_bytes(build + nbuild, 9, assignment, nassign); /* device_assignment */
	return put_bytes(out, 3, build, nbuild);               /* CompileOptionsProto.executable_build_options */
}
