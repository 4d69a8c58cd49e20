/*
 * Unit tests for api_cost.c through hand-built requests: bad query parameters of GET /cost and /cost/estimate, the
 * structured faults of PUT /cost/prices, and the 503s the dispatcher answers for the price book and the database.
 */
#include <string.h>

#include "check_api.h"
#include "check_main.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT | ROUTE_STORE | ROUTE_COST);
}

static void teardown(void)
{
	check_app_stop(&app);
}

/* Calls target and checks a 400 with reason and parameter (NULL: no parameter member). */
static void expect_400(enum http_method m, const char *target, const char *body, const char *reason,
		       const char *parameter)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, m, target, body);
	ck_assert_msg(check_call(&app, &r, &resp) == 400, "%s: status %d", target, resp.status);
	ck_assert_str_eq(check_member(&resp, "reason"), reason);
	if (parameter != NULL)
		ck_assert_str_eq(check_member(&resp, "parameter"), parameter);
	http_resp_release(&resp);
}

START_TEST(cost_parameters)
{
	expect_400(HTTP_GET, "/cost?group_by=week", NULL, "INVALID_PARAMETER", "group_by");
	expect_400(HTTP_GET, "/cost?start_time=yesterday", NULL, "INVALID_TIME", "start_time");
	expect_400(HTTP_GET, "/cost?start_time=2026-01-02T00:00:00Z&end_time=2026-01-01T00:00:00Z", NULL,
		   "INVALID_WINDOW", "end_time");
	expect_400(HTTP_GET, "/cost?start_time=1990-01-01T00:00:00Z", NULL, "BEYOND_RETENTION", "start_time");
	expect_400(HTTP_GET, "/cost?colour=red", NULL, "UNKNOWN_PARAMETER", "colour");
}
END_TEST

START_TEST(cost_answers)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/cost?group_by=day", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(check_member(&resp, "group_by"), "day");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/cost?device=gpu:9", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:9");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/cost/estimate?device=gpu:9&seconds=1", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	http_resp_release(&resp);
}
END_TEST

START_TEST(estimate_parameters)
{
	expect_400(HTTP_GET, "/cost/estimate", NULL, "MISSING_PARAMETER", "seconds");
	expect_400(HTTP_GET, "/cost/estimate?seconds=5&kernel=dot", NULL, "INVALID_PARAMETER", "kernel");
	expect_400(HTTP_GET, "/cost/estimate?seconds=-1", NULL, "INVALID_PARAMETER", "seconds");
	expect_400(HTTP_GET, "/cost/estimate?seconds=1&n=4", NULL, "INVALID_PARAMETER", "n");
	expect_400(HTTP_GET, "/cost/estimate?kernel=fft&n=4", NULL, "INVALID_PARAMETER", "kernel");
	expect_400(HTTP_GET, "/cost/estimate?kernel=sgemm&m=4&n=4", NULL, "MISSING_PARAMETER", "k");
	expect_400(HTTP_GET, "/cost/estimate?kernel=dot&n=4&m=2", NULL, "INVALID_PARAMETER", "m");
	expect_400(HTTP_GET, "/cost/estimate?kernel=dot&n=0", NULL, "INVALID_PARAMETER", "n");
	expect_400(HTTP_GET, "/cost/estimate?device=cpu0&seconds=1", NULL, "INVALID_PARAMETER", "device");
	expect_400(HTTP_GET, "/cost?device=cpu0", NULL, "INVALID_PARAMETER", "device");
}
END_TEST

START_TEST(estimate_answers)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/cost/estimate?seconds=3600", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "estimates")), 1);
	http_resp_release(&resp);
}
END_TEST

/* PUT /cost/prices with body; checks a 400 with reason and path. */
static void expect_fault(const char *body, const char *reason, const char *path)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_PUT, "/cost/prices", body);
	ck_assert_msg(check_call(&app, &r, &resp) == 400, "%s: status %d", body, resp.status);
	ck_assert_msg(strcmp(check_member(&resp, "reason"), reason) == 0, "%s: %s", body, check_member(&resp, "reason"));
	ck_assert_str_eq(check_member(&resp, "path"), path);
	http_resp_release(&resp);
}

START_TEST(prices_faults_are_structured)
{
	expect_fault("{\"prices\":[{\"type\":\"cpu\",\"usd_per_hour\":1,\"x\":2}]}", "UNKNOWN_FIELD", "$.prices[0].x");
	expect_fault("{\"colour\":1,\"prices\":[]}", "UNKNOWN_FIELD", "$.colour");
	expect_fault("{\"prices\":[{\"type\":\"cpu\",\"usd_per_hour\":\"1\"}]}", "INVALID_TYPE",
		     "$.prices[0].usd_per_hour");
	expect_fault("{\"prices\":{}}", "INVALID_TYPE", "$.prices");
	expect_fault("[]", "INVALID_TYPE", "$");
	expect_fault("{\"prices\":[{\"device\":7,\"usd_per_hour\":1}]}", "INVALID_TYPE", "$.prices[0].device");
	expect_fault("{\"prices\":[{\"device\":\"\",\"usd_per_hour\":1}]}", "INVALID_VALUE", "$.prices[0].device");
	/* a price names a device id, which need not be here (prices outlive devices) but must be one */
	expect_fault("{\"prices\":[{\"device\":\"gpu0\",\"usd_per_hour\":1}]}", "INVALID_VALUE", "$.prices[0].device");
	expect_fault("{\"currency\":1,\"prices\":[]}", "INVALID_TYPE", "$.currency");
	expect_fault("{\"prices\":[{\"type\":\"cpu\",\"usd_per_hour\":-1}]}", "INVALID_VALUE",
		     "$.prices[0].usd_per_hour");
	expect_fault("{\"prices\":[{\"type\":\"fpga\",\"usd_per_hour\":1}]}", "INVALID_VALUE", "$.prices[0].type");
	expect_fault("{\"currency\":\"EUR\",\"prices\":[]}", "INVALID_VALUE", "$.currency");
	expect_fault("{\"prices\":[{\"type\":\"cpu\"}]}", "MISSING_FIELD", "$.prices[0].usd_per_hour");
	expect_fault("{\"prices\":[{\"usd_per_hour\":1}]}", "MISSING_FIELD", "$.prices[0]");
	expect_fault("{}", "MISSING_FIELD", "$.prices");
	expect_fault("{\"prices\":[{\"type\":\"cpu\",\"device\":\"cpu:0\",\"usd_per_hour\":1}]}", "CONFLICTING_FIELDS",
		     "$.prices[0]");
}
END_TEST

START_TEST(prices_put_answers_as_get)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_PUT, "/cost/prices", "{\"prices\":[{\"type\":\"cpu\",\"usd_per_hour\":0.25}]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "overrides")), 1);
	http_resp_release(&resp);

	/* the names a field takes, as every problem lists them */
	check_req_init(&r, HTTP_PUT, "/cost/prices", "{\"prices\":[{\"type\":\"fpga\",\"usd_per_hour\":2}]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "detail"), "$.prices[0].type: 'fpga' is not one of cpu, gpu, tpu");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 3);
	http_resp_release(&resp);
	check_req_init(&r, HTTP_PUT, "/cost/prices", "{\"prices\":[{\"type\":\"cpu\",\"usd_per_hour\":2,\"x\":1}]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 8);
	http_resp_release(&resp);

	check_req_init(&r, HTTP_PUT, "/cost/prices", "{\"prices\":[{\"device\":\"gpu:9\",\"usd_per_hour\":2}]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	http_resp_release(&resp);

	check_req_init(&r, HTTP_PUT, "/cost/prices?x=1", "{\"prices\":[]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_PARAMETER");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_PUT, "/cost/prices?prices=1", "{\"prices\":[]}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "field of the JSON body"));
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_prices_or_database_the_dispatcher_answers_503)
{
	static const char *const targets[] = {"/cost", "/cost/estimate?seconds=1", "/cost/prices"};

	/* no price book */
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		check_unavailable(ROUTE_STORE, HTTP_GET, targets[i], NULL, "prices");
	check_unavailable(ROUTE_STORE, HTTP_PUT, "/cost/prices", "{\"prices\":[]}", "prices");
	/* a price book but no database */
	check_unavailable(ROUTE_COST, HTTP_GET, "/cost", NULL, "database");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_cost");
	TCase *tc = tcase_create("cost");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cost_parameters);
	tcase_add_test(tc, cost_answers);
	tcase_add_test(tc, estimate_parameters);
	tcase_add_test(tc, estimate_answers);
	tcase_add_test(tc, prices_faults_are_structured);
	tcase_add_test(tc, prices_put_answers_as_get);
	tcase_add_test(tc, without_prices_or_database_the_dispatcher_answers_503);
	suite_add_tcase(s, tc);
	return s;
}
