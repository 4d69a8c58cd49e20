/* Unit tests for csv.c: records split in place, record counts, numbers within a range, unsigned fields. */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "core/csv.h"

START_TEST(split_unquotes_and_advances)
{
	char text[] = "a,\"b,\"\"c\"\"\",\n2,3\n";
	char *cols[4];
	size_t n;
	char *p = csv_split_record(text, cols, 4, &n);

	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(cols[0], "a");
	ck_assert_str_eq(cols[1], "b,\"c\"");
	ck_assert_str_eq(cols[2], "");
	p = csv_split_record(p, cols, 4, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(cols[1], "3");
	ck_assert_int_eq(*p, '\0');
}
END_TEST

START_TEST(records_bound_the_lines)
{
	ck_assert_uint_eq(csv_records(""), 1);
	ck_assert_uint_eq(csv_records("h\n"), 2);
	ck_assert_uint_eq(csv_records("h\na\nb"), 3);
}
END_TEST

START_TEST(numbers_within_a_range)
{
	ck_assert_double_eq(csv_number("0.25"), 0.25);
	ck_assert(isnan(csv_number("-1")));
	ck_assert(isnan(csv_number("")));
	ck_assert(isnan(csv_number("1x")));
	ck_assert_double_eq(csv_number_in("-33.87", -90, 90), -33.87);
	ck_assert_double_eq(csv_number_in("90", -90, 90), 90);
	ck_assert(isnan(csv_number_in("90.01", -90, 90)));
	ck_assert(isnan(csv_number_in("-180.5", -180, 180)));
	ck_assert(isnan(csv_number_in("nan", -180, 180)));
}
END_TEST

START_TEST(unsigned_fields)
{
	ck_assert_uint_eq(csv_uint("10de", 16, 0xffff), 0x10de);
	ck_assert_uint_eq(csv_uint("12", 10, 8), 0);
	ck_assert_uint_eq(csv_uint("", 10, 8), 0);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("csv");

	tcase_add_test(tc, split_unquotes_and_advances);
	tcase_add_test(tc, records_bound_the_lines);
	tcase_add_test(tc, numbers_within_a_range);
	tcase_add_test(tc, unsigned_fields);
	suite_add_tcase(s, tc);
	return s;
}
