/*
 * kernel: the one table of acceld's compute kernels: their names, inputs and scalar parameters, the length of each
 * buffer, and the floating-point operations and bytes a run does. The executor, the estimates of /cost and /select,
 * the request parsers and the backends all ask it; nothing else counts a kernel's work.
 *
 * All kernels are float32 and row-major:
 *   saxpy:   out[n] = alpha * x[n] + y[n]
 *   triad:   out[n] = b[n] + s * c[n]                       (STREAM's a = b + s*c)
 *   dot:     out    = sum x[n] * y[n]                        (one value)
 *   sgemm:   out[m x n] = alpha * a[m x k] * b[k x n] + beta * c[m x n]   (c optional: zeros)
 *   softmax: out[m x n] = row-wise softmax of x[m x n]
 */
#ifndef ACCELD_KERNEL_H
#define ACCELD_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

enum kernel_id { KERNEL_SAXPY, KERNEL_TRIAD, KERNEL_DOT, KERNEL_SGEMM, KERNEL_SOFTMAX, KERNEL_COUNT };

#define KERNEL_MAX_INPUTS 3

/* The sizes of one run: vectors use n; sgemm m, n, k; softmax m rows of n columns. Unused sizes are 0. */
struct kernel_shape {
	uint64_t m, n, k;
};

/* The request fields a kernel takes besides n (bits). */
enum kernel_param {
	KERNEL_PARAM_ALPHA = 1u << 0,
	KERNEL_PARAM_BETA = 1u << 1,
	KERNEL_PARAM_S = 1u << 2,
	KERNEL_PARAM_M = 1u << 3,
	KERNEL_PARAM_K = 1u << 4,
	KERNEL_PARAM_PRECISION = 1u << 5, /* enum kernel_precision */
};

/*
 * The arithmetic of sgemm's products: true float32 (the default; every backend can), or TF32 / bfloat16 inputs with
 * float32 accumulation where a device's matrix unit offers it. The other kernels are always float32.
 */
enum kernel_precision { KERNEL_PRECISION_HIGHEST, KERNEL_PRECISION_TF32, KERNEL_PRECISION_BF16 };

/* "highest", "tf32", "bf16"; the precision called name (false when none is). */
const char *kernel_precision_name(enum kernel_precision p);
bool kernel_precision_parse(const char *name, enum kernel_precision *out);

/* The precisions' names as messages list them: "highest, tf32, bf16". */
#define KERNEL_PRECISION_NAMES "highest, tf32, bf16"

/* The unit roundoff of the products' inputs at that precision: 2^-24 for float32, 2^-11 TF32, 2^-8 bfloat16. */
double kernel_precision_unit(enum kernel_precision p);

/* "saxpy", ...; "?" for a value out of range. */
const char *kernel_name(enum kernel_id k);

/* The kernel called name; false when there is none. */
bool kernel_parse(const char *name, enum kernel_id *out);

/* "saxpy, triad, dot, sgemm, softmax": the accepted names, for messages. */
const char *kernel_names_text(void);

/*
 * The sizes the kernel takes and what they mean, for messages and help: "n, the vector length" (saxpy, triad, dot),
 * "m, n and k: C[m x n] = A[m x k] x B[k x n]" (sgemm), "m and n: m rows of n (n is the row length)" (softmax). n is
 * always the kernel's own n, never a count of elements or a cube's side. "?" for a value out of range.
 */
const char *kernel_sizes_text(enum kernel_id k);

/* Names of the kernel's inputs in order, NULL-terminated ("x", "y"); an optional input is marked by
 * kernel_input_optional. */
const char *const *kernel_inputs(enum kernel_id k);
bool kernel_input_optional(enum kernel_id k, unsigned i);

/* The enum kernel_param bits of the fields the kernel takes. */
unsigned kernel_params(enum kernel_id k);

/* Whether the shape has every size the kernel needs (n; m for sgemm and softmax; k for sgemm). */
bool kernel_shape_complete(enum kernel_id k, const struct kernel_shape *s);

/* Elements of input i (0 when the kernel has no such input) and of the output (1 for dot); saturating. */
uint64_t kernel_input_len(enum kernel_id k, const struct kernel_shape *s, unsigned i);
uint64_t kernel_output_len(enum kernel_id k, const struct kernel_shape *s);

/* The dimensions of the output: 0 for dot's scalar, 1 for saxpy's and triad's vector, 2 for sgemm's and softmax's
 * m x n matrix (row-major wherever acceld holds it). */
unsigned kernel_output_rank(enum kernel_id k);

/* Elements of every buffer of a run together (inputs, optional ones included, and the output); saturating. */
uint64_t kernel_total_len(enum kernel_id k, const struct kernel_shape *s);

/*
 * The work of one run: floating-point operations, and bytes moved at the least (every input read once, the output
 * written once; sgemm's optional c is counted as read).
 */
double kernel_flops(enum kernel_id k, const struct kernel_shape *s);
double kernel_bytes(enum kernel_id k, const struct kernel_shape *s);

/* True for kernels whose speed is set by arithmetic (sgemm); the others are bound by memory bandwidth. */
bool kernel_compute_bound(enum kernel_id k);

#endif
