/*
 * Unit tests for plan_shape.c: parameter counts from a shape against the published ones.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

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

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_shape");
	TCase *tc = tcase_create("plan_shape");

	tcase_add_test(tc, params_from_llama2_shapes);
	tcase_add_test(tc, params_from_mixtral_shape);
	suite_add_tcase(s, tc);
	return s;
}
