/*
 * Unit tests for names.c: a value's name, "?" past the table or at a hole, and a word found at its index while
 * anything else (NULL, a prefix, another case) is not.
 */
#include <stddef.h>

#include "check_main.h"
#include "core/names.h"

static const char *const colours[] = {"red", "green", NULL, "blue"};

START_TEST(values_are_named_and_others_are_unknown)
{
	ck_assert_str_eq(names_at(colours, 4, 0), "red");
	ck_assert_str_eq(names_at(colours, 4, 3), "blue");
	ck_assert_str_eq(names_at(colours, 4, 2), "?");
	ck_assert_str_eq(names_at(colours, 4, 4), "?");
	ck_assert_str_eq(names_at(colours, 4, (unsigned)-1), "?"); /* a negative enum value */
}
END_TEST

START_TEST(words_are_found_at_their_index)
{
	ck_assert_int_eq(names_find(colours, 4, "red"), 0);
	ck_assert_int_eq(names_find(colours, 4, "blue"), 3);
	ck_assert_int_eq(names_find(colours, 3, "blue"), -1); /* past n */
	ck_assert_int_eq(names_find(colours, 4, "gree"), -1);
	ck_assert_int_eq(names_find(colours, 4, "Green"), -1);
	ck_assert_int_eq(names_find(colours, 4, ""), -1);
	ck_assert_int_eq(names_find(colours, 4, NULL), -1);
	ck_assert_int_eq(names_find(colours, 0, "red"), -1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, values_are_named_and_others_are_unknown);
	tcase_add_test(tc, words_are_found_at_their_index);
	suite_add_tcase(s, tc);
	return s;
}
