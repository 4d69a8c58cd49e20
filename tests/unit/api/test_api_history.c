/* Unit tests for api_history.c (GET /history) through hand-built requests: bad parameters, answers and the 503. */
#include <string.h>

#include "check_api.h"
#include "check_main.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT | ROUTE_STORE);
}

static void teardown(void)
{
	check_app_stop(&app);
}

static void expect_400(const char *target, const char *reason, const char *parameter)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, target, NULL);
	ck_assert_msg(check_call(&app, &r, &resp) == 400, "%s: status %d", target, resp.status);
	ck_assert_str_eq(check_member(&resp, "reason"), reason);
	ck_assert_str_eq(check_member(&resp, "parameter"), parameter);
	http_resp_release(&resp);
}

START_TEST(bad_parameters_are_named)
{
	expect_400("/history?metric=humidity", "INVALID_PARAMETER", "metric");
	expect_400("/history?step=soon", "INVALID_PARAMETER", "step");
	expect_400("/history?end_time=tomorrow", "INVALID_TIME", "end_time");
	expect_400("/history?start_time=2026-01-02T00:00:00Z&end_time=2026-01-01T00:00:00Z", "INVALID_WINDOW",
		   "end_time");
	expect_400("/history?start_time=1990-01-01T00:00:00Z", "BEYOND_RETENTION", "start_time");
	expect_400("/history?metric=power_watts&metric=power_watts", "DUPLICATE_PARAMETER", "metric");
	expect_400("/history?limit=3", "UNKNOWN_PARAMETER", "limit");
}
END_TEST

START_TEST(too_many_points_gives_the_limit)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/history?step=1ms", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "TOO_MANY_POINTS");
	ck_assert_str_eq(check_member(&resp, "parameter"), "step");
	ck_assert_int_eq(json_integer_value(json_object_get(resp.json, "limit")), 11000);
	http_resp_release(&resp);
}
END_TEST

START_TEST(answers)
{
	struct check_req r;
	struct http_resp resp;
	json_t *series;

	check_req_init(&r, HTTP_GET, "/history?metric=temperature_celsius", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(check_member(&resp, "unit"), "celsius");
	series = json_object_get(resp.json, "series");
	ck_assert_uint_eq(json_array_size(series), 1); /* cpu:0, present now, no samples yet */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(series, 0), "device")), "cpu:0");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/history?device=gpu:3", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:3");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/history?device=gpu-3", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "device");
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_the_database_the_dispatcher_answers_503)
{
	check_unavailable(ROUTE_DETECT, HTTP_GET, "/history", NULL, "database");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_history");
	TCase *tc = tcase_create("history");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bad_parameters_are_named);
	tcase_add_test(tc, too_many_points_gives_the_limit);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, without_the_database_the_dispatcher_answers_503);
	suite_add_tcase(s, tc);
	return s;
}
