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

/* --- the generator and the gather --- */

/* An integer constant of type t (a tensor of ui32 or ui64, broadcast from one value) into %name. */
static void int_constant(struct buf *b, const char *name, uint64_t value, const char *t)
{
	buf_printf(b, "    %%%s = \"stablehlo.constant\"() {value = dense<%" PRIu64 "> : %s} : () -> %s\n", name, value, t,
		   t);
}

/* %name = op(%x, %c) for a constant c of type t. */
static void with_constant(struct buf *b, const char *name, const char *op, const char *x, uint64_t c, const char *t)
{
	char cname[48];

	snprintf(cname, sizeof(cname), "%s_c", name);
	int_constant(b, cname, c, t);
	binary(b, name, op, x, cname, t);
}

char *stablehlo_generator(uint64_t rows, uint64_t cols, size_t *len)
{
	struct buf b;
	char t64[64], t32[64], tf[64];

	buf_init(&b, PROGRAM_MAX);
	tensor(t64, sizeof(t64), rows, cols, "ui64");
	tensor(t32, sizeof(t32), rows, cols, "ui32");
	tensor(tf, sizeof(tf), rows, cols, "f32");
	buf_printf(&b, "module @acceld_generate {\n");
	buf_printf(&b, "  func.func public @main(%%key: tensor<ui32>) -> %s {\n", tf);
	/* e = row * cols + column, row-major */
	if (rows == 0) {
		buf_printf(&b, "    %%e = \"stablehlo.iota\"() {iota_dimension = 0 : i64} : () -> %s\n", t64);
	} else {
		buf_printf(&b, "    %%row = \"stablehlo.iota\"() {iota_dimension = 0 : i64} : () -> %s\n", t64);
		buf_printf(&b, "    %%col = \"stablehlo.iota\"() {iota_dimension = 1 : i64} : () -> %s\n", t64);
		with_constant(&b, "rowbase", "multiply", "row", cols, t64);
		binary(&b, "e", "add", "rowbase", "col", t64);
	}
	/* lo = e mod 2^32, hi = e >> 32, as ui32 */
	with_constant(&b, "lo64", "and", "e", 0xffffffffull, t64);
	with_constant(&b, "hi64", "shift_right_logical", "e", 32, t64);
	buf_printf(&b, "    %%lo = \"stablehlo.convert\"(%%lo64) : (%s) -> %s\n", t64, t32);
	buf_printf(&b, "    %%hi = \"stablehlo.convert\"(%%hi64) : (%s) -> %s\n", t64, t32);
	/* x = lo * golden + (key ^ hi * 0x85ebca6b) */
	buf_printf(&b,
		   "    %%key_b = \"stablehlo.broadcast_in_dim\"(%%key) {broadcast_dimensions = array<i64>} : "
		   "(tensor<ui32>) -> %s\n",
		   t32);
	with_constant(&b, "hik", "multiply", "hi", 0x85ebca6bull, t32);
	binary(&b, "salt", "xor", "key_b", "hik", t32);
	with_constant(&b, "weyl", "multiply", "lo", 0x9e3779b9ull, t32);
	binary(&b, "x0", "add", "weyl", "salt", t32);
	/* lowbias32 */
	with_constant(&b, "s1", "shift_right_logical", "x0", 16, t32);
	binary(&b, "x1", "xor", "x0", "s1", t32);
	with_constant(&b, "x2", "multiply", "x1", 0x7feb352dull, t32);
	with_constant(&b, "s3", "shift_right_logical", "x2", 15, t32);
	binary(&b, "x3", "xor", "x2", "s3", t32);
	with_constant(&b, "x4", "multiply", "x3", 0x846ca68bull, t32);
	with_constant(&b, "s5", "shift_right_logical", "x4", 16, t32);
	binary(&b, "h", "xor", "x4", "s5", t32);
	/* 24 bits to [-1, 1): exact in float32 */
	with_constant(&b, "top", "shift_right_logical", "h", 8, t32);
	buf_printf(&b, "    %%topf = \"stablehlo.convert\"(%%top) : (%s) -> %s\n", t32, tf);
	buf_printf(&b, "    %%unit = \"stablehlo.constant\"() {value = dense<1.1920928955078125E-7> : %s} : () -> %s\n",
		   tf, tf);
	buf_printf(&b, "    %%one = \"stablehlo.constant\"() {value = dense<1.000000e+00> : %s} : () -> %s\n", tf, tf);
	binary(&b, "scaled", "multiply", "topf", "unit", tf);
	binary(&b, "out", "subtract", "scaled", "one", tf);
	buf_printf(&b, "    func.return %%out : %s\n  }\n}\n", tf);
	return buf_detach(&b, len);
}

/* %name_b: the scalar operand %name broadcast to type t */
static void broadcast_scalar(struct buf *b, const char *name, const char *t)
{
	buf_printf(b,
		   "    %%%s_b = \"stablehlo.broadcast_in_dim\"(%%%s) {broadcast_dimensions = array<i64>} : "
		   "(tensor<ui64>) -> %s\n",
		   name, name, t);
}

char *stablehlo_gather(uint64_t rows, uint64_t cols, size_t count, size_t *len)
{
	struct buf b;
	char tin[64], tflat[64], tidx[64], tidx2[64], tsi[64], tout[64];
	uint64_t nrows = rows == 0 ? 1 : rows;
	uint64_t total = nrows * cols;
	size_t grid_rows, grid_cols;

	kernel_sample_grid(nrows, cols, &grid_rows, &grid_cols);
	buf_init(&b, PROGRAM_MAX);
	tensor(tin, sizeof(tin), rows, cols, "f32");
	tensor(tflat, sizeof(tflat), 0, total, "f32");
	tensor(tidx, sizeof(tidx), 0, count, "ui64");
	tensor(tsi, sizeof(tsi), 0, count, "i64");
	tensor(tidx2, sizeof(tidx2), count, 1, "i64");
	tensor(tout, sizeof(tout), 0, count, "f32");
	buf_printf(&b, "module @acceld_gather {\n");
	buf_printf(&b,
		   "  func.func public @main(%%out: %s, %%r0: tensor<ui64>, %%rs: tensor<ui64>, %%c0: tensor<ui64>, "
		   "%%cs: tensor<ui64>) -> %s {\n",
		   tin, tout);
	buf_printf(&b, "    %%flat = \"stablehlo.reshape\"(%%out) : (%s) -> %s\n", tin, tflat);
	buf_printf(&b, "    %%j = \"stablehlo.iota\"() {iota_dimension = 0 : i64} : () -> %s\n", tidx);
	broadcast_scalar(&b, "r0", tidx);
	broadcast_scalar(&b, "rs", tidx);
	broadcast_scalar(&b, "c0", tidx);
	broadcast_scalar(&b, "cs", tidx);
	/* the grid's row j / C and column j % C */
	with_constant(&b, "jr", "divide", "j", grid_cols == 0 ? 1 : grid_cols, tidx);
	with_constant(&b, "jc", "remainder", "j", grid_cols == 0 ? 1 : grid_cols, tidx);
	/* row = (r0 + jr * rs) mod rows, column = (c0 + jc * cs) mod cols */
	binary(&b, "rstep", "multiply", "jr", "rs_b", tidx);
	binary(&b, "rpos", "add", "r0_b", "rstep", tidx);
	with_constant(&b, "row", "remainder", "rpos", nrows, tidx);
	binary(&b, "cstep", "multiply", "jc", "cs_b", tidx);
	binary(&b, "cpos", "add", "c0_b", "cstep", tidx);
	with_constant(&b, "col", "remainder", "cpos", cols, tidx);
	with_constant(&b, "rowbase", "multiply", "row", cols, tidx);
	binary(&b, "idx", "add", "rowbase", "col", tidx);
	buf_printf(&b, "    %%idx_s = \"stablehlo.convert\"(%%idx) : (%s) -> %s\n", tidx, tsi);
	buf_printf(&b, "    %%idx2 = \"stablehlo.reshape\"(%%idx_s) : (%s) -> %s\n", tsi, tidx2);
	buf_printf(&b,
		   "    %%sample = \"stablehlo.gather\"(%%flat, %%idx2) {\n"
		   "      dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], "
		   "index_vector_dim = 1>,\n"
		   "      slice_sizes = array<i64: 1>, indices_are_sorted = false\n"
		   "    } : (%s, %s) -> %s\n",
		   tflat, tidx2, tout);
	buf_printf(&b, "    func.return %%sample : %s\n  }\n}\n", tout);
	return buf_detach(&b, len);
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
