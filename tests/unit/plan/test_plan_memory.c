/*
 * Unit tests for plan_memory.c: the memory formulas against worked examples from public sources (each named where it is
 * used).
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

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
	/* full recomputation also holds the layer being recomputed, whole (section 4.1): 2sbh/t a layer + 114sbh/t */
	ck_assert_uint_eq(mem.activations_full.bytes, 96 * (sbh * 2 / 8) + sbh * 114 / 8);
	ck_assert_msg(strstr(mem.activations_full.formula, "of the layer being recomputed") != NULL, "%s",
		      mem.activations_full.formula);
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

START_TEST(reserve_and_overflow)
{
	struct plan_request r = request(PLAN_INFER, gpus(1, 1, 16 * GIB, 1));
	struct plan_result res;
	json_t *doc;

	/* 7.5 GB of weights (and a small shape's one layer and KV cache) in 16 GiB: fits with the 0.1 reserve, not
	 * with 0.9 kept free */
	r.model = (struct plan_model){.params = 3750000000ull, .layers = 16, .hidden = 2048, .heads = 16};
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

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_memory");
	TCase *tc = tcase_create("plan_memory");

	tcase_add_test(tc, zero_mixed_precision_adam);
	tcase_add_test(tc, optimizer_states);
	tcase_add_test(tc, adafactor_factored_moments);
	tcase_add_test(tc, activations_korthikanti_gpt3);
	tcase_add_test(tc, kv_cache_llama2);
	tcase_add_test(tc, reserve_and_overflow);
	suite_add_tcase(s, tc);
	return s;
}
