/*
 * Unit tests for api_devices.c through hand-built requests: GET /devices and /devices/{id} with their ETags and
 * 304s, POST /devices/refresh, and the one rule for a device id a request names (api_device_check), in both scopes.
 */
#include <string.h>

#include "api/api.h"
#include "check_api.h"
#include "check_main.h"
#include "detect/device.h"
#include "store/store.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT);
}

static void teardown(void)
{
	check_app_stop(&app);
}

static const char *header(const struct http_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

/* The JSON body of a shared answer, parsed. */
static json_t *body_json(const struct http_resp *resp)
{
	json_t *doc = json_loadb(resp->body, resp->body_len, 0, NULL);

	ck_assert_ptr_nonnull(doc);
	return doc;
}

/* GET target with If-None-Match inm (NULL: none); returns the status, the ETag into etag when given. */
static int get(const char *target, const char *inm, char *etag, size_t etagsz, json_t **doc)
{
	struct check_req r;
	struct http_resp resp;
	int status;

	check_req_init(&r, HTTP_GET, target, NULL);
	r.req.if_none_match = inm;
	status = check_call(&app, &r, &resp);
	if (etag != NULL) {
		ck_assert_ptr_nonnull(header(&resp, "ETag"));
		snprintf(etag, etagsz, "%s", header(&resp, "ETag"));
	}
	if (doc != NULL)
		*doc = status == 200 ? body_json(&resp) : json_incref(resp.json);
	http_resp_release(&resp); /* lets the snapshot go */
	return status;
}

START_TEST(list_is_the_snapshot_with_its_etag)
{
	struct check_req r;
	struct http_resp resp;
	json_t *doc;

	check_req_init(&r, HTTP_GET, "/devices", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_str_eq(header(&resp, "Cache-Control"), "no-cache");
	ck_assert_int_eq(header(&resp, "ETag")[0], '"'); /* a strong, quoted tag */
	doc = body_json(&resp);
	ck_assert_ptr_nonnull(strstr(resp.body, "\"cpu:0\""));
	json_decref(doc);
	http_resp_release(&resp);
}
END_TEST

START_TEST(if_none_match_gives_304)
{
	char etag[64];
	char inm[160];

	ck_assert_int_eq(get("/devices", NULL, etag, sizeof(etag), NULL), 200);
	ck_assert_int_eq(get("/devices", etag, NULL, 0, NULL), 304);
	snprintf(inm, sizeof(inm), "W/%s", etag); /* a weak comparison matches the same tag */
	ck_assert_int_eq(get("/devices", inm, NULL, 0, NULL), 304);
	snprintf(inm, sizeof(inm), "\"other\", %s", etag); /* one of a list */
	ck_assert_int_eq(get("/devices", inm, NULL, 0, NULL), 304);
	ck_assert_int_eq(get("/devices", "*", NULL, 0, NULL), 304);
	ck_assert_int_eq(get("/devices", "\"other\"", NULL, 0, NULL), 200);
	snprintf(inm, sizeof(inm), "%.*s", (int)strlen(etag) - 1, etag); /* a prefix of the tag is another tag */
	ck_assert_int_eq(get("/devices", inm, NULL, 0, NULL), 200);
	ck_assert_int_eq(get("/devices", "", NULL, 0, NULL), 200);
}
END_TEST

START_TEST(one_device_by_id)
{
	char etag[64];
	json_t *doc;

	ck_assert_int_eq(get("/devices/cpu:0", NULL, etag, sizeof(etag), &doc), 200);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "id")), "cpu:0");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "cpu");
	json_decref(doc);
	ck_assert_int_eq(get("/devices/cpu:0", etag, NULL, 0, NULL), 304);

	/* a well-formed id of no device here: 404 naming it */
	ck_assert_int_eq(get("/devices/gpu:7", NULL, NULL, 0, &doc), 404);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")), "UNKNOWN_DEVICE");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "device")), "gpu:7");
	json_decref(doc);

	/* no device id at all: 400 naming the path parameter */
	ck_assert_int_eq(get("/devices/cpu0", NULL, NULL, 0, &doc), 400);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")), "INVALID_PARAMETER");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "parameter")), "id");
	json_decref(doc);
}
END_TEST

START_TEST(refresh_answers_the_new_snapshot_unconditionally)
{
	char etag[64];
	struct check_req r;
	struct http_resp resp;

	ck_assert_int_eq(get("/devices", NULL, etag, sizeof(etag), NULL), 200);
	check_req_init(&r, HTTP_POST, "/devices/refresh", NULL);
	r.req.if_none_match = etag; /* a refresh always answers the list */
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_ptr_nonnull(header(&resp, "ETag"));
	ck_assert_ptr_nonnull(strstr(resp.body, "\"cpu:0\""));
	http_resp_release(&resp);
}
END_TEST

START_TEST(parameters_are_checked)
{
	static const char *const targets[] = {"/devices?x=1", "/devices/cpu:0?verbose"};
	struct check_req r;
	struct http_resp resp;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		check_req_init(&r, HTTP_GET, targets[i], NULL);
		ck_assert_int_eq(check_call(&app, &r, &resp), 400);
		ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_PARAMETER");
		http_resp_release(&resp);
	}
	check_req_init(&r, HTTP_POST, "/devices/refresh?full", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	http_resp_release(&resp);
}
END_TEST

START_TEST(no_registry_is_503)
{
	check_unavailable(0, HTTP_GET, "/devices", NULL, "devices");
	check_unavailable(0, HTTP_GET, "/devices/cpu:0", NULL, "devices");
	check_unavailable(0, HTTP_POST, "/devices/refresh", NULL, "devices");
}
END_TEST

/* --- api_device_check --- */

START_TEST(device_check_syntax_and_where)
{
	struct http_resp resp;

	http_resp_init(&resp, "r");
	ck_assert(api_device_check(&app, "device", "cpu:0", API_DEVICE_PRESENT, &resp));
	ck_assert_ptr_null(resp.json); /* nothing answered */

	ck_assert(!api_device_check(&app, "device", "gpu-0", API_DEVICE_PRESENT, &resp));
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "device");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), DEVICE_ID_SYNTAX));
	http_resp_release(&resp);

	/* from a body: the field's JSONPath */
	http_resp_init(&resp, "r");
	ck_assert(!api_device_check(&app, "$.device", "GPU:0", API_DEVICE_PRESENT, &resp));
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "INVALID_VALUE");
	ck_assert_str_eq(check_member(&resp, "path"), "$.device");
	http_resp_release(&resp);
}
END_TEST

START_TEST(device_check_scopes)
{
	struct app with_store;
	struct device d;
	struct http_resp resp;

	/* present now only */
	http_resp_init(&resp, "r");
	ck_assert(!api_device_check(&app, "id", "gpu:3", API_DEVICE_PRESENT, &resp));
	ck_assert_int_eq(resp.status, 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_DEVICE");
	ck_assert_str_eq(check_member(&resp, "device"), "gpu:3");
	ck_assert_str_eq(check_member(&resp, "detail"), "no device 'gpu:3' on this host; GET /devices lists them");
	http_resp_release(&resp);

	/* or in the history: with no database there is none, and the detail says both were asked */
	http_resp_init(&resp, "r");
	ck_assert(!api_device_check(&app, "device", "gpu:3", API_DEVICE_OR_HISTORY, &resp));
	ck_assert_int_eq(resp.status, 404);
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "now or in its history"));
	http_resp_release(&resp);

	/* a device the history knows, gone from the host: there for the past, not for the present */
	check_app_start(&with_store, ROUTE_DETECT | ROUTE_STORE);
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.id, "gpu:3");
	DEVICE_SET(d.model, "Gone GPU");
	store_devices_seen(with_store.store, &d, 1, 1700000000000);
	ck_assert(store_flush(with_store.store, 10000));
	http_resp_init(&resp, "r");
	ck_assert(api_device_check(&with_store, "device", "gpu:3", API_DEVICE_OR_HISTORY, &resp));
	ck_assert(!api_device_check(&with_store, "device", "gpu:3", API_DEVICE_PRESENT, &resp));
	ck_assert_int_eq(resp.status, 404);
	http_resp_release(&resp);
	http_resp_init(&resp, "r");
	ck_assert(!api_device_check(&with_store, "device", "gpu:4", API_DEVICE_OR_HISTORY, &resp));
	http_resp_release(&resp);
	check_app_stop(&with_store);

	/* the helper for a device gone after the check answers the same 404 */
	http_resp_init(&resp, "r");
	api_unknown_device(&resp, "tpu:1", API_DEVICE_PRESENT);
	ck_assert_int_eq(resp.status, 404);
	ck_assert_str_eq(check_member(&resp, "device"), "tpu:1");
	http_resp_release(&resp);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_devices");
	TCase *tc = tcase_create("devices");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, list_is_the_snapshot_with_its_etag);
	tcase_add_test(tc, if_none_match_gives_304);
	tcase_add_test(tc, one_device_by_id);
	tcase_add_test(tc, refresh_answers_the_new_snapshot_unconditionally);
	tcase_add_test(tc, parameters_are_checked);
	tcase_add_test(tc, no_registry_is_503);
	tcase_add_test(tc, device_check_syntax_and_where);
	tcase_add_test(tc, device_check_scopes);
	suite_add_tcase(s, tc);
	return s;
}
