/*
 * http: libmicrohttpd behind a small request/response interface.
 *
 * Keep-alive depends on when a response is queued: libmicrohttpd 0.9.75 sends a response queued on the first call
 * of the access handler (before the request has been read completely) with "Connection: close". So every answer is
 * queued on a later call, once the whole request is in, except a 413 refused from Content-Length, where closing is
 * what we want. Bodies are accumulated in a capped buffer and never sized from what the client claims.
 *
 * Connections are reported to a connection table (conns.h) as they open, read a request and are answered; it keeps
 * the budgets, making room in a full table by cutting an idle or late connection, and the request deadlines.
 */
#include "http/http.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "http/conns.h"
#include "core/log.h"
#include "core/mem.h"

#define LOG_PATH_MAX 256
#define LISTEN_BACKLOG 4096 /* room for a burst of connections; the kernel caps it at net.core.somaxconn */
#define FD_RESERVE 64       /* descriptors besides the connections: listeners, epoll, the database, logs */

struct http_server {
	struct MHD_Daemon *daemon;
	struct http_server_opts opts;
	int listen_fd;
	unsigned port;
	atomic_uint inflight;
	atomic_bool closing;
	pthread_mutex_t defer_mu;  /* guards the list of deferred requests and stopping */
	struct http_deferred *deferred_head;
	bool stopping;             /* deferred answers are cut short: no new suspension */
	/*
	 * The connection table (conns.h): budgets, eviction and request deadlines. libmicrohttpd's connection timeout
	 * restarts on every byte read, so a client that drips a header a byte at a time would hold its slot for
	 * ever: the reaper also cuts a connection whose request has not arrived whole within the idle timeout of the
	 * connection opening or of the previous answer.
	 */
	struct conns *conns;
	pthread_mutex_t reaper_mu;  /* guards reaper_stop */
	pthread_cond_t reaper_cv;
	bool reaper_stop;
	bool reaper_running;
	pthread_t reaper;
};

/*
 * A deferred answer. Two references: the finisher's (dropped by http_deferred_finish) and the connection's
 * (dropped when the request completes). mu orders suspend against resume: the connection is resumed only after
 * it was suspended, and an answer that arrives before the suspension is queued at once instead.
 */
struct http_deferred {
	pthread_mutex_t mu;
	int refs;
	bool suspended;
	bool finished;             /* the answer is in resp */
	bool taken;                /* the answer was queued */
	bool gone;                 /* the connection completed or the server stopped */
	struct MHD_Connection *conn;
	struct http_server *srv;
	struct http_resp resp;
	char request_id[HTTP_REQUEST_ID_MAX + 1];
	struct http_deferred *prev, *next; /* the server's list */
};

/* Per-request state kept by libmicrohttpd between the calls of the access handler. */
struct conn_req {
	struct http_server *srv;
	uint64_t start_ns;
	struct buf body;
	bool has_body;
	bool too_large;
	bool answered;
	size_t discarded;          /* body bytes read and dropped after the cap was passed */
	int status;
	size_t bytes_out;
	char request_id[HTTP_REQUEST_ID_MAX + 1];
	char method[16];
	char path[LOG_PATH_MAX];
	char remote[INET6_ADDRSTRLEN]; /* the client's address, "" when unknown */
	const char *route;         /* the matched route pattern (static), for the observe hook; NULL none */
	struct http_deferred *deferred; /* the handler answers later */
};

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

const char *http_library_version(void)
{
	return MHD_get_version();
}

const char *http_method_name(enum http_method method)
{
	static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "OTHER"};

	return names[method];
}

static enum http_method method_of(const char *m)
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
	doc = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", reason_title(reason), "status", status,
			"detail", detail, "reason", name);
	if (doc == NULL) /* detail was not valid UTF-8: say so rather than lose the answer */
		doc = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", reason_title(reason), "status",
				status, "detail", "(detail not representable)", "reason", name);
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

	/* a parameter name that is not UTF-8 (from a query string) is left out rather than failing the answer */
	json_object_set_new(doc, "parameter", param ? json_string(param) : json_null());
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

static void deferred_unref(struct http_deferred *d)
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

/* Moves src's answer into dst (dst's old body is released; src is left empty). */
static void resp_move(struct http_resp *dst, struct http_resp *src)
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
		deferred_unref(d);
		return;
	}
	resp_move(&d->resp, resp);
	d->resp.request_id = d->request_id;
	d->finished = true;
	if (d->suspended) {
		d->suspended = false;
		MHD_resume_connection(d->conn); /* the access handler runs again and queues the answer */
	}
	pthread_mutex_unlock(&d->mu);
	deferred_unref(d);
}

bool http_deferred_take(struct http_deferred *d, struct http_resp *resp)
{
	bool done;

	pthread_mutex_lock(&d->mu);
	done = d->finished && !d->taken;
	if (done) {
		d->taken = true;
		resp_move(resp, &d->resp);
	}
	pthread_mutex_unlock(&d->mu);
	if (done)
		deferred_unref(d);
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

bool http_req_check_query(const struct http_req *req, struct http_resp *resp, const char *const *allowed)
{
	for (size_t i = 0; i < req->nquery; i++) {
		const char *key = req->query[i].key;
		bool known = false;
		char list[512] = "";
		size_t n = 0;

		for (size_t j = 0; allowed[j]; j++) {
			if (strcmp(allowed[j], key) == 0)
				known = true;
			n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s",
					      j ? ", " : "", allowed[j]);
		}
		if (!known) {
			http_resp_param_problem(resp, REASON_UNKNOWN_PARAMETER, key,
						"unknown query parameter '%.64s'; accepted: %s", key,
						allowed[0] ? list : "none");
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

/* --- libmicrohttpd glue --- */

struct query_collect {
	struct http_req *req;
	bool overflow;
};

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct query_collect *qc = cls;

	(void)kind;
	if (qc->req->nquery >= HTTP_MAX_QUERY) {
		qc->overflow = true;
		return MHD_NO;
	}
	qc->req->query[qc->req->nquery].key = key;
	qc->req->query[qc->req->nquery].value = value;
	qc->req->nquery++;
	return MHD_YES;
}

static void free_json_body(void *cls)
{
	free(cls);
}

static enum MHD_Result queue(struct conn_req *cr, struct MHD_Connection *conn, struct http_resp *resp)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	if (resp->json != NULL) {
		char *text = json_dumps(resp->json, JSON_COMPACT);
		size_t len;

		if (text == NULL) {
			/* only a document with invalid strings gets here; answer rather than drop the request */
			http_resp_problem(resp, REASON_INTERNAL, "the answer could not be encoded as JSON");
			text = json_dumps(resp->json, JSON_COMPACT);
		}
		len = strlen(text);
		text = xrealloc(text, len + 2);
		text[len++] = '\n';
		text[len] = '\0';
		json_decref(resp->json);
		resp->json = NULL;
		resp->body = text;
		resp->body_len = len;
	}
	if (resp->body == NULL)
		r = MHD_create_response_from_buffer(0, (void *)(uintptr_t)"", MHD_RESPMEM_PERSISTENT);
	else if (resp->release)
		r = MHD_create_response_from_buffer_with_free_callback_cls(resp->body_len, resp->body, resp->release,
									   resp->release_arg);
	else
		r = MHD_create_response_from_buffer_with_free_callback_cls(resp->body_len, resp->body, free_json_body,
									   resp->body);
	if (r == NULL) {
		http_resp_release(resp);
		return MHD_NO;
	}
	/* the response owns the body now */
	resp->body = NULL;
	resp->release = NULL;
	if (resp->content_type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
	MHD_add_response_header(r, "X-Request-Id", cr->request_id);
	for (size_t i = 0; i < resp->nheaders; i++)
		MHD_add_response_header(r, resp->headers[i].name, resp->headers[i].value);
	if (atomic_load(&cr->srv->closing))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	cr->status = resp->status;
	cr->bytes_out = resp->body_len;
	cr->answered = true;
	rc = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result answer_problem(struct conn_req *cr, struct MHD_Connection *conn, enum reason reason,
				      const char *detail)
{
	struct http_resp resp;

	http_resp_init(&resp, cr->request_id);
	http_resp_problem(&resp, reason, "%s", detail);
	return queue(cr, conn, &resp);
}

static enum MHD_Result answer_too_large(struct conn_req *cr, struct MHD_Connection *conn)
{
	char detail[128];

	snprintf(detail, sizeof(detail), "the request body exceeds the limit of %zu bytes (ACCELD_MAX_BODY)",
		 cr->srv->opts.max_body);
	return answer_problem(cr, conn, REASON_BODY_TOO_LARGE, detail);
}

/* How much of an over-long chunked body is read and dropped before the connection is cut. */
static size_t discard_allowance(const struct http_server *srv)
{
	return srv->opts.max_body > 1048576 ? srv->opts.max_body : 1048576;
}

/* Queues the answer of a finished deferred request, or suspends again when it has not finished. */
static enum MHD_Result answer_deferred(struct conn_req *cr, struct MHD_Connection *conn)
{
	struct http_deferred *d = cr->deferred;
	struct http_resp resp;
	enum MHD_Result rc;

	pthread_mutex_lock(&d->mu);
	if (!d->finished) {
		MHD_suspend_connection(conn);
		d->suspended = true;
		pthread_mutex_unlock(&d->mu);
		return MHD_YES;
	}
	http_resp_init(&resp, cr->request_id);
	resp_move(&resp, &d->resp);
	d->taken = true;
	pthread_mutex_unlock(&d->mu);
	rc = queue(cr, conn, &resp);
	http_resp_release(&resp);
	return rc;
}

/* Gives a deferred request that has no answer yet a 503, and resumes it when suspended. */
static void deferred_cut_short(struct http_deferred *d)
{
	pthread_mutex_lock(&d->mu);
	if (!d->finished) {
		d->resp.request_id = d->request_id;
		http_resp_problem(&d->resp, REASON_SHUTTING_DOWN, "the service stopped before the answer was ready");
		d->finished = true;
	}
	if (d->suspended) {
		d->suspended = false;
		MHD_resume_connection(d->conn);
	}
	pthread_mutex_unlock(&d->mu);
}

/* Holds the connection until the deferred answer comes (the handler has returned). */
static enum MHD_Result suspend_deferred(struct conn_req *cr, struct MHD_Connection *conn, struct http_deferred *d)
{
	struct http_server *srv = cr->srv;

	cr->deferred = d;
	pthread_mutex_lock(&srv->defer_mu);
	if (srv->stopping) /* too late to wait: answer now rather than suspend a connection the stop would trip on */
		deferred_cut_short(d);
	d->srv = srv;
	d->conn = conn;
	d->next = srv->deferred_head;
	if (srv->deferred_head)
		srv->deferred_head->prev = d;
	srv->deferred_head = d;
	pthread_mutex_unlock(&srv->defer_mu);
	return answer_deferred(cr, conn);
}

/* The request completed: the connection's reference goes, and a late answer will be dropped. */
static void release_deferred(struct conn_req *cr)
{
	struct http_deferred *d = cr->deferred;
	struct http_server *srv = cr->srv;

	if (d == NULL)
		return;
	pthread_mutex_lock(&srv->defer_mu);
	if (d->prev)
		d->prev->next = d->next;
	else if (srv->deferred_head == d)
		srv->deferred_head = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->prev = d->next = NULL;
	pthread_mutex_unlock(&srv->defer_mu);
	pthread_mutex_lock(&d->mu);
	d->gone = true;
	pthread_mutex_unlock(&d->mu);
	cr->deferred = NULL;
	deferred_unref(d);
}

/* Dotted decimal without printf (inet_ntop formats with sprintf, and this runs for every request). */
static void format_ipv4(const struct in_addr *a, char out[INET_ADDRSTRLEN])
{
	const unsigned char *b = (const unsigned char *)&a->s_addr;
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		if (b[i] >= 100)
			out[n++] = (char)('0' + b[i] / 100);
		if (b[i] >= 10)
			out[n++] = (char)('0' + b[i] / 10 % 10);
		out[n++] = (char)('0' + b[i] % 10);
		out[n++] = i < 3 ? '.' : '\0';
	}
}

static enum MHD_Result answer(struct conn_req *cr, struct MHD_Connection *conn, const char *url,
			      const char *method)
{
	struct http_server *srv = cr->srv;
	struct http_req req;
	struct http_resp resp;
	struct query_collect qc;
	enum MHD_Result rc;

	memset(&req, 0, sizeof(req));
	req.method = method_of(method);
	req.method_name = method;
	req.path = url;
	req.request_id = cr->request_id;
	req.content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	req.if_none_match = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	req.authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	req.body = cr->body.data ? cr->body.data : "";
	req.body_len = cr->body.len;
	req.has_body = cr->has_body;
	req.max_json_depth = srv->opts.max_json_depth;
	req.remote_addr = cr->remote;

	qc.req = &req;
	qc.overflow = false;
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query, &qc);
	if (qc.overflow) {
		char detail[96];

		snprintf(detail, sizeof(detail), "more than %d query parameters", HTTP_MAX_QUERY);
		return answer_problem(cr, conn, REASON_TOO_MANY_PARAMETERS, detail);
	}

	http_resp_init(&resp, cr->request_id);
	srv->opts.dispatch(srv->opts.ctx, &req, &resp);
	cr->route = resp.route;
	json_decref(req.json);
	if (resp.deferred != NULL) {
		struct http_deferred *d = resp.deferred;

		resp.deferred = NULL;
		http_resp_release(&resp);
		return suspend_deferred(cr, conn, d);
	}
	rc = queue(cr, conn, &resp);
	http_resp_release(&resp);
	return rc;
}

static void conn_req_start(struct conn_req *cr, struct http_server *srv, struct MHD_Connection *conn,
			   const char *url, const char *method)
{
	const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			format_ipv4(&((const struct sockaddr_in *)(const void *)sa)->sin_addr, cr->remote);
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, cr->remote,
				  sizeof(cr->remote));
	}
	cr->srv = srv;
	cr->start_ns = clock_mono_ns();
	buf_init(&cr->body, srv->opts.max_body);
	if (rid != NULL && http_request_id_valid(rid))
		strlcpy_checked(cr->request_id, rid, sizeof(cr->request_id));
	else
		http_request_id_new(cr->request_id);
	strlcpy_checked(cr->method, method, sizeof(cr->method));
	strlcpy_checked(cr->path, url, sizeof(cr->path));
}

/* --- the connection table --- */

static struct conn *conn_entry(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ca = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		const struct sockaddr *sa = ca ? ca->client_addr : NULL;
		socklen_t len = sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

		/* a refused connection gets no entry: it is cut already, and libmicrohttpd closes it */
		if (fd != NULL)
			*socket_context = conns_open(srv->conns, fd->connect_fd, sa, len, clock_mono_ns());
		return;
	}
	/* libmicrohttpd closes the socket after this returns: the table lets go of it first, so nothing cuts it later */
	conns_close(srv->conns, *socket_context);
	*socket_context = NULL;
}

/* The request line is in (libmicrohttpd's URI log hook, called before the headers are read). */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_server *srv = cls;

	(void)uri;
	conns_request_line(srv->conns, conn_entry(conn), clock_mono_ns());
	return NULL; /* the access handler's first call still sees *con_cls == NULL */
}

/* Cuts connections whose request is late; libmicrohttpd then sees the end of the stream and closes them. */
static void *reaper_main(void *arg)
{
	struct http_server *srv = arg;
	struct timespec ts;

	pthread_mutex_lock(&srv->reaper_mu);
	while (!srv->reaper_stop) {
		conns_reap(srv->conns, clock_mono_ns());
		ts = clock_deadline(CLOCK_MONOTONIC, 250 * 1000000ull);
		pthread_cond_timedwait(&srv->reaper_cv, &srv->reaper_mu, &ts);
	}
	pthread_mutex_unlock(&srv->reaper_mu);
	return NULL;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				 const char *version, const char *upload_data, size_t *upload_data_size,
				 void **con_cls)
{
	struct http_server *srv = cls;
	struct conn_req *cr = *con_cls;

	(void)version;
	if (cr == NULL) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		const char *te =
			MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

		conns_headers(srv->conns, conn_entry(conn), clock_mono_ns());
		cr = xcalloc(1, sizeof(*cr));
		conn_req_start(cr, srv, conn, url, method);
		*con_cls = cr;
		atomic_fetch_add(&srv->inflight, 1);
		cr->has_body = te != NULL || (cl != NULL && strcmp(cl, "0") != 0);
		if (cl != NULL) {
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(cl, &end, 10);
			if (errno != 0 || *end != '\0' || n > srv->opts.max_body) {
				cr->too_large = true;
				conns_received(srv->conns, conn_entry(conn), clock_mono_ns());
				return answer_too_large(cr, conn);
			}
		}
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (!cr->too_large && buf_append(&cr->body, upload_data, n) == 0)
			return MHD_YES;
		if (!cr->too_large) {
			/* a chunked body went over the cap: drop it and keep discarding, so the 413 at the end reaches
			 * a client that is still sending (closing with unread data would reset the connection) */
			cr->too_large = true;
			buf_release(&cr->body);
		}
		cr->discarded += n;
		if (cr->discarded > discard_allowance(srv) && !cr->answered)
			return answer_too_large(cr, conn); /* a client that keeps sending is cut off */
		return MHD_YES;
	}
	conns_received(srv->conns, conn_entry(conn), clock_mono_ns()); /* the whole request is in */
	if (cr->too_large && !cr->answered)
		return answer_too_large(cr, conn);
	if (cr->deferred != NULL && !cr->answered)
		return answer_deferred(cr, conn); /* resumed: the answer has come */
	if (cr->answered)
		return MHD_YES;
	return answer(cr, conn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct conn_req *cr = *con_cls;

	conns_answered(srv->conns, conn_entry(conn), clock_mono_ns()); /* the next request starts its own window */
	if (cr == NULL)
		return;
	if (srv->opts.observe != NULL && cr->answered)
		srv->opts.observe(srv->opts.observe_ctx, http_method_name(method_of(cr->method)), cr->route,
				  cr->status, (double)(clock_mono_ns() - cr->start_ns) / 1e9);
	if (srv->opts.access_log) {
		double ms = (double)(clock_mono_ns() - cr->start_ns) / 1e6;
		struct log_field f[] = {
			LOG_S("request_id", cr->request_id),
			LOG_S("method", cr->method),
			LOG_S("path", cr->path),
			LOG_S("remote", cr->remote),
			LOG_I("status", cr->status),
			LOG_D("duration_ms", ms),
			LOG_I("bytes_in", cr->body.len),
			LOG_I("bytes_out", cr->bytes_out),
			LOG_B("completed", toe == MHD_REQUEST_TERMINATED_COMPLETED_OK),
		};

		log_fields(LOGL_INFO, "http", "request", f, sizeof(f) / sizeof(f[0]));
	}
	release_deferred(cr);
	buf_release(&cr->body);
	free(cr);
	*con_cls = NULL;
	atomic_fetch_sub(&srv->inflight, 1);
}

/* libmicrohttpd's error log (MHD_OPTION_EXTERNAL_LOGGER): its own printf formats */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	log_msg(LOGL_DEBUG, "libmicrohttpd", "%s", msg);
}

static int bind_listen(const char *host, unsigned port, int *fd_out, bool *ipv6, char *err, size_t errsz)
{
	struct addrinfo hints;
	struct addrinfo *res = NULL;
	char service[8];
	int rc;
	int fd = -1;
	int saved = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0) {
		snprintf(err, errsz, "cannot resolve listen address '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		int one = 1;

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0) {
			*ipv6 = ai->ai_family == AF_INET6;
			break;
		}
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errsz, "cannot listen on %s:%u: %s", host, port, strerror(saved));
		return -1;
	}
	*fd_out = fd;
	return 0;
}

static unsigned bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/*
 * libmicrohttpd's own limit, above the table's budget: it refuses at accept time, before the table could make
 * room, so it is only the hard stop for connections already cut and still closing.
 */
static unsigned mhd_connection_limit(unsigned budget)
{
	unsigned headroom = budget / 4 > 16 ? budget / 4 : 16;

	return budget > UINT32_MAX - headroom ? UINT32_MAX : budget + headroom;
}

/* Raises the soft limit on descriptors to the hard one when it cannot hold need; warns when even that is short. */
static void ensure_fd_limit(unsigned need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return;
	if (rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? (rlim_t)need : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < need)
		log_fields(LOGL_WARN, "http", "the descriptor limit is below the connection limit",
			   (struct log_field[]){LOG_I("nofile", rl.rlim_cur), LOG_I("needed", need)}, 2);
}

static void server_free(struct http_server *srv)
{
	conns_free(srv->conns);
	pthread_mutex_destroy(&srv->defer_mu);
	pthread_mutex_destroy(&srv->reaper_mu);
	pthread_cond_destroy(&srv->reaper_cv);
	free(srv);
}

int http_server_start(const struct http_server_opts *opts, struct http_server **out, char *err, size_t errsz)
{
	struct http_server *srv = xcalloc(1, sizeof(*srv));
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO |
			 MHD_USE_ERROR_LOG;
	bool ipv6 = false;
	struct MHD_OptionItem tls[3] = {{MHD_OPTION_END, 0, NULL}};
	pthread_condattr_t cattr;
	unsigned mhd_limit = mhd_connection_limit(opts->max_connections);

	if (opts->tls_cert_pem != NULL) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errsz, "this libmicrohttpd was built without TLS");
			free(srv);
			return -1;
		}
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)(uintptr_t)opts->tls_key_pem};
		tls[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)(uintptr_t)opts->tls_cert_pem};
		tls[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	srv->opts = *opts;
	pthread_mutex_init(&srv->defer_mu, NULL);
	pthread_mutex_init(&srv->reaper_mu, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC); /* the reaper's tick must not follow wall-clock jumps */
	pthread_cond_init(&srv->reaper_cv, &cattr);
	pthread_condattr_destroy(&cattr);
	srv->conns = conns_new(&(struct conns_opts){.max = opts->max_connections,
						    .max_per_addr = opts->max_connections_per_ip,
						    .request_window_ns = (uint64_t)opts->idle_timeout_s * 1000000000u});
	ensure_fd_limit(mhd_limit + FD_RESERVE);
	srv->listen_fd = -1;
	if (bind_listen(opts->host, opts->port, &srv->listen_fd, &ipv6, err, errsz) != 0) {
		server_free(srv);
		return -1;
	}
	if (ipv6)
		flags |= MHD_USE_IPv6;
	srv->port = bound_port(srv->listen_fd);
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_LISTEN_SOCKET, srv->listen_fd,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(opts->threads > 1 ? opts->threads : 0),
		MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT, opts->idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, opts->conn_memory, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (srv->daemon == NULL) {
		snprintf(err, errsz, "libmicrohttpd could not start on %s:%u%s (see the log)", opts->host, opts->port,
			 opts->tls_cert_pem ? " with TLS: check the certificate and key" : "");
		close(srv->listen_fd);
		server_free(srv);
		return -1;
	}
	/* an idle timeout of 0 means none: no deadline either */
	srv->reaper_running = opts->idle_timeout_s > 0 && pthread_create(&srv->reaper, NULL, reaper_main, srv) == 0;
	if (!srv->reaper_running && opts->idle_timeout_s > 0)
		log_msg(LOGL_WARN, "http", "no request deadline thread; slow clients are bounded by the idle timeout only");
	*out = srv;
	return 0;
}

unsigned http_server_port(const struct http_server *srv)
{
	return srv->port;
}

void http_server_set_closing(struct http_server *srv)
{
	atomic_store(&srv->closing, true);
}

void http_server_quiesce(struct http_server *srv)
{
	MHD_socket fd;

	if (srv->listen_fd < 0)
		return;
	fd = MHD_quiesce_daemon(srv->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	srv->listen_fd = -1;
}

unsigned http_server_inflight(const struct http_server *srv)
{
	return atomic_load(&srv->inflight);
}

void http_server_conn_stats(const struct http_server *srv, struct conns_stats *out)
{
	conns_stats(srv->conns, out);
}

/*
 * Answers every deferred request still waiting with 503 SHUTTING_DOWN (and any deferred later at once), then waits
 * up to wait_ms for those answers to be sent. Returns true when none is left.
 */
static bool cut_deferred(struct http_server *srv, unsigned wait_ms)
{
	uint64_t deadline = clock_mono_ns() + (uint64_t)wait_ms * 1000000u;
	struct timespec tick = {0, 5 * 1000 * 1000};
	bool empty;

	pthread_mutex_lock(&srv->defer_mu);
	srv->stopping = true;
	for (struct http_deferred *d = srv->deferred_head; d != NULL; d = d->next)
		deferred_cut_short(d);
	pthread_mutex_unlock(&srv->defer_mu);
	/* the resumed connections send their 503 on the worker threads; the list empties as they complete */
	for (;;) {
		pthread_mutex_lock(&srv->defer_mu);
		empty = srv->deferred_head == NULL;
		pthread_mutex_unlock(&srv->defer_mu);
		if (empty || clock_mono_ns() >= deadline)
			return empty;
		nanosleep(&tick, NULL);
	}
}

void http_server_stop(struct http_server *srv)
{
	if (srv == NULL)
		return;
	/* libmicrohttpd refuses to stop with suspended connections: answer every waiting request first */
	cut_deferred(srv, 1000);
	if (srv->reaper_running) {
		pthread_mutex_lock(&srv->reaper_mu);
		srv->reaper_stop = true;
		pthread_cond_signal(&srv->reaper_cv);
		pthread_mutex_unlock(&srv->reaper_mu);
		pthread_join(srv->reaper, NULL);
	}
	MHD_stop_daemon(srv->daemon); /* closes the listen socket unless it was quiesced */
	server_free(srv);
}
