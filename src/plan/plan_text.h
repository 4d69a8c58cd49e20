/* plan_text: the phrases a plan's reasons, formulas and hints share; included by nothing outside src/plan/. */
#ifndef ACCELD_PLAN_TEXT_H
#define ACCELD_PLAN_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "plan/plan_types.h"

/* Text into a fixed field, cut at its end when longer (the figures that matter lead each sentence). */
void plan_put(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Bytes as "14.4 GiB", or "over 2^64 bytes" for PLAN_SAT. */
void plan_gib_text(char *out, size_t outsz, uint64_t bytes);

/* "needs 14.4 GiB of 14.4 GiB usable (43.9 MiB short)": a need against what is usable, with the shortfall when
 * it does not fit, so that a near miss never reads as equal. */
void plan_need_text(char *out, size_t outsz, uint64_t need, uint64_t have);

/* The bytes of one element of bits: "4", "2", "1" or "0.5". */
const char *plan_per_param_text(unsigned bits);

/* "data 2 x fsdp 4 x tensor 1 x expert 1". */
void plan_mesh_text(const struct plan_mesh *m, char *out, size_t outsz);

#endif
