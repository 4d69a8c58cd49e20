/*
 * Unit tests for imds.c against a metadata service played by acceld's own HTTP server on a free loopback port: the
 * request it sends (method, headers), the answer it keeps, and its bounds: statuses other than 200, no redirects,
 * the body cap, plain http only, no proxy, the timeout.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_main.h"
#include "detect/imds.h"
#include "http/http.h"

static struct http_server *srv;
static char url[128];
static char data[IMDS_MAX_BYTES + 1];
static atomic_uint requests;
static struct http_deferred *_Atomic slow;

static void big_body(struct http_resp *resp, size_t len)
{
	char *body = malloc(len);

	ck_assert_ptr_nonnull(body);
	memset(body, 'm', len);
	http_resp_bytes(resp, 200, "application/octet-stream", body, len);
}

/* The metadata service: what a request looked like, or the answer a path names. */
static void metadata(void *ctx, struct http_req *req, struct http_resp *resp)
{
	char text[256];

	(void)ctx;
	atomic_fetch_add(&requests, 1);
	if (strcmp(req->path, "/seen") == 0) {
		snprintf(text, sizeof(text), "%s auth=%s type=%s body=%d", req->method_name,
			 req->authorization ? req->authorization : "-", req->content_type ? req->content_type : "-",
			 (int)req->body_len);
		http_resp_text(resp, 200, text);
	} else if (strcmp(req->path, "/denied") == 0) {
		http_resp_text(resp, 401, "no token");
	} else if (strcmp(req->path, "/moved") == 0) {
		http_resp_text(resp, 302, "");
		http_resp_header(resp, "Location", "/seen");
	} else if (strcmp(req->path, "/exact") == 0) {
		big_body(resp, IMDS_MAX_BYTES);
	} else if (strcmp(req->path, "/big") == 0) {
		big_body(resp, IMDS_MAX_BYTES + 1);
	} else if (strcmp(req->path, "/slow") == 0) {
		atomic_store(&slow, http_resp_defer(resp)); /* answered by the test once the client gave up */
	} else {
		http_resp_text(resp, 404, "");
	}
}

static void setup(void)
{
	struct http_server_opts o = {.host = "127.0.0.1", .threads = 1, .max_connections = 8, .idle_timeout_s = 30,
				     .conn_memory = 32768, .max_body = 1024, .max_json_depth = 4,
				     .dispatch = metadata};
	char err[256] = "";

	atomic_store(&requests, 0);
	atomic_store(&slow, NULL);
	ck_assert_msg(http_server_start(&o, &srv, err, sizeof(err)) == 0, "start: %s", err);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", http_server_port(srv));
}

static void teardown(void)
{
	http_server_stop(srv);
}

/* Requests base url + path with method and headers (NULL-terminated, up to IMDS_MAX_HEADERS). */
static int ask(const char *method, const char *path, const char *h0, const char *h1, long timeout_ms,
	       struct imds_answer *a, char *why, size_t whysz)
{
	char full[256];
	struct imds_request req = {.method = method, .url = full, .headers = {h0, h1}, .timeout_ms = timeout_ms};

	snprintf(full, sizeof(full), "%s%s", path[0] == '/' ? url : "", path);
	a->data = data;
	why[0] = '\0';
	return imds_request(&req, a, why, whysz);
}

START_TEST(get_with_headers)
{
	struct imds_answer a;
	char why[128];

	ck_assert_int_eq(ask(NULL, "/seen", "Authorization: Bearer t0k", "Content-Type: text/x", 10000, &a, why,
			     sizeof(why)), 0);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(data, "GET auth=Bearer t0k type=text/x body=0"); /* NULL is GET */
	ck_assert_uint_eq(a.len, strlen(data));
	ck_assert_int_eq(ask("GET", "/seen", NULL, NULL, 10000, &a, why, sizeof(why)), 0);
	ck_assert_str_eq(data, "GET auth=- type=- body=0");
}
END_TEST

START_TEST(put_with_an_empty_body)
{
	struct imds_answer a;
	char why[128];

	/* EC2's token request: PUT, no body */
	ck_assert_int_eq(ask("PUT", "/seen", "Authorization: Bearer x", NULL, 10000, &a, why, sizeof(why)), 0);
	ck_assert_msg(strncmp(data, "PUT auth=Bearer x ", 18) == 0, "%s", data);
	ck_assert_ptr_nonnull(strstr(data, " body=0"));
}
END_TEST

START_TEST(other_statuses_fail_with_the_status)
{
	struct imds_answer a;
	char why[128];

	ck_assert_int_eq(ask(NULL, "/denied", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 401);
	ck_assert_str_eq(why, "HTTP status 401");
	ck_assert_int_eq(ask(NULL, "/nothing", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 404);

	/* a redirect is not followed: the answer is the 302 itself */
	ck_assert_int_eq(ask(NULL, "/moved", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 302);
	ck_assert_str_eq(why, "HTTP status 302");
	ck_assert_uint_eq(atomic_load(&requests), 3); /* /seen was never asked */
}
END_TEST

START_TEST(body_cap)
{
	struct imds_answer a;
	char why[128];

	ck_assert_int_eq(ask(NULL, "/exact", NULL, NULL, 10000, &a, why, sizeof(why)), 0);
	ck_assert_uint_eq(a.len, IMDS_MAX_BYTES);
	ck_assert_int_eq(data[IMDS_MAX_BYTES], '\0');

	/* one byte more fails the request; the buffer is never overrun */
	ck_assert_int_eq(ask(NULL, "/big", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_uint_le(a.len, IMDS_MAX_BYTES);
	ck_assert_int_eq(data[a.len], '\0');
	ck_assert_str_ne(why, "");
}
END_TEST

START_TEST(no_time_left_fails_at_once)
{
	struct imds_answer a;
	char why[128];

	ck_assert_int_eq(ask(NULL, "/seen", NULL, NULL, 0, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 0);
	ck_assert_str_eq(why, "no time left in the budget");
	ck_assert_int_eq(ask(NULL, "/seen", NULL, NULL, -5, &a, why, sizeof(why)), -1);
	ck_assert_uint_eq(atomic_load(&requests), 0); /* nothing was sent */
}
END_TEST

START_TEST(plain_http_only)
{
	struct imds_answer a;
	char why[128];

	ck_assert_int_eq(ask(NULL, "file:///etc/hostname", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 0);
	ck_assert_uint_eq(a.len, 0);
	ck_assert_str_ne(why, "");
}
END_TEST

START_TEST(proxies_are_not_used)
{
	struct imds_answer a;
	char why[128];

	/* a proxy in the environment that would fail every request */
	setenv("http_proxy", "http://127.0.0.1:9", 1);
	setenv("HTTP_PROXY", "http://127.0.0.1:9", 1);
	setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
	ck_assert_msg(ask(NULL, "/seen", NULL, NULL, 10000, &a, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(a.status, 200);
}
END_TEST

START_TEST(an_answer_that_never_comes_times_out)
{
	struct imds_answer a;
	char why[128];
	struct http_deferred *d;
	struct http_resp resp;

	ck_assert_int_eq(ask(NULL, "/slow", NULL, NULL, 1000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 0);
	ck_assert_ptr_nonnull(strstr(why, "imeout"));
	/* the request did arrive (the client stopped waiting for the answer); the server's thread may take it late */
	for (int left = 20000; left > 0 && atomic_load(&slow) == NULL; left--)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	d = atomic_exchange(&slow, NULL);
	ck_assert_ptr_nonnull(d);
	http_resp_init(&resp, http_deferred_request_id(d));
	http_resp_text(&resp, 200, "late");
	http_deferred_finish(d, &resp);
}
END_TEST

START_TEST(nobody_listening)
{
	struct imds_answer a;
	char why[128];
	unsigned port = http_server_port(srv);

	http_server_stop(srv);
	srv = NULL;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", port);
	ck_assert_int_eq(ask(NULL, "/seen", NULL, NULL, 10000, &a, why, sizeof(why)), -1);
	ck_assert_int_eq(a.status, 0);
	ck_assert_str_ne(why, "");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("imds");
	TCase *tc = tcase_create("imds");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_with_headers);
	tcase_add_test(tc, put_with_an_empty_body);
	tcase_add_test(tc, other_statuses_fail_with_the_status);
	tcase_add_test(tc, body_cap);
	tcase_add_test(tc, no_time_left_fails_at_once);
	tcase_add_test(tc, plain_http_only);
	tcase_add_test(tc, proxies_are_not_used);
	tcase_add_test(tc, an_answer_that_never_comes_times_out);
	tcase_add_test(tc, nobody_listening);
	suite_add_tcase(s, tc);
	return s;
}
