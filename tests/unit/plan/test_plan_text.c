/*
 * Unit tests for plan_text.c: the phrases plans share, a near miss's shortfall among them.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan_text.h"

START_TEST(a_near_miss_says_its_shortfall)
{
	char out[96];

	/* issue #35, item 7: 15,507,922,944 bytes against 15,461,882,265 usable read "14.4 GiB of 14.4 GiB" */
	plan_need_text(out, sizeof(out), 15507922944ull, 15461882265ull);
	ck_assert_str_eq(out, "needs 14.4 GiB of 14.4 GiB usable (43.9 MiB short)");
	plan_need_text(out, sizeof(out), 1000, 600);
	ck_assert_str_eq(out, "needs 0.0 GiB of 0.0 GiB usable (400 B short)");
	plan_need_text(out, sizeof(out), 600, 1000);
	ck_assert_str_eq(out, "needs 0.0 GiB of 0.0 GiB usable");
	plan_need_text(out, sizeof(out), UINT64_MAX, 1000);
	ck_assert_str_eq(out, "needs over 2^64 bytes of 0.0 GiB usable");
}
END_TEST

START_TEST(mesh_and_sizes)
{
	char out[96];

	plan_mesh_text(&(struct plan_mesh){2, 4, 1, 1}, out, sizeof(out));
	ck_assert_str_eq(out, "data 2 x fsdp 4 x tensor 1 x expert 1");
	plan_gib_text(out, sizeof(out), 3ull << 30);
	ck_assert_str_eq(out, "3.0 GiB");
	ck_assert_str_eq(plan_per_param_text(4), "0.5");
	ck_assert_str_eq(plan_per_param_text(32), "4");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_text");
	TCase *tc = tcase_create("plan_text");

	tcase_add_test(tc, a_near_miss_says_its_shortfall);
	tcase_add_test(tc, mesh_and_sizes);
	suite_add_tcase(s, tc);
	return s;
}
