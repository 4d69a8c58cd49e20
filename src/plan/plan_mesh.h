/*
 * plan_mesh: the mesh search -- every data x fsdp x tensor x expert of the device count, the link and divisibility
 * rules, and the order of preference among those that fit (docs/plan.md, "The mesh"). Included by nothing outside
 * src/plan/.
 */
#ifndef ACCELD_PLAN_MESH_H
#define ACCELD_PLAN_MESH_H

#include <stddef.h>

#include "plan/plan_memory.h"
#include "plan/plan_types.h"

/* A growing list of candidates (free v when done). */
struct plan_cands {
	struct plan_candidate *v;
	size_t n;
	size_t cap;
};

/*
 * Tries every mesh of the device count (E > 1 only for MoE models). keep (may be NULL) receives them all with their
 * reasons. Returns 1 with the first by preference in *best, 0 when none fits, -1 when keep cannot grow.
 */
int plan_search(const struct plan_ctx *c, struct plan_cands *keep, struct plan_candidate *best);

/* Why each fitting mesh of cs lost to best, and why best won, into their why. */
void plan_rank_reasons(const struct plan_ctx *c, struct plan_cands *cs, const struct plan_candidate *best);

/* Sorts cs for output: fitting meshes by preference, then those too large by preference, then the invalid ones. */
void plan_cands_sort(struct plan_cands *cs);

#endif
