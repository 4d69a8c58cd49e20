/*
 * Unit tests for plan_check.c: a request's ranges and combinations, and the field each refusal names.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

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

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_check");
	TCase *tc = tcase_create("plan_check");

	tcase_add_test(tc, request_checks);
	suite_add_tcase(s, tc);
	return s;
}
