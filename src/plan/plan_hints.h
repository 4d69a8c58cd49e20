/* plan_hints: what would fit when nothing does (more devices, a smaller dtype, recomputation, flash attention, a
 * smaller batch), each with the mesh it gives. Included by nothing outside src/plan/. */
#ifndef ACCELD_PLAN_HINTS_H
#define ACCELD_PLAN_HINTS_H

#include "plan/plan_memory.h"
#include "plan/plan_types.h"

/* Appends to out->hints (at most PLAN_MAX_HINTS) what would make c's request fit. */
void plan_hints(const struct plan_ctx *c, struct plan_result *out);

/* When a global batch does not split over the mesh these devices would otherwise take, the nearest global batches
 * that do, with the mesh they give (a hint of kind PLAN_HINT_GLOBAL_BATCH, fitting or not). */
void plan_hint_global_batch(const struct plan_ctx *c, struct plan_result *out);

#endif
