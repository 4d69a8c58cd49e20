/*
 * kernel: the one table of acceld's compute kernels. A kernel is one row: its name, its inputs and the shape of
 * each from the run's sizes, what its sizes mean, the fields it takes, its floating-point operations and bytes, the
 * host reference that verification compares a result with, which inputs are generated, and its help. The executor,
 * the estimates of /cost and /select, the request parsers, the checks and the help all ask it; a backend adds one
 * function per kernel that runs it. Nothing outside this table and the backends names a kernel.
 *
 * All kernels are float32 and row-major; each row's formula is in kernel.c.
 */
#ifndef ACCELD_KERNEL_H
#define ACCELD_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool;

enum kernel_id { KERNEL_SAXPY, KERNEL_TRIAD, KERNEL_DOT, KERNEL_SGEMM, KERNEL_SOFTMAX, KERNEL_COUNT };

#define KERNEL_MAX_INPUTS 3

/* The sizes of one run: n always; m and k where the kernel takes them (kernel_params). Unused sizes are 0. */
struct kernel_shape {
	uint64_t m, n, k;
};

/* The request fields a kernel takes besides n (bits). */
enum kernel_param {
	KERNEL_PARAM_ALPHA = 1u << 0,
	KERNEL_PARAM_BETA = 1u << 1,
	KERNEL_PARAM_SCALE = 1u << 2, /* the scale of the second input (wire name "s") */
	KERNEL_PARAM_M = 1u << 3,
	KERNEL_PARAM_K = 1u << 4,
	KERNEL_PARAM_PRECISION = 1u << 5, /* enum kernel_precision */
};

/*
 * The arithmetic of a matrix product (kernels with KERNEL_PARAM_PRECISION): true float32 (the default; every backend
 * can), or TF32 / bfloat16 inputs with float32 accumulation where a device's matrix unit offers it. The other
 * kernels are always float32.
 */
enum kernel_precision { KERNEL_PRECISION_HIGHEST, KERNEL_PRECISION_TF32, KERNEL_PRECISION_BF16 };

/* "highest", "tf32", "bf16"; the precision called name (false when none is). */
const char *kernel_precision_name(enum kernel_precision p);
bool kernel_precision_parse(const char *name, enum kernel_precision *out);

/* The precisions' names as messages list them: "highest, tf32, bf16". */
#define KERNEL_PRECISION_NAMES "highest, tf32, bf16"

/* The unit roundoff of the products' inputs at that precision: 2^-24 for float32, 2^-11 TF32, 2^-8 bfloat16. */
double kernel_precision_unit(enum kernel_precision p);

/* The kernel's name; "?" for a value out of range. */
const char *kernel_name(enum kernel_id k);

/* The kernel called name; false when there is none. */
bool kernel_parse(const char *name, enum kernel_id *out);

/* The accepted names in table order, ", "-separated, for messages. */
const char *kernel_names_text(void);

/*
 * The names of the kernels whose params have every bit of params (0: all kernels), joined by sep, into out;
 * returns out.
 */
char *kernel_names_join(unsigned params, const char *sep, char *out, size_t outsz);

/*
 * The sizes the kernel takes and what they mean, for messages and help ("n, the vector length"). n is always the
 * kernel's own n, never a count of elements or a cube's side. "?" for a value out of range.
 */
const char *kernel_sizes_text(enum kernel_id k);

/* Names of the kernel's inputs in order, NULL-terminated ("x", "y"); an optional input is marked by
 * kernel_input_optional (left out, it is zeros). */
const char *const *kernel_inputs(enum kernel_id k);
bool kernel_input_optional(enum kernel_id k, unsigned i);

/*
 * The dimensions of input i over the run's sizes, one letter a size: "n" a vector of n, "mk" a matrix of m rows of
 * k; "" when the kernel has no such input.
 */
const char *kernel_input_dims(enum kernel_id k, unsigned i);

/* The size of s that letter ('m', 'n', 'k') of kernel_input_dims names; NULL for another letter. */
uint64_t *kernel_size_of(struct kernel_shape *s, char letter);

/* The enum kernel_param bits of the fields the kernel takes. */
unsigned kernel_params(enum kernel_id k);

/* The request field of one enum kernel_param bit: "alpha", "beta", "s", "m", "k", "precision"; "?" for another. */
const char *kernel_param_name(unsigned param);

/*
 * For help: "A's alpha; B's alpha and beta": each kernel that takes any field of params, with the names of those it
 * takes, into out; returns out.
 */
char *kernel_param_owners(unsigned params, char *out, size_t outsz);

/* Whether the shape has every size the kernel needs (n always; m and k where it takes them). */
bool kernel_shape_complete(enum kernel_id k, const struct kernel_shape *s);

/* Elements of input i (0 when the kernel has no such input) and of the output (1 for a scalar); saturating. */
uint64_t kernel_input_len(enum kernel_id k, const struct kernel_shape *s, unsigned i);
uint64_t kernel_output_len(enum kernel_id k, const struct kernel_shape *s);

/* The dimensions of the output: 0 for a scalar (its value goes to kernel_work.value), 1 for a vector, 2 for an
 * m x n matrix (row-major wherever acceld holds it). */
unsigned kernel_output_rank(enum kernel_id k);

/* Elements of every buffer of a run together (inputs, optional ones included, and the output); saturating. */
uint64_t kernel_total_len(enum kernel_id k, const struct kernel_shape *s);

/*
 * The work of one run: floating-point operations, and bytes moved at the least (every input read once, an optional
 * one counted as read, and a vector or matrix output written once).
 */
double kernel_flops(enum kernel_id k, const struct kernel_shape *s);
double kernel_bytes(enum kernel_id k, const struct kernel_shape *s);

/* True for kernels whose speed is set by arithmetic; the others are bound by memory bandwidth. */
bool kernel_compute_bound(enum kernel_id k);

/* What a device's figure measures, and the kernel whose runs stand for it (health checks, selection, metrics). */
enum kernel_figure {
	KERNEL_FIGURE_MATRIX, /* arithmetic throughput, GFLOP/s: the figure of compute-bound work */
	KERNEL_FIGURE_MEMORY, /* memory bandwidth, GB/s: the figure of every memory-bound kernel */
	KERNEL_FIGURE_TRANSFER, /* the link's bandwidth each way, GB/s: one input and an output of the same size */
};

/* The kernel that measures figure f. */
enum kernel_id kernel_for_figure(enum kernel_figure f);

/* Help: the kernel's sizes as flags ("--m M --n N"), what they make ("M rows of N"), and an example's sizes as flags
 * ("--n 1048576"; NULL for none). "?" (NULL for the example) for a value out of range. */
const char *kernel_help_flags(enum kernel_id k);
const char *kernel_help_text(enum kernel_id k);
const char *kernel_help_example(enum kernel_id k);

/*
 * For messages: the sizes of every kernel, "n; m, n, k for A; m, n for B": the sizes of the kernels that take n
 * alone, then each other set of sizes with the kernels that take it. Into out; returns out.
 */
char *kernel_sizes_brief(char *out, size_t outsz);

/*
 * The generator of inputs (the twin of the OpenCL kernel exec_generate in exec_kernels.h and of the StableHLO
 * generator in stablehlo.c): input i of a run with seed S has the key kernel_gen_key(S, i), and element e of it the
 * value kernel_gen_value(key, e), a counter-based hash of key and e (Wellons' lowbias32 mix over the low 32 bits
 * of e times the golden ratio plus the key, the key first mixed with the high 32 bits of e) cut to 24 bits and
 * scaled to [-1, 1). Every step is exact in float32, so every backend makes the same bits.
 */
static inline uint32_t kernel_gen_mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

static inline uint32_t kernel_gen_key(uint64_t seed, unsigned input)
{
	return kernel_gen_mix((uint32_t)seed ^ kernel_gen_mix((uint32_t)(seed >> 32) + 0x9e3779b9u * (input + 1u)));
}

static inline float kernel_gen_value(uint32_t key, uint64_t e)
{
	uint32_t h = kernel_gen_mix((uint32_t)e * 0x9e3779b9u + (key ^ (uint32_t)(e >> 32) * 0x85ebca6bu));

	return (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f;
}

/*
 * The sample of an output that sampled verification compares and a summary describes when the output stays on the
 * device: a grid of R sampled rows by C sampled columns of the output seen as rows x cols (a vector is one row of
 * its length; a matrix is m x n), R * C at most KERNEL_SAMPLE_MAX, or every element when the output has no more.
 * Element j of the sample is row (r0 + (j / C) * rs) mod rows, column (c0 + (j % C) * cs) mod cols, with r0, rs,
 * c0 and cs drawn from the seed, rs prime to rows and cs prime to cols, so that no element comes twice; the sample
 * of a small output is the output itself, in order (r0 = c0 = 0, rs = cs = 1). A matrix's sample thus reads R rows
 * and C columns of the inputs behind it, which keeps its reference cheap; for a vector (R = 1) element j is
 * (c0 + j * cs) mod len.
 */
#define KERNEL_SAMPLE_MAX 4096

struct kernel_sample {
	uint64_t rows, cols;     /* the output's shape: 1 row for a vector or a scalar */
	uint64_t r0, rs, c0, cs; /* the first row and the rows' step, the first column and the columns' step */
	size_t nrows, ncols;     /* R and C */
	size_t count;            /* R * C */
};

/* The grid's R (*nrows) and C (*ncols) for an output of rows x cols: the whole output when it has at most
 * KERNEL_SAMPLE_MAX elements; else R = min(rows, 64), C = min(cols, KERNEL_SAMPLE_MAX / R), and R grown to
 * min(rows, KERNEL_SAMPLE_MAX / C) when C took every column. */
static inline void kernel_sample_grid(uint64_t rows, uint64_t cols, size_t *nrows, size_t *ncols)
{
	uint64_t r = rows, c = cols;

	if (rows == 0 || cols == 0) {
		r = c = 0;
	} else if (cols > KERNEL_SAMPLE_MAX || rows > KERNEL_SAMPLE_MAX / cols) {
		r = rows < 64 ? rows : 64;
		c = cols < KERNEL_SAMPLE_MAX / r ? cols : KERNEL_SAMPLE_MAX / r;
		if (c == cols)
			r = rows < KERNEL_SAMPLE_MAX / c ? rows : KERNEL_SAMPLE_MAX / c;
	}
	*nrows = (size_t)r;
	*ncols = (size_t)c;
}

/* The sample of an output of rows x cols (rows 1 for a vector) for the seed. */
void kernel_sample_plan(uint64_t rows, uint64_t cols, uint64_t seed, struct kernel_sample *s);

/* The sample of kernel k's output over the run's sizes: m x n for a matrix, one row of n for a vector. */
void kernel_sample_of(enum kernel_id k, const struct kernel_shape *sh, uint64_t seed, struct kernel_sample *s);

/* The output's row and column of sample element j, and its index in the row-major output. */
static inline uint64_t kernel_sample_row(const struct kernel_sample *s, size_t j)
{
	return (s->r0 + (uint64_t)(j / s->ncols) * s->rs) % s->rows;
}

static inline uint64_t kernel_sample_col(const struct kernel_sample *s, size_t j)
{
	return (s->c0 + (uint64_t)(j % s->ncols) * s->cs) % s->cols;
}

static inline uint64_t kernel_sample_index(const struct kernel_sample *s, size_t j)
{
	return kernel_sample_row(s, j) * s->cols + kernel_sample_col(s, j);
}

/* Whether the sample is the whole output in order (no gather needed). */
static inline bool kernel_sample_whole(const struct kernel_sample *s)
{
	return s->count == s->rows * s->cols && s->r0 == 0 && s->rs == 1 && s->c0 == 0 && s->cs == 1;
}

/*
 * One kernel run as a backend sees it. Inputs are read-only; out is written out of place and is NULL for a scalar
 * output, whose value goes to value. An optional input NULL means zeros.
 */
struct kernel_work {
	enum kernel_id kernel;
	size_t m, n, k;
	float alpha, beta, scale; /* the kernel's fields (kernel_params); scale is the request's "s" */
	const float *in[KERNEL_MAX_INPUTS];
	float *out;
	double value;
	/* in: the precision asked for a matrix product; out: the one that ran (a backend with only float32 sets
	 * highest) */
	enum kernel_precision precision;
	/* CLOCK_MONOTONIC ns when the job's answer was due (0: none): a backend that can abandon a running program
	 * returns ACCELD_ETIMEOUT past it rather than hold its worker */
	uint64_t deadline_ns;
	/* true (only for a backend whose ops->on_device is set): every input that kernel_input_generated names is
	 * NULL in in[] and is made on the device from seed (kernel_gen_key, kernel_gen_value); nothing of it crosses
	 * the link */
	bool generate;
	uint64_t seed;
	/* the sample (nsample 0: none; else grid.count): sample[j] = the output's element
	 * kernel_sample_index(&grid, j), gathered on the device */
	struct kernel_sample grid;
	size_t nsample;
	float *sample;  /* buffer: nsample floats, device -> host */
	/* out NULL with an output of rank > 0 (only for a backend whose ops->on_device is set): the output stays on
	 * the device and is freed there; only the sample comes back */
	/* the shared memory in[], out and sample lie in (a worker's mapping of its job's memory: page-aligned,
	 * host_mem_size bytes), which a backend may register with its device for the run's transfers; NULL: the
	 * buffers are the caller's own */
	void *host_mem;
	size_t host_mem_size;
};

/*
 * Whether a run generates input i when the request gives no inputs: every input the kernel has, except an optional
 * one whose weight (the field that multiplies it) is zero in w: left out, it is zeros.
 */
bool kernel_input_generated(const struct kernel_work *w, unsigned i);

struct kernel_verification {
	bool verified;              /* every checked value within its tolerance */
	bool sampled;               /* compared the sample (kernel_verify_sample), not the whole output */
	double max_abs_error;
	double worst_ratio;         /* the largest error / tolerance; <= 1 when verified */
	size_t checked;
	char method[96];            /* "double-precision naive loop over every entry" */
};

/*
 * Checks the result in w (its output, or value) against the kernel's reference: the same formula in double
 * precision on the host, spread over p (the result does not depend on its thread count). Each row's tolerance is
 * in kernel.c, with u = 2^-24 the float32 unit roundoff: an elementwise result within 1e-6 of its terms'
 * magnitude, a sum within (2e-6 + min(terms, 65536) * u) of it (the classic worst-case bound of float summation,
 * plus a little for the scaling; products at TF32 or bfloat16 add twice that precision's unit roundoff). Large
 * outputs are checked on sampled entries or rows, which method says.
 */
void kernel_verify(struct pool *p, const struct kernel_work *w, struct kernel_verification *v);

/*
 * Checks w's sample (or, for a scalar output, its value) against the same references and tolerances: each sampled
 * element is computed in double precision from the run's inputs, read from in[] where given and otherwise made by
 * the generator (w->generate: kernel_gen_value; else an optional input left out is zeros). The host never holds a
 * whole generated input: sgemm's references come from the grid's R rows of A and C columns of B, made once (a
 * chunk of k at a time), softmax's from each sampled row's maximum and sum, taken once per row.
 */
void kernel_verify_sample(struct pool *p, const struct kernel_work *w, struct kernel_verification *v);


#endif
