/* plan_shape: a transformer shape's parameter counts (plan_types.h, struct plan_model, says what it covers). */
#ifndef ACCELD_PLAN_SHAPE_H
#define ACCELD_PLAN_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan_types.h"

/* The counts of a shape, saturating at PLAN_SAT. */
struct plan_shape_counts {
	uint64_t total;
	uint64_t expert;
	uint64_t active;
	uint64_t fact_dense;  /* Adafactor: sum of rows + cols over the matrices, plus the vectors' lengths */
	uint64_t fact_expert;
};

/* Whether the shape has layers, hidden and heads (what the activations and the KV cache need). */
bool plan_shape_complete(const struct plan_model *m);

/* The counts of m's shape into out (zeroed first). False when the shape lacks layers, hidden, heads or vocab, or
 * the count passes PLAN_MAX_PARAMS. */
bool plan_shape_counts(const struct plan_model *m, struct plan_shape_counts *out);

/* The model's parameter count from its shape: total, expert weights, active per token. 0 when the shape lacks
 * layers, hidden, heads or vocab, or the count passes PLAN_MAX_PARAMS. */
uint64_t plan_params_from_shape(const struct plan_model *m, uint64_t *expert, uint64_t *active);

/* One decoder layer's parameters: its dense part (attention, norms, a dense FFN or an MoE router) and its experts'
 * FFNs (0 for a dense model). False, both 0, when the shape lacks layers, hidden or heads. */
bool plan_shape_layer(const struct plan_model *m, uint64_t *dense, uint64_t *expert);

/* Saturating arithmetic: a figure past 64 bits stays PLAN_SAT and never fits. */
static inline uint64_t plan_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? PLAN_SAT : r;
}

static inline uint64_t plan_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? PLAN_SAT : r;
}

/* a / b rounded up; PLAN_SAT stays PLAN_SAT. */
static inline uint64_t plan_cdiv(uint64_t a, uint64_t b)
{
	if (a == PLAN_SAT)
		return PLAN_SAT;
	return a / b + (a % b != 0);
}

#endif
