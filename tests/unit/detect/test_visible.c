/* Unit tests for visible.c: CUDA-style visible-device lists. */
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "detect/visible.h"

static const char *const uuids[] = {"GPU-8932f937-d72c", "GPU-89a1c3e0-1111", "GPU-5e3c0c9a-aaaa", NULL};
static const char *const migs[] = {"MIG-aaaa1111", "MIG-bbbb2222"};
static const size_t mig_parent[] = {2, 0};

/* The selection for value over four devices (the last without a UUID), as "i,j,..", and where it stopped. */
static const char *pick(const char *value, int *stopped)
{
	static char text[64];
	struct visible_set set = {.n = 4, .uuids = uuids, .mig_uuids = migs, .mig_parent = mig_parent, .nmig = 2};
	size_t sel[8];
	size_t n = visible_select(value, &set, sel, 8, stopped);

	text[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%zu", i ? "," : "", sel[i]);
	return text;
}

START_TEST(ordinals)
{
	int stop;

	ck_assert_str_eq(pick(NULL, &stop), "0,1,2,3");
	ck_assert_int_eq(stop, -1);
	ck_assert_str_eq(pick("", &stop), "");
	ck_assert_int_eq(stop, -1);
	ck_assert_str_eq(pick("3,1", &stop), "3,1");
	ck_assert_str_eq(pick(" 2 ,\t0", &stop), "2,0");
	ck_assert_str_eq(pick("0,4,1", &stop), "0");
	ck_assert_int_eq(stop, 1);
	ck_assert_str_eq(pick("1,1,2", &stop), "1");
	ck_assert_int_eq(stop, 1);
	ck_assert_str_eq(pick("0,", &stop), "0");
	ck_assert_int_eq(stop, 1);
	ck_assert_str_eq(pick(",0", &stop), "");
	ck_assert_int_eq(stop, 0);
	ck_assert_str_eq(pick("+1", &stop), "");
	ck_assert_str_eq(pick("-1", &stop), "");
	ck_assert_str_eq(pick("1x", &stop), "");
	ck_assert_str_eq(pick("99999999999999999999", &stop), "");
	ck_assert_str_eq(pick("abc", &stop), "");
}
END_TEST

START_TEST(uuids_and_prefixes)
{
	int stop;

	ck_assert_str_eq(pick("GPU-8932f937-d72c", &stop), "0");
	ck_assert_str_eq(pick("GPU-8932", &stop), "0");
	ck_assert_str_eq(pick("gpu-89A1", &stop), "1");
	ck_assert_str_eq(pick("GPU-89", &stop), "");
	ck_assert_int_eq(stop, 0);
	ck_assert_str_eq(pick("GPU-", &stop), "");
	ck_assert_str_eq(pick("GPU-ffff", &stop), "");
	ck_assert_str_eq(pick("GPU-5e3c,1,GPU-8932", &stop), "2,1,0");
	ck_assert_str_eq(pick("GPU-5e3c,2", &stop), "2");
	ck_assert_int_eq(stop, 1);
	ck_assert_str_eq(pick("GPU-8932f937-d72c-extra", &stop), "");
}
END_TEST

START_TEST(mig)
{
	int stop;

	ck_assert_str_eq(pick("MIG-bbbb", &stop), "0");
	ck_assert_str_eq(pick("MIG-aaaa1111", &stop), "2");
	ck_assert_str_eq(pick("MIG-GPU-89a1c3e0/1/0", &stop), "1");
	ck_assert_str_eq(pick("MIG-GPU-89/1/0", &stop), "");
	ck_assert_str_eq(pick("MIG-cccc", &stop), "");
	ck_assert_str_eq(pick("MIG-", &stop), "");
}
END_TEST

START_TEST(no_uuids_and_cap)
{
	struct visible_set set = {.n = 3};
	size_t sel[2];
	int stop;

	ck_assert_uint_eq(visible_select("GPU-8932", &set, sel, 2, &stop), 0);
	ck_assert_uint_eq(visible_select("2,0", &set, sel, 2, &stop), 2);
	ck_assert_uint_eq(sel[0], 2);
	ck_assert_uint_eq(visible_select(NULL, &set, sel, 2, NULL), 2);
	ck_assert_uint_eq(visible_select("0,1,2", &set, sel, 2, &stop), 2);
	ck_assert_int_eq(stop, 2);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("visible");
	TCase *tc = tcase_create("visible");

	tcase_add_test(tc, ordinals);
	tcase_add_test(tc, uuids_and_prefixes);
	tcase_add_test(tc, mig);
	tcase_add_test(tc, no_uuids_and_cap);
	suite_add_tcase(s, tc);
	return s;
}
