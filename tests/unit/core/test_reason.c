/* Unit tests for reason.c: the table of problem reasons is complete and well-formed. */
#include <string.h>

#include "check_main.h"
#include "core/reason.h"

static bool upper_snake(const char *s)
{
	if (*s < 'A' || *s > 'Z')
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return s[-1] != '_';
}

START_TEST(every_reason_has_a_name_a_status_and_a_title)
{
	for (int i = 0; i < REASON_COUNT; i++) {
		enum reason r = (enum reason)i;
		enum reason back;

		ck_assert_msg(upper_snake(reason_name(r)), "reason %d: '%s'", i, reason_name(r));
		ck_assert_int_ge(reason_status(r), 400);
		ck_assert_int_le(reason_status(r), 599);
		ck_assert_uint_gt(strlen(reason_title(r)), 0);
		ck_assert(reason_parse(reason_name(r), &back));
		ck_assert_int_eq(back, r); /* names are unique */
	}
	/* the entry REASON_INTERNAL names is the one a value outside the enum falls back on */
	ck_assert_str_eq(reason_name(REASON_INTERNAL), "INTERNAL");
	ck_assert_int_eq(reason_status(REASON_INTERNAL), 500);
	ck_assert_str_eq(reason_name(REASON_COUNT), "INTERNAL");
	ck_assert_int_eq(reason_status(REASON_COUNT), 500);
}
END_TEST

START_TEST(lookups)
{
	enum reason r = REASON_COUNT;

	ck_assert(reason_parse("INVALID_TYPE", &r));
	ck_assert_int_eq(r, REASON_INVALID_TYPE);
	ck_assert_int_eq(reason_status(REASON_INVALID_PARAMETER), 400);
	ck_assert_int_eq(reason_status(REASON_UNAVAILABLE), 503);
	ck_assert_int_eq(reason_status(REASON_QUEUE_FULL), 429);
	ck_assert(!reason_parse("WRONG_TYPE", &r)); /* merged into INVALID_TYPE */
	ck_assert(!reason_parse("EXECUTOR_UNAVAILABLE", &r)); /* now UNAVAILABLE with service "executor" */
	ck_assert(!reason_parse("invalid_type", &r));
	ck_assert(!reason_parse("", &r));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("reason");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, every_reason_has_a_name_a_status_and_a_title);
	tcase_add_test(tc, lookups);
	suite_add_tcase(s, tc);
	return s;
}
