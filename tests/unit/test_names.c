/* Unit tests for names.c: a word is found at its index, anything else (NULL, a prefix, another case) is not. */
#include <stddef.h>

#include "check_main.h"
#include "names.h"

static const char *const colours[] = {"red", "green", NULL, "blue"};

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

	tcase_add_test(tc, words_are_found_at_their_index);
	suite_add_tcase(s, tc);
	return s;
}
