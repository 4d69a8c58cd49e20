/* Unit tests for clock.c: RFC 3339 text both ways, and buf.c's cap. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check_main.h"
#include "clock.h"

START_TEST(format)
{
	char out[CLOCK_RFC3339_LEN];

	clock_rfc3339(0, out);
	ck_assert_str_eq(out, "1970-01-01T00:00:00.000Z");
	clock_rfc3339(1795318569123, out);
	ck_assert_str_eq(out, "2026-11-22T03:36:09.123Z");
}
END_TEST

START_TEST(parse)
{
	int64_t ms;

	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T03:36:09Z", &ms), 0);
	ck_assert_int_eq(ms, 1795318569000);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T03:36:09.123456Z", &ms), 0);
	ck_assert_int_eq(ms, 1795318569123);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T04:36:09+01:00", &ms), 0);
	ck_assert_int_eq(ms, 1795318569000);
	ck_assert_int_eq(clock_parse_rfc3339("2024-02-29t00:00:00z", &ms), 0);
	ck_assert_int_eq(clock_parse_rfc3339("2023-02-29T00:00:00Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22 03:36:09Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T03:36:09", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-13-01T00:00:00Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T24:00:00Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T03:36:09.Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("2026-11-22T03:36:09Zjunk", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("1969-12-31T23:59:59Z", &ms), -1);
	ck_assert_int_eq(clock_parse_rfc3339("", &ms), -1);
}
END_TEST

START_TEST(round_trip)
{
	char out[CLOCK_RFC3339_LEN];
	int64_t ms;

	for (int64_t t = 0; t < 4102444800000; t += (int64_t)86399999 * 37) {
		clock_rfc3339(t, out);
		ck_assert_int_eq(clock_parse_rfc3339(out, &ms), 0);
		ck_assert_int_eq(ms, t);
	}
}
END_TEST

START_TEST(buf_cap)
{
	struct buf b;
	char *s;
	size_t len;

	buf_init(&b, 8);
	ck_assert_int_eq(buf_append(&b, "abcd", 4), 0);
	ck_assert_int_eq(buf_printf(&b, "%d", 1234), 0);
	ck_assert_int_eq(buf_append(&b, "x", 1), -1); /* would pass the cap: refused, unchanged */
	ck_assert_str_eq(b.data, "abcd1234");
	ck_assert_int_eq(buf_printf(&b, "%s", "y"), -1);
	s = buf_detach(&b, &len);
	ck_assert_uint_eq(len, 8);
	ck_assert_ptr_null(b.data);
	free(s);
	buf_release(&b);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("rfc3339");

	tcase_add_test(tc, format);
	tcase_add_test(tc, parse);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, buf_cap);
	suite_add_tcase(s, tc);
	return s;
}
