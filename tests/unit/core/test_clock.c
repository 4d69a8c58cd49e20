/* Unit tests for clock.c: deadlines for timed waits, RFC 3339 text both ways, and days since a date. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_main.h"
#include "core/clock.h"

START_TEST(timespec_add_carries_nanoseconds)
{
	struct timespec t = {.tv_sec = 10, .tv_nsec = 999999999};
	struct timespec r;

	r = clock_timespec_add(t, 1);
	ck_assert_int_eq(r.tv_sec, 11);
	ck_assert_int_eq(r.tv_nsec, 0);
	r = clock_timespec_add(t, 0);
	ck_assert_int_eq(r.tv_sec, 10);
	ck_assert_int_eq(r.tv_nsec, 999999999);
	/* 2.5 s onto .999999999: 13 s and .499999999 */
	r = clock_timespec_add(t, 2500000000ull);
	ck_assert_int_eq(r.tv_sec, 13);
	ck_assert_int_eq(r.tv_nsec, 499999999);
	t.tv_nsec = 0;
	r = clock_timespec_add(t, 250 * 1000000ull);
	ck_assert_int_eq(r.tv_sec, 10);
	ck_assert_int_eq(r.tv_nsec, 250000000);
	if (sizeof(time_t) == 8) {
		r = clock_timespec_add(t, UINT64_MAX);
		ck_assert_int_eq(r.tv_sec, 10 + (time_t)(UINT64_MAX / 1000000000ull));
		ck_assert_int_eq(r.tv_nsec, (long)(UINT64_MAX % 1000000000ull));
	}
	/* a sum past the largest time_t stays there rather than wrapping into the past */
	t.tv_sec = (time_t)(((uint64_t)1 << (sizeof(time_t) * 8 - 1)) - 2);
	r = clock_timespec_add(t, 5000000000ull);
	ck_assert_int_eq(r.tv_sec, t.tv_sec + 1);
	ck_assert_int_eq(r.tv_nsec, 999999999);
}
END_TEST

START_TEST(timespec_from_ns)
{
	struct timespec r = clock_timespec_from_ns(12345678901ull);

	ck_assert_int_eq(r.tv_sec, 12);
	ck_assert_int_eq(r.tv_nsec, 345678901);
	r = clock_timespec_from_ns(0);
	ck_assert_int_eq(r.tv_sec, 0);
	ck_assert_int_eq(r.tv_nsec, 0);
}
END_TEST

/* Nanoseconds of a timespec, for comparing deadlines. */
static uint64_t ns_of(struct timespec t)
{
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

START_TEST(deadline_is_now_plus_the_delay_on_that_clock)
{
	static const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		struct timespec before;
		struct timespec after;
		struct timespec d;

		/* the clock is read between before and after, so the deadline lies between them plus the delay */
		clock_gettime(clocks[i], &before);
		d = clock_deadline(clocks[i], 1500 * 1000000ull);
		clock_gettime(clocks[i], &after);
		ck_assert_int_ge(d.tv_nsec, 0);
		ck_assert_int_lt(d.tv_nsec, 1000000000);
		ck_assert_uint_ge(ns_of(d), ns_of(before) + 1500 * 1000000ull);
		ck_assert_uint_le(ns_of(d), ns_of(after) + 1500 * 1000000ull);
	}
}
END_TEST

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

START_TEST(days_since_a_date)
{
	int64_t day = 86400000;
	int64_t nov28 = 1795824000000; /* 2026-11-28T00:00:00Z */

	ck_assert_int_eq(clock_days_since("2026-11-28", nov28), 0);
	ck_assert_int_eq(clock_days_since("2026-11-28", nov28 + day - 1), 0);
	ck_assert_int_eq(clock_days_since("2026-11-27", nov28), 1);
	ck_assert_int_eq(clock_days_since("2026-02-24", nov28), 277);
	ck_assert_int_eq(clock_days_since("2024-02-29", nov28), 1003);
	ck_assert_int_eq(clock_days_since("2026-11-29", nov28), -1);
	ck_assert_int_eq(clock_days_since("1970-01-01", 0), 0);
	/* no such date: LONG_MIN */
	ck_assert(clock_days_since("", nov28) == LONG_MIN);
	ck_assert(clock_days_since(NULL, nov28) == LONG_MIN);
	ck_assert(clock_days_since("2026-02-30", nov28) == LONG_MIN);
	ck_assert(clock_days_since("2026-13-01", nov28) == LONG_MIN);
	ck_assert(clock_days_since("2026-11-28T00:00:00Z", nov28) == LONG_MIN);
	ck_assert(clock_days_since("26-11-28", nov28) == LONG_MIN);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("rfc3339");

	tcase_add_test(tc, timespec_add_carries_nanoseconds);
	tcase_add_test(tc, timespec_from_ns);
	tcase_add_test(tc, deadline_is_now_plus_the_delay_on_that_clock);
	tcase_add_test(tc, format);
	tcase_add_test(tc, parse);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, days_since_a_date);
	suite_add_tcase(s, tc);
	return s;
}
