/* Unit tests for api_batch.c (GET /batch-config) through hand-built requests: bad parameters and the 503. */
#include <string.h>

#include "check_api.h"
#include "check_main.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT);
}

static void teardown(void)
{
	check_app_stop(&app);
}

START_TEST(bad_value_names_the_parameter)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/batch-config?base=0", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "base");
	ck_assert_str_eq(check_member(&resp, "detail"), "base: '0' is not an integer from 1 to 1048576");
	ck_assert_ptr_null(json_object_get(resp.json, "accepted")); /* no set of names */
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/batch-config?mode=fly", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "mode");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 2);
	http_resp_release(&resp);
}
END_TEST

START_TEST(combinations_name_the_parameter)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/batch-config?model_bytes=1000&params=10", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_ptr_nonnull(check_member(&resp, "parameter"));
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/batch-config?dtype=fp32", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "dtype");
	http_resp_release(&resp);
}
END_TEST

START_TEST(unknown_and_repeated_parameters)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/batch-config?size=4", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "size");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/batch-config?base=2&base=4", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "DUPLICATE_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "base");
	http_resp_release(&resp);
}
END_TEST

START_TEST(device_and_answer)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/batch-config?device=gpu:7", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:7");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/batch-config?device=gpu7", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "device");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/batch-config?base=3", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_int_eq(json_integer_value(json_object_get(resp.json, "batch_size")), 4); /* CPU factor 1, rounded */
	http_resp_release(&resp);

	/* a model larger than memory: 422 with the arithmetic */
	check_req_init(&r, HTTP_GET, "/batch-config?model_bytes=100000000000&sample_bytes=1", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 422);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNSATISFIABLE");
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_the_registry_the_dispatcher_answers_503)
{
	check_unavailable(0, HTTP_GET, "/batch-config?base=0", NULL, "devices");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_batch");
	TCase *tc = tcase_create("batch-config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bad_value_names_the_parameter);
	tcase_add_test(tc, combinations_name_the_parameter);
	tcase_add_test(tc, unknown_and_repeated_parameters);
	tcase_add_test(tc, device_and_answer);
	tcase_add_test(tc, without_the_registry_the_dispatcher_answers_503);
	suite_add_tcase(s, tc);
	return s;
}
