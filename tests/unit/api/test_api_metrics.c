/*
 * Unit tests for api_metrics.c through hand-built requests: GET /metrics renders the registry with what the
 * services hold in memory (devices, queues, the store's figures, the prices in force), and with none of them.
 */
#include <string.h>

#include "check_api.h"
#include "check_main.h"
#include "metrics/metrics.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT | ROUTE_STORE | ROUTE_COST | ROUTE_EXEC);
	app.metrics = metrics_new();
}

static void teardown(void)
{
	metrics_free(app.metrics);
	app.metrics = NULL;
	check_app_stop(&app);
}

static const char *header(const struct http_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

/* GET /metrics on a, the text into resp. */
static int scrape(struct app *a, struct http_resp *resp)
{
	struct check_req r;

	check_req_init(&r, HTTP_GET, "/metrics", NULL);
	return check_call(a, &r, resp);
}

/* The line of text that starts with prefix, or NULL. */
static const char *line_of(const struct http_resp *resp, const char *prefix)
{
	size_t plen = strlen(prefix);

	for (const char *p = resp->body; p != NULL && p < resp->body + resp->body_len; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, prefix, plen) == 0)
			return p;
	}
	return NULL;
}

START_TEST(every_service_is_exposed)
{
	struct http_resp resp;

	ck_assert_int_eq(scrape(&app, &resp), 200);
	ck_assert_str_eq(resp.content_type, METRICS_CONTENT_TYPE);
	ck_assert_str_eq(header(&resp, "Cache-Control"), "no-store");
	ck_assert_int_eq(resp.body[resp.body_len - 1], '\n');
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_build_info{"));
	/* the devices of the snapshot, their queues from the executor */
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_device_info{device=\"cpu:0\""));
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_job_queue_depth{device=\"cpu:0\"} 0\n"));
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_jobs_running{device=\"cpu:0\"} 0\n"));
	/* the store's figures */
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_store_up 1\n"));
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_store_write_backlog 0\n"));
	/* the host the price book prices (no cloud learned yet) */
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_host_info{cloud=\"none\",state=\"pending\"} 1\n"));
	http_resp_release(&resp);
}
END_TEST

/* The registry alone: every service the handler reads may be missing, and it still answers. */
START_TEST(no_service_but_the_registry)
{
	struct app bare;
	struct http_resp resp;

	check_app_start(&bare, 0);
	bare.metrics = metrics_new();
	ck_assert_int_eq(scrape(&bare, &resp), 200);
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_build_info{"));
	ck_assert_ptr_nonnull(line_of(&resp, "acceld_store_up 0\n")); /* no database is a database down */
	ck_assert_ptr_null(line_of(&resp, "acceld_device_info{"));
	ck_assert_ptr_null(line_of(&resp, "acceld_job_queue_depth{"));
	ck_assert_ptr_null(line_of(&resp, "acceld_host_info{"));
	http_resp_release(&resp);
	metrics_free(bare.metrics);
	bare.metrics = NULL;
	check_app_stop(&bare);
}
END_TEST

START_TEST(parameters_are_checked)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_GET, "/metrics?name=x", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_PARAMETER");
	http_resp_release(&resp);
}
END_TEST

START_TEST(no_registry_is_503)
{
	check_unavailable(ROUTE_DETECT | ROUTE_STORE, HTTP_GET, "/metrics", NULL, "metrics");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_service_is_exposed);
	tcase_add_test(tc, no_service_but_the_registry);
	tcase_add_test(tc, parameters_are_checked);
	tcase_add_test(tc, no_registry_is_503);
	suite_add_tcase(s, tc);
	return s;
}
