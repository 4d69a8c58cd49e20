/* Unit tests for dtype.c: every format has a name and a width, names and aliases parse, nothing else does. */
#include <string.h>

#include "check_main.h"
#include "core/dtype.h"

START_TEST(names_and_widths)
{
	for (int d = DTYPE_F32; d < DTYPE_COUNT; d++) {
		enum dtype back;

		ck_assert_uint_gt(dtype_bits((enum dtype)d), 0);
		ck_assert(dtype_parse(dtype_name((enum dtype)d), &back));
		ck_assert_int_eq(back, d);
		ck_assert_ptr_nonnull(strstr(DTYPE_NAMES, dtype_name((enum dtype)d)));
	}
	ck_assert_uint_eq(dtype_bits(DTYPE_F32), 32);
	ck_assert_uint_eq(dtype_bits(DTYPE_BF16), 16);
	ck_assert_uint_eq(dtype_bits(DTYPE_INT4), 4);
	ck_assert_uint_eq(dtype_bits(DTYPE_NONE), 0);
	ck_assert_str_eq(dtype_name(DTYPE_NONE), "");
}
END_TEST

START_TEST(aliases_parse_and_nothing_else)
{
	enum dtype d = DTYPE_NONE;

	ck_assert(dtype_parse("fp32", &d) && d == DTYPE_F32);
	ck_assert(dtype_parse("float32", &d) && d == DTYPE_F32);
	ck_assert(dtype_parse("fp16", &d) && d == DTYPE_F16);
	ck_assert(dtype_parse("bfloat16", &d) && d == DTYPE_BF16);
	ck_assert(!dtype_parse("", &d));
	ck_assert(!dtype_parse(NULL, &d));
	ck_assert(!dtype_parse("F32", &d));
	ck_assert(!dtype_parse("fp64", &d));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("dtype");

	tcase_add_test(tc, names_and_widths);
	tcase_add_test(tc, aliases_parse_and_nothing_else);
	suite_add_tcase(s, tc);
	return s;
}
