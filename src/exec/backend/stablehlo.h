/*
 * stablehlo: the programs the PJRT backend compiles: one StableHLO module (MLIR text) per kernel and shape, and the
 * serialized xla.CompileOptionsProto that places it on one device (docs/pjrt.md has the forms and their sources).
 *
 * Operands, in order, as the backend uploads them (scalars are rank-0 float32 buffers, so one program serves every
 * alpha, beta and s):
 *   saxpy(alpha, x[n], y[n]) -> out[n]          triad(s, b[n], c[n]) -> out[n]
 *   dot(x[n], y[n]) -> out[]                    softmax(x[m,n]) -> out[m,n]
 *   sgemm(alpha, a[m,k], b[k,n]) -> out[m,n], or with c: sgemm(alpha, beta, a[m,k], b[k,n], c[m,n]) -> out[m,n]
 * The module is named @acceld_<kernel>.
 */
#ifndef ACCELD_STABLEHLO_H
#define ACCELD_STABLEHLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/kernel.h"

/* How sgemm's products are asked of the compiler. */
enum stablehlo_dot {
	STABLEHLO_DOT_HIGHEST, /* float32 products (precision HIGHEST) */
	STABLEHLO_DOT_DEFAULT, /* the device's default: TF32 on NVIDIA Ampere and later, one bfloat16 pass on TPUs */
	STABLEHLO_DOT_BF16,    /* inputs converted to bfloat16, products accumulated in float32 */
};

/*
 * The module for a kernel and shape (sgemm: with_c says whether c is an operand, dot how its products run) as a
 * malloc'ed NUL-terminated text (free it); *len is its length.
 */
char *stablehlo_program(enum kernel_id k, const struct kernel_shape *s, bool with_c, enum stablehlo_dot dot,
			size_t *len);

/*
 * The generator (the kernel table's, kernel_gen_value in exec/kernel.h) as a module @acceld_generate: main(key:
 * tensor<ui32>) -> tensor<cols x f32> (rows 0) or tensor<rows x cols x f32>, element e (row-major) the value of
 * kernel_gen_value(key, e), built from iota and integer ops (no rng). A malloc'ed text; *len its length.
 */
char *stablehlo_generator(uint64_t rows, uint64_t cols, size_t *len);

/*
 * The gather of an output's sample (struct kernel_sample in exec/kernel.h) as a module @acceld_gather: main(out:
 * tensor<cols x f32> (rows 0: a vector, one row) or tensor<rows x cols x f32>, r0, rs, c0, cs: tensor<ui64>) ->
 * tensor<count x f32>, element j the output's element at row (r0 + (j / C) * rs) mod rows and column
 * (c0 + (j % C) * cs) mod cols, with C the grid's columns that kernel_sample_grid gives for the output's shape.
 */
char *stablehlo_gather(uint64_t rows, uint64_t cols, size_t count, size_t *len);

/* Whether there is a program for kernel k. */
bool stablehlo_has(enum kernel_id k);

/* The number of operands of that program. */
unsigned stablehlo_operands(enum kernel_id k, bool with_c);

/*
 * The serialized CompileOptionsProto for a single-device program on the device with this PJRT id (one replica,
 * one partition, device_ordinal unset, a device assignment naming it) into out; returns its length (at most
 * STABLEHLO_OPTIONS_MAX bytes).
 */
#define STABLEHLO_OPTIONS_MAX 64
size_t stablehlo_compile_options(int64_t device_id, unsigned char out[STABLEHLO_OPTIONS_MAX]);

#endif
