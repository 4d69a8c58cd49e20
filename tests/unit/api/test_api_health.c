/*
 * Unit tests for api_health.c through hand-built requests: /livez, /readyz and /healthz (their checks, verbose,
 * exclude, the 503 NOT_READY that names what failed) and /version.
 */
#include <string.h>

#include "check_api.h"
#include "check_main.h"
#include "core/version.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_STORE);
}

static void teardown(void)
{
	check_app_stop(&app);
}

/* The text body of resp, as a string (the handlers' text answers hold no NUL). */
static const char *text_of(const struct http_resp *resp)
{
	static char text[1024];

	ck_assert_uint_lt(resp->body_len, sizeof(text));
	memcpy(text, resp->body, resp->body_len);
	text[resp->body_len] = '\0';
	return text;
}

static const char *header(const struct http_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

START_TEST(livez_answers_from_the_start)
{
	struct check_req r;
	struct http_resp resp;

	atomic_store(&app.started, false); /* before start-up is done, while draining: alive all the same */
	atomic_store(&app.draining, true);
	check_req_init(&r, HTTP_GET, "/livez", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(text_of(&resp), "ok\n");
	ck_assert_ptr_nonnull(strstr(resp.content_type, "text/plain"));
	http_resp_release(&resp);
}
END_TEST

START_TEST(ready_when_every_check_passes)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/readyz", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(text_of(&resp), "ok\n");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/readyz?verbose", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(text_of(&resp), "[+]startup ok\n[+]database ok\n[+]shutdown ok\nreadyz check passed\n");
	http_resp_release(&resp);

	/* /healthz is the same checks under the older name */
	check_req_init(&r, HTTP_GET, "/healthz?verbose", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_ptr_nonnull(strstr(text_of(&resp), "\nhealthz check passed\n"));
	http_resp_release(&resp);
}
END_TEST

START_TEST(not_ready_names_what_failed)
{
	struct app bare;
	struct check_req r;
	struct http_resp resp;
	json_t *checks;

	check_app_start(&bare, 0); /* no database */
	check_req_init(&r, HTTP_GET, "/readyz", NULL);
	ck_assert_int_eq(check_call(&bare, &r, &resp), 503);
	ck_assert_str_eq(check_member(&resp, "reason"), "NOT_READY");
	ck_assert_str_eq(check_member(&resp, "detail"), "database failed: database not open");
	ck_assert_ptr_nonnull(header(&resp, "Retry-After"));
	checks = json_object_get(resp.json, "checks");
	ck_assert_uint_eq(json_array_size(checks), 3);
	ck_assert_str_eq(json_string_value(json_array_get(checks, 0)), "[+]startup ok");
	ck_assert_str_eq(json_string_value(json_array_get(checks, 1)), "[-]database failed: database not open");
	ck_assert_str_eq(json_string_value(json_array_get(checks, 2)), "[+]shutdown ok");
	http_resp_release(&resp);

	/* a check may be excluded by name: the rest decide */
	check_req_init(&r, HTTP_GET, "/readyz?exclude=database&verbose", NULL);
	ck_assert_int_eq(check_call(&bare, &r, &resp), 200);
	ck_assert_str_eq(text_of(&resp),
			 "[+]startup ok\n[+]database ok (excluded)\n[+]shutdown ok\nreadyz check passed\n");
	http_resp_release(&resp);

	/* draining after SIGTERM: every failure is named, "; "-separated */
	atomic_store(&bare.draining, true);
	check_req_init(&r, HTTP_GET, "/readyz", NULL);
	ck_assert_int_eq(check_call(&bare, &r, &resp), 503);
	ck_assert_str_eq(check_member(&resp, "detail"),
			 "database failed: database not open; shutdown failed: draining after a termination signal");
	http_resp_release(&resp);
	check_app_stop(&bare);
}
END_TEST

START_TEST(not_ready_before_start_up)
{
	struct check_req r;
	struct http_resp resp;
	json_t *checks;

	atomic_store(&app.started, false);
	check_req_init(&r, HTTP_GET, "/readyz", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 503);
	ck_assert_str_eq(check_member(&resp, "reason"), "NOT_READY");
	checks = json_object_get(resp.json, "checks");
	ck_assert_str_eq(json_string_value(json_array_get(checks, 0)), "[-]startup failed: start-up work still running");
	/* the database is not asked before start-up has published it */
	ck_assert_str_eq(json_string_value(json_array_get(checks, 1)), "[-]database failed: not opened yet");
	http_resp_release(&resp);
	atomic_store(&app.started, true);
}
END_TEST

START_TEST(readyz_parameters_are_checked)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/readyz?verbos", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "verbos");
	http_resp_release(&resp);
}
END_TEST

START_TEST(version_names_the_build_and_libraries)
{
	struct check_req r;
	struct http_resp resp;
	json_t *doc;
	json_t *libs;

	check_req_init(&r, HTTP_GET, "/version", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_uint_gt(resp.body_len, 0);
	ck_assert_int_eq(resp.body[resp.body_len - 1], '\n');
	doc = json_loadb(resp.body, resp.body_len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), version_string());
	ck_assert_str_eq(json_string_value(json_object_get(doc, "commit")), version_commit());
	ck_assert_str_eq(json_string_value(json_object_get(doc, "build_time")), version_build_time());
	libs = json_object_get(doc, "libraries");
	ck_assert(json_is_object(libs));
	ck_assert_str_eq(json_string_value(json_object_get(libs, "libmicrohttpd")), http_library_version());
	json_decref(doc);
	http_resp_release(&resp);

	/* the same text every time, and before start-up too */
	atomic_store(&app.started, false);
	check_req_init(&r, HTTP_GET, "/version", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	doc = json_loadb(resp.body, resp.body_len, 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), version_string());
	json_decref(doc);
	http_resp_release(&resp);
	atomic_store(&app.started, true);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_health");
	TCase *tc = tcase_create("health");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, livez_answers_from_the_start);
	tcase_add_test(tc, ready_when_every_check_passes);
	tcase_add_test(tc, not_ready_names_what_failed);
	tcase_add_test(tc, not_ready_before_start_up);
	tcase_add_test(tc, readyz_parameters_are_checked);
	tcase_add_test(tc, version_names_the_build_and_libraries);
	suite_add_tcase(s, tc);
	return s;
}
