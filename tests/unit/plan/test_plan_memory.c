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

START_TEST(activations_take_their_dtype)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_memory bf16, f32;

	/* issue #35, item 3: Korthikanti's 34 and 5 are for 2-byte activations; f32 without mixed precision keeps
	 * 4-byte ones, twice the layers' share (the fp32 logits stay as they are) */
	llama2_7b(&r.model);
	r.remat = PLAN_REMAT_NONE;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 8, 1, 1}, &bf16), ACCELD_OK);
	r.dtype = PLAN_F32;
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 8, 1, 1}, &f32), ACCELD_OK);
	ck_assert_uint_eq(f32.activation_layer_bytes, 2 * bf16.activation_layer_bytes);
	ck_assert_uint_eq(f32.activations.bytes, 2 * bf16.activations.bytes - 4ull * 2048 * 32000);
	ck_assert_msg(strstr(f32.activations.formula, "x 2 for f32 activations") != NULL, "%s", f32.activations.formula);
	/* mixed precision computes in bf16 whatever the master copy's dtype */
	r.mixed_precision = true;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 8, 1, 1}, &f32), ACCELD_OK);
	ck_assert_uint_eq(f32.activations.bytes, bf16.activations.bytes);
	assert_whole(&f32);
}
END_TEST

START_TEST(fp8_training_keeps_16_bytes_a_param)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_memory mem;
	const uint64_t p = 6738415616ull;

	/* issue #35, item 4: fp8 training (Transformer Engine; NVIDIA's "Using FP8 with Transformer Engine") runs its
	 * matmuls in fp8 but keeps bf16 weights and gradients, an fp32 master copy and fp32 Adam states: 16 B/param,
	 * as bf16 mixed precision, never 1 + 1 + 12 */
	llama2_7b(&r.model);
	r.dtype = PLAN_FP8;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 8, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes, p / 8 * 2);
	ck_assert_uint_eq(mem.gradients.bytes, p / 8 * 2);
	ck_assert_uint_eq(mem.optimizer.bytes, p / 8 * 12);
	ck_assert_msg(strstr(mem.weights.formula, "fp8 training computes in fp8 but keeps bf16 weights") != NULL, "%s",
		      mem.weights.formula);
	/* without mixed precision too: fp8 states would not train */
	r.mixed_precision = false;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 8, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, p / 8 * 16);
	assert_whole(&mem);
}
END_TEST

START_TEST(zero_stages)
{
	struct plan_request r = request(PLAN_TRAIN, gpus(64, 8, 80 * GIB, 8));
	struct plan_memory mem;
	const struct plan_mesh fsdp64 = {1, 64, 1, 1};
	const uint64_t psi = 7500000000ull;

	/* Rajbhandari et al. 2020 (ZeRO), Figure 1: Psi = 7.5B parameters, N_d = 64, K = 12: baseline 120 GB a
	 * device; P_os 2Psi + 2Psi + K Psi / N_d = 31.4 GB; P_os+g 2Psi + (2 + K) Psi / N_d = 16.6 GB; P_os+g+p
	 * (2 + 2 + K) Psi / N_d = 1.9 GB */
	r.model.params = psi;
	r.zero = 1;
	ck_assert_int_eq(plan_evaluate(&r, &fsdp64, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, 2 * psi + 2 * psi + psi / 64 * 12);
	ck_assert_uint_eq((mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes) / 100000000, 314);
	ck_assert_uint_eq(mem.gather.bytes, 0);
	ck_assert_msg(strstr(mem.gradients.formula, "ZeRO-1 shards only the optimizer states") != NULL, "%s",
		      mem.gradients.formula);
	r.zero = 2;
	ck_assert_int_eq(plan_evaluate(&r, &fsdp64, &mem), ACCELD_OK);
	ck_assert_uint_eq((mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes) / 100000000, 166);
	r.zero = 3;
	ck_assert_int_eq(plan_evaluate(&r, &fsdp64, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, psi / 64 * 16);
	/* the default is 3 */
	r.zero = 0;
	ck_assert_int_eq(plan_evaluate(&r, &fsdp64, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.weights.bytes + mem.gradients.bytes + mem.optimizer.bytes, psi / 64 * 16);
}
END_TEST

START_TEST(fsdp_gathers_a_layer_and_prefetches_the_next)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(256, 4, 95 * GIB, 4, 8, 8));
	struct plan_memory mem;

	/* issue #35: one Llama 3.1 405B layer in bf16 is 6.4 GB (q, o 16384^2; k, v 16384 x 1024; three 16384 x
	 * 53248 FFN matrices; two norms), about twice with prefetch; and full recomputation holds one layer's
	 * activations while it recomputes it, 5.0 GB at 8192 with flash attention */
	r.model = (struct plan_model){.layers = 126, .hidden = 16384, .heads = 128, .kv_heads = 8, .ffn = 53248,
				      .gated_ffn = true, .vocab = 128256};
	r.seq_len = 8192;
	r.flash_attention = true;
	r.remat = PLAN_REMAT_FULL;
	ck_assert_int_eq(plan_evaluate(&r, &(struct plan_mesh){1, 256, 1, 1}, &mem), ACCELD_OK);
	ck_assert_uint_eq(mem.gather.bytes, 2 * 3187703808ull * 2);
	ck_assert_uint_eq(mem.gather.bytes / 2 / 100000000, 63); /* 6.4 GB a layer */
	ck_assert_uint_eq(mem.activation_layer_bytes, 8192ull * (18 * 16384 + 6 * 53248));
	ck_assert_uint_eq(mem.activation_layer_bytes / 100000000, 50); /* 5.0 GB */
	ck_assert_uint_eq(mem.activations_full.bytes,
			  126ull * 2 * 8192 * 16384 + mem.activation_layer_bytes + 4ull * 8192 * 128256);
	ck_assert_msg(strstr(mem.gather.formula, "prefetches the next") != NULL, "%s", mem.gather.formula);
	assert_whole(&mem);
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
	tcase_add_test(tc, activations_take_their_dtype);
	tcase_add_test(tc, fp8_training_keeps_16_bytes_a_param);
	tcase_add_test(tc, zero_stages);
	tcase_add_test(tc, fsdp_gathers_a_layer_and_prefetches_the_next);
	suite_add_tcase(s, tc);
	return s;
}
