/*
 * Unit tests for plan.c: the memory formulas against worked examples from public sources (each named where it is
 * used), the mesh choice on fixture hosts (8 x H100 with NVLink, 4 x L4 without, a v6e-8 host, a v5p-128 slice, a
 * CPU-only host), what would fit when nothing does, the request checks, the JSON and a JAX job's environment.
 */
#include <string.h>

#include "check_main.h"
#include "select/plan.h"

#define GIB (1024ull * 1024ull * 1024ull)

/* Llama 2 (Touvron et al. 2023; the Hugging Face configs of meta-llama/Llama-2-*-hf): SwiGLU, RMSNorm, no
 * biases, untied embeddings, vocabulary 32000. */
static void llama2_7b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008, .gated_ffn = true,
				 .vocab = 32000};
}

static void llama2_13b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 40, .hidden = 5120, .heads = 40, .ffn = 13824, .gated_ffn = true,
				 .vocab = 32000};
}

static void llama2_70b(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672,
				 .gated_ffn = true, .vocab = 32000};
}

/* Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts"; mistralai/Mixtral-8x7B-v0.1 config): 8 experts, top-2. */
static void mixtral(struct plan_model *m)
{
	*m = (struct plan_model){.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336,
				 .gated_ffn = true, .vocab = 32000, .experts = 8, .experts_per_token = 2};
}

static struct plan_devices gpus(unsigned count, unsigned per_host, uint64_t mem, unsigned domain)
{
	return (struct plan_devices){.kind = PLAN_GPU, .count = count, .per_host = per_host, .memory_bytes = mem,
				     .fast_domain = domain};
}

/* HGX H100: 8 x 80 GiB joined by NVLink/NVSwitch. */
static struct plan_devices h100x8(void)
{
	return gpus(8, 8, 80 * GIB, 8);
}

/* A TPU slice: chips, chips per host, HBM per chip (db/accelerators.csv: v5p 95 GiB, v6e 32 GiB), the torus. */
static struct plan_devices tpu(unsigned count, unsigned per_host, uint64_t mem, unsigned x, unsigned y, unsigned z)
{
	return (struct plan_devices){.kind = PLAN_TPU, .count = count, .per_host = per_host, .memory_bytes = mem,
				     .torus = {x, y, z}};
}

static struct plan_request request(enum plan_mode mode, struct plan_devices d)
{
	struct plan_request r;

	plan_request_init(&r);
	r.mode = mode;
	r.devices = d;
	return r;
}

static bool same_mesh(const struct plan_mesh *m, unsigned d, unsigned f, unsigned t, unsigned e)
{
	return m->data == d && m->fsdp == f && m->tensor == t && m->expert == e;
}

static const struct plan_candidate *candidate(const struct plan_result *res, unsigned d, unsigned f, unsigned t,
					      unsigned e)
{
	for (size_t i = 0; i < res->ncandidates; i++)
		if (same_mesh(&res->candidates[i].mesh, d, f, t, e))
			return &res->candidates[i];
	ck_abort_msg("no candidate %ux%ux%ux%u", d, f, t, e);
	return NULL;
}

static const struct plan_hint *hint(const struct plan_result *res, enum plan_hint_kind kind)
{
	for (size_t i = 0; i < res->nhints; i++)
		if (res->hints[i].kind == kind)
			return &res->hints[i];
	return NULL;
}

/* Every formula, reason and hint is whole: none reached its field's end and was cut. */
static void assert_whole(const struct plan_memory *m)
{
	const struct plan_term *terms[] = {&m->weights, &m->gradients, &m->optimizer, &m->activations,
					   &m->activations_selective, &m->activations_full, &m->kv_cache};

	for (size_t i = 0; i < sizeof(terms) / sizeof(terms[0]); i++)
		ck_assert_msg(terms[i]->formula[0] && strlen(terms[i]->formula) < PLAN_TEXT_MAX - 1, "formula %zu: %s",
			      i, terms[i]->formula);
}

static void assert_texts_whole(const struct plan_result *res)
{
	if (res->has_memory)
		assert_whole(&res->memory);
	for (size_t i = 0; i < res->ncandidates; i++)
		ck_assert_msg(res->candidates[i].why[0] && strlen(res->candidates[i].why) < PLAN_WHY_MAX - 1, "%s",
			      res->candidates[i].why);
	for (size_t i = 0; i < res->nhints; i++)
		ck_assert_msg(strlen(res->hints[i].text) < PLAN_TEXT_MAX - 1, "%s", res->hints[i].text);
}

#define ck_assert_why(cand, text)                                                                                    \
	ck_assert_msg(strstr((cand)->why, (text)) != NULL, "reason '%s' lacks '%s'", (cand)->why, (text))

START_TEST(params_from_llama2_shapes)
{
	struct plan_model m;
	uint64_t expert, active;

	/* 6,738,415,616 and 68,976,648,192: the parameter counts of the published Llama 2 7B and 70B checkpoints
	 * (meta-llama/Llama-2-7b-hf, -70b-hf); the same arithmetic gives 13,015,864,320 for 13B */
	llama2_7b(&m);
	ck_assert_uint_eq(plan_params_from_shape(&m, &expert, &active), 6738415616ull);
	ck_assert_uint_eq(expert, 0);
	ck_assert_uint_eq(active, 6738415616ull);
	llama2_13b(&m);
	ck_assert_uint_eq(plan_params_from_shape(&m, NULL, NULL), 13015864320ull);
	llama2_70b(&m); /* grouped-query attention: 8 KV heads of 128 */
	ck_assert_uint_eq(plan_params_from_shape(&m, NULL, NULL), 68976648192ull);
	m.vocab = 0; /* no vocabulary: no count */
	ck_assert_uint_eq(plan_params_from_shape(&m, NULL, NULL), 0);
}
END_TEST

START_TEST(params_from_mixtral_shape)
{
	struct plan_model m;
	uint64_t expert, active;

	/* Mixtral 8x7B: "47B parameters, 13B active" (Jiang et al. 2024); the checkpoint holds 46,702,792,704 */
	mixtral(&m);
	ck_assert_uint_eq(plan_params_from_shape(&m, &expert, &active), 46702792704ull);
	ck_assert_uint_eq(expert, 32ull * 8 * 3 * 4096 * 14336);
	ck_assert_uint_eq(active, 46702792704ull - expert + expert / 4);
	ck_assert_uint_eq(active / 100000000, 128); /* 12.9B */
}
END_TEST

START_TEST(zero_mixed_precision_adam)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(64, 8, 32 * GIB, 8));
	struct plan_memory mem;

	/* ZeRO (Rajbhandari et al. 2020), section 3.1: a 7.5B-parameter model with mixed-precision Adam needs
	 * 2 + 2 + 12 = 16 bytes per parameter, 120 GB, before partitioning; Figure 1 partitions it over 64 GPUs
	 * (Pos+g+p) to 1.9 GB each */
	r.model.params = 7500000000ull;
	r.dtype = PLAN_F16;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){64, 1, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes, 15000000000ull);
	ck_assert_uint_eq(mem.gradients.bytes, 15000000000ull);
	ck_assert_uint_eq(mem.optimizer.bytes, 90000000000ull);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, 120000000000ull);
	ck_assert(!mem.activations_known); /* params only: no shape, no activations */
	ck_assert_msg(strstr(mem.optimizer.formula, "ZeRO") && strstr(mem.optimizer.formula, "x 12 B"), "%s",
		      mem.optimizer.formula);
	ck_assert(!mem.fits);
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 64, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.total_bytes, 1875000000ull);
	ck_assert(mem.fits);
	/* the product of the axes must be the device count */
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 32, 1, 1}, &mem), ACCELD_EINVAL);
}
END_TEST

START_TEST(optimizer_states)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(1, 1, 80 * GIB, 1));
	struct plan_memory mem;
	const struct plan_mesh one = {1, 1, 1, 1};

	r.model.params = 1000;
	/* full-precision Adam: weights 4 + gradients 4 + m and v 8 = 16 B/param (ZeRO section 3.1) */
	r.dtype = PLAN_F32;
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, 16000);
	ck_assert_uint_eq(mem.optimizer.bytes, 8000);
	/* mixed precision with f32 weights: no second master copy */
	r.mixed_precision = true;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 8000);
	/* pure bf16 (llama-recipes' pure_bf16): Adam states in bf16, 2 + 2 + 4 = 8 B/param */
	r.dtype = PLAN_BF16;
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, 8000);
	/* SGD with momentum, mixed: master 4 + momentum 4 */
	r.mixed_precision = true;
	r.optimizer = PLAN_SGD_MOMENTUM;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 8000);
	/* plain SGD, mixed: only the master copy; without mixed precision nothing */
	r.optimizer = PLAN_SGD;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 4000);
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 0);
	ck_assert_msg(strstr(mem.optimizer.formula, "no state") != NULL, "%s", mem.optimizer.formula);
}
END_TEST

START_TEST(adafactor_factored_moments)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(1, 1, 80 * GIB, 1));
	struct plan_memory mem;
	const struct plan_mesh one = {1, 1, 1, 1};

	/* a toy shape counted by hand: q, k, v, o 8x8 (4 x 16 rows + cols), a 2-matrix FFN 8x16 (2 x 24), two norms
	 * of 8, embeddings 10x8 twice (2 x 18) and a final norm of 8: 172; params 256 + 256 + 16 + 160 + 8 = 696 */
	r.model = (struct plan_model){.layers = 1, .hidden = 8, .heads = 2, .ffn = 16, .vocab = 10};
	r.optimizer = PLAN_ADAFACTOR;
	ck_assert_uint_eq(plan_params_from_shape(&r.model, NULL, NULL), 696);
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 696 * 4 + 172 * 4); /* fp32 master + factored moments */
	r.dtype = PLAN_F32;
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 172 * 4);
	/* params only: approximated as square matrices of side hidden (4096 unknown), and said so */
	r.model = (struct plan_model){.params = 4096ull * 4096 * 10};
	ck_assert_int_eq(plan_evaluate(&r, &one, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.optimizer.bytes, 4ull * 2 * 4096 * 10);
	ck_assert_msg(strstr(mem.optimizer.formula, "approximate") && strstr(mem.optimizer.formula, "square"), "%s",
		      mem.optimizer.formula);
	assert_whole(&mem);
}
END_TEST

START_TEST(activations_korthikanti_gpt3)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(8, 8, 80 * GIB, 8));
	struct plan_memory mem;
	const uint64_t sbh = 2048ull * 12288;

	/* Korthikanti et al. 2022, Table 3's GPT-3 175B: a = 96, h = 12288, L = 96, s = 2048, micro-batch 1, t = 8.
	 * Eq. 1 per layer: sbh(34 + 5as/h), and 5as/h = 5 x 96 x 2048 / 12288 = 80 as the paper works out for
	 * GPT-3 (the attention scores outweigh the rest) */
	r.model = (struct plan_model){.params = 175000000000ull, .layers = 96, .hidden = 12288, .heads = 96};
	r.remat = PLAN_REMAT_NONE;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){8, 1, 1, 1}, &mem), ACCELD_OK);
	ck_assert(mem.activations_known);
	ck_assert_uint_eq(mem.activation_layer_bytes, sbh * (34 + 80));
	ck_assert_uint_eq(mem.activations.bytes, 96 * sbh * 114);
	ck_assert_msg(strstr(mem.activations.formula, "34h + 5as") != NULL, "%s", mem.activations.formula);
	/* tensor and sequence parallelism over t = 8 divide it all (eq. 4); selective recomputation keeps 34sbh/t
	 * (eq. 6); full recomputation keeps the layer input, 2sbh, here the sequence-parallel shard */
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 1, 8, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.activation_layer_bytes, sbh * 114 / 8);
	ck_assert_uint_eq(mem.activations_selective.bytes, 96 * (sbh * 34 / 8));
	ck_assert_uint_eq(mem.activations_full.bytes, 96 * (sbh * 2 / 8));
	ck_assert_uint_eq(mem.remat, PLAN_REMAT_NONE);
	/* auto picks the least recomputation that fits: 175B over 8 devices does not fit at all -> full */
	r.remat = PLAN_REMAT_AUTO;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 1, 8, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.remat, PLAN_REMAT_FULL);
	ck_assert(!mem.fits);
	/* flash attention stores no scores: no 5as term */
	r.flash_attention = true;
	r.remat = PLAN_REMAT_NONE;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 1, 8, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.activation_layer_bytes, sbh * 34 / 8);
	assert_whole(&mem);
}
END_TEST

START_TEST(kv_cache_llama2)
{
	struct plan_request r = request(PLAN_INFER, gpus(1, 1, 80 * GIB, 1));
	struct plan_memory mem;

	/* NVIDIA, "Mastering LLM Techniques: Inference Optimization" (2023): Llama 2 7B in 16-bit, batch 1, 4096
	 * tokens: 1 x 4096 x 2 x 32 x 4096 x 2 bytes, about 2 GB */
	llama2_7b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 1, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.kv_cache.bytes, 2147483648ull);
	ck_assert_uint_eq(mem.weights.bytes, 2 * 6738415616ull);
	ck_assert_uint_eq(mem.gradients.bytes, 0);
	ck_assert_uint_eq(mem.optimizer.bytes, 0);
	/* Llama 2 70B with 8 KV heads of 128 (grouped-query attention), one 4K-token sequence in fp16:
	 * 2 x 80 x 8 x 128 x 4096 x 2 = 1,342,177,280 bytes (IETF draft-calabria-bmwg-ai-fabric-inference-bench,
	 * its worked S_KV example) */
	llama2_70b(&r.model);
	r.devices = h100x8();
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){8, 1, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.kv_cache.bytes, 1342177280ull);
	/* tensor 8 splits the 8 KV heads one a device */
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 1, 8, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.kv_cache.bytes, 1342177280ull / 8);
	ck_assert_msg(strstr(mem.kv_cache.formula, "1 KV heads (8 / tensor 8)") != NULL, "%s", mem.kv_cache.formula);
	/* an int8 KV cache halves it; a global batch of 16 over data 2 is 8 sequences a device */
	r.kv_dtype = PLAN_INT8;
	r.global_batch = 16;
	r.per_device_batch = 0;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){2, 1, 4, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.per_device_batch, 8);
	ck_assert_uint_eq(mem.kv_cache.bytes, 8 * 1342177280ull / 4 / 2);
	assert_whole(&mem);
}
END_TEST

START_TEST(fsdp_llama2_7b_on_8_a100_40gb)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(8, 8, 40 * GIB, 8));
	struct plan_result res;

	/* meta-llama/llama-recipes: full-parameter fine-tuning of Llama 2 7B "with FSDP only ... tested with BF16 on
	 * 8xA100, 40GB GPUs" (torchrun --nproc_per_node 8 ... --enable_fsdp --pure_bf16): Adam states in bf16,
	 * 8 B/param, 53.9 GB in all, 6.7 GB a GPU under FSDP 8 */
	llama2_7b(&r.model);
	r.mixed_precision = false;
	r.flash_attention = true; /* its --use_fast_kernels */
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.weights.bytes + res.memory.gradients.bytes + res.memory.optimizer.bytes,
			  6738415616ull * 8 / 8);
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit: needs");
	ck_assert_why(candidate(&res, 1, 8, 1, 1), "chosen:");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(h100x8_llama2_7b_training)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;

	/* mixed-precision Adam, 16 B/param = 107.8 GB: no replica fits an 80 GB H100, FSDP over the NVLink island
	 * does; without flash attention the 5as^2b scores at s 4096 need selective recomputation */
	llama2_7b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(res.fits);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_SELECTIVE);
	ck_assert_uint_eq(res.memory.weights.bytes, 2 * 6738415616ull / 8);
	ck_assert_uint_eq(res.memory.per_device_batch, 1);
	ck_assert_uint_eq(res.memory.global_batch, 8);
	ck_assert_uint_le(res.memory.total_bytes, res.memory.usable_bytes);
	ck_assert_uint_eq(res.memory.usable_bytes, 77309411328ull); /* 80 GiB x 0.9, as /batch-config */
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit: needs");
	ck_assert_why(candidate(&res, 2, 4, 1, 1), "narrower sharding");
	ck_assert_why(candidate(&res, 1, 4, 2, 1), "more tensor parallelism");
	/* the chosen mesh comes first */
	ck_assert(same_mesh(&res.candidates[0].mesh, 1, 8, 1, 1));
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_fsdp_needs_two_hosts)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	const struct plan_hint *h;

	/* Hugging Face, "Fine-tuning Llama 2 70B using PyTorch FSDP" (2023): 2 nodes x 8 A100 80GB, FULL_SHARD, bf16
	 * mixed precision, gradient checkpointing, flash attention, max_seq_len 2048, per-device batch 1. One host
	 * of 8 is not enough (70B x 16 B / 8 = 138 GB a GPU); acceld says 16 GPUs, 2 hosts of 8, FSDP 16 */
	llama2_70b(&r.model);
	r.flash_attention = true;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert(!res.fits);
	ck_assert(res.has_memory);
	ck_assert_msg(strstr(res.detail, "no mesh of 8 gpu devices fits") != NULL, "%s", res.detail);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 16);
	ck_assert(same_mesh(&h->mesh, 1, 16, 1, 1));
	ck_assert_msg(strstr(h->text, "2 hosts of 8") != NULL, "%s", h->text);
	h = hint(&res, PLAN_HINT_DTYPE); /* or pure bf16, 8 B/param: 69 GB a GPU, no room for FSDP's buffers */
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_BF16);
	ck_assert_msg(strstr(h->text, "pure bf16") != NULL, "%s", h->text);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_BATCH)); /* a batch of 1 a device */
	assert_texts_whole(&res);
	plan_result_free(&res);

	r.devices = gpus(16, 8, 80 * GIB, 8);
	r.remat = PLAN_REMAT_FULL;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 16, 1, 1));
	ck_assert_uint_eq(res.memory.optimizer.bytes, 68976648192ull / 16 * 12);
	ck_assert_uint_eq(res.memory.activations_full.bytes, 80ull * 2 * 2048 * 8192 + 4ull * 2048 * 32000);
	ck_assert_why(candidate(&res, 2, 8, 1, 1), "does not fit"); /* hybrid sharding within a host: too large */
	ck_assert_why(candidate(&res, 1, 1, 16, 1), "tensor parallelism across hosts");
	ck_assert_why(candidate(&res, 1, 8, 2, 1), "more tensor parallelism");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_inference_one_h100)
{
	struct plan_request r = request(PLAN_INFER, gpus(1, 1, 80 * GIB, 1));
	struct plan_result res;
	const struct plan_hint *h;

	/* 70B in bf16 is 138 GB of weights: not one 80 GB GPU; two with NVLink, or int8 weights */
	llama2_70b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_uint_eq(res.memory.weights.bytes, 2 * 68976648192ull);
	ck_assert_why(candidate(&res, 1, 1, 1, 1), "does not fit: needs 135.9 GiB of 72.0 GiB usable");
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 2);
	ck_assert(same_mesh(&h->mesh, 1, 1, 2, 1));
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_INT8);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_REMAT)); /* inference: nothing to recompute */
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(llama2_70b_inference_h100x8_tensor_parallel)
{
	struct plan_request r = request(PLAN_INFER, h100x8());
	struct plan_result res;

	/* on 8 H100 with NVLink it fits tensor-parallel; acceld takes the least tensor parallelism that fits (with
	 * a batch of one 4K sequence a replica) and replicates the rest */
	llama2_70b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_uint_ge(res.memory.mesh.tensor, 2);
	ck_assert_uint_eq(res.memory.mesh.fsdp, 1);
	ck_assert_uint_eq(res.memory.mesh.data * res.memory.mesh.tensor, 8);
	ck_assert_uint_le(res.memory.total_bytes, res.memory.usable_bytes);
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit");
	ck_assert_why(candidate(&res, 1, 8, 1, 1), "fsdp 8 in inference");
	ck_assert_why(candidate(&res, 1, 1, 8, 1), "fits");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(l4x4_without_nvlink)
{
	struct plan_request r = request(PLAN_INFER, gpus(4, 4, 24 * GIB, 1));
	struct plan_result res;
	const struct plan_hint *h;

	/* 4 x L4 24 GB on PCIe (a g2-standard-48): Llama 2 7B in bf16 (13.5 GB) fits each: data 4 */
	llama2_7b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 4, 1, 1, 1));
	ck_assert_why(candidate(&res, 4, 1, 1, 1), "chosen: a full replica");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 13B (26 GB) fits none, and without NVLink there is no tensor parallelism to spread it: int8 would do, more
	 * L4s would not */
	llama2_13b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_why(candidate(&res, 2, 1, 2, 1), "tensor 2 without fast links (a fast-link domain of 1)");
	ck_assert_why(candidate(&res, 1, 1, 4, 1), "without fast links");
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_INT8);
	ck_assert(same_mesh(&h->mesh, 4, 1, 1, 1));
	ck_assert_ptr_null(hint(&res, PLAN_HINT_DEVICES));
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(v6e8_llama2_7b_training)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(8, 8, 32 * GIB, 2, 4, 0));
	struct plan_result res;

	/* a v6e-8 host: 8 chips of 32 GB, ICI torus 2x4. MaxText's default (base.yml ici_fsdp_parallelism: -1)
	 * puts all the slice's chips on the fsdp axis; acceld arrives at the same mesh for Llama 2 7B */
	llama2_7b(&r.model);
	r.flash_attention = true;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 8, 1, 1));
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_NONE);
	ck_assert_uint_eq(res.memory.usable_bytes, 30923764531ull);
	ck_assert_uint_eq(res.hosts, 1);
	/* the torus holds tensor 8 (2 x 4): valid, ranked below */
	ck_assert(candidate(&res, 1, 1, 8, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(v5p128_slice)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(64, 4, 95 * GIB, 4, 4, 4));
	struct plan_result res;

	/* a v5p-128 slice: 64 chips of 95 GB, 16 hosts of 4, torus 4x4x4. Llama 2 70B with mixed-precision Adam
	 * (1.1 TB of state) fits FSDP over the whole slice (MaxText's default), 17.2 GB of state a chip */
	llama2_70b(&r.model);
	r.flash_attention = true;
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 64, 1, 1));
	ck_assert_uint_eq(res.hosts, 16);
	ck_assert_uint_eq(res.memory.weights.bytes + res.memory.gradients.bytes + res.memory.optimizer.bytes,
			  68976648192ull / 64 * 16);
	ck_assert_uint_eq(res.memory.remat, PLAN_REMAT_FULL);
	/* ICI reaches across the slice's hosts: tensor 16 is valid on a TPU slice */
	ck_assert(candidate(&res, 1, 4, 16, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* Llama 2 13B has 40 heads */
	llama2_13b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 4, 16, 1), "heads 40 not divisible by tensor 16");
	ck_assert_why(candidate(&res, 1, 1, 64, 1), "heads 40 not divisible by tensor 64");
	ck_assert(candidate(&res, 1, 8, 8, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* two slices: the data axis crosses the data-centre network, tensor never does */
	r.devices.count = 128;
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 2, 64, 1, 1));
	ck_assert_why(candidate(&res, 1, 1, 128, 1), "spans more than one slice");
	ck_assert_why(candidate(&res, 2, 1, 64, 1), "fits");
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(cpu_only_host)
{
	struct plan_request r = request(PLAN_INFER, (struct plan_devices){.kind = PLAN_CPU, .count = 1,
									.memory_bytes = 64 * GIB});
	struct plan_result res;
	const struct plan_hint *h;

	/* a CPU-only host is one device with the host's memory: 1.1B parameters in bf16 fit */
	r.model.params = 1100000000ull;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 1, 1, 1));
	ck_assert_uint_eq(res.ncandidates, 1);
	ck_assert_uint_eq(res.memory.weights.bytes, 2200000000ull);
	ck_assert(!res.memory.activations_known);
	ck_assert_msg(strstr(res.memory.activations.formula, "unknown") != NULL, "%s", res.memory.activations.formula);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* training Llama 2 7B (108 GB of state) does not: another host would, FSDP over both */
	r.mode = PLAN_TRAIN;
	llama2_7b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 2);
	ck_assert(same_mesh(&h->mesh, 1, 2, 1, 1));
	ck_assert_msg(strstr(h->text, "2 hosts of 1") != NULL, "%s", h->text);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(link_rules)
{
	struct plan_request r = request(PLAN_INFER, gpus(16, 16, 80 * GIB, 8));
	struct plan_result res;

	/* one host of 16 GPUs in two NVLink islands of 8 */
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 1, 16, 1), "tensor 16 splits a fast-link domain of 8");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* an island of 6 (hosts of 12): tensor 4 does not divide it */
	r.devices = gpus(12, 12, 80 * GIB, 6);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 3, 1, 4, 1), "tensor 4 does not divide the fast-link domain of 6");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 12 heads over 3 KV heads: tensor 2 splits neither evenly */
	r.model = (struct plan_model){.layers = 2, .hidden = 768, .heads = 12, .kv_heads = 3, .vocab = 1000};
	r.devices = h100x8();
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 4, 1, 2, 1), "kv heads 3 and tensor 2: neither divides the other");
	ck_assert(same_mesh(&res.memory.mesh, 8, 1, 1, 1));
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* TPU chips without a known torus: tensor parallelism stays on one host's chips */
	llama2_70b(&r.model);
	r.devices = tpu(16, 4, 95 * GIB, 0, 0, 0);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 2, 1, 8, 1), "tensor 8 spans beyond the 4 chips of a host and the ICI torus is "
		      "unknown");
	ck_assert(candidate(&res, 4, 1, 4, 1)->valid);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(moe_expert_axis)
{
	struct plan_request r = request(PLAN_INFER, h100x8());
	struct plan_result res;
	bool any_expert = false;

	/* Mixtral 8x7B in bf16 (93 GB) on 8 H100: expert parallelism puts one expert a GPU, 14.5 GB each */
	mixtral(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 1, 1, 1, 8));
	ck_assert_uint_eq(res.memory.weights.bytes, 2 * (46702792704ull - 45097156608ull + 45097156608ull / 8));
	ck_assert_uint_eq(res.params_active, 12879925248ull);
	ck_assert_why(candidate(&res, 8, 1, 1, 1), "does not fit");
	ck_assert_why(candidate(&res, 2, 1, 1, 4), "narrower sharding");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 16 GPUs: expert 16 does not divide 8 experts */
	r.devices = gpus(16, 8, 80 * GIB, 8);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 1, 1, 16), "experts 8 not divisible by expert 16");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* a dense model has no expert axis */
	llama2_7b(&r.model);
	r.devices = h100x8();
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	for (size_t i = 0; i < res.ncandidates; i++)
		any_expert |= res.candidates[i].mesh.expert > 1;
	ck_assert(!any_expert);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(global_batch)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	uint64_t shards;

	/* a global batch of 12 splits over 1, 2 or 4 batch shards, not 8 */
	llama2_7b(&r.model);
	r.flash_attention = true;
	r.per_device_batch = 0;
	r.global_batch = 12;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 8, 1, 1), "global batch 12 not divisible by 8 batch shards");
	shards = (uint64_t)res.memory.mesh.data * res.memory.mesh.fsdp * res.memory.mesh.expert;
	ck_assert_uint_eq(12 % shards, 0);
	ck_assert_uint_eq(res.memory.per_device_batch * shards, 12);
	ck_assert_uint_eq(res.memory.global_batch, 12);
	ck_assert_uint_eq(res.memory.mesh.tensor, 2); /* the least tensor parallelism with 4 shards */
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 64 sequences of 4096 with every activation kept fit nowhere: at least 8 a GPU; the hint goes below that */
	r.flash_attention = false;
	r.remat = PLAN_REMAT_NONE;
	r.global_batch = 64;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_ptr_nonnull(hint(&res, PLAN_HINT_BATCH));
	ck_assert_uint_lt(hint(&res, PLAN_HINT_BATCH)->value, 8);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(hints_recompute_flash_and_batch)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	struct plan_memory mem;
	const struct plan_hint *h;

	/* 64 sequences of 4096 a GPU with every activation kept: nothing fits; full recomputation or a smaller
	 * per-device batch would, flash attention alone would not */
	llama2_7b(&r.model);
	r.seq_len = 4096;
	r.per_device_batch = 64;
	r.remat = PLAN_REMAT_NONE;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_BATCH);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_lt(h->value, 64);
	r.per_device_batch = h->value;
	ck_assert_int_eq(plan_evaluate(&r, &h->mesh, &mem), ACCELD_OK);
	ck_assert(mem.fits);
	r.per_device_batch = h->value + 1;
	ck_assert_int_eq(plan_evaluate(&r, &h->mesh, &mem), ACCELD_OK);
	ck_assert(!mem.fits);
	h = hint(&res, PLAN_HINT_REMAT);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_REMAT_FULL);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_FLASH)); /* 64 x 4096 tokens still need recomputation */
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* one sequence: flash attention alone (no stored scores) is enough */
	r.per_device_batch = 1;
	r.devices = gpus(8, 8, 24 * GIB, 8);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_FLASH);
	ck_assert_ptr_nonnull(h);
	ck_assert_msg(strstr(h->text, "flash attention") != NULL, "%s", h->text);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 6B parameters of f32 Adam (16 B/param, 96 GB) on one 80 GB GPU: mixed precision is 16 B/param too, pure
	 * bf16 (8 B/param) fits */
	r.model = (struct plan_model){.params = 6000000000ull};
	r.dtype = PLAN_F32;
	r.mixed_precision = false;
	r.devices = gpus(1, 1, 80 * GIB, 1);
	r.remat = PLAN_REMAT_AUTO;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_BF16);
	ck_assert(same_mesh(&h->mesh, 1, 1, 1, 1));
	ck_assert_ptr_null(hint(&res, PLAN_HINT_FLASH)); /* no shape: nothing to say about attention */
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(reserve_and_overflow)
{
	struct plan_request r = request(PLAN_INFER, gpus(1, 1, 16 * GIB, 1));
	struct plan_result res;
	json_t *doc;

	/* 7.5 GB of weights in 16 GiB: fits with the 0.1 reserve, not with 0.9 kept free */
	r.model.params = 3750000000ull;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	assert_texts_whole(&res);
	plan_result_free(&res);
	r.reserve_ppm = 900000;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* sequences and batches at their limits: the attention scores pass 2^64 and saturate; never a wrap that
	 * would fit */
	r.reserve_ppm = 100000;
	r.model = (struct plan_model){.params = 1000, .layers = 4096, .hidden = 1u << 20, .heads = 8192};
	r.seq_len = PLAN_MAX_SEQ;
	r.per_device_batch = PLAN_MAX_BATCH;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_uint_eq(res.memory.activations.bytes, UINT64_MAX);
	ck_assert_why(candidate(&res, 1, 1, 1, 1), "over 2^64 bytes");
	doc = plan_json(&res);
	ck_assert(json_is_null(json_object_get(json_object_get(json_object_get(doc, "memory"), "activations"),
					       "bytes")));
	json_decref(doc);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(request_checks)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	const char *param = NULL;
	char err[PLAN_TEXT_MAX];

	llama2_7b(&r.model);
	ck_assert_int_eq(plan_request_check(&r, &param, err, sizeof(err)), ACCELD_OK);
#define EXPECT(field)                                                                                                \
	do {                                                                                                         \
		ck_assert_int_eq(plan_request_check(&r, &param, err, sizeof(err)), ACCELD_EINVAL);                   \
		ck_assert_str_eq(param, field);                                                                      \
		r = saved;                                                                                           \
	} while (0)
	{
		const struct plan_request saved = r;

		r.dtype = PLAN_INT8;
		EXPECT("dtype");
		r.model.vocab = 0;
		EXPECT("params");
		r.model.hidden = 4095;
		EXPECT("heads");
		r.model.kv_heads = 5;
		EXPECT("kv_heads");
		r.model.hidden = 0;
		EXPECT("layers");
		r.model.experts_per_token = 2;
		EXPECT("experts");
		r.global_batch = 8;
		r.per_device_batch = 1;
		EXPECT("global_batch");
		r.seq_len = 0;
		EXPECT("seq_len");
		r.reserve_ppm = 900001;
		EXPECT("reserve");
		r.devices.memory_bytes = 0;
		EXPECT("devices");
		r.devices.count = 0;
		EXPECT("devices");
		r.devices.per_host = 3;
		EXPECT("devices");
		r.devices.fast_domain = 3;
		EXPECT("devices");
		r.devices = tpu(8, 8, 32 * GIB, 4, 4, 0); /* 16 chips a slice, 8 given */
		EXPECT("devices");
		r.devices = tpu(8, 8, 32 * GIB, 2, 0, 4);
		EXPECT("devices");
	}
#undef EXPECT
	r.dtype = PLAN_INT8;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EINVAL);
	ck_assert_msg(strstr(res.detail, "int8 is for inference") != NULL, "%s", res.detail);
	assert_texts_whole(&res);
	plan_result_free(&res);
	/* inference takes int4 weights: 0.5 B/param */
	r.mode = PLAN_INFER;
	r.dtype = PLAN_INT4;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_uint_eq(res.memory.weights.bytes, 6738415616ull / 2); /* a replica a GPU: data 8 */
	ck_assert(same_mesh(&res.memory.mesh, 8, 1, 1, 1));
	ck_assert_msg(strstr(res.memory.weights.formula, "x 0.5 B (int4)") != NULL, "%s", res.memory.weights.formula);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

START_TEST(names_and_parsers)
{
	enum plan_dtype d;
	enum plan_optimizer o;
	enum plan_remat rm;
	enum plan_kind k;
	enum plan_mode m;
	unsigned t[3];

	ck_assert_int_eq(plan_dtype_parse("fp32", &d), 0);
	ck_assert_int_eq(d, PLAN_F32);
	ck_assert_int_eq(plan_dtype_parse("int4", &d), 0);
	ck_assert_int_eq(d, PLAN_INT4);
	ck_assert_int_eq(plan_dtype_parse("bfloat16", &d), 0);
	ck_assert_int_eq(d, PLAN_BF16);
	ck_assert_int_eq(plan_dtype_parse("fp64", &d), -1);
	ck_assert_int_eq(plan_dtype_parse(NULL, &d), -1);
	ck_assert_int_eq(plan_optimizer_parse("adamw", &o), 0);
	ck_assert_int_eq(o, PLAN_ADAM);
	ck_assert_int_eq(plan_optimizer_parse("momentum", &o), 0);
	ck_assert_int_eq(o, PLAN_SGD_MOMENTUM);
	ck_assert_int_eq(plan_optimizer_parse("lion", &o), -1);
	ck_assert_int_eq(plan_remat_parse("auto", &rm), 0);
	ck_assert_int_eq(rm, PLAN_REMAT_AUTO);
	ck_assert_int_eq(plan_kind_parse("tpu", &k), 0);
	ck_assert_int_eq(k, PLAN_TPU);
	ck_assert_int_eq(plan_mode_parse("train", &m), 0);
	ck_assert_int_eq(m, PLAN_TRAIN);
	ck_assert_str_eq(plan_dtype_name(PLAN_FP8), "fp8");
	ck_assert_str_eq(plan_dtype_name(PLAN_DTYPE_AUTO), "bf16");
	ck_assert_str_eq(plan_remat_name((enum plan_remat)9), "?");
	ck_assert_str_eq(plan_hint_name(PLAN_HINT_FLASH), "flash_attention");
	ck_assert_int_eq(plan_torus_parse("4x4x8", t), 0);
	ck_assert_uint_eq(t[0], 4);
	ck_assert_uint_eq(t[2], 8);
	ck_assert_int_eq(plan_torus_parse("2x4", t), 0);
	ck_assert_uint_eq(t[1], 4);
	ck_assert_uint_eq(t[2], 0);
	ck_assert_int_eq(plan_torus_parse("2x0", t), -1);
	ck_assert_int_eq(plan_torus_parse("2x2x2x2", t), -1);
	ck_assert_int_eq(plan_torus_parse("4x", t), -1);
	ck_assert_int_eq(plan_torus_parse("x4", t), -1);
	ck_assert_int_eq(plan_torus_parse("2048", t), -1);
}
END_TEST

/* No float anywhere in the document: integers and strings only. */
static void assert_no_reals(json_t *v, const char *where)
{
	const char *key;
	json_t *child;
	size_t i;

	ck_assert_msg(!json_is_real(v), "a real number at %s", where);
	if (json_is_object(v)) {
		json_object_foreach(v, key, child)
			assert_no_reals(child, key);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			assert_no_reals(child, where);
	}
}

START_TEST(json_document)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	json_t *doc, *mem, *rej;

	llama2_7b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	doc = plan_json(&res);
	assert_no_reals(doc, "root");
	ck_assert(json_is_true(json_object_get(doc, "fits")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "mesh"), "fsdp")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "batch"), "global")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "model"), "params")), 6738415616);
	ck_assert(json_is_true(json_object_get(json_object_get(doc, "model"), "params_derived")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "model"), "head_dim")), 128);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "devices"), "reserve_ppm")), 100000);
	mem = json_object_get(doc, "memory");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(mem, "weights"), "bytes")),
			 2 * 6738415616 / 8);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(mem, "optimizer"), "formula")),
				     "ZeRO"));
	ck_assert_str_eq(json_string_value(json_object_get(mem, "remat")), "selective");
	rej = json_object_get(doc, "rejected");
	ck_assert_uint_eq(json_array_size(rej), res.ncandidates - 1); /* all but the chosen one */
	ck_assert(json_is_string(json_object_get(json_array_get(rej, 0), "reason")));
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "suggestions")), 0);
	ck_assert_ptr_null(json_object_get(doc, "detail"));
	json_decref(doc);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* nothing fits: mesh and batch null, the closest memory, suggestions and the detail */
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	doc = plan_json(&res);
	assert_no_reals(doc, "root");
	ck_assert(json_is_null(json_object_get(doc, "mesh")));
	ck_assert(json_is_false(json_object_get(json_object_get(doc, "memory"), "fits")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(doc, "suggestions"), 0),
							   "kind")), "devices");
	ck_assert(json_is_string(json_object_get(doc, "detail")));
	json_decref(doc);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

/* A fake environment: NAME=value pairs, NULL-terminated. */
static const char *fake_getenv(const char *name, void *ctx)
{
	const char *const *kv = ctx;

	for (size_t i = 0; kv[i]; i += 2)
		if (strcmp(kv[i], name) == 0)
			return kv[i + 1];
	return NULL;
}

START_TEST(env_tpu_workers)
{
	/* a v5p-32 slice's worker 2 (TPU VM or GKE TPU pod): the first host coordinates, on JAX's port 8476 */
	static const char *env[] = {"TPU_WORKER_HOSTNAMES", "t1v-n-0,t1v-n-1,t1v-n-2,t1v-n-3", "TPU_WORKER_ID",
					  "2", NULL};
	static const char *bad_id[] = {"TPU_WORKER_HOSTNAMES", "10.0.0.2,10.0.0.3", "TPU_WORKER_ID", "7", NULL};
	static const char *multi[] = {"TPU_WORKER_HOSTNAMES", "a,b", "TPU_WORKER_ID", "0",
					    "MEGASCALE_NUM_SLICES", "2", NULL};
	static const char *junk[] = {"TPU_WORKER_HOSTNAMES", "a,,b", "TPU_WORKER_ID", "0", NULL};
	struct plan_env e;
	json_t *doc;

	plan_env_jax(fake_getenv, env, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_TPU);
	ck_assert_str_eq(e.coordinator, "t1v-n-0:8476");
	ck_assert_int_eq(e.num_processes, 4);
	ck_assert_int_eq(e.process_id, 2);
	doc = plan_env_json(&e);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "source")), "tpu");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "JAX_PROCESS_ID")), "2");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "JAX_NUM_PROCESSES")), "4");
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "unknown")), 0);
	json_decref(doc);

	/* a worker id beyond the hosts stays unknown */
	plan_env_jax(fake_getenv, bad_id, &(struct plan_env_opts){.port = 1234}, &e);
	ck_assert_str_eq(e.coordinator, "10.0.0.2:1234");
	ck_assert_int_eq(e.num_processes, 2);
	ck_assert_int_eq(e.process_id, -1);
	doc = plan_env_json(&e);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "unknown"), 0)), "JAX_PROCESS_ID");
	json_decref(doc);

	/* multislice: not derived, not invented */
	plan_env_jax(fake_getenv, multi, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_TPU);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.num_processes, -1);
	ck_assert_msg(strstr(e.note, "multislice") != NULL, "%s", e.note);

	plan_env_jax(fake_getenv, junk, NULL, &e);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.process_id, -1);
}
END_TEST

START_TEST(env_kubernetes)
{
	/* a JobSet "train" with one replicated job "workers" of 4 pods: Kubernetes sets JOB_COMPLETION_INDEX, the pod
	 * is named <job>-<index>, and the manifest maps the jobset.sigs.k8s.io/jobset-name label to JOBSET_NAME */
	static const char *jobset[] = {"JOB_COMPLETION_INDEX", "3", "HOSTNAME", "train-workers-0-3",
					     "JOBSET_NAME", "train", NULL};
	static const char *plain[] = {"JOB_COMPLETION_INDEX", "1", "HOSTNAME", "pi-1", NULL};
	static const char *several[] = {"JOB_COMPLETION_INDEX", "1", "HOSTNAME", "train-workers-1-1",
					      "JOBSET_NAME", "train", "JOB_INDEX", "1", NULL};
	static const char *lws[] = {"LWS_LEADER_ADDRESS", "serve-0.serve.default", "LWS_GROUP_SIZE", "4",
					  "LWS_WORKER_INDEX", "2", NULL};
	static const char *preset[] = {"JAX_COORDINATOR_ADDRESS", "10.1.2.3:9999", "JAX_NUM_PROCESSES", "2",
					     "JAX_PROCESS_ID", "1", "TPU_WORKER_HOSTNAMES", "a,b", NULL};
	static const char *none[] = {"HOME", "/root", NULL};
	struct plan_env e;

	/* the process count is not in the pod: unknown unless the caller gives it */
	plan_env_jax(fake_getenv, jobset, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_K8S);
	ck_assert_str_eq(e.coordinator, "train-workers-0-0.train:8476");
	ck_assert_int_eq(e.process_id, 3);
	ck_assert_int_eq(e.num_processes, -1);
	plan_env_jax(fake_getenv, jobset, &(struct plan_env_opts){.processes = 4}, &e);
	ck_assert_int_eq(e.num_processes, 4);

	/* a plain indexed Job: no service unless the caller names it */
	plan_env_jax(fake_getenv, plain, NULL, &e);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.process_id, 1);
	ck_assert_msg(strstr(e.note, "no headless service") != NULL, "%s", e.note);
	plan_env_jax(fake_getenv, plain, &(struct plan_env_opts){.service = "pi-svc", .processes = 2}, &e);
	ck_assert_str_eq(e.coordinator, "pi-0.pi-svc:8476");
	ck_assert_int_eq(e.num_processes, 2);

	/* several Jobs in a JobSet: ids span them; left unknown */
	plan_env_jax(fake_getenv, several, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_K8S);
	ck_assert_int_eq(e.process_id, -1);
	ck_assert_str_eq(e.coordinator, "");

	plan_env_jax(fake_getenv, lws, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_LWS);
	ck_assert_str_eq(e.coordinator, "serve-0.serve.default:8476");
	ck_assert_int_eq(e.num_processes, 4);
	ck_assert_int_eq(e.process_id, 2);

	/* the JAX_ variables already set win over the TPU environment */
	plan_env_jax(fake_getenv, preset, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_PRESET);
	ck_assert_str_eq(e.coordinator, "10.1.2.3:9999");
	ck_assert_int_eq(e.process_id, 1);

	plan_env_jax(fake_getenv, none, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_NONE);
	ck_assert_int_eq(e.num_processes, -1);
	ck_assert_str_eq(plan_env_source_name(e.source), "none");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");

	tcase_add_test(tc, params_from_llama2_shapes);
	tcase_add_test(tc, params_from_mixtral_shape);
	tcase_add_test(tc, zero_mixed_precision_adam);
	tcase_add_test(tc, optimizer_states);
	tcase_add_test(tc, adafactor_factored_moments);
	tcase_add_test(tc, activations_korthikanti_gpt3);
	tcase_add_test(tc, kv_cache_llama2);
	tcase_add_test(tc, fsdp_llama2_7b_on_8_a100_40gb);
	tcase_add_test(tc, h100x8_llama2_7b_training);
	tcase_add_test(tc, llama2_70b_fsdp_needs_two_hosts);
	tcase_add_test(tc, llama2_70b_inference_one_h100);
	tcase_add_test(tc, llama2_70b_inference_h100x8_tensor_parallel);
	tcase_add_test(tc, l4x4_without_nvlink);
	tcase_add_test(tc, v6e8_llama2_7b_training);
	tcase_add_test(tc, v5p128_slice);
	tcase_add_test(tc, cpu_only_host);
	tcase_add_test(tc, link_rules);
	tcase_add_test(tc, moe_expert_axis);
	tcase_add_test(tc, global_batch);
	tcase_add_test(tc, hints_recompute_flash_and_batch);
	tcase_add_test(tc, reserve_and_overflow);
	tcase_add_test(tc, request_checks);
	tcase_add_test(tc, names_and_parsers);
	tcase_add_test(tc, json_document);
	tcase_add_test(tc, env_tpu_workers);
	tcase_add_test(tc, env_kubernetes);
	suite_add_tcase(s, tc);
	return s;
}
