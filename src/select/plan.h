/*
 * plan: how a model fits on a set of devices -- the memory each device needs and the mesh (data x fsdp x tensor x
 * expert) that holds it -- and the environment each process of a multi-host JAX job needs. Pure arithmetic over
 * plain data: no I/O, no globals, no threads; the caller gives the devices (from the registry, or an override).
 *
 * Memory per device, for a mesh of data D, fsdp F, tensor T and expert E axes (D x F x T x E = the device count):
 *
 *   weights      params x bytes(dtype) / (F x T); an MoE model's expert weights / (E x F x T)
 *   gradients    the same with the weights' dtype (training only)
 *   optimizer    params x (master + states) / (F x T): mixed-precision Adam keeps an fp32 master copy (4 B) and two
 *                fp32 moments (8 B), so weights 2 + gradients 2 + optimizer 12 = 16 B/param (ZeRO, Rajbhandari et
 *                al. 2020, section 3.1); full-precision Adam 4 + 4 + 8 = 16 B; SGD with momentum one state; SGD
 *                none; Adafactor factored second moments, about 4 B x (rows + cols) per matrix (an approximation)
 *   activations  per layer s x b x h x (34 + 5as/h) bytes with 16-bit activations and no recomputation
 *                (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", eq. 1;
 *                34 = 15 outside the MLP + 19 in it, generalised to an FFN of width f, gated or not, and to k
 *                experts a token), divided by T (tensor with sequence parallelism, their eq. 4); selective
 *                recomputation, like flash attention, drops the 5as/h of the attention scores (eq. 6); full
 *                recomputation keeps the layer input, 2 sbh/T; b is the per-device batch. Training adds the loss's
 *                fp32 logits, 4 x s x b x V / T; inference counts one layer's working set (nothing is kept for a
 *                backward pass)
 *   KV cache     2 x layers x kv_heads x head_dim x seq x batch x bytes (inference), the KV heads split by T
 *
 * FSDP is ZeRO-3: weights, gradients and optimizer state divided by the fsdp axis, and the batch too; data
 * parallelism divides only the batch (the batch splits over data x fsdp x expert; a tensor group shares its
 * samples). A mesh fits when the sum is at most memory x (1 - reserve), reserve 0.1 by default as /batch-config
 * keeps.
 *
 * The chosen mesh is the first that fits in this order: the least tensor parallelism; pure data parallelism;
 * the least rematerialization (auto); the fsdp, expert and tensor axes inside the fast links (the NVLink island,
 * the TPU slice); the widest sharding (FSDP over the whole fast-link domain, as MaxText's ici_fsdp_parallelism -1
 * and PyTorch's hybrid sharding do); then expert before fsdp. Tensor parallelism never crosses hosts (GPU, CPU),
 * never splits a fast-link domain and stays inside one TPU slice (whose ICI torus does join its hosts); it needs
 * the heads (and KV heads, FFN width) divisible. Expert parallelism is for MoE models whose expert count it
 * divides. Inference has no fsdp axis (serving shards weights by tensor parallelism instead of gathering them for
 * every token). Every other mesh comes back with why it lost; when nothing fits, what would: more devices, a
 * smaller dtype, rematerialization, flash attention, a smaller per-device batch.
 *
 * Not counted: framework and runtime overheads (CUDA context, XLA scratch, allocator fragmentation: the reserve
 * is for them), FSDP's all-gather buffers of one or two layers' full weights, pipeline parallelism, and biases
 * or positional embeddings in a shape's count.
 */
#ifndef ACCELD_PLAN_H
#define ACCELD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "select/batch.h"

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
enum plan_dtype { PLAN_DTYPE_AUTO, PLAN_F32, PLAN_BF16, PLAN_F16, PLAN_FP8, PLAN_INT8, PLAN_INT4 };

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
	uint64_t bytes;                   /* per device; UINT64_MAX = beyond 2^64 */
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
	uint64_t activation_layer_bytes;  /* one layer, no recomputation, this device */
	bool activations_known;           /* the shape gave layers, hidden and heads */
	enum plan_remat remat;            /* the one counted in total_bytes (never AUTO) */
	uint64_t total_bytes;
	uint64_t usable_bytes;            /* memory x (1 - reserve) */
	bool fits;
};

struct plan_candidate {
	struct plan_mesh mesh;
	bool valid;                       /* passed the divisibility and link checks */
	bool inside_fast_links;           /* fsdp x expert x tensor stays inside the fast-link domain */
	bool fits;
	enum plan_remat remat;            /* the recomputation it needs (with AUTO the least that fits) */
	uint64_t per_device_batch;
	uint64_t total_bytes;             /* 0 when rejected before the memory check */
	char why[PLAN_WHY_MAX];           /* why it was rejected, or why the chosen mesh came first */
};

enum plan_hint_kind { PLAN_HINT_DEVICES, PLAN_HINT_DTYPE, PLAN_HINT_REMAT, PLAN_HINT_FLASH, PLAN_HINT_BATCH };

/* What would fit when nothing does: the changed value and the mesh it gives. */
struct plan_hint {
	enum plan_hint_kind kind;
	uint64_t value;                   /* devices; enum plan_dtype; enum plan_remat; 1 (flash); per-device batch */
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
	struct plan_memory memory;        /* the chosen mesh, or the closest one when nothing fits (fits false) */
	bool has_memory;
	struct plan_candidate *candidates; /* every mesh tried, chosen first, then in preference order */
	size_t ncandidates;
	struct plan_hint hints[PLAN_MAX_HINTS];
	size_t nhints;
	char detail[PLAN_TEXT_MAX];       /* why it failed (EINVAL) or nothing fits (EUNPROCESSABLE) */
};

/* Defaults: bf16 weights, inference, Adam, mixed precision, sequence 2048, per-device batch 1, remat auto, reserve
 * 0.1. The model and the devices stay zero for the caller to fill. */
void plan_request_init(struct plan_request *req);

/*
 * Checks a request's ranges and combinations. Returns ACCELD_OK, or ACCELD_EINVAL with the offending field's name
 * as GET /plan takes it (static: "heads", "global_batch"; "devices" for anything of the devices) in *param and a
 * message in err that does not repeat it ("hidden 4095 is not a multiple of heads 32; give head_dim"): the caller
 * names the field, as a parameter or a JSONPath.
 */
enum acceld_err plan_request_check(const struct plan_request *req, const char **param, char *err, size_t errsz);

/*
 * Plans req. Returns ACCELD_OK with the chosen mesh in out->memory; ACCELD_EUNPROCESSABLE when no mesh fits, with
 * the closest one's memory, every candidate's reason and the hints; ACCELD_EINVAL for a request that fails
 * plan_request_check (message in out->detail); ACCELD_ENOMEM. Free out with plan_result_free whatever it returns.
 */
enum acceld_err plan_compute(const struct plan_request *req, struct plan_result *out);

/* Frees what plan_compute allocated in res (not res itself); a zeroed or freed result is fine. */
void plan_result_free(struct plan_result *res);

/*
 * The memory one device needs for req laid out as mesh (remat AUTO counts the least that fits). Returns ACCELD_OK
 * (out->fits says whether it fits), or ACCELD_EINVAL when req is invalid or the mesh's product is not the device
 * count. It does not apply the link and divisibility rules: a what-if for a mesh the caller names.
 */
enum acceld_err plan_evaluate(const struct plan_request *req, const struct plan_mesh *mesh, struct plan_memory *out);

/* The model's parameter count from its shape: total, expert weights, active per token. 0 when the shape lacks
 * layers, hidden, heads or vocab, or the count passes PLAN_MAX_PARAMS. */
uint64_t plan_params_from_shape(const struct plan_model *m, uint64_t *expert, uint64_t *active);

/*
 * The answer as a new JSON object: fits, the request's resolved settings, model, devices (with usable_bytes and
 * reserve_ppm), mesh and batch (null when nothing fits), reason (why the mesh won, or why nothing fits), memory
 * ({bytes, formula} per term, remat, total_bytes; the closest mesh's when nothing fits), rejected (every other candidate: mesh, fits, reason, total_bytes),
 * suggestions ({kind, value, mesh, text}) and detail when nothing fits. Integers in bytes, formulas and reasons
 * as strings, no floating-point numbers; a figure past 2^63 is null.
 */
json_t *plan_json(const struct plan_result *res);

/* Names: "cpu"/"gpu"/"tpu", "f32"/"bf16"/"f16"/"fp8"/"int8"/"int4", "infer"/"train", "adam"/"sgd_momentum"/
 * "sgd"/"adafactor", "none"/"selective"/"full"/"auto", "devices"/"dtype"/"remat"/"flash_attention"/"batch". */
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

/*
 * The environment of one process of a multi-host JAX job: JAX_COORDINATOR_ADDRESS (host:port), JAX_NUM_PROCESSES
 * and JAX_PROCESS_ID, from the first source that is present:
 *
 *   preset  the three JAX_ variables already set (kept as they are)
 *   tpu     a TPU VM or GKE TPU pod: TPU_WORKER_HOSTNAMES (comma list; the coordinator is the first host) and
 *           TPU_WORKER_ID, as JAX's Cloud TPU and GKE TPU cluster detection read them
 *   lws     a LeaderWorkerSet pod: LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX, which LWS sets itself
 *   k8s     a Kubernetes indexed Job, alone or in a JobSet: JOB_COMPLETION_INDEX (set by Kubernetes) is the
 *           process id; the pod's HOSTNAME is <job>-<index>, so the coordinator is <job>-0.<service>, the service
 *           being the caller's headless service or JOBSET_NAME (a JobSet's pods' subdomain defaults to its name,
 *           mapped into JOBSET_NAME from the jobset.sigs.k8s.io/jobset-name label by the pod's env); the process
 *           count is not in a pod's environment and comes from the caller (the plan's host count)
 *
 * What cannot be read stays unknown (empty, or -1) with the reason in note; nothing is invented.
 */
typedef const char *(*plan_getenv_fn)(const char *name, void *ctx);

enum plan_env_source { PLAN_ENV_NONE, PLAN_ENV_PRESET, PLAN_ENV_TPU, PLAN_ENV_LWS, PLAN_ENV_K8S };

struct plan_env_opts {
	unsigned port;              /* 0 = PLAN_JAX_PORT */
	const char *service;        /* k8s: the headless service (pod subdomain); NULL = JOBSET_NAME */
	long processes;             /* k8s: the process count when known (the hosts of the plan); <= 0 unknown */
};

struct plan_env {
	enum plan_env_source source;
	char coordinator[PLAN_TEXT_MAX]; /* "" unknown */
	long num_processes;              /* -1 unknown */
	long process_id;                 /* -1 unknown */
	char note[PLAN_TEXT_MAX];        /* where each value came from, or why it is unknown */
};

/* Reads the environment through get (never NULL; ctx passed along); opts may be NULL. Always fills out. */
void plan_env_jax(plan_getenv_fn get, void *ctx, const struct plan_env_opts *opts, struct plan_env *out);

/* {"source", "env": {NAME: value} for the known values, "unknown": [NAME...], "note"} as a new JSON object. */
json_t *plan_env_json(const struct plan_env *env);

const char *plan_env_source_name(enum plan_env_source s);

#endif
