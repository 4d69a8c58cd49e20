/*
 * Unit tests of POST /devices/{id}/check, GET /devices/{id}/checks and GET /devices/{id}/checks/{check_id}
 * (api_check.c) through the route table: every body fault with its reason and path, 202 with Location, an answer
 * that waits for the check, the listing and its pages from memory (no history database here), 404s, and 503 when
 * the checks are not running. The checks are real and small (sgemm 256, triad of 1M elements on cpu:0).
 */
#include <string.h>

#include "check_api.h"
#include "check_main.h"
#include "detect/detect.h"
#include "check/devcheck.h"

static struct app app;

static bool view(void *ctx, const char *id, bool fresh, struct device *out)
{
	const struct detect_snapshot *snap = detect_acquire(ctx);
	const struct device *d = detect_find(snap, id);

	(void)fresh;
	if (d != NULL)
		*out = *d;
	detect_release(snap);
	return d != NULL;
}

static void setup(void)
{
	struct devcheck_opts o = {.device = view};

	check_app_start(&app, ROUTE_DETECT | ROUTE_EXEC);
	devcheck_settings_from_config(&app.cfg, &o.settings);
	o.settings.max_elements = 3u << 20;
	o.settings.matrix_max_n = 256;
	o.settings.matrix_budget_ms = 200;
	o.settings.memory_budget_ms = 200;
	o.settings.max_reps = 2;
	o.exec = app.exec;
	o.device_ctx = app.detect;
	ck_assert_int_eq(devcheck_new(&o, &app.devcheck), ACCELD_OK);
}

static void teardown(void)
{
	devcheck_free(app.devcheck);
	app.devcheck = NULL;
	check_app_stop(&app);
}

/* POSTs body to the device's check route and returns the status; resp is the caller's to release. */
static int post(const char *device, const char *body, struct http_resp *resp)
{
	struct check_req r;
	char target[128];

	snprintf(target, sizeof(target), "/devices/%s/check", device);
	check_req_init(&r, HTTP_POST, target, body);
	return check_call(&app, &r, resp);
}

static int get(const char *target, struct http_resp *resp)
{
	struct check_req r;

	check_req_init(&r, HTTP_GET, target, NULL);
	return check_call(&app, &r, resp);
}

/* The answer is a 400 with this reason naming this body field. */
static void bad_body(const char *body, const char *reason, const char *path)
{
	struct http_resp resp;

	ck_assert_int_eq(post("cpu:0", body, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), reason);
	if (path != NULL)
		ck_assert_str_eq(check_member(&resp, "path"), path);
	http_resp_release(&resp);
}

static void wait_for(const char *id)
{
	struct devcheck_run *run = devcheck_get(app.devcheck, id);

	ck_assert_ptr_nonnull(run);
	devcheck_run_wait(run);
	devcheck_run_unref(run);
}

START_TEST(bad_bodies_are_named)
{
	bad_body("{\"level\": \"thorough\"}", "INVALID_VALUE", "$.level");
	bad_body("{\"level\": 1}", "INVALID_TYPE", "$.level");
	bad_body("{\"duration_s\": 30}", "NOT_APPLICABLE", "$.duration_s");
	bad_body("{\"level\": \"long\", \"duration_s\": 1}", "INVALID_VALUE", "$.duration_s");
	bad_body("{\"level\": \"long\", \"duration_s\": 30.5}", "INVALID_TYPE", "$.duration_s");
	bad_body("{\"levle\": \"long\"}", "UNKNOWN_FIELD", "$.levle");
	bad_body("{\"wait\": \"yes\"}", "INVALID_TYPE", "$.wait");
	bad_body("{\"backend\": \"cuda\"}", "INVALID_VALUE", "$.backend");
	bad_body("[\"quick\"]", "INVALID_TYPE", "$");
	bad_body("{\"level\": ", "MALFORMED_JSON", NULL);
}
END_TEST

START_TEST(unknown_and_unsupported_devices)
{
	struct http_resp resp;

	ck_assert_int_eq(post("gpu:3", NULL, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:3");
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/gpu:3/checks", &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/gpu:3/checks/chk-none", &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	http_resp_release(&resp);
	/* a malformed id is the 400 of the path parameter, before the body is read */
	ck_assert_int_eq(post("cpu0", "{\"levle\": 1}", &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "id");
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/cpu0/checks", &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "id");
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/cpu:0/checks/chk-none", &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "CHECK_NOT_FOUND");
	http_resp_release(&resp);
	/* OpenCL serves no device without an OpenCL view */
	ck_assert_int_eq(post("cpu:0", "{\"backend\": \"opencl\"}", &resp), 422);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNSUPPORTED");
	http_resp_release(&resp);
}
END_TEST

START_TEST(accepted_then_listed_and_read)
{
	struct http_resp resp;
	char id[DEVCHECK_ID_MAX];
	char loc[128];
	const char *location = NULL;
	json_t *checks;

	ck_assert_int_eq(post("cpu:0", NULL, &resp), 202);
	snprintf(id, sizeof(id), "%s", check_member(&resp, "id"));
	ck_assert_str_eq(check_member(&resp, "level"), "quick");
	ck_assert_str_eq(check_member(&resp, "device"), "cpu:0");
	for (size_t i = 0; i < resp.nheaders; i++)
		if (strcmp(resp.headers[i].name, "Location") == 0)
			location = resp.headers[i].value;
	snprintf(loc, sizeof(loc), "/devices/cpu:0/checks/%s", id);
	ck_assert_ptr_nonnull(location);
	ck_assert_str_eq(location, loc);
	http_resp_release(&resp);
	wait_for(id);

	ck_assert_int_eq(get(loc, &resp), 200);
	ck_assert_str_eq(check_member(&resp, "state"), "succeeded");
	ck_assert_ptr_nonnull(check_member(&resp, "verdict"));
	http_resp_release(&resp);
	/* a check of another device is not found under this one */
	snprintf(loc, sizeof(loc), "/devices/gpu:0/checks/%s", id);
	ck_assert_int_eq(get(loc, &resp), 404);
	http_resp_release(&resp);

	ck_assert_int_eq(post("cpu:0", "{\"level\": \"quick\"}", &resp), 202);
	snprintf(loc, sizeof(loc), "%s", check_member(&resp, "id"));
	http_resp_release(&resp);
	wait_for(loc);
	ck_assert_int_eq(get("/devices/cpu:0/checks?page_size=1", &resp), 200);
	checks = json_object_get(resp.json, "checks");
	ck_assert_uint_eq(json_array_size(checks), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(checks, 0), "id")), loc);
	ck_assert_str_eq(check_member(&resp, "next_page_token"), loc);
	http_resp_release(&resp);
	snprintf(loc, sizeof(loc), "/devices/cpu:0/checks?page_size=1&page_token=%s", id);
	ck_assert_int_eq(get(loc, &resp), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "checks")), 0);
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/cpu:0/checks?page_size=0", &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "page_size");
	http_resp_release(&resp);
	ck_assert_int_eq(get("/devices/cpu:0/checks?page_token=chk-none", &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "page_token");
	http_resp_release(&resp);
}
END_TEST

START_TEST(wait_answers_when_the_check_ends)
{
	struct http_resp resp;
	struct http_resp done;
	json_t *list;

	ck_assert_int_eq(post("cpu:0", "{\"wait\": true}", &resp), 0);
	ck_assert_ptr_nonnull(resp.deferred);
	/* the check calls back before it counts as ended: once it has, the answer is there */
	list = devcheck_list_json(app.devcheck, "cpu:0", 1, NULL);
	wait_for(json_string_value(json_object_get(json_array_get(json_object_get(list, "checks"), 0), "id")));
	json_decref(list);
	http_resp_init(&done, "unit");
	ck_assert(http_deferred_take(resp.deferred, &done));
	ck_assert_int_eq(done.status, 200);
	ck_assert_str_eq(check_member(&done, "state"), "succeeded");
	ck_assert_ptr_nonnull(check_member(&done, "verdict"));
	http_resp_release(&done);
	http_resp_release(&resp);
}
END_TEST

START_TEST(without_checks_the_routes_answer_503)
{
	struct http_resp resp;

	devcheck_free(app.devcheck);
	app.devcheck = NULL;
	ck_assert_int_eq(post("cpu:0", NULL, &resp), 503);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNAVAILABLE");
	ck_assert_str_eq(check_member(&resp, "service"), "checks");
	http_resp_release(&resp);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_check");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_bodies_are_named);
	tcase_add_test(tc, unknown_and_unsupported_devices);
	tcase_add_test(tc, accepted_then_listed_and_read);
	tcase_add_test(tc, wait_answers_when_the_check_ends);
	tcase_add_test(tc, without_checks_the_routes_answer_503);
	suite_add_tcase(s, tc);
	return s;
}
