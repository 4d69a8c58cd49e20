/*
 * dtype: the one table of number formats a model's weights, activations or cache are kept in, their names (as JAX
 * and PyTorch spell them, with the common aliases) and their widths. /plan, /batch-config and their commands read it.
 */
#ifndef ACCELD_DTYPE_H
#define ACCELD_DTYPE_H

#include <stdbool.h>

/* DTYPE_NONE: not given (each caller says what it then assumes). */
enum dtype { DTYPE_NONE, DTYPE_F32, DTYPE_BF16, DTYPE_F16, DTYPE_FP8, DTYPE_INT8, DTYPE_INT4, DTYPE_COUNT };

/* The names dtype_parse takes, for messages and `accepted` (aliases besides: fp32, float32, fp16, float16,
 * bfloat16). */
#define DTYPE_NAMES "f32, bf16, f16, fp8, int8, int4"

/* "f32", "bf16", ...; "" for DTYPE_NONE, "?" for a value outside the table. */
const char *dtype_name(enum dtype d);

/* A name or an alias; false for any other text (DTYPE_NONE has no name). */
bool dtype_parse(const char *text, enum dtype *out);

/* Bits a value takes: 32, 16, 8 or 4; 0 for DTYPE_NONE. */
unsigned dtype_bits(enum dtype d);

#endif
