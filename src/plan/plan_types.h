/*
 * plan_types: what a plan is made of -- the request (model, dtypes, mode, devices), a mesh, the memory of one device
 * under a mesh, the candidates tried, the hints and the result -- and their limits. Declarations only; plan.h is the
 * interface (docs/plan.md says what the figures mean and where they come from).
 */
#ifndef ACCELD_PLAN_TYPES_H
#define ACCELD_PLAN_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "select/batch.h"

#include "core/dtype.h"

#define PLAN_SAT UINT64_MAX /* a figure beyond 64 bits: never fits */
#define PLAN_MAX_DEVICES 65536u
#define PLAN_MAX_PARAMS (1ull << 50) /* about 1.1e15 */
#define PLAN_MAX_LAYERS 4096u
#define PLAN_MAX_HIDDEN (1u << 20)
#define PLAN_MAX_HEADS 8192u
#define PLAN_MAX_VOCAB (1u << 24)
#define PLAN_MAX_EXPERTS 4096u
#define PLAN_MAX_SEQ (1u << 24)
#define PLAN_MAX_BATCH (1ull << 24)
#define PLAN_MAX_RESERVE_PPM BATCH_MAX_RESERVE_PPM         /* as /batch-config */
#define PLAN_DEFAULT_RESERVE_PPM BATCH_DEFAULT_RESERVE_PPM /* /batch-config's 0.1 */
#define PLAN_DEFAULT_SEQ 2048u
#define PLAN_JAX_PORT 8476u /* the coordinator port JAX's Cloud TPU cluster detection uses */
#define PLAN_MAX_HINTS 8
#define PLAN_TEXT_MAX 320
#define PLAN_WHY_MAX 192

enum plan_kind { PLAN_CPU, PLAN_GPU, PLAN_TPU };

/* Bits per element: 32, 16, 16, 8, 8, 4. AUTO is bf16 for weights; for the KV cache bf16, or f32 with f32 weights. */
/* core/dtype.h's formats (one table of names and widths); AUTO is dtype's NONE: bf16 where the plan must choose */
enum plan_dtype {
	PLAN_DTYPE_AUTO = DTYPE_NONE,
	PLAN_F32 = DTYPE_F32,
	PLAN_BF16 = DTYPE_BF16,
	PLAN_F16 = DTYPE_F16,
	PLAN_FP8 = DTYPE_FP8,
	PLAN_INT8 = DTYPE_INT8,
	PLAN_INT4 = DTYPE_INT4
};

enum plan_mode { PLAN_INFER, PLAN_TRAIN };

enum plan_optimizer { PLAN_ADAM, PLAN_SGD_MOMENTUM, PLAN_SGD, PLAN_ADAFACTOR }; /* PLAN_ADAM covers AdamW */

/* AUTO takes the least recomputation that fits each mesh: none, then selective, then full. */
enum plan_remat { PLAN_REMAT_NONE, PLAN_REMAT_SELECTIVE, PLAN_REMAT_FULL, PLAN_REMAT_AUTO };

/*
 * A model: a parameter count, or a transformer shape the count is derived from (decoder layers without biases,
 * RMSNorm weights, untied or tied embeddings: exact for Llama and Mixtral, within 0.1% for GPT-style models with
 * biases and learned positions). Given both, params is the count and the shape gives the activations, the KV cache,
 * the divisibility checks and the share of expert weights.
 */
struct plan_model {
	uint64_t params;            /* 0 = derive from the shape */
	unsigned layers;
	unsigned hidden;            /* h */
	unsigned heads;             /* a, attention (query) heads */
	unsigned kv_heads;          /* 0 = heads; fewer for grouped-query attention */
	unsigned head_dim;          /* 0 = hidden / heads */
	unsigned ffn;               /* f, the feed-forward width; 0 = 4 x hidden */
	bool gated_ffn;             /* SwiGLU/GeGLU: three h x f matrices, not two */
	unsigned vocab;             /* 0 = not given (needed to derive the count) */
	bool tied_embeddings;       /* the output projection shares the input embedding */
	unsigned experts;           /* 0 or 1 = dense; more = MoE, each expert one FFN */
	unsigned experts_per_token; /* k of top-k routing; 0 = 1 */
};

/*
 * Devices: count of one kind, count / per_host hosts. The fast-link domain is where tensor parallelism may go:
 * for GPUs (and CPU sockets) the devices of one NVLink island inside a host (8 on an HGX H100, 1 without
 * NVLink); for a TPU slice the ICI torus (4x4x4 -> {4, 4, 4}; 2x4 -> {2, 4, 0}) whose chips a slice holds, count
 * being a whole number of slices.
 */
struct plan_devices {
	enum plan_kind kind;
	unsigned count;             /* 1..PLAN_MAX_DEVICES */
	unsigned per_host;          /* 0 = count (one host) */
	uint64_t memory_bytes;      /* per device (per chip for TPUs) */
	unsigned fast_domain;       /* GPU, CPU: devices per fast-link island within a host; 0 = 1 (none) */
	unsigned torus[3];          /* TPU: the slice's ICI torus; all 0 = unknown (the chips of a host then) */
};

struct plan_request {
	struct plan_model model;
	enum plan_dtype dtype;            /* weights (and gradients) */
	enum plan_dtype kv_dtype;         /* inference KV cache */
	enum plan_mode mode;
	enum plan_optimizer optimizer;    /* training */
	bool mixed_precision;             /* training: fp32 master copy and fp32 optimizer states */
	unsigned zero;                    /* GPU training: ZeRO stage 1, 2 or 3 of the fsdp axis; 0 = 3 */
	bool flash_attention;             /* attention scores are not kept (drops the 5as/h term) */
	unsigned seq_len;                 /* s */
	uint64_t global_batch;            /* 0 = per_device_batch x the batch shards */
	uint64_t per_device_batch;        /* 0 = 1 when global_batch is 0 too; give one of the two */
	enum plan_remat remat;            /* training */
	unsigned reserve_ppm;             /* memory kept free, in millionths */
	struct plan_devices devices;
};

struct plan_mesh {
	unsigned data;
	unsigned fsdp;
	unsigned tensor;
	unsigned expert;
};

struct plan_term {
	uint64_t bytes;                   /* per device; UINT64_MAX = beyond 2^64; 0 when unknown */
	bool unknown;                     /* not known without the model's shape (JSON null), not 0 */
	char formula[PLAN_TEXT_MAX];
};

/* The memory of one device for one mesh. */
struct plan_memory {
	struct plan_mesh mesh;
	uint64_t per_device_batch;
	uint64_t global_batch;
	struct plan_term weights;
	struct plan_term gradients;       /* 0 for inference */
	struct plan_term optimizer;       /* 0 for inference */
	struct plan_term activations;     /* no recomputation (inference: one layer's working set) */
	struct plan_term activations_selective;
	struct plan_term activations_full;
	struct plan_term kv_cache;        /* 0 for training */
	struct plan_term gather;          /* ZeRO-3/FSDP: the layers' full weights gathered at once (0 otherwise) */
	uint64_t activation_layer_bytes;  /* one layer, no recomputation, this device */
	bool activations_known;           /* the shape gave layers, hidden and heads (else activations, KV cache and
					   * gather are unknown: their bytes 0, total_bytes a lower bound) */
	enum plan_remat remat;            /* the one counted in total_bytes (never AUTO) */
	uint64_t total_bytes;
	uint64_t usable_bytes;            /* memory x (1 - reserve) */
	bool fits;
};

struct plan_candidate {
	struct plan_mesh mesh;
	bool valid;                       /* passed the divisibility and link checks */
	bool slow_tensor;                 /* the tensor axis runs over PCIe, not NVLink (inference only) */
	bool inside_fast_links;           /* fsdp x expert x tensor stays inside the fast-link domain */
	bool fits;
	enum plan_remat remat;            /* the recomputation it needs (with AUTO the least that fits) */
	uint64_t per_device_batch;
	uint64_t total_bytes;             /* 0 when rejected before the memory check */
	char why[PLAN_WHY_MAX];           /* why it was rejected, or why the chosen mesh came first */
};

enum plan_hint_kind {
	PLAN_HINT_DEVICES,
	PLAN_HINT_DTYPE,
	PLAN_HINT_REMAT,
	PLAN_HINT_FLASH,
	PLAN_HINT_BATCH,
	PLAN_HINT_MEMORY,       /* devices with this much memory each */
	PLAN_HINT_GLOBAL_BATCH, /* the nearest global batch that splits over the preferred mesh */
};

/* What would fit when nothing does: the changed value and the mesh it gives. */
struct plan_hint {
	enum plan_hint_kind kind;
	uint64_t value;                   /* devices; enum plan_dtype; enum plan_remat; 1 (flash); per-device batch;
					   * bytes a device; a global batch */
	struct plan_mesh mesh;
	char text[PLAN_TEXT_MAX];
};

struct plan_result {
	struct plan_request req;          /* a copy, with defaults resolved */
	uint64_t params;                  /* the count used */
	uint64_t params_expert;           /* of which expert weights (MoE) */
	uint64_t params_active;           /* per token: the dense part and k experts */
	bool params_derived;              /* from the shape */
	unsigned hosts;
	bool fits;
	bool judged;                      /* false: a term is unknown (no shape), so whether it fits cannot be said */
	struct plan_memory memory;        /* the chosen mesh, or the closest one when nothing fits (fits false) */
	bool has_memory;
	struct plan_candidate *candidates; /* every mesh tried, chosen first, then in preference order */
	size_t ncandidates;
	struct plan_hint hints[PLAN_MAX_HINTS];
	size_t nhints;
	char detail[PLAN_TEXT_MAX];       /* why it failed (EINVAL) or nothing fits (EUNPROCESSABLE) */
};

#endif
