/*
 * Unit tests for plan_mesh.c: the link and divisibility rules, the expert axis and a global batch's split.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

START_TEST(link_rules)
{
	struct plan_request r = request(PLAN_INFER, gpus(16, 16, 80 * GIB, 8));
	struct plan_result res;

	/* one host of 16 GPUs in two NVLink islands of 8: inference may run tensor 16 across them over PCIe (as
	 * vLLM does), ranked below any mesh whose tensor axis stays on NVLink */
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(candidate(&res, 1, 1, 16, 1)->slow_tensor);
	ck_assert(!candidate(&res, 2, 1, 8, 1)->slow_tensor);
	ck_assert_why(candidate(&res, 1, 1, 16, 1), "tensor 16 over PCIe ranks below NVLink");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* training keeps the tensor axis inside an island */
	r.mode = PLAN_TRAIN;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 1, 1, 16, 1), "tensor 16 splits a fast-link domain of 8");
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* an island of 6 (hosts of 12): tensor 4 does not divide it */
	llama2_7b(&r.model);
	r.devices = gpus(12, 12, 80 * GIB, 6);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_why(candidate(&res, 3, 1, 4, 1), "tensor 4 does not divide the fast-link domain of 6");
	assert_texts_whole(&res);
	plan_result_free(&res);
	r.mode = PLAN_INFER;

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

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_mesh");
	TCase *tc = tcase_create("plan_mesh");

	tcase_add_test(tc, link_rules);
	tcase_add_test(tc, moe_expert_axis);
	tcase_add_test(tc, global_batch);
	suite_add_tcase(s, tc);
	return s;
}
