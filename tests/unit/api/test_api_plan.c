/*
 * Unit tests for api_plan.c (GET and POST /plan) through hand-built requests on the fake registry's one CPU (cpu:0,
 * 8 GiB): bad parameters and fields named as the house names them (a parameter, or a JSONPath, with `accepted`
 * where the values form a set), the device ids' 400 and 404, what only the fields together say, an answer that
 * fits, one where nothing does (a 200 with fits false and suggestions), format=env, and the 503 without the
 * registry.
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
	ck_assert_msg(check_call(&app, &r, resp) == status, "%s %s: status %d %s", target, body ? body : "",
		      resp->status, check_member(resp, "detail") ? check_member(resp, "detail") : "");
	if (reason != NULL)
		ck_assert_str_eq(check_member(resp, "reason"), reason);
}

static size_t accepted(const struct http_resp *resp)
{
	return json_array_size(json_object_get(resp->json, "accepted"));
}

START_TEST(get_bad_values_name_the_parameter)
{
	struct http_resp resp;

	expect(&resp, HTTP_GET, "/plan?model=llama-9", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "model");
	ck_assert_uint_eq(accepted(&resp), 8);
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?params=7B&mode=serve", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "detail"), "mode: 'serve' is not one of infer, train");
	ck_assert_uint_eq(accepted(&resp), 2);
	http_resp_release(&resp);

	/* counts say their range; no accepted */
	expect(&resp, HTTP_GET, "/plan?layers=5000", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "detail"), "layers: '5000' is not an integer from 1 to 4096");
	ck_assert_ptr_null(json_object_get(resp.json, "accepted"));
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?colour=red", NULL, 400, "UNKNOWN_PARAMETER");
	ck_assert_uint_eq(accepted(&resp), 31);
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?params=7B&params=8B", NULL, 400, "DUPLICATE_PARAMETER");
	http_resp_release(&resp);

	/* the fields together: a combination is named by the field that breaks it */
	expect(&resp, HTTP_GET, "/plan?layers=32&hidden=4095&heads=32&vocab=32000", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "heads");
	ck_assert_str_eq(check_member(&resp, "detail"), "heads: hidden 4095 is not a multiple of heads 32; give head_dim");
	http_resp_release(&resp);

	/* no model at all: a missing parameter, named model, listing the presets */
	expect(&resp, HTTP_GET, "/plan?mode=train", NULL, 400, "MISSING_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "model");
	ck_assert_uint_eq(accepted(&resp), 8);
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "model: give model (a preset: llama-2-7b"));
	http_resp_release(&resp);
	expect(&resp, HTTP_POST, "/plan", "{\"mode\": \"train\"}", 400, "MISSING_FIELD");
	ck_assert_str_eq(check_member(&resp, "path"), "$.model");
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?model=llama-2-7b&params=7B", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "params");
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?params=7B&global_batch=8&per_device_batch=1", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "global_batch");
	http_resp_release(&resp);
}
END_TEST

START_TEST(device_ids_follow_the_one_rule)
{
	struct http_resp resp;

	expect(&resp, HTTP_GET, "/plan?params=7B&devices=gpu1", NULL, 400, "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "devices");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "'gpu1' is not a device id (cpu:N, gpu:N or tpu:N)"));
	http_resp_release(&resp);

	expect(&resp, HTTP_GET, "/plan?params=7B&devices=cpu:0,gpu:7", NULL, 404, "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:7");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "{\"params\": 7000000000, \"devices\": \"tpu:4242\"}", 404, "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "tpu:4242");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "{\"params\": 7000000000, \"devices\": \"GPU:0\"}", 400, "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.devices");
	ck_assert_str_eq(check_member(&resp, "detail"), "$.devices: 'GPU:0' is not a device id (cpu:N, gpu:N or tpu:N)");
	http_resp_release(&resp);

	/* the registry's own CPU by id, with a memory of its own */
	expect(&resp, HTTP_GET, "/plan?params=1B&devices=cpu:0&memory_bytes=4GiB", NULL, 200, NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(resp.json, "devices"), "memory_bytes")),
			 4ll << 30);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(resp.json, "devices"), "source")), "ids");
	http_resp_release(&resp);
}
END_TEST

START_TEST(post_types_fields_and_values)
{
	struct http_resp resp;

	expect(&resp, HTTP_POST, "/plan", "{\"layers\": \"32\"}", 400, "INVALID_TYPE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.layers");
	ck_assert_str_eq(check_member(&resp, "detail"), "$.layers: expected an integer");
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "{\"dtype\": \"fp64\"}", 400, "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.dtype");
	ck_assert_uint_eq(accepted(&resp), 6);
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "{\"colour\": 1, \"size\": 2}", 400, "UNKNOWN_FIELD");
	ck_assert_str_eq(check_member(&resp, "path"), "$.colour");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "fields")), 2);
	ck_assert_uint_eq(accepted(&resp), 31);
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "[1]", 400, "INVALID_TYPE");
	ck_assert_str_eq(check_member(&resp, "path"), "$");
	http_resp_release(&resp);

	/* a combination in a body: the JSONPath of the field that breaks it */
	expect(&resp, HTTP_POST, "/plan", "{\"params\": \"7B\", \"mode\": \"train\", \"dtype\": \"int8\"}", 400,
	       "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.dtype");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "$.dtype: training needs floating-point"));
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan?params=7B", "{}", 400, "UNKNOWN_PARAMETER");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "field of the JSON body"));
	http_resp_release(&resp);

	expect(&resp, HTTP_POST, "/plan", "{\"params\":", 400, "MALFORMED_JSON");
	http_resp_release(&resp);
}
END_TEST

START_TEST(answers)
{
	struct http_resp resp;
	json_t *doc;

	/* 1e9 parameters in bf16 (2 GB) and one layer's working set fit the 8 GiB CPU */
	expect(&resp, HTTP_GET, "/plan?params=1B&layers=16&hidden=2048&heads=16", NULL, 200, NULL);
	doc = resp.json;
	ck_assert(json_is_true(json_object_get(doc, "fits")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "mesh"), "data")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "memory"), "weights"),
							    "bytes")), 2000000000);
	ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(doc, "memory"), "total_bytes")),
			 2000000000);
	http_resp_release(&resp);

	/* a count alone leaves the activations and the KV cache unknown: null, and whether it fits too */
	expect(&resp, HTTP_GET, "/plan?params=1B", NULL, 200, NULL);
	doc = resp.json;
	ck_assert(json_is_null(json_object_get(doc, "fits")));
	ck_assert(json_is_null(json_object_get(json_object_get(json_object_get(doc, "memory"), "activations"),
					       "bytes")));
	ck_assert(json_is_null(json_object_get(json_object_get(json_object_get(doc, "memory"), "kv_cache"), "bytes")));
	ck_assert(json_is_null(json_object_get(json_object_get(doc, "memory"), "total_bytes")));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")), "cannot judge"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "devices"), "kind")), "cpu");
	http_resp_release(&resp);

	/* the same as a body */
	expect(&resp, HTTP_POST, "/plan",
	       "{\"params\": \"1B\", \"layers\": 16, \"hidden\": 2048, \"heads\": 16, \"seq_len\": null}", 200, NULL);
	ck_assert(json_is_true(json_object_get(resp.json, "fits")));
	http_resp_release(&resp);

	/* nothing fits (12 GB of bf16 weights): still a 200, with what would (int8 weights, 6 GB) */
	expect(&resp, HTTP_GET, "/plan?params=6B", NULL, 200, NULL);
	doc = resp.json;
	ck_assert(json_is_false(json_object_get(doc, "fits")));
	ck_assert(json_is_null(json_object_get(doc, "mesh")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(doc, "suggestions"), 0),
							   "kind")), "dtype");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(doc, "suggestions"), 0),
							   "value")), "int8");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")), "no mesh of 1 cpu devices"));
	http_resp_release(&resp);

	/* format=env: export lines; one host has nothing to export */
	expect(&resp, HTTP_GET, "/plan?params=1B&format=env", NULL, 200, NULL);
	ck_assert_str_eq(resp.content_type, "text/plain; charset=utf-8");
	ck_assert_uint_eq(resp.body_len, 0);
	http_resp_release(&resp);

	/* a shape this host does not have */
	expect(&resp, HTTP_POST, "/plan", "{\"model\": \"llama-2-70b\", \"mode\": \"train\", \"devices\": \"tpu: v5p-128\"}",
	       200, NULL);
	doc = resp.json;
	ck_assert(json_is_true(json_object_get(doc, "fits")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "mesh"), "fsdp")), 64);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "devices"), "hosts")), 16);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "devices"), "torus")), "4x4x4");
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_the_registry_the_dispatcher_answers_503)
{
	check_unavailable(0, HTTP_GET, "/plan?params=1B", NULL, "devices");
	check_unavailable(0, HTTP_POST, "/plan", "{}", "devices");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_plan");
	TCase *tc = tcase_create("plan");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_bad_values_name_the_parameter);
	tcase_add_test(tc, device_ids_follow_the_one_rule);
	tcase_add_test(tc, post_types_fields_and_values);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, without_the_registry_the_dispatcher_answers_503);
	suite_add_tcase(s, tc);
	return s;
}
