/*
 * Unit tests for api_select.c (GET and POST /select) through hand-built requests: bad parameters and fields, the
 * 404 and 409 answers, and the 503 without the device registry.
 */
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

/* Calls and checks status and reason; the caller releases resp. */
static void expect(struct http_resp *resp, enum http_method m, const char *target, const char *body, int status,
		   const char *reason)
{
	struct check_req r;

	check_req_init(&r, m, target, body);
	ck_assert_msg(check_call(&app, &r, resp) == status, "%s %s: status %d", target, body ? body : "",
		      resp->status);
	if (reason != NULL)
		ck_assert_str_eq(check_member(resp, "reason"), reason);
}

START_TEST(get_bad_values_name_the_parameter)
{
	struct http_resp resp;

	expect(&resp, HTTP_GET, "/select?prefer=fpga", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "prefer");
	ck_assert_str_eq(check_member(&resp, "detail"), "prefer: 'fpga' is not one of auto, cpu, gpu, tpu");
	/* accepted: the one shape, an array of the names */
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 4);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(resp.json, "accepted"), 3)), "tpu");
	http_resp_release(&resp);

	/* a value from no set of names: no accepted, the detail says what is */
	expect(&resp, HTTP_GET, "/select?min_memory_bytes=lots", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "min_memory_bytes");
	ck_assert_ptr_null(json_object_get(resp.json, "accepted"));
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "'lots' is not a size"));
	http_resp_release(&resp);

	/* the one rule for device ids: malformed is a 400 naming the parameter, unknown a 404 naming the device */
	expect(&resp, HTTP_GET, "/select?device=gpu1", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "device");
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/select?colour=red", NULL, 400, "UNKNOWN_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "colour");
	http_resp_release(&resp);
}
END_TEST

START_TEST(post_types_fields_and_values)
{
	struct http_resp resp;

	/* one name for a wrong JSON type across the API: INVALID_TYPE (was WRONG_TYPE here); a body field is named
	 * by its JSONPath, never as a parameter */
	expect(&resp, HTTP_POST, "/select", "{\"allow_tpu\": \"yes\"}", 400, "INVALID_TYPE");
	ck_assert_ptr_null(json_object_get(resp.json, "parameter"));
	ck_assert_str_eq(check_member(&resp, "path"), "$.allow_tpu");
	ck_assert_str_eq(check_member(&resp, "detail"), "$.allow_tpu: expected a boolean");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"min_memory_bytes\": 1.5}", 400, "INVALID_TYPE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.min_memory_bytes");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "[\"prefer\"]", 400, "INVALID_TYPE");
	ck_assert_str_eq(check_member(&resp, "path"), "$");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"colour\": 1, \"size\": 2}", 400, "UNKNOWN_FIELD");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "fields")), 2);
	ck_assert_str_eq(check_member(&resp, "path"), "$.colour");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 9);
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"min_memory_bytes\": -1}", 400, "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.min_memory_bytes");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "$.min_memory_bytes: '-1' is not"));
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"policy\": \"random\"}", 400, "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.policy");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 4);
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"device\": \"gpu1\"}", 400, "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.device");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"device\": \"gpu:7\"}", 404, "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:7");
	http_resp_release(&resp);

	/* a body field sent in the query string: said so */
	expect(&resp, HTTP_POST, "/select?prefer=cpu", "{}", 400, "UNKNOWN_PARAMETER");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "field of the JSON body"));
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"prefer\":", 400, "MALFORMED_JSON");
	http_resp_release(&resp);
}
END_TEST

START_TEST(answers)
{
	struct http_resp resp;

	expect(&resp, HTTP_GET, "/select?prefer=cpu", NULL, 200, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(resp.json, "device"), "id")), "cpu:0");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/select", "{\"prefer\": \"cpu\", \"kernel\": null}", 200, NULL);
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/select?device=gpu:7", NULL, 404, "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:7");
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/select?min_memory_bytes=1024GiB", NULL, 409, "NO_MATCHING_DEVICE");
	ck_assert_ptr_nonnull(json_object_get(resp.json, "constraints"));
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_the_registry_the_dispatcher_answers_503)
{
	check_unavailable(0, HTTP_GET, "/select", NULL, "devices");
	check_unavailable(0, HTTP_POST, "/select", "{}", "devices");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_select");
	TCase *tc = tcase_create("select");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_bad_values_name_the_parameter);
	tcase_add_test(tc, post_types_fields_and_values);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, without_the_registry_the_dispatcher_answers_503);
	suite_add_tcase(s, tc);
	return s;
}
