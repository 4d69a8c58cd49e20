/*
 * Unit tests for api_static.c through hand-built requests: the dashboard built into the binary, the one read from
 * --static-dir while developing, and the headers that keep either from being cached stale or run as anything else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_api.h"
#include "check_main.h"
#include "core/mem.h"

static struct app app;
static char dir[] = "/tmp/acceld-static-XXXXXX";
static char index_path[sizeof(dir) + 16];

static void setup(void)
{
	check_app_start(&app, 0);
	snprintf(dir, sizeof(dir), "/tmp/acceld-static-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(index_path, sizeof(index_path), "%s/index.html", dir);
}

static void teardown(void)
{
	unlink(index_path);
	rmdir(dir);
	check_app_stop(&app); /* frees static_dir with the rest of the configuration */
}

static const char *header(const struct http_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

static int get_index(struct http_resp *resp)
{
	struct check_req r;

	check_req_init(&r, HTTP_GET, "/", NULL);
	return check_call(&app, &r, resp);
}

static void assert_page_headers(const struct http_resp *resp)
{
	ck_assert_str_eq(resp->content_type, "text/html; charset=utf-8");
	ck_assert_str_eq(header(resp, "Cache-Control"), "no-cache");
	ck_assert_str_eq(header(resp, "X-Content-Type-Options"), "nosniff");
	ck_assert_ptr_nonnull(strstr(header(resp, "Content-Security-Policy"), "default-src 'self'"));
}

START_TEST(built_in_page)
{
	struct http_resp resp;

	ck_assert_int_eq(get_index(&resp), 200);
	assert_page_headers(&resp);
	ck_assert_uint_gt(resp.body_len, 0);
	ck_assert_ptr_nonnull(memmem(resp.body, resp.body_len, "<html", 5));
	http_resp_release(&resp);
}
END_TEST

START_TEST(page_from_the_static_dir)
{
	static const char page[] = "<!doctype html><title>dev</title>";
	struct http_resp resp;
	FILE *f = fopen(index_path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(page, f);
	fclose(f);
	app.cfg.static_dir = xstrdup(dir);
	ck_assert_int_eq(get_index(&resp), 200);
	assert_page_headers(&resp);
	ck_assert_uint_eq(resp.body_len, strlen(page));
	ck_assert(memcmp(resp.body, page, resp.body_len) == 0);
	http_resp_release(&resp);

	/* read on each request: an edit shows at once */
	f = fopen(index_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("edited", f);
	fclose(f);
	ck_assert_int_eq(get_index(&resp), 200);
	ck_assert_uint_eq(resp.body_len, 6);
	ck_assert(memcmp(resp.body, "edited", 6) == 0);
	http_resp_release(&resp);
}
END_TEST

START_TEST(missing_or_oversized_page_is_404)
{
	struct http_resp resp;
	FILE *f;

	app.cfg.static_dir = xstrdup(dir);
	ck_assert_int_eq(get_index(&resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "NOT_FOUND");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "no index.html in --static-dir"));
	http_resp_release(&resp);

	/* past the 4 MiB cap: refused rather than read whole */
	f = fopen(index_path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 4 * 1024 * 1024, SEEK_SET), 0);
	fputc('x', f);
	fclose(f);
	ck_assert_int_eq(get_index(&resp), 404);
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "too large"));
	http_resp_release(&resp);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_static");
	TCase *tc = tcase_create("static");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, built_in_page);
	tcase_add_test(tc, page_from_the_static_dir);
	tcase_add_test(tc, missing_or_oversized_page_is_404);
	suite_add_tcase(s, tc);
	return s;
}
