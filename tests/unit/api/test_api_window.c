/* Unit tests for api_window.c: the windows and steps GET /history and GET /cost accept. */
#include <string.h>

#include "api/api_window.h"
#include "check_main.h"
#include "core/clock.h"

#define HOUR_MS 3600000LL
#define DAY_MS 86400000LL

/* 2026-01-02T00:00:00Z */
static const int64_t now = 1767312000000LL;

/* What api_window_parse answered. */
struct parsed {
	enum acceld_err rc;
	struct api_window w;
	const char *param;
	enum reason reason;
	char why[256];
};

static struct parsed parse(const char *start, const char *end, int64_t span_ms, int64_t retention_ms)
{
	struct parsed p;

	memset(&p, 0, sizeof(p));
	p.rc = api_window_parse(start, end, now, span_ms, retention_ms, &p.w, &p.param, &p.reason, p.why,
				sizeof(p.why));
	return p;
}

static int64_t step_of(const char *text)
{
	int64_t ms = -7;

	ck_assert_msg(api_window_step_parse(text, &ms) == 0, "step '%s' refused", text);
	return ms;
}

static void step_refused(const char *text)
{
	int64_t ms = -7;

	ck_assert_msg(api_window_step_parse(text, &ms) == -1, "step '%s' accepted", text ? text : "(null)");
	ck_assert_msg(ms == -7, "step '%s' wrote its result", text ? text : "(null)");
}

START_TEST(defaults_end_now_and_start_a_span_before)
{
	struct parsed p = parse(NULL, NULL, HOUR_MS, 14 * DAY_MS);

	ck_assert_int_eq(p.rc, ACCELD_OK);
	ck_assert_int_eq(p.w.end_ms, now);
	ck_assert_int_eq(p.w.start_ms, now - HOUR_MS);

	/* the default start counts back from the end asked for, not from now */
	p = parse(NULL, "2026-01-01T12:00:00Z", 2 * HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_OK);
	ck_assert_int_eq(p.w.end_ms, now - 12 * HOUR_MS);
	ck_assert_int_eq(p.w.start_ms, now - 14 * HOUR_MS);

	/* a start alone keeps the end at now */
	p = parse("2026-01-01T00:00:00Z", NULL, HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_OK);
	ck_assert_int_eq(p.w.start_ms, now - DAY_MS);
	ck_assert_int_eq(p.w.end_ms, now);
}
END_TEST

START_TEST(both_ends_are_rfc3339_with_offsets_and_fractions)
{
	struct parsed p = parse("2026-01-01T23:30:00.250+01:00", "2026-01-01T23:00:00Z", HOUR_MS, 14 * DAY_MS);

	ck_assert_int_eq(p.rc, ACCELD_OK);
	ck_assert_int_eq(p.w.start_ms, now - 90 * 60000LL + 250);
	ck_assert_int_eq(p.w.end_ms, now - HOUR_MS);
}
END_TEST

START_TEST(a_time_that_is_not_rfc3339_names_its_parameter)
{
	struct parsed p = parse(NULL, "tomorrow", HOUR_MS, 14 * DAY_MS);

	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_str_eq(p.param, "end_time");
	ck_assert_int_eq(p.reason, REASON_INVALID_TIME);
	ck_assert_ptr_nonnull(strstr(p.why, "'tomorrow'"));

	p = parse("1767312000", NULL, HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_str_eq(p.param, "start_time");
	ck_assert_int_eq(p.reason, REASON_INVALID_TIME);

	/* a date without a time of day is not a date-time */
	p = parse("2026-01-01", NULL, HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_str_eq(p.param, "start_time");

	/* both wrong: the end is read first */
	p = parse("yesterday", "tomorrow", HOUR_MS, 14 * DAY_MS);
	ck_assert_str_eq(p.param, "end_time");
}
END_TEST

START_TEST(an_end_not_after_the_start_is_refused)
{
	struct parsed p = parse("2026-01-01T12:00:00Z", "2026-01-01T11:00:00Z", HOUR_MS, 14 * DAY_MS);

	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_str_eq(p.param, "end_time");
	ck_assert_int_eq(p.reason, REASON_INVALID_WINDOW);
	ck_assert_ptr_nonnull(strstr(p.why, "after start_time"));

	/* the window is half-open: an empty one holds nothing */
	p = parse("2026-01-01T12:00:00Z", "2026-01-01T12:00:00Z", HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_int_eq(p.reason, REASON_INVALID_WINDOW);

	/* one millisecond is a window */
	p = parse("2026-01-01T12:00:00Z", "2026-01-01T12:00:00.001Z", HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_OK);

	/* a start alone after now leaves the default end before it */
	p = parse("2026-01-03T00:00:00Z", NULL, HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_int_eq(p.reason, REASON_INVALID_WINDOW);
}
END_TEST

START_TEST(a_start_beyond_retention_is_refused_with_the_oldest_time)
{
	char oldest[CLOCK_RFC3339_LEN];
	struct parsed p = parse("2025-12-18T23:59:59Z", NULL, HOUR_MS, 14 * DAY_MS);

	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_str_eq(p.param, "start_time");
	ck_assert_int_eq(p.reason, REASON_BEYOND_RETENTION);
	clock_rfc3339(now - 14 * DAY_MS, oldest);
	ck_assert_msg(strstr(p.why, oldest) != NULL, "'%s' does not name %s", p.why, oldest);
	ck_assert_ptr_nonnull(strstr(p.why, "14 days"));

	/* the oldest answerable time itself is answered */
	p = parse("2025-12-19T00:00:00Z", NULL, HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_OK);
	ck_assert_int_eq(p.w.start_ms, now - 14 * DAY_MS);

	/* retention counts back from now, whatever end the window has */
	p = parse("2025-12-18T00:00:00Z", "2025-12-18T12:00:00Z", HOUR_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.reason, REASON_BEYOND_RETENTION);

	/* a default span longer than the retention reaches beyond it too */
	p = parse(NULL, NULL, 15 * DAY_MS, 14 * DAY_MS);
	ck_assert_int_eq(p.rc, ACCELD_EINVAL);
	ck_assert_int_eq(p.reason, REASON_BEYOND_RETENTION);
}
END_TEST

START_TEST(steps_are_seconds_or_durations_with_a_unit)
{
	ck_assert_int_eq(step_of("60"), 60000);
	ck_assert_int_eq(step_of("0.5"), 500);
	ck_assert_int_eq(step_of("500ms"), 500);
	ck_assert_int_eq(step_of("30s"), 30000);
	ck_assert_int_eq(step_of("5m"), 300000);
	ck_assert_int_eq(step_of("1h"), HOUR_MS);
	ck_assert_int_eq(step_of("1.25"), 1250);

	step_refused(NULL);
	step_refused("");
	step_refused("soon");
	step_refused("5 minutes");
	step_refused("5M");
	step_refused("1d");
	step_refused("-1");
	step_refused("-5m");
	step_refused("nan");
	step_refused("inf");
	step_refused("60s ");
}
END_TEST

START_TEST(steps_run_from_one_millisecond_to_400_days)
{
	ck_assert_int_eq(step_of("1ms"), 1);
	ck_assert_int_eq(step_of("0.001"), 1);
	ck_assert_int_eq(step_of("9600h"), 400 * DAY_MS);
	ck_assert_int_eq(step_of("34560000"), 400 * DAY_MS);

	step_refused("0");
	step_refused("0ms");
	step_refused("0.0004");
	step_refused("9601h");
	step_refused("34560000.5");
	step_refused("99999999999999999999");
}
END_TEST

START_TEST(buckets_count_the_steps_rounded_up)
{
	struct api_window w = {now - HOUR_MS, now};

	ck_assert_int_eq(api_window_buckets(&w, 60000), 60);
	ck_assert_int_eq(api_window_buckets(&w, HOUR_MS), 1);
	ck_assert_int_eq(api_window_buckets(&w, 7 * 60000), 9);
	ck_assert_int_eq(api_window_buckets(&w, DAY_MS), 1);
	ck_assert_int_eq(api_window_buckets(&w, 1), HOUR_MS);

	w.start_ms = now - 1;
	ck_assert_int_eq(api_window_buckets(&w, 60000), 1);

	/* a day at 1 s is beyond the points one answer holds */
	w.start_ms = now - DAY_MS;
	ck_assert_int_gt(api_window_buckets(&w, 1000), API_WINDOW_MAX_POINTS);
	ck_assert_int_le(api_window_buckets(&w, 10000), API_WINDOW_MAX_POINTS);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_window");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, defaults_end_now_and_start_a_span_before);
	tcase_add_test(tc, both_ends_are_rfc3339_with_offsets_and_fractions);
	tcase_add_test(tc, a_time_that_is_not_rfc3339_names_its_parameter);
	tcase_add_test(tc, an_end_not_after_the_start_is_refused);
	tcase_add_test(tc, a_start_beyond_retention_is_refused_with_the_oldest_time);
	tcase_add_test(tc, steps_are_seconds_or_durations_with_a_unit);
	tcase_add_test(tc, steps_run_from_one_millisecond_to_400_days);
	tcase_add_test(tc, buckets_count_the_steps_rounded_up);
	suite_add_tcase(s, tc);
	return s;
}
