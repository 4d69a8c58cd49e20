/*
 * plan_memory: the memory model -- a request resolved once into what the arithmetic needs, the bytes of each term
 * for one mesh and batch, and the formulas that explain them (docs/plan.md, "The memory of one device"). Included by
 * nothing outside src/plan/.
 */
#ifndef ACCELD_PLAN_MEMORY_H
#define ACCELD_PLAN_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan_types.h"

/* Everything the arithmetic needs, resolved once per request. */
struct plan_ctx {
	struct plan_request r;
	uint64_t params;
	uint64_t p_expert;
	uint64_t p_dense;
	uint64_t active;
	bool derived;
	bool shape;               /* layers, hidden and heads */
	bool moe;
	unsigned hd;
	unsigned kvh;
	unsigned ffn;
	unsigned topk;
	uint64_t fact_dense;
	uint64_t fact_expert;
	bool fact_exact;          /* from the shape, not the square-matrix guess */
	unsigned wbits;           /* the weights and gradients as stored (fp8 training stores bf16) */
	unsigned kvbits;
	unsigned abytes;          /* bytes of an activation element: 4 for f32 without mixed precision, else 2 */
	bool fp8_train;           /* fp8 compute, bf16 weights and gradients, fp32 master and states */
	unsigned zero;            /* 1, 2 or 3 */
	uint64_t layer_dense;     /* one layer's parameters (0 without a shape) */
	uint64_t layer_expert;
	unsigned per_host;
	unsigned hosts;
	unsigned domain;          /* GPU, CPU: the fast-link island */
	unsigned slice;           /* TPU: chips per slice (the torus), 0 unknown */
	unsigned fast_inner;      /* the devices that fast links join: the island, or the TPU slice */
	uint64_t usable;
};

/* The figures of one mesh and batch, before any text. */
struct plan_sizes {
	uint64_t pd;              /* parameters held by one device */
	uint64_t weights;
	uint64_t grads;
	uint64_t opt;
	uint64_t layer[3];        /* one layer, this device: none, selective, full */
	uint64_t logits;
	uint64_t act[3];          /* all layers and the logits: none, selective, full */
	uint64_t kv;
	uint64_t gather;          /* ZeRO-3: two layers' full weights (the one in use and the one prefetched) */
	unsigned kv_dev;          /* KV heads on one device */
	unsigned master;          /* optimizer bytes per parameter beside the factored moments */
	unsigned state;           /* bytes of one optimizer state element */
};

/* req (checked by plan_request_check) with its defaults resolved, its counts and its devices' figures, into c. */
void plan_resolve(const struct plan_request *req, struct plan_ctx *c);

/* The bytes of every term for mesh m at per-device batch b. */
void plan_measure(const struct plan_ctx *c, const struct plan_mesh *m, uint64_t b, struct plan_sizes *z);

/* The sum of the terms with recomputation r. */
uint64_t plan_total_for(const struct plan_sizes *z, enum plan_remat r);

/* The recomputation counted: inference none; a fixed choice as given; AUTO the least that fits (else full). *fits
 * says whether the total with it fits. */
enum plan_remat plan_pick_remat(const struct plan_ctx *c, const struct plan_sizes *z, bool *fits);

/* The per-device and global batch of a mesh; false when a global batch does not split over its batch shards. */
bool plan_batch_for(const struct plan_ctx *c, const struct plan_mesh *m, uint64_t *b, uint64_t *g);

/* The memory of mesh m (its batch splitting), with its formulas, into out. */
void plan_fill_memory(const struct plan_ctx *c, const struct plan_mesh *m, struct plan_memory *out);

#endif
