/*
 * http: the HTTP server (libmicrohttpd), its limits, request ids, problem+json answers and the access log.
 *
 * http_server.c is the only file that includes microhttpd.h. A request is handed to one dispatch function as a
 * struct http_req (everything already read: path, query, the headers acceld uses, the whole body), which fills a
 * struct http_resp. Handlers never see libmicrohttpd, so unit tests call them with a request they build; the
 * helpers below that build requests and answers (http_resp.c) need no server.
 */
#ifndef ACCELD_HTTP_H
#define ACCELD_HTTP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "http/conns.h"
#include "core/err.h"

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_POST, HTTP_PUT, HTTP_DELETE, HTTP_PATCH, HTTP_OPTIONS, HTTP_OTHER };

#define HTTP_MAX_QUERY 32      /* query parameters per request */
#define HTTP_MAX_PARAMS 2      /* captures of {name} segments in a route pattern */
#define HTTP_PARAM_MAX 128     /* bytes of one path capture */
#define HTTP_MAX_HEADERS 8     /* extra response headers */
#define HTTP_REQUEST_ID_MAX 64 /* longest X-Request-Id taken from a client */

struct http_kv {
	const char *key;
	const char *value;
};

/* A complete request. Every pointer is borrowed and lives until the response has been queued. */
struct http_req {
	enum http_method method;
	const char *method_name;
	const char *path;          /* decoded path, no query */
	const char *request_id;
	const char *content_type;  /* NULL when absent */
	const char *if_none_match; /* NULL when absent */
	const char *authorization; /* NULL when absent */
	const char *remote_addr;
	const char *body;          /* NUL-terminated; "" when there is none */
	size_t body_len;
	bool has_body;             /* a body was sent, even an empty one with Content-Length: 0 is not */
	json_t *json;              /* the parsed body, for routes that take JSON; borrowed */
	struct http_kv query[HTTP_MAX_QUERY];
	size_t nquery;
	char params[HTTP_MAX_PARAMS][HTTP_PARAM_MAX];
	size_t nparams;
	unsigned max_json_depth;
};

struct http_header {
	char name[32];
	char value[256];
};

/* The answer a handler fills. Start from http_resp_init; the body is set by exactly one http_resp_* call. */
struct http_resp {
	int status;
	const char *content_type;  /* static string */
	json_t *json;              /* owned; serialised after the handler returns */
	char *body;                /* owned unless release is set */
	size_t body_len;
	void (*release)(void *arg); /* for a shared body: called when libmicrohttpd is done with it */
	void *release_arg;
	struct http_header headers[HTTP_MAX_HEADERS];
	size_t nheaders;
	const char *request_id;    /* copied into problem bodies */
	const char *route;         /* the route pattern the path matched (static), set by the dispatcher; NULL none */
	struct http_deferred *deferred; /* set by http_resp_defer: the answer comes later */
};

typedef void (*http_dispatch_fn)(void *ctx, struct http_req *req, struct http_resp *resp);

/*
 * Called once per answered request when it completes: method is a static name from http_method_name ("OTHER" for
 * any other), route the pattern the dispatcher matched or NULL, status the code sent, seconds since the request
 * began. Runs on a server thread; it must not block.
 */
typedef void (*http_observe_fn)(void *ctx, const char *method, const char *route, int status, double seconds);

struct http_server_opts {
	const char *host;
	unsigned port;                    /* 0 picks a free port; see http_server_port */
	unsigned threads;                 /* at least 1 */
	unsigned max_connections;         /* the budget: a new connection beyond it makes room or is refused (conns.h) */
	unsigned max_connections_per_ip;  /* the same per client address; 0 = no limit */
	unsigned idle_timeout_s;
	size_t conn_memory;
	size_t max_body;
	unsigned max_json_depth;
	bool access_log;
	const char *tls_cert_pem;         /* PEM certificate chain; NULL serves plain HTTP */
	const char *tls_key_pem;          /* PEM private key, with tls_cert_pem */
	http_dispatch_fn dispatch;
	void *ctx;
	http_observe_fn observe;          /* may be NULL */
	void *observe_ctx;
};

struct http_server;

/*
 * Binds, listens and starts the worker threads. Raises the soft limit on open descriptors to the hard one when it
 * is below what max_connections needs. Returns 0, or -1 with a message in err.
 */
int http_server_start(const struct http_server_opts *opts, struct http_server **out, char *err, size_t errsz);

/* The bound port (useful when 0 was asked for). */
unsigned http_server_port(const struct http_server *srv);

/* Stops accepting connections; requests already received are still answered. */
void http_server_quiesce(struct http_server *srv);

/* Requests received whose response has not completed yet. */
unsigned http_server_inflight(const struct http_server *srv);

/* The connection table's figures: open now, the budget, refused and evicted connections by cause. */
void http_server_conn_stats(const struct http_server *srv, struct conns_stats *out);

/*
 * Answers requests still waiting on a deferred answer with 503 SHUTTING_DOWN (up to 1 s for them to go out), then
 * closes every connection, joins the threads and frees the server. NULL is allowed.
 */
void http_server_stop(struct http_server *srv);

/* Marks every later response with Connection: close (used while draining). */
void http_server_set_closing(struct http_server *srv);

/* --- requests --- */

/* The first value of query parameter key, or NULL. */
const char *http_req_query(const struct http_req *req, const char *key);

/*
 * Checks that every query parameter is one of allowed (NULL-terminated) and appears once; otherwise fills a 400
 * naming the parameter and returns false.
 */
bool http_req_check_query(const struct http_req *req, struct http_resp *resp, const char *const *allowed);

/*
 * The same for a route that takes a JSON body: a query parameter that is not among allowed but names one of
 * body_fields (NULL-terminated; NULL for none) is refused saying that it belongs in the body (POST /run?wait=false).
 */
bool http_req_check_query_body(const struct http_req *req, struct http_resp *resp, const char *const *allowed,
			       const char *const *body_fields);

/*
 * Checks that the JSON body (req->json) is an object whose members are all among fields (NULL-terminated);
 * otherwise fills a 400 through http_resp_bad_field: INVALID_TYPE at "$" for a body that is no object,
 * UNKNOWN_FIELD for members the route does not take (`path` the first, `fields` every one, `accepted` the fields).
 * Returns true when the body passes.
 */
bool http_req_check_body(const struct http_req *req, struct http_resp *resp, const char *const *fields);

/*
 * Parses the body as JSON for req->json: 415 when the content type is not JSON, 400 naming line and column when it
 * is malformed or nested deeper than req->max_json_depth. Returns true when req->json is set.
 */
bool http_req_parse_json(struct http_req *req, struct http_resp *resp);

/* True when s is an acceptable X-Request-Id (1..64 of [A-Za-z0-9._:-]). */
bool http_request_id_valid(const char *s);

/* Writes a fresh random request id (32 hex digits) into out. */
void http_request_id_new(char out[HTTP_REQUEST_ID_MAX + 1]);

/* Deepest nesting of arrays and objects in a JSON text (strings skipped); stops counting past limit. */
unsigned http_json_depth(const char *text, size_t len, unsigned limit);

/* --- responses --- */

void http_resp_init(struct http_resp *resp, const char *request_id);

/* Frees whatever the response still owns. */
void http_resp_release(struct http_resp *resp);

/* A JSON answer; doc is stolen. */
void http_resp_json(struct http_resp *resp, int status, json_t *doc);

/* A text/plain answer; text is copied. */
void http_resp_text(struct http_resp *resp, int status, const char *text);

/* A body the response now owns (freed with free()). */
void http_resp_bytes(struct http_resp *resp, int status, const char *content_type, char *body, size_t len);

/* A body shared with others: release(arg) is called once libmicrohttpd no longer needs it. */
void http_resp_shared(struct http_resp *resp, int status, const char *content_type, const char *body, size_t len,
		      void (*release)(void *), void *arg);

/* Adds a header (name and value are copied; over-long ones are cut). */
void http_resp_header(struct http_resp *resp, const char *name, const char *value);

/*
 * An RFC 9457 problem+json answer: type, title, status, detail, reason and request_id, with the status and the title
 * of the reason's entry in the reason table (reason.h). Returns the document (borrowed) so the caller may add
 * members. 429 and 503 get a Retry-After of 1 s unless one is set afterwards.
 */
json_t *http_resp_problem(struct http_resp *resp, enum reason reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
json_t *http_resp_vproblem(struct http_resp *resp, enum reason reason, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* A problem answer for a service error code: the reason the error maps to (acceld_err_to_reason). */
json_t *http_resp_error(struct http_resp *resp, enum acceld_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The answer for a bad query or body parameter: 400 INVALID_PARAMETER with `parameter` naming it (param is copied).
 * Returns the document (borrowed) so the caller may add members such as `accepted`.
 */
json_t *http_resp_bad_param(struct http_resp *resp, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same for another reason about one parameter (MISSING_PARAMETER, INVALID_TIME, TOO_MANY_POINTS, ...). */
json_t *http_resp_param_problem(struct http_resp *resp, enum reason reason, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The answer for a bad body field, the one way every body parser refuses one: the reason's status, `path` the
 * field's JSONPath from the root ("$.n", "$.inputs.a[2]", "$.prices[0].usd_per_hour"; copied) and a detail that
 * starts with it ("$.n: 0 is not an integer from 1 to 1099511627776"). Returns false, so that a parser may
 * `return http_resp_bad_field(...)`.
 */
bool http_resp_bad_field(struct http_resp *resp, enum reason reason, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * A bad value wherever it came from: where is a query or path parameter's name ("device", "id": 400
 * INVALID_PARAMETER with `parameter`) or a body field's JSONPath ("$.device": INVALID_VALUE through
 * http_resp_bad_field). The detail starts with where ("device: 'cpu0' is not ..."). Returns false.
 */
bool http_resp_bad_value(struct http_resp *resp, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Adds `accepted` to the problem resp holds: the names of a ", "-separated list ("quick, long") as an array of
 * strings, the one shape of the member wherever a problem lists what a parameter or field takes. Returns false.
 */
bool http_resp_accepted(struct http_resp *resp, const char *names);

/*
 * A top-level body member that its domain parser refused, err its message: at "$.name", INVALID_TYPE when expected
 * names the type wanted (non-NULL), otherwise INVALID_VALUE with `accepted` from values (a ", "-separated list;
 * NULL where the values form no set). What every "each member through the domain module" loop answers. Returns
 * false.
 */
bool http_resp_bad_member(struct http_resp *resp, const char *name, const char *expected, const char *values,
			  const char *err);

/* --- deferred answers --- */

/*
 * A request answered later, from another thread (a job that runs for a while), without holding an HTTP thread:
 * the handler calls http_resp_defer and returns; the connection is suspended until http_deferred_finish supplies
 * the answer, which is queued on the next call of the access handler.
 */
struct http_deferred;

/*
 * Marks resp as answered later and returns the handle, holding one reference for the caller, who must pass it to
 * http_deferred_finish exactly once. Whatever body resp had is dropped.
 */
struct http_deferred *http_resp_defer(struct http_resp *resp);

/* The request id of a deferred request (for http_resp_init); valid until http_deferred_finish. */
const char *http_deferred_request_id(const struct http_deferred *d);

/*
 * Answers a deferred request with resp (its body is taken over and resp is left released) and drops the caller's
 * reference. Safe from any thread. When the client has gone or the server has stopped, the answer is dropped.
 */
void http_deferred_finish(struct http_deferred *d, struct http_resp *resp);

/*
 * For handlers run without a server (unit tests): takes the answer of a finished deferred request into resp
 * (initialised by the caller) and drops the connection's reference. Returns false when it has not finished yet.
 */
bool http_deferred_take(struct http_deferred *d, struct http_resp *resp);

/* The run-time version of libmicrohttpd, e.g. "0.9.75". */
const char *http_library_version(void);

/* The standard reason phrase of a status ("Not Found"). */
const char *http_status_title(int status);

/* "GET", "POST", ... for a method. */
const char *http_method_name(enum http_method method);

#endif
