/*
 * Unit tests for the request/response helpers of http_resp.c, which need no server: problems, parameters, JSON
 * bodies, request ids, method names, and deferred answers, with the server's part in them (suspending the
 * connection, the connection going away) played through http_int.h.
 */
#include <pthread.h>
#include <string.h>

#include "check_main.h"
#include "http/http.h"
#include "http/http_int.h"

static struct http_req make_req(const char *ctype, const char *body)
{
	struct http_req req;

	memset(&req, 0, sizeof(req));
	req.method = HTTP_POST;
	req.method_name = "POST";
	req.path = "/x";
	req.request_id = "rid-1";
	req.content_type = ctype;
	req.body = body;
	req.body_len = strlen(body);
	req.has_body = req.body_len > 0;
	req.max_json_depth = 4;
	return req;
}

START_TEST(problem_has_every_member)
{
	struct http_resp resp;
	json_t *doc;

	http_resp_init(&resp, "abc");
	doc = http_resp_problem(&resp, REASON_NOT_FOUND, "no %s", "thing");
	ck_assert_int_eq(resp.status, 404);
	ck_assert_str_eq(resp.content_type, "application/problem+json");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "urn:acceld:problem:not-found");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "title")), "Not found"); /* the reason's, not the status's */
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "status")), 404);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")), "no thing");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")), "NOT_FOUND");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "request_id")), "abc");
	http_resp_release(&resp);
}
END_TEST

START_TEST(retry_after_on_429_and_503)
{
	struct http_resp resp;

	http_resp_init(&resp, "r");
	http_resp_problem(&resp, REASON_QUEUE_FULL, "queue full");
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].name, "Retry-After");
	http_resp_header(&resp, "retry-after", "5"); /* replaces, case-insensitively */
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].value, "5");
	http_resp_release(&resp);
	http_resp_init(&resp, "r");
	http_resp_error(&resp, ACCELD_EUNAVAILABLE, "draining");
	ck_assert_int_eq(resp.status, 503);
	ck_assert_uint_eq(resp.nheaders, 1);
	http_resp_release(&resp);
}
END_TEST

START_TEST(invalid_utf8_detail_still_answers)
{
	struct http_resp resp;
	json_t *doc;

	http_resp_init(&resp, "r");
	doc = http_resp_problem(&resp, REASON_INVALID_VALUE, "bad \xff byte");
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "status")), 400);
	/* the readable part stays; the byte that is not UTF-8 reads U+FFFD */
	ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")), "bad \xef\xbf\xbd byte");
	http_resp_release(&resp);
}
END_TEST

START_TEST(bad_parameter_helper)
{
	struct http_resp resp;
	json_t *doc;

	http_resp_init(&resp, "r");
	doc = http_resp_bad_param(&resp, "page_size", "page_size must be at most %d", 100);
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")), "INVALID_PARAMETER");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "parameter")), "page_size");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "detail")), "page_size must be at most 100");
	http_resp_release(&resp);

	/* another reason about one parameter: the status is still the table's */
	http_resp_init(&resp, "r");
	doc = http_resp_param_problem(&resp, REASON_INVALID_TIME, "end_time", "not a time");
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")), "INVALID_TIME");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "parameter")), "end_time");
	http_resp_release(&resp);
}
END_TEST

/* The one way to refuse a body field: `path` is a JSONPath from the root and starts the detail. */
START_TEST(bad_field_and_value_helpers)
{
	struct http_resp resp;
	json_t *acc;

	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_field(&resp, REASON_INVALID_VALUE, "$.n", "%d is not from 1 to %d", 0, 9));
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_VALUE");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "path")), "$.n");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "detail")), "$.n: 0 is not from 1 to 9");
	ck_assert_ptr_null(json_object_get(resp.json, "parameter"));
	http_resp_release(&resp);

	/* a bad value: a body field's JSONPath is INVALID_VALUE with path, a parameter INVALID_PARAMETER */
	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_value(&resp, "$.level", "'%s' is not one of %s", "x", "quick, long"));
	ck_assert(!http_resp_accepted(&resp, "quick, long"));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_VALUE");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "path")), "$.level");
	acc = json_object_get(resp.json, "accepted");
	ck_assert_uint_eq(json_array_size(acc), 2);
	ck_assert_str_eq(json_string_value(json_array_get(acc, 0)), "quick");
	ck_assert_str_eq(json_string_value(json_array_get(acc, 1)), "long");
	http_resp_release(&resp);

	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_value(&resp, "device", "'%s' is not a device id", "cpu0"));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_PARAMETER");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "parameter")), "device");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "detail")), "device: 'cpu0' is not a device id");
	ck_assert_ptr_null(json_object_get(resp.json, "path"));
	http_resp_release(&resp);

	/* a member its domain parser refused: INVALID_TYPE when a type was expected, else INVALID_VALUE and accepted */
	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_member(&resp, "policy", "a string", "priority, fastest", "policy: not a string"));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_TYPE");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "path")), "$.policy");
	ck_assert_ptr_null(json_object_get(resp.json, "accepted"));
	http_resp_release(&resp);
	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_member(&resp, "policy", NULL, "priority, fastest", "'x' is not one of priority, fastest"));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_VALUE");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "detail")),
			 "$.policy: 'x' is not one of priority, fastest");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 2);
	http_resp_release(&resp);
	http_resp_init(&resp, "r");
	ck_assert(!http_resp_bad_member(&resp, "device", NULL, NULL, "'cpu0' is not a device id"));
	ck_assert_ptr_null(json_object_get(resp.json, "accepted"));
	http_resp_release(&resp);

	/* with no problem to add to, accepted is dropped rather than leaked */
	http_resp_init(&resp, "r");
	ck_assert(!http_resp_accepted(&resp, "a, b"));
	ck_assert_ptr_null(resp.json);
}
END_TEST

START_TEST(body_fields_are_checked)
{
	static const char *const fields[] = {"level", "wait", NULL};
	struct http_req req = make_req("application/json", "");
	struct http_resp resp;

	req.json = json_pack("{s:s, s:b}", "level", "quick", "wait", 1);
	http_resp_init(&resp, "r");
	ck_assert(http_req_check_body(&req, &resp, fields));
	json_decref(req.json);

	req.json = json_pack("{s:s, s:i, s:i}", "level", "quick", "colour", 1, "size", 2);
	ck_assert(!http_req_check_body(&req, &resp, fields));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "UNKNOWN_FIELD");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "path")), "$.colour");
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "fields")), 2);
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 2);
	json_decref(req.json);
	http_resp_release(&resp);

	req.json = json_pack("[i]", 1);
	http_resp_init(&resp, "r");
	ck_assert(!http_req_check_body(&req, &resp, fields));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "INVALID_TYPE");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "path")), "$");
	json_decref(req.json);
	http_resp_release(&resp);
}
END_TEST

START_TEST(error_codes_answer_their_reason)
{
	struct http_resp resp;
	json_t *doc;

	for (int e = ACCELD_EINVAL; e < ACCELD_ERR_COUNT; e++) {
		http_resp_init(&resp, "r");
		doc = http_resp_error(&resp, (enum acceld_err)e, "x");
		ck_assert_int_eq(resp.status, acceld_err_http((enum acceld_err)e));
		ck_assert_str_eq(json_string_value(json_object_get(doc, "reason")),
				 acceld_err_reason((enum acceld_err)e));
		http_resp_release(&resp);
	}
	ck_assert_int_eq(acceld_err_http(ACCELD_ETIMEOUT), 504);
	ck_assert_str_eq(acceld_err_reason(ACCELD_ETIMEOUT), "TIMED_OUT"); /* one name for an overrun */
	ck_assert_str_eq(acceld_err_reason(ACCELD_OK), "OK");
}
END_TEST

START_TEST(json_body_checks)
{
	struct http_req req;
	struct http_resp resp;
	json_t *p;

	req = make_req("text/plain", "{}");
	http_resp_init(&resp, "r");
	ck_assert(!http_req_parse_json(&req, &resp));
	ck_assert_int_eq(resp.status, 415);
	http_resp_release(&resp);

	req = make_req("application/json; charset=utf-8", "{\"a\": 1,\n \"b\": }");
	http_resp_init(&resp, "r");
	ck_assert(!http_req_parse_json(&req, &resp));
	ck_assert_int_eq(resp.status, 400);
	p = resp.json;
	ck_assert_int_eq(json_integer_value(json_object_get(p, "line")), 2);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(p, "detail")), "line 2, column"));
	http_resp_release(&resp);

	req = make_req("application/json", "[[[[[1]]]]]");
	http_resp_init(&resp, "r");
	ck_assert(!http_req_parse_json(&req, &resp));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "JSON_TOO_DEEP");
	http_resp_release(&resp);

	req = make_req("application/json", "{\"a\":1,\"a\":2}");
	http_resp_init(&resp, "r");
	ck_assert(!http_req_parse_json(&req, &resp)); /* duplicate keys are rejected */
	http_resp_release(&resp);

	req = make_req("application/problem+json", "{\"ok\": [1, \"]]]]]]\"]}");
	http_resp_init(&resp, "r");
	ck_assert(http_req_parse_json(&req, &resp)); /* +json types count; brackets in strings don't */
	json_decref(req.json);
	http_resp_release(&resp);

	req = make_req("application/json", "");
	http_resp_init(&resp, "r");
	ck_assert(!http_req_parse_json(&req, &resp));
	ck_assert_int_eq(resp.status, 400);
	http_resp_release(&resp);
}
END_TEST

START_TEST(json_depth_scanner)
{
	ck_assert_uint_eq(http_json_depth("1", 1, 10), 0);
	ck_assert_uint_eq(http_json_depth("{\"a\":[{}]}", 10, 10), 3);
	ck_assert_uint_eq(http_json_depth("\"[[[\\\"[[\"", 9, 10), 0);
	ck_assert_uint_eq(http_json_depth("[[[[[[[[[[[[", 12, 3), 4); /* stops counting past the limit */
}
END_TEST

START_TEST(query_checks)
{
	static const char *const allowed[] = {"a", "b", NULL};
	struct http_req req = make_req(NULL, "");
	struct http_resp resp;

	req.query[0] = (struct http_kv){"a", "1"};
	req.query[1] = (struct http_kv){"b", NULL};
	req.nquery = 2;
	http_resp_init(&resp, "r");
	ck_assert(http_req_check_query(&req, &resp, allowed));
	ck_assert_str_eq(http_req_query(&req, "a"), "1");
	ck_assert_str_eq(http_req_query(&req, "b"), ""); /* ?b with no value */
	ck_assert_ptr_null(http_req_query(&req, "c"));

	req.query[2] = (struct http_kv){"zz", "1"};
	req.nquery = 3;
	ck_assert(!http_req_check_query(&req, &resp, allowed));
	ck_assert_int_eq(resp.status, 400);
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "parameter")), "zz");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(resp.json, "detail")), "accepted: a, b"));
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 2);
	http_resp_release(&resp);

	req.query[2] = (struct http_kv){"a", "2"};
	http_resp_init(&resp, "r");
	ck_assert(!http_req_check_query(&req, &resp, allowed));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "DUPLICATE_PARAMETER");
	http_resp_release(&resp);
}
END_TEST

/* A route with a body: a query parameter that is one of its body's fields is said to belong there. */
START_TEST(query_parameter_of_the_body)
{
	static const char *const none[] = {NULL};
	static const char *const body[] = {"kernel", "wait", NULL};
	struct http_req req = make_req(NULL, "");
	struct http_resp resp;

	req.path = "/run";
	req.query[0] = (struct http_kv){"wait", "false"};
	req.nquery = 1;
	http_resp_init(&resp, "r");
	ck_assert(!http_req_check_query_body(&req, &resp, none, body));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "UNKNOWN_PARAMETER");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "parameter")), "wait");
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "detail")),
			 "'wait' is not a query parameter of POST /run: it is a field of the JSON body "
			 "({\"wait\": ...})");
	http_resp_release(&resp);

	req.query[0] = (struct http_kv){"zz", "1"};
	http_resp_init(&resp, "r");
	ck_assert(!http_req_check_query_body(&req, &resp, none, body));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(resp.json, "detail")), "accepted: none"));
	/* an empty `accepted`: the route takes no query parameter */
	ck_assert_uint_eq(json_array_size(json_object_get(resp.json, "accepted")), 0);
	ck_assert(json_is_array(json_object_get(resp.json, "accepted")));
	http_resp_release(&resp);
}
END_TEST

START_TEST(request_ids)
{
	char a[HTTP_REQUEST_ID_MAX + 1];
	char b[HTTP_REQUEST_ID_MAX + 1];
	char longid[80];

	http_request_id_new(a);
	http_request_id_new(b);
	ck_assert_uint_eq(strlen(a), 32);
	ck_assert_str_ne(a, b);
	ck_assert(http_request_id_valid(a));
	ck_assert(http_request_id_valid("trace-1.2:3_x"));
	ck_assert(!http_request_id_valid(""));
	ck_assert(!http_request_id_valid("a b"));
	ck_assert(!http_request_id_valid("x\r\nSet-Cookie: y"));
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	ck_assert(!http_request_id_valid(longid));
}
END_TEST

START_TEST(methods_by_name)
{
	for (int m = HTTP_GET; m <= HTTP_OTHER; m++)
		ck_assert_int_eq(http_method_of(http_method_name((enum http_method)m)), m);
	ck_assert_str_eq(http_method_name(HTTP_DELETE), "DELETE");
	ck_assert_int_eq(http_method_of("BREW"), HTTP_OTHER);
	ck_assert_int_eq(http_method_of("get"), HTTP_OTHER); /* method names are case-sensitive (RFC 9110) */
	ck_assert_str_eq(http_status_title(404), "Not Found");
	ck_assert_str_eq(http_status_title(299), "Error");
}
END_TEST

static void count_release(void *arg)
{
	(*(int *)arg)++;
}

START_TEST(shared_body_released_once)
{
	static const char body[] = "shared";
	struct http_resp resp;
	int released = 0;

	http_resp_init(&resp, "r");
	http_resp_shared(&resp, 200, "text/plain", body, sizeof(body) - 1, count_release, &released);
	http_resp_json(&resp, 200, json_object()); /* another body lets the shared one go */
	ck_assert_int_eq(released, 1);
	http_resp_release(&resp);
	http_resp_release(&resp);
	ck_assert_int_eq(released, 1);
}
END_TEST

START_TEST(move_leaves_the_source_empty)
{
	struct http_resp from;
	struct http_resp to;

	http_resp_init(&from, "a");
	http_resp_json(&from, 201, json_object());
	http_resp_header(&from, "ETag", "\"1\"");
	http_resp_init(&to, "b");
	http_resp_text(&to, 200, "old"); /* released by the move */
	http_resp_move(&to, &from);
	ck_assert_int_eq(to.status, 201);
	ck_assert_ptr_nonnull(to.json);
	ck_assert_ptr_null(to.body);
	ck_assert_uint_eq(to.nheaders, 1);
	ck_assert_str_eq(to.request_id, "a");
	ck_assert_ptr_null(from.json);
	ck_assert_ptr_null(from.body);
	http_resp_release(&from);
	http_resp_release(&to);
}
END_TEST

START_TEST(deferred_answer_taken)
{
	struct http_resp resp;
	struct http_resp done;
	struct http_deferred *d;

	http_resp_init(&resp, "rid-7");
	http_resp_text(&resp, 200, "dropped");
	d = http_resp_defer(&resp);
	ck_assert_ptr_eq(resp.deferred, d);
	ck_assert_ptr_null(resp.body); /* whatever body it had is dropped */
	ck_assert_str_eq(http_deferred_request_id(d), "rid-7");
	http_resp_init(&done, "x");
	ck_assert(!http_deferred_take(d, &done)); /* not finished yet */

	http_resp_init(&resp, http_deferred_request_id(d));
	http_resp_problem(&resp, REASON_QUEUE_FULL, "later");
	http_deferred_finish(d, &resp);
	ck_assert_ptr_null(resp.json); /* taken over */
	ck_assert(http_deferred_take(d, &done)); /* and the last reference goes */
	ck_assert_int_eq(done.status, 429);
	ck_assert_str_eq(json_string_value(json_object_get(done.json, "request_id")), "rid-7");
	ck_assert_uint_eq(done.nheaders, 1); /* Retry-After came along */
	http_resp_release(&done);
}
END_TEST

static int resumed;
static struct MHD_Connection *resumed_conn;

static void fake_resume(struct MHD_Connection *conn)
{
	resumed++;
	resumed_conn = conn;
}

START_TEST(deferred_answer_resumes_the_connection)
{
	static char marker; /* stands for libmicrohttpd's connection, which this file never looks into */
	struct MHD_Connection *conn = (struct MHD_Connection *)(void *)&marker;
	struct http_resp resp;
	struct http_resp done;
	struct http_deferred *d;

	resumed = 0;
	http_resp_init(&resp, "rid-8");
	d = http_resp_defer(&resp);
	/* what the server does when the handler returns without an answer */
	pthread_mutex_lock(&d->mu);
	d->conn = conn;
	d->resume = fake_resume;
	d->suspended = true;
	pthread_mutex_unlock(&d->mu);

	http_resp_init(&resp, "rid-8");
	http_resp_text(&resp, 200, "ok");
	http_deferred_finish(d, &resp);
	ck_assert_int_eq(resumed, 1);
	ck_assert_ptr_eq(resumed_conn, conn);
	ck_assert(!d->suspended);
	http_resp_init(&done, "x");
	ck_assert(http_deferred_take(d, &done));
	ck_assert_int_eq(done.status, 200);
	ck_assert_uint_eq(done.body_len, 2);
	ck_assert(memcmp(done.body, "ok", 2) == 0);
	ck_assert_int_eq(resumed, 1);
	http_resp_release(&done);
}
END_TEST

START_TEST(deferred_answer_after_the_client_left)
{
	struct http_resp resp;
	struct http_deferred *d;

	resumed = 0;
	http_resp_init(&resp, "rid-9");
	d = http_resp_defer(&resp);
	d->resume = fake_resume;
	/* the request completed (the client went away): the connection's reference goes first */
	pthread_mutex_lock(&d->mu);
	d->gone = true;
	pthread_mutex_unlock(&d->mu);
	http_deferred_unref(d);

	http_resp_init(&resp, "rid-9");
	http_resp_text(&resp, 200, "late");
	http_deferred_finish(d, &resp); /* the answer is dropped with the last reference */
	ck_assert_ptr_null(resp.body);
	ck_assert_int_eq(resumed, 0);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("http_resp");
	TCase *tc = tcase_create("helpers");

	tcase_add_test(tc, problem_has_every_member);
	tcase_add_test(tc, bad_parameter_helper);
	tcase_add_test(tc, bad_field_and_value_helpers);
	tcase_add_test(tc, body_fields_are_checked);
	tcase_add_test(tc, error_codes_answer_their_reason);
	tcase_add_test(tc, retry_after_on_429_and_503);
	tcase_add_test(tc, invalid_utf8_detail_still_answers);
	tcase_add_test(tc, json_body_checks);
	tcase_add_test(tc, json_depth_scanner);
	tcase_add_test(tc, query_checks);
	tcase_add_test(tc, query_parameter_of_the_body);
	tcase_add_test(tc, request_ids);
	tcase_add_test(tc, methods_by_name);
	tcase_add_test(tc, shared_body_released_once);
	tcase_add_test(tc, move_leaves_the_source_empty);
	suite_add_tcase(s, tc);
	tc = tcase_create("deferred");
	tcase_add_test(tc, deferred_answer_taken);
	tcase_add_test(tc, deferred_answer_resumes_the_connection);
	tcase_add_test(tc, deferred_answer_after_the_client_left);
	suite_add_tcase(s, tc);
	return s;
}
