/*
 * http_resp: what a handler reads and writes: requests (query parameters, a JSON body), responses and problem+json
 * answers, deferred answers, request ids and names. None of it needs libmicrohttpd (http_server.c is the only file
 * that includes it), so handlers, their unit tests and the fuzzers use it without a server.
 */
#include "http/http.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/mem.h"
#include "core/reason.h"
#include "core/jsonval.h"
#include "http/http_int.h"

/* --- request ids --- */

static _Thread_local uint64_t rid_state;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void http_request_id_new(char out[HTTP_REQUEST_ID_MAX + 1])
{
	uint64_t a;
	uint64_t b;

	if (rid_state == 0 && getrandom(&rid_state, sizeof(rid_state), 0) != sizeof(rid_state))
		rid_state = clock_mono_ns() ^ (uint64_t)(uintptr_t)&rid_state;
	a = splitmix64(&rid_state);
	b = splitmix64(&rid_state);
	/* by hand: this runs for every request, and snprintf costs more than the rest of the id */
	for (int i = 0; i < 16; i++) {
		out[15 - i] = "0123456789abcdef"[(a >> (4 * i)) & 15];
		out[31 - i] = "0123456789abcdef"[(b >> (4 * i)) & 15];
	}
	out[32] = '\0';
}

bool http_request_id_valid(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char c = s[n];

		if (n >= HTTP_REQUEST_ID_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '-'))
			return false;
	}
	return n > 0;
}

/* --- names --- */

const char *http_status_title(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

const char *http_method_name(enum http_method method)
{
	static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "OTHER"};

	return names[method];
}

enum http_method http_method_of(const char *m)
{
	for (int i = HTTP_GET; i < HTTP_OTHER; i++)
		if (strcmp(m, http_method_name((enum http_method)i)) == 0)
			return (enum http_method)i;
	return HTTP_OTHER;
}

/* --- responses --- */

void http_resp_init(struct http_resp *resp, const char *request_id)
{
	memset(resp, 0, sizeof(*resp));
	resp->status = 500;
	resp->request_id = request_id;
}

static void resp_clear_body(struct http_resp *resp)
{
	json_decref(resp->json);
	resp->json = NULL;
	if (resp->release)
		resp->release(resp->release_arg);
	else
		free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
	resp->release = NULL;
	resp->release_arg = NULL;
}

void http_resp_release(struct http_resp *resp)
{
	resp_clear_body(resp);
}

void http_resp_json(struct http_resp *resp, int status, json_t *doc)
{
	resp_clear_body(resp);
	resp->status = status;
	resp->content_type = "application/json";
	resp->json = doc;
}

void http_resp_text(struct http_resp *resp, int status, const char *text)
{
	size_t len = strlen(text);

	http_resp_bytes(resp, status, "text/plain; charset=utf-8", xstrndup(text, len), len);
}

void http_resp_bytes(struct http_resp *resp, int status, const char *content_type, char *body, size_t len)
{
	resp_clear_body(resp);
	resp->status = status;
	resp->content_type = content_type;
	resp->body = body;
	resp->body_len = len;
}

void http_resp_shared(struct http_resp *resp, int status, const char *content_type, const char *body, size_t len,
		      void (*release)(void *), void *arg)
{
	resp_clear_body(resp);
	resp->status = status;
	resp->content_type = content_type;
	resp->body = (char *)(uintptr_t)body; /* never written: release() owns it */
	resp->body_len = len;
	resp->release = release;
	resp->release_arg = arg;
}

void http_resp_header(struct http_resp *resp, const char *name, const char *value)
{
	struct http_header *h;

	for (size_t i = 0; i < resp->nheaders; i++) {
		if (strcasecmp(resp->headers[i].name, name) == 0) {
			strlcpy_checked(resp->headers[i].value, value, sizeof(resp->headers[i].value));
			return;
		}
	}
	if (resp->nheaders >= HTTP_MAX_HEADERS)
		return;
	h = &resp->headers[resp->nheaders++];
	strlcpy_checked(h->name, name, sizeof(h->name));
	strlcpy_checked(h->value, value, sizeof(h->value));
}

/* "NOT_FOUND" -> "urn:acceld:problem:not-found" */
static void problem_type(const char *reason, char *out, size_t outsz)
{
	size_t n = (size_t)snprintf(out, outsz, "urn:acceld:problem:");

	for (const char *p = reason; *p && n + 1 < outsz; p++, n++)
		out[n] = *p == '_' ? '-' : (char)((*p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
	out[n < outsz ? n : outsz - 1] = '\0';
}

json_t *http_resp_vproblem(struct http_resp *resp, enum reason reason, const char *fmt, va_list ap)
{
	int status = reason_status(reason);
	const char *name = reason_name(reason);
	char detail[1024];
	char type[96];
	json_t *doc;

	vsnprintf(detail, sizeof(detail), fmt, ap);
	problem_type(name, type, sizeof(type));
	/* a detail quoting bytes that are not UTF-8 (a query's) keeps them as U+FFFD */
	doc = json_pack("{s:s, s:s, s:i, s:o, s:s}", "type", type, "title", reason_title(reason), "status", status,
			"detail", jsonval_text(detail), "reason", name);
	json_object_set_new(doc, "request_id", resp->request_id ? json_string(resp->request_id) : json_null());
	http_resp_json(resp, status, doc);
	resp->content_type = "application/problem+json";
	if (status == 429 || status == 503)
		http_resp_header(resp, "Retry-After", "1");
	return doc;
}

json_t *http_resp_problem(struct http_resp *resp, enum reason reason, const char *fmt, ...)
{
	va_list ap;
	json_t *doc;

	va_start(ap, fmt);
	doc = http_resp_vproblem(resp, reason, fmt, ap);
	va_end(ap);
	return doc;
}

json_t *http_resp_error(struct http_resp *resp, enum acceld_err err, const char *fmt, ...)
{
	va_list ap;
	json_t *doc;

	va_start(ap, fmt);
	doc = http_resp_vproblem(resp, acceld_err_to_reason(err), fmt, ap);
	va_end(ap);
	return doc;
}

static json_t *param_vproblem(struct http_resp *resp, enum reason reason, const char *param, const char *fmt,
			      va_list ap) __attribute__((format(printf, 4, 0)));

static json_t *param_vproblem(struct http_resp *resp, enum reason reason, const char *param, const char *fmt,
			      va_list ap)
{
	json_t *doc = http_resp_vproblem(resp, reason, fmt, ap);

	/* a parameter name that is not UTF-8 (from a query string) keeps its readable part */
	json_object_set_new(doc, "parameter", param ? jsonval_text(param) : json_null());
	return doc;
}

json_t *http_resp_bad_param(struct http_resp *resp, const char *param, const char *fmt, ...)
{
	va_list ap;
	json_t *doc;

	va_start(ap, fmt);
	doc = param_vproblem(resp, REASON_INVALID_PARAMETER, param, fmt, ap);
	va_end(ap);
	return doc;
}

json_t *http_resp_param_problem(struct http_resp *resp, enum reason reason, const char *param, const char *fmt, ...)
{
	va_list ap;
	json_t *doc;

	va_start(ap, fmt);
	doc = param_vproblem(resp, reason, param, fmt, ap);
	va_end(ap);
	return doc;
}

/* A problem about one body field: `path` and a detail that starts with it. */
static json_t *field_vproblem(struct http_resp *resp, enum reason reason, const char *path, const char *fmt,
			      va_list ap) __attribute__((format(printf, 4, 0)));

static json_t *field_vproblem(struct http_resp *resp, enum reason reason, const char *path, const char *fmt,
			      va_list ap)
{
	char msg[768];
	json_t *doc;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	doc = http_resp_problem(resp, reason, "%.200s: %s", path, msg);
	json_object_set_new(doc, "path", json_string(path));
	return doc;
}

bool http_resp_bad_field(struct http_resp *resp, enum reason reason, const char *path, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	field_vproblem(resp, reason, path, fmt, ap);
	va_end(ap);
	return false;
}

bool http_resp_bad_value(struct http_resp *resp, const char *where, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	if (where[0] == '$') {
		field_vproblem(resp, REASON_INVALID_VALUE, where, fmt, ap);
		va_end(ap);
		return false;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_resp_bad_param(resp, where, "%.64s: %s", where, msg);
	return false;
}

bool http_resp_accepted(struct http_resp *resp, const char *names)
{
	json_t *list = json_array();
	const char *p = names;

	while (p != NULL && *p != '\0') {
		size_t n = strcspn(p, ",");

		json_array_append_new(list, json_stringn(p, n));
		p += n;
		p += strspn(p, ", ");
	}
	if (json_is_object(resp->json))
		json_object_set_new(resp->json, "accepted", list);
	else
		json_decref(list);
	return false;
}

bool http_resp_bad_member(struct http_resp *resp, const char *name, const char *expected, const char *values,
			  const char *err)
{
	char path[80];

	snprintf(path, sizeof(path), "$.%s", name);
	if (expected != NULL)
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "%s", err);
	http_resp_bad_field(resp, REASON_INVALID_VALUE, path, "%s", err);
	if (values != NULL)
		http_resp_accepted(resp, values);
	return false;
}

/* --- deferred answers --- */

struct http_deferred *http_resp_defer(struct http_resp *resp)
{
	struct http_deferred *d = xcalloc(1, sizeof(*d));

	resp_clear_body(resp);
	pthread_mutex_init(&d->mu, NULL);
	d->refs = 2;
	strlcpy_checked(d->request_id, resp->request_id ? resp->request_id : "", sizeof(d->request_id));
	http_resp_init(&d->resp, d->request_id);
	resp->deferred = d;
	resp->status = 0;
	return d;
}

const char *http_deferred_request_id(const struct http_deferred *d)
{
	return d->request_id;
}

void http_deferred_unref(struct http_deferred *d)
{
	bool last;

	pthread_mutex_lock(&d->mu);
	last = --d->refs == 0;
	pthread_mutex_unlock(&d->mu);
	if (!last)
		return;
	http_resp_release(&d->resp);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

void http_resp_move(struct http_resp *dst, struct http_resp *src)
{
	http_resp_release(dst);
	*dst = *src;
	dst->deferred = NULL;
	src->json = NULL;
	src->body = NULL;
	src->release = NULL;
	src->body_len = 0;
}

void http_deferred_finish(struct http_deferred *d, struct http_resp *resp)
{
	pthread_mutex_lock(&d->mu);
	if (d->finished || d->gone) {
		pthread_mutex_unlock(&d->mu);
		http_resp_release(resp);
		http_deferred_unref(d);
		return;
	}
	http_resp_move(&d->resp, resp);
	d->resp.request_id = d->request_id;
	d->finished = true;
	if (d->suspended) {
		d->suspended = false;
		d->resume(d->conn); /* the access handler runs again and queues the answer */
	}
	pthread_mutex_unlock(&d->mu);
	http_deferred_unref(d);
}

bool http_deferred_take(struct http_deferred *d, struct http_resp *resp)
{
	bool done;

	pthread_mutex_lock(&d->mu);
	done = d->finished && !d->taken;
	if (done) {
		d->taken = true;
		http_resp_move(resp, &d->resp);
	}
	pthread_mutex_unlock(&d->mu);
	if (done)
		http_deferred_unref(d);
	return done;
}

/* --- requests --- */

const char *http_req_query(const struct http_req *req, const char *key)
{
	for (size_t i = 0; i < req->nquery; i++)
		if (strcmp(req->query[i].key, key) == 0)
			return req->query[i].value ? req->query[i].value : "";
	return NULL;
}

/* "a, b, c" from a NULL-terminated list, cut at outsz. */
static void join_names(const char *const *names, char *out, size_t outsz)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t j = 0; names[j]; j++)
		n += (size_t)snprintf(out + n, n < outsz ? outsz - n : 0, "%s%s", j ? ", " : "", names[j]);
}

static bool in_names(const char *const *names, const char *key)
{
	for (size_t j = 0; names != NULL && names[j]; j++)
		if (strcmp(names[j], key) == 0)
			return true;
	return false;
}

bool http_req_check_query_body(const struct http_req *req, struct http_resp *resp, const char *const *allowed,
			       const char *const *body_fields)
{
	for (size_t i = 0; i < req->nquery; i++) {
		const char *key = req->query[i].key;

		if (!in_names(allowed, key) && in_names(body_fields, key)) {
			http_resp_param_problem(resp, REASON_UNKNOWN_PARAMETER, key,
						"'%s' is not a query parameter of %s %.200s: it is a field of the "
						"JSON body ({\"%s\": ...})", key, req->method_name, req->path, key);
			return false;
		}
		if (!in_names(allowed, key)) {
			char list[512];

			join_names(allowed, list, sizeof(list));
			http_resp_param_problem(resp, REASON_UNKNOWN_PARAMETER, key,
						"unknown query parameter '%.64s'; accepted: %s", key,
						allowed[0] ? list : "none");
			http_resp_accepted(resp, list); /* [] when the route takes none */
			return false;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(req->query[j].key, key) == 0) {
				http_resp_param_problem(resp, REASON_DUPLICATE_PARAMETER, key,
							"query parameter '%s' is given more than once", key);
				return false;
			}
		}
	}
	return true;
}

bool http_req_check_query(const struct http_req *req, struct http_resp *resp, const char *const *allowed)
{
	return http_req_check_query_body(req, resp, allowed, NULL);
}

bool http_req_check_body(const struct http_req *req, struct http_resp *resp, const char *const *fields)
{
	json_t *unknown;
	const char *key;
	const char *first = NULL;
	json_t *value;
	char names[512];
	char list[256] = "";
	size_t len = 0;

	if (!json_is_object(req->json))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$", "the body must be a JSON object");
	unknown = json_array();
	json_object_foreach(req->json, key, value) {
		(void)value;
		if (in_names(fields, key))
			continue;
		if (first == NULL)
			first = key;
		json_array_append_new(unknown, json_string(key));
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s'%.64s'", len ? ", " : "", key);
	}
	if (first == NULL) {
		json_decref(unknown);
		return true;
	}
	join_names(fields, names, sizeof(names));
	{
		char path[80];

		snprintf(path, sizeof(path), "$.%.64s", first);
		if (json_array_size(unknown) > 1)
			http_resp_bad_field(resp, REASON_UNKNOWN_FIELD, path, "unknown field (the unknown ones: %s); "
					    "accepted: %s", list, names);
		else
			http_resp_bad_field(resp, REASON_UNKNOWN_FIELD, path, "unknown field; accepted: %s", names);
	}
	json_object_set_new(resp->json, "fields", unknown);
	return http_resp_accepted(resp, names);
}

unsigned http_json_depth(const char *text, size_t len, unsigned limit)
{
	unsigned depth = 0;
	unsigned max = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				max = depth;
			if (max > limit)
				return max;
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return max;
}

static bool is_json_type(const char *ct)
{
	size_t n;

	if (ct == NULL)
		return false;
	n = strcspn(ct, ";");
	while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return true;
	return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

bool http_req_parse_json(struct http_req *req, struct http_resp *resp)
{
	json_error_t jerr;
	json_t *doc;
	unsigned depth;

	if (!is_json_type(req->content_type)) {
		http_resp_problem(resp, REASON_UNSUPPORTED_MEDIA_TYPE,
				  "the body must be JSON (Content-Type: application/json); got %.100s",
				  req->content_type ? req->content_type : "no Content-Type");
		http_resp_header(resp, "Accept-Post", "application/json");
		return false;
	}
	if (req->body_len == 0) {
		http_resp_problem(resp, REASON_EMPTY_BODY, "the request body is empty; send a JSON object");
		return false;
	}
	depth = http_json_depth(req->body, req->body_len, req->max_json_depth);
	if (depth > req->max_json_depth) {
		http_resp_problem(resp, REASON_JSON_TOO_DEEP, "the JSON body is nested deeper than %u levels",
				  req->max_json_depth);
		return false;
	}
	doc = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (doc == NULL) {
		json_t *p = http_resp_problem(resp, REASON_MALFORMED_JSON, "malformed JSON at line %d, column %d: %s",
					      jerr.line, jerr.column, jerr.text);
		json_object_set_new(p, "line", json_integer(jerr.line));
		json_object_set_new(p, "column", json_integer(jerr.column));
		return false;
	}
	req->json = doc;
	return true;
}
