/*
 * Unit tests for plan_names.c: the names of a plan's enumerations both ways and a torus's notation.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

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

START_TEST(torus_grows_as_gcp_slices_do)
{
	unsigned t[3] = {2, 2, 1};
	static const unsigned three[][3] = {{2, 2, 2}, {2, 2, 4}, {2, 4, 4}, {4, 4, 4}, {4, 4, 8}, {4, 8, 8},
					    {8, 8, 8}, {8, 8, 16}, {8, 16, 16}, {16, 16, 16}};
	static const unsigned two[][3] = {{4, 4, 0}, {4, 8, 0}, {8, 8, 0}, {8, 16, 0}, {16, 16, 0}};

	/* v5p's 3D slices (cloud.google.com/tpu/docs/v5p) and v6e's 2D ones (docs/v6e), each from the one before */
	for (size_t i = 0; i < sizeof(three) / sizeof(three[0]); i++) {
		ck_assert(plan_torus_grow(t));
		ck_assert_mem_eq(t, three[i], sizeof(t));
	}
	ck_assert(!plan_torus_grow(t));
	memcpy(t, (unsigned[3]){2, 4, 0}, sizeof(t));
	for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++) {
		ck_assert(plan_torus_grow(t));
		ck_assert_mem_eq(t, two[i], sizeof(t));
	}
	ck_assert(!plan_torus_grow(t));
	/* issue #35, item 5: GKE's v5e and v6e hosts of a multi-host slice hold 4 chips (ct5lp-hightpu-4t,
	 * ct6e-standard-4t); a single-host v5e-8 or v6e-8 keeps its 8 */
	ck_assert_uint_eq(plan_torus_per_host((unsigned[3]){16, 16, 0}, 256, 8), 4);
	ck_assert_uint_eq(plan_torus_per_host((unsigned[3]){4, 4, 0}, 16, 8), 4);
	ck_assert_uint_eq(plan_torus_per_host((unsigned[3]){2, 4, 0}, 8, 8), 8);
	ck_assert_uint_eq(plan_torus_per_host((unsigned[3]){4, 4, 4}, 64, 4), 4);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_names");
	TCase *tc = tcase_create("plan_names");

	tcase_add_test(tc, names_and_parsers);
	tcase_add_test(tc, torus_grows_as_gcp_slices_do);
	suite_add_tcase(s, tc);
	return s;
}
