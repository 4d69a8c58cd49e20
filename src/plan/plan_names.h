/* plan_names: the words of a plan's enumerations both ways, the bits of each dtype, and a TPU torus's notation. */
#ifndef ACCELD_PLAN_NAMES_H
#define ACCELD_PLAN_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/plan_types.h"

/* Names: "cpu"/"gpu"/"tpu", "f32"/"bf16"/"f16"/"fp8"/"int8"/"int4", "infer"/"train", "adam"/"sgd_momentum"/
 * "sgd"/"adafactor", "none"/"selective"/"full"/"auto", "devices"/"dtype"/"remat"/"flash_attention"/"batch"/"memory"/
 * "global_batch". */
const char *plan_kind_name(enum plan_kind k);
const char *plan_dtype_name(enum plan_dtype d);
const char *plan_mode_name(enum plan_mode m);
const char *plan_optimizer_name(enum plan_optimizer o);
const char *plan_remat_name(enum plan_remat r);
/* In words: "no rematerialization", "selective rematerialization", "full rematerialization". */
const char *plan_remat_phrase(enum plan_remat r);
const char *plan_hint_name(enum plan_hint_kind h);

/* Parsers of those names (the dtype also takes fp32, fp16 and float32-style aliases; the optimizer adamw, momentum).
 * Return 0, or -1 for an unknown word (out untouched). */
int plan_kind_parse(const char *text, enum plan_kind *out);
int plan_dtype_parse(const char *text, enum plan_dtype *out);
int plan_mode_parse(const char *text, enum plan_mode *out);
int plan_optimizer_parse(const char *text, enum plan_optimizer *out);
int plan_remat_parse(const char *text, enum plan_remat *out);

/* "4x4x8", "2x4" or "8" into torus (missing dimensions 0). Returns 0, or -1 when malformed or a dimension is 0 or
 * above 1024. */
int plan_torus_parse(const char *text, unsigned torus[3]);

/* Bits per element of d (AUTO as bf16): 32, 16, 16, 8, 8, 4; 0 for a value outside the enum. */
unsigned plan_dtype_bits(enum plan_dtype d);

/* The chips of a torus (missing dimensions count 1); 0 when it is unknown (torus[0] == 0). */
unsigned plan_torus_chips(const unsigned torus[3]);

/* A torus as "4x4x8", "2x4" or "8". */
void plan_torus_text(const unsigned torus[3], char *out, size_t outsz);

/* The next bigger slice of a torus's kind: its smallest dimension doubled (2x2x1 -> 2x2x2 -> 2x2x4 -> 2x4x4; 2x4 ->
 * 4x4 -> 4x8), as GCP's slice sizes grow. False, torus untouched, past 16 a dimension or when it is unknown. */
bool plan_torus_grow(unsigned torus[3]);

/* The chips of one host of a slice of chips on torus, single_host being the generation's chips a host when the
 * slice is one host: 4 for a multi-host v5e or v6e slice (a 2D torus past 8 chips), else single_host (at most
 * chips). */
unsigned plan_torus_per_host(const unsigned torus[3], unsigned chips, unsigned single_host);

#endif
