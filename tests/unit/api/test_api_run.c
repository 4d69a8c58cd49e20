/*
 * Unit tests for api_run.c through hand-built requests: every fault of a POST /run body (named by reason and JSON
 * path), placement by the fields of /select (prefer, policy, allow_tpu, min_memory_bytes), a job queued with
 * wait=false and read back, the paging parameters of GET /run, unknown jobs, and the 503 without an executor.
 */
#include <string.h>

#include "check_api.h"
#include "check_main.h"
#include "exec/exec.h"

static struct app app;

static void setup(void)
{
	check_app_start(&app, ROUTE_DETECT | ROUTE_STORE | ROUTE_EXEC);
}

static void teardown(void)
{
	check_app_stop(&app);
}

/* POSTs body to /run and checks the status and reason, and the JSON path when path is not NULL. */
static void expect(const char *body, int status, const char *reason, const char *path)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_POST, "/run", body);
	ck_assert_msg(check_call(&app, &r, &resp) == status, "%s: status %d, %s", body, resp.status,
		      check_member(&resp, "detail"));
	ck_assert_str_eq(check_member(&resp, "reason"), reason);
	if (path != NULL)
		ck_assert_msg(check_member(&resp, "path") && strcmp(check_member(&resp, "path"), path) == 0,
			      "%s: path %s, want %s", body, check_member(&resp, "path"), path);
	http_resp_release(&resp);
}

START_TEST(bodies_are_checked_field_by_field)
{
	expect("[1]", 400, "INVALID_TYPE", "$");
	expect("{\"n\": 3}", 400, "MISSING_FIELD", "$.kernel");
	expect("{\"kernel\": \"fft\", \"n\": 3}", 400, "INVALID_VALUE", "$.kernel");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"colour\": 1}", 400, "UNKNOWN_FIELD", "$.colour");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"k\": 2}", 400, "NOT_APPLICABLE", "$.k");
	expect("{\"kernel\": \"dot\", \"n\": 3, \"alpha\": 2}", 400, "NOT_APPLICABLE", "$.alpha");
	expect("{\"kernel\": \"saxpy\", \"n\": 2.5}", 400, "INVALID_TYPE", "$.n");
	expect("{\"kernel\": \"saxpy\", \"n\": 0}", 400, "INVALID_VALUE", "$.n");
	expect("{\"kernel\": \"saxpy\"}", 400, "MISSING_FIELD", "$.n");
	expect("{\"kernel\": \"softmax\", \"n\": 3}", 400, "MISSING_FIELD", "$.m");
	expect("{\"kernel\": \"sgemm\", \"n\": 3, \"m\": 3}", 400, "MISSING_FIELD", "$.k");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"alpha\": \"NaN\"}", 400, "NOT_A_NUMBER", "$.alpha");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"alpha\": 1e39}", 400, "INVALID_VALUE", "$.alpha");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"verify\": 1}", 400, "INVALID_TYPE", "$.verify");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"return\": \"all\"}", 400, "INVALID_VALUE", "$.return");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"timeout_ms\": 0}", 400, "INVALID_VALUE", "$.timeout_ms");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"backend\": \"cuda\"}", 400, "INVALID_VALUE", "$.backend");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"device\": \"cpu:0\", \"prefer\": \"gpu\"}", 400,
	       "CONFLICTING_FIELDS", "$.prefer");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"device\": \"cpu0\"}", 400, "INVALID_VALUE", "$.device");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"device\": 0}", 400, "INVALID_TYPE", "$.device");
	expect("{\"kernel\": 7, \"n\": 3}", 400, "INVALID_TYPE", "$.kernel");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"timeout_ms\": \"1s\"}", 400, "INVALID_TYPE", "$.timeout_ms");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"generate\": {\"seed\": -1}}", 400, "INVALID_VALUE",
	       "$.generate.seed");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"generate\": {\"salt\": 1}}", 400, "UNKNOWN_FIELD",
	       "$.generate.salt");
	expect("{\"kernel\": \"saxpy\", \"generate\": {}, \"inputs\": {\"x\": [1], \"y\": [1]}}", 400,
	       "CONFLICTING_FIELDS", "$.generate");
	/* inline inputs: lengths, rows, types */
	expect("{\"kernel\": \"saxpy\", \"inputs\": {\"x\": [1, 2, 3], \"y\": [1, 2]}}", 400, "LENGTH_MISMATCH",
	       "$.inputs.y");
	expect("{\"kernel\": \"saxpy\", \"inputs\": {\"x\": [1, \"a\"], \"y\": [1, 2]}}", 400, "INVALID_TYPE",
	       "$.inputs.x[1]");
	expect("{\"kernel\": \"saxpy\", \"inputs\": {\"x\": [1]}}", 400, "MISSING_FIELD", "$.inputs.y");
	expect("{\"kernel\": \"saxpy\", \"inputs\": {\"x\": [1], \"y\": [1], \"z\": [1]}}", 400, "UNKNOWN_FIELD",
	       "$.inputs.z");
	expect("{\"kernel\": \"softmax\", \"inputs\": {\"x\": [[1, 2], [3]]}}", 400, "ROW_LENGTH_MISMATCH",
	       "$.inputs.x[1]");
	expect("{\"kernel\": \"sgemm\", \"inputs\": {\"a\": [1, 2, 3, 4], \"b\": [1, 2]}}", 400, "MISSING_FIELD",
	       "$.inputs.a");
}
END_TEST

/* The fields /select takes place a job the same way, and are checked the same way. */
START_TEST(placement_fields)
{
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"policy\": \"fast\"}", 400, "INVALID_VALUE", "$.policy");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"policy\": 1}", 400, "INVALID_TYPE", "$.policy");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"allow_tpu\": \"no\"}", 400, "INVALID_TYPE", "$.allow_tpu");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"prefer\": \"fpga\"}", 400, "INVALID_VALUE", "$.prefer");
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"min_memory_bytes\": -1}", 400, "INVALID_VALUE",
	       "$.min_memory_bytes");
	/* the fake CPU has 8 GiB: 16 GiB is more than any device has */
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"min_memory_bytes\": 17179869184}", 409, "NO_MATCHING_DEVICE",
	       NULL);
	/* no GPU: a GPU preference falls back only when allowed */
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"prefer\": \"gpu\", \"fallback\": false}", 409,
	       "NO_MATCHING_DEVICE", NULL);
	/* the executor's refusals (wait=false: a waiting request is answered through the server's deferred answer) */
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"device\": \"gpu:4\", \"wait\": false}", 404, "UNKNOWN_DEVICE",
	       NULL);
	expect("{\"kernel\": \"saxpy\", \"n\": 3, \"device\": \"cpu:0\", \"backend\": \"opencl\", \"wait\": false}", 422,
	       "UNSUPPORTED", NULL);
	expect("{\"kernel\": \"triad\", \"n\": 1000000000, \"wait\": false}", 413, "JOB_TOO_LARGE", NULL);
}
END_TEST

START_TEST(queued_job_is_read_back)
{
	struct check_req r;
	struct http_resp resp;
	char id[64];
	char path[96];
	const char *location = NULL;

	check_req_init(&r, HTTP_POST, "/run",
		       "{\"kernel\": \"dot\", \"n\": 4096, \"wait\": false, \"prefer\": \"gpu\", \"policy\": "
		       "\"cheapest\", \"min_memory_bytes\": 1024}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 202);
	ck_assert_str_eq(check_member(&resp, "device"), "cpu:0");
	ck_assert(json_is_true(json_object_get(resp.json, "fell_back")));
	ck_assert_str_eq(check_member(&resp, "fallback_from"), "gpu");
	ck_assert_ptr_nonnull(check_member(&resp, "placement"));
	snprintf(id, sizeof(id), "%s", check_member(&resp, "id"));
	for (size_t i = 0; i < resp.nheaders; i++)
		if (strcmp(resp.headers[i].name, "Location") == 0)
			location = resp.headers[i].value;
	snprintf(path, sizeof(path), "/run/%s", id);
	ck_assert_str_eq(location, path);
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, path, NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_str_eq(check_member(&resp, "id"), id);
	ck_assert_str_eq(check_member(&resp, "kernel"), "dot");
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/run?state=sleeping", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "state");
	http_resp_release(&resp);
	check_req_init(&r, HTTP_GET, "/run?page_size=101", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "parameter"), "page_size");
	http_resp_release(&resp);
	check_req_init(&r, HTTP_GET, "/run?state=interrupted&page_size=5", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	http_resp_release(&resp);
	check_req_init(&r, HTTP_GET, "/run/ffff", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	ck_assert_str_eq(check_member(&resp, "reason"), "JOB_NOT_FOUND");
	http_resp_release(&resp);
	check_req_init(&r, HTTP_DELETE, "/run/ffff", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 404);
	http_resp_release(&resp);
}
END_TEST

/* Messages repeat the value they refuse; a body field sent in the query string is said to belong in the body. */
START_TEST(messages_name_what_is_wrong)
{
	struct check_req r;
	struct http_resp resp;

	check_req_init(&r, HTTP_POST, "/run", "{\"kernel\": \"sgem\", \"n\": 3}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "detail"),
			 "$.kernel: 'sgem' is not one of saxpy, triad, dot, sgemm, softmax");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 5);
	http_resp_release(&resp);

	check_req_init(&r, HTTP_POST, "/run?wait=false", "{\"kernel\": \"saxpy\", \"n\": 3}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNKNOWN_PARAMETER");
	ck_assert_str_eq(check_member(&resp, "parameter"), "wait");
	ck_assert_ptr_nonnull(strstr(check_member(&resp, "detail"), "field of the JSON body"));
	http_resp_release(&resp);

	/* n is the kernel's own n: sgemm's needs m and k beside it, and the answer says what each is */
	check_req_init(&r, HTTP_POST, "/run", "{\"kernel\": \"sgemm\", \"n\": 1024}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 400);
	ck_assert_str_eq(check_member(&resp, "detail"),
			 "$.m: sgemm takes m, n and k: C[m x n] = A[m x k] x B[k x n]");
	http_resp_release(&resp);
}
END_TEST

/* GET /run lists summaries: a job of return=full shows its output in GET /run/{id} only. */
START_TEST(the_list_carries_no_outputs)
{
	struct check_req r;
	struct http_resp resp;
	struct exec_job *job;
	json_t *listed;
	char path[96];

	check_req_init(&r, HTTP_POST, "/run",
		       "{\"kernel\": \"saxpy\", \"n\": 1000, \"return\": \"full\", \"wait\": false}");
	ck_assert_int_eq(check_call(&app, &r, &resp), 202);
	snprintf(path, sizeof(path), "/run/%s", check_member(&resp, "id"));
	job = exec_get(app.exec, check_member(&resp, "id"));
	http_resp_release(&resp);
	ck_assert_ptr_nonnull(job);
	exec_job_wait(job);
	exec_job_unref(job);

	check_req_init(&r, HTTP_GET, path, NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(resp.json, "result"), "output")), 1000);
	http_resp_release(&resp);

	check_req_init(&r, HTTP_GET, "/run", NULL);
	ck_assert_int_eq(check_call(&app, &r, &resp), 200);
	listed = json_array_get(json_object_get(resp.json, "jobs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(listed, "return")), "full");
	ck_assert_ptr_nonnull(json_object_get(json_object_get(listed, "result"), "checksum"));
	ck_assert_ptr_null(json_object_get(json_object_get(listed, "result"), "output"));
	http_resp_release(&resp);
}
END_TEST

START_TEST(no_executor_is_503)
{
	check_unavailable(ROUTE_DETECT, HTTP_POST, "/run", "{\"kernel\": \"saxpy\", \"n\": 3}", "executor");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("api_run");
	TCase *tc = tcase_create("api_run");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bodies_are_checked_field_by_field);
	tcase_add_test(tc, placement_fields);
	tcase_add_test(tc, queued_job_is_read_back);
	tcase_add_test(tc, messages_name_what_is_wrong);
	tcase_add_test(tc, the_list_carries_no_outputs);
	tcase_add_test(tc, no_executor_is_503);
	suite_add_tcase(s, tc);
	return s;
}
