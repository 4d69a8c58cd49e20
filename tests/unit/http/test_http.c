/* Unit tests for the request/response helpers of http.c (no sockets: the helpers are pure). */
#include <string.h>

#include "check_main.h"
#include "http/http.h"

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
	http_resp_release(&resp);

	req.query[2] = (struct http_kv){"a", "2"};
	http_resp_init(&resp, "r");
	ck_assert(!http_req_check_query(&req, &resp, allowed));
	ck_assert_str_eq(json_string_value(json_object_get(resp.json, "reason")), "DUPLICATE_PARAMETER");
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

Suite *make_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("helpers");

	tcase_add_test(tc, problem_has_every_member);
	tcase_add_test(tc, bad_parameter_helper);
	tcase_add_test(tc, error_codes_answer_their_reason);
	tcase_add_test(tc, retry_after_on_429_and_503);
	tcase_add_test(tc, invalid_utf8_detail_still_answers);
	tcase_add_test(tc, json_body_checks);
	tcase_add_test(tc, json_depth_scanner);
	tcase_add_test(tc, query_checks);
	tcase_add_test(tc, request_ids);
	suite_add_tcase(s, tc);
	return s;
}
