/*
 * Unit tests for http_server.c: a server on a free loopback port (port 0) with a dispatch function of the test's
 * own, spoken to in raw HTTP/1.1 through sockets. What http.h promises of it: the request as handlers see it
 * (path, query, headers, body, request id), the body cap (413, announced or chunked), the query cap, JSON depth,
 * keep-alive, closing, deferred answers (and their 503 at stop), quiescing, the connection budget per address, and
 * the observe hook.
 *
 * Waits on the server's threads are bounded (WAIT_MS) so that a broken server fails a test instead of hanging it;
 * nothing asserts how long anything took.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "core/log.h"
#include "http/http.h"

#define WAIT_MS 20000
#define MAX_BODY 1024

/* --- the test's handlers --- */

static atomic_uint observed;            /* requests the observe hook saw */
static char observed_line[128];         /* "GET /echo 200" of the last one */
static pthread_mutex_t observed_mu = PTHREAD_MUTEX_INITIALIZER;
static struct http_deferred *_Atomic pending; /* the /defer request waiting for the test to answer it */

static void echo(struct http_req *req, struct http_resp *resp)
{
	json_t *query = json_object();

	for (size_t i = 0; i < req->nquery; i++)
		json_object_set_new(query, req->query[i].key, json_string(http_req_query(req, req->query[i].key)));
	http_resp_json(resp, 200,
		       json_pack("{s:s, s:s, s:s%, s:b, s:o, s:s*, s:s*, s:s, s:s}", "method", req->method_name, "path",
				 req->path, "body", req->body, req->body_len, "has_body", req->has_body, "query", query,
				 "content_type", req->content_type, "authorization", req->authorization, "request_id",
				 req->request_id, "remote", req->remote_addr));
}

static void dispatch(void *ctx, struct http_req *req, struct http_resp *resp)
{
	(void)ctx;
	if (strcmp(req->path, "/echo") == 0) {
		resp->route = "/echo";
		echo(req, resp);
	} else if (strcmp(req->path, "/json") == 0) {
		resp->route = "/json";
		if (http_req_parse_json(req, resp))
			http_resp_json(resp, 200, json_pack("{s:O}", "got", req->json));
	} else if (strcmp(req->path, "/defer") == 0) {
		resp->route = "/defer";
		atomic_store(&pending, http_resp_defer(resp));
	} else {
		http_resp_problem(resp, REASON_NOT_FOUND, "no route for %s", req->path);
	}
}

static void observe(void *ctx, const char *method, const char *route, int status, double seconds)
{
	(void)ctx;
	(void)seconds;
	pthread_mutex_lock(&observed_mu);
	snprintf(observed_line, sizeof(observed_line), "%s %s %d", method, route ? route : "-", status);
	pthread_mutex_unlock(&observed_mu);
	atomic_fetch_add(&observed, 1);
}

/* --- the server and its clients --- */

static struct http_server *srv;

static void start_with(unsigned per_ip)
{
	struct http_server_opts o = {
		.host = "127.0.0.1",
		.port = 0,
		.threads = 2,
		.max_connections = 16,
		.max_connections_per_ip = per_ip,
		.idle_timeout_s = 60,
		.conn_memory = 32768,
		.max_body = MAX_BODY,
		.max_json_depth = 4,
		.access_log = false,
		.dispatch = dispatch,
		.observe = observe,
	};
	char err[256] = "";

	atomic_store(&observed, 0);
	atomic_store(&pending, NULL);
	ck_assert_msg(http_server_start(&o, &srv, err, sizeof(err)) == 0, "start: %s", err);
}

static void setup(void)
{
	start_with(0);
}

static void teardown(void)
{
	http_server_stop(srv);
	srv = NULL;
}

/* Sleeps a millisecond at a time until cond(arg) holds; false after WAIT_MS. */
static bool wait_for(bool (*cond)(const void *), const void *arg)
{
	struct timespec tick = {0, 1000000};

	for (int left = WAIT_MS; left > 0 && !cond(arg); left--)
		nanosleep(&tick, NULL);
	return cond(arg);
}

static bool observed_reaches(const void *n)
{
	return atomic_load(&observed) >= *(const unsigned *)n;
}

static bool deferred_pending(const void *unused)
{
	(void)unused;
	return atomic_load(&pending) != NULL;
}

static bool nothing_inflight(const void *unused)
{
	(void)unused;
	return http_server_inflight(srv) == 0;
}

static bool refused_per_address(const void *n)
{
	struct conns_stats st;

	http_server_conn_stats(srv, &st);
	return st.refused[CONNS_REFUSED_PER_IP] >= *(const unsigned *)n;
}

static bool observed_n(unsigned n)
{
	return wait_for(observed_reaches, &n);
}

/* Waits for the /defer request to reach its handler and takes its handle. */
static struct http_deferred *take_pending(void)
{
	ck_assert(wait_for(deferred_pending, NULL));
	return atomic_exchange(&pending, NULL);
}

static int connect_to(unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {WAIT_MS / 1000, 0};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* a hung server fails the test, not the run */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int client(void)
{
	int fd = connect_to(http_server_port(srv));

	ck_assert_int_ge(fd, 0);
	return fd;
}

static void send_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

		ck_assert_int_gt(n, 0);
		data += n;
		len -= (size_t)n;
	}
}

static void send_str(int fd, const char *text)
{
	send_all(fd, text, strlen(text));
}

struct reply {
	int status;
	char head[4096];   /* the status line and headers */
	char body[8192];
	size_t body_len;
	json_t *json;      /* the body parsed, when it is JSON */
};

/* The value of a header of r (copied into out), or NULL. */
static const char *header(const struct reply *r, const char *name, char *out, size_t outsz)
{
	size_t nlen = strlen(name);

	for (const char *p = strstr(r->head, "\r\n"); p != NULL && p[2] != '\0'; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;
		size_t vlen;

		if (strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
			continue;
		line += nlen + 1;
		while (*line == ' ')
			line++;
		vlen = strcspn(line, "\r");
		snprintf(out, outsz, "%.*s", (int)vlen, line);
		return out;
	}
	return NULL;
}

/* Reads one answer; returns false when the connection ended (or failed) before a whole one came. */
static bool read_reply(int fd, struct reply *r)
{
	char buf[sizeof(r->head) + sizeof(r->body)];
	size_t have = 0;
	char *end = NULL;
	char cl[32];
	size_t want;
	size_t head_len;

	memset(r, 0, sizeof(*r));
	while (end == NULL) {
		ssize_t n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0);

		if (n <= 0)
			return false;
		have += (size_t)n;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	head_len = (size_t)(end - buf) + 2;
	ck_assert_uint_lt(head_len, sizeof(r->head));
	memcpy(r->head, buf, head_len);
	r->head[head_len] = '\0';
	ck_assert_int_eq(sscanf(r->head, "HTTP/1.1 %d", &r->status), 1);
	want = header(r, "Content-Length", cl, sizeof(cl)) ? strtoul(cl, NULL, 10) : 0;
	ck_assert_uint_lt(want, sizeof(r->body));
	have -= head_len + 2;
	memmove(r->body, end + 4, have);
	while (have < want) {
		ssize_t n = recv(fd, r->body + have, want - have, 0);

		if (n <= 0)
			return false;
		have += (size_t)n;
	}
	ck_assert_uint_eq(have, want); /* nothing beyond the answer: the client sends one request at a time */
	r->body_len = want;
	r->json = json_loadb(r->body, r->body_len, 0, NULL);
	return true;
}

/* Sends request on fd and reads the answer, which must come. */
static void exchange(int fd, const char *request, struct reply *r)
{
	send_str(fd, request);
	ck_assert_msg(read_reply(fd, r), "no answer to %s", request);
}

static void reply_release(struct reply *r)
{
	json_decref(r->json);
	r->json = NULL;
}

static const char *member(const struct reply *r, const char *name)
{
	return json_string_value(json_object_get(r->json, name));
}

/* True when the server has closed fd (end of stream or a reset), with nothing more sent. */
static bool closed_by_server(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* --- the request as the handler sees it --- */

START_TEST(port_zero_binds_a_free_port)
{
	ck_assert_uint_gt(http_server_port(srv), 0);
	ck_assert_uint_lt(http_server_port(srv), 65536);
}
END_TEST

START_TEST(request_reaches_the_handler_whole)
{
	int fd = client();
	struct reply r;
	char v[128];
	json_t *q;

	exchange(fd,
		 "POST /echo?a=1&b&c=x%20y HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
		 "Authorization: Bearer tok\r\nContent-Length: 7\r\n\r\n{\"k\":1}",
		 &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(header(&r, "Content-Type", v, sizeof(v)), "application/json");
	ck_assert_int_eq(r.body[r.body_len - 1], '\n'); /* a JSON answer ends with a newline */
	ck_assert_str_eq(member(&r, "method"), "POST");
	ck_assert_str_eq(member(&r, "path"), "/echo"); /* no query in the path */
	ck_assert_str_eq(member(&r, "body"), "{\"k\":1}");
	ck_assert(json_is_true(json_object_get(r.json, "has_body")));
	ck_assert_str_eq(member(&r, "content_type"), "application/json");
	ck_assert_str_eq(member(&r, "authorization"), "Bearer tok");
	ck_assert_str_eq(member(&r, "remote"), "127.0.0.1");
	q = json_object_get(r.json, "query");
	ck_assert_str_eq(json_string_value(json_object_get(q, "a")), "1");
	ck_assert_str_eq(json_string_value(json_object_get(q, "b")), ""); /* ?b with no value */
	ck_assert_str_eq(json_string_value(json_object_get(q, "c")), "x y"); /* percent-decoded */
	/* the id the handler used is the one the answer names */
	ck_assert_str_eq(header(&r, "X-Request-Id", v, sizeof(v)), member(&r, "request_id"));
	reply_release(&r);

	/* no body: has_body false, body "" */
	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(member(&r, "body"), "");
	ck_assert(json_is_false(json_object_get(r.json, "has_body")));
	ck_assert_ptr_null(json_object_get(r.json, "content_type"));
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(request_ids_taken_or_made)
{
	int fd = client();
	struct reply r;
	char v[128];

	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\nX-Request-Id: trace-1.2:3_x\r\n\r\n", &r);
	ck_assert_str_eq(header(&r, "X-Request-Id", v, sizeof(v)), "trace-1.2:3_x");
	ck_assert_str_eq(member(&r, "request_id"), "trace-1.2:3_x");
	reply_release(&r);

	/* an id that is no acceptable one is replaced by a fresh one */
	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\nX-Request-Id: bad/id\r\n\r\n", &r);
	ck_assert_ptr_nonnull(header(&r, "X-Request-Id", v, sizeof(v)));
	ck_assert_uint_eq(strlen(v), 32);
	ck_assert_str_ne(v, "bad/id");
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(unknown_path_is_a_problem_404)
{
	int fd = client();
	struct reply r;
	char v[128];

	exchange(fd, "GET /nowhere HTTP/1.1\r\nHost: t\r\nX-Request-Id: rid-404\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_str_eq(header(&r, "Content-Type", v, sizeof(v)), "application/problem+json");
	ck_assert_str_eq(member(&r, "reason"), "NOT_FOUND");
	ck_assert_str_eq(member(&r, "request_id"), "rid-404");
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "status")), 404);
	reply_release(&r);
	close(fd);
}
END_TEST

/* --- limits --- */

START_TEST(too_many_query_parameters)
{
	char target[512];
	size_t len = 0;
	int fd = client();
	struct reply r;

	len += (size_t)snprintf(target + len, sizeof(target) - len, "GET /echo?");
	for (int i = 0; i <= HTTP_MAX_QUERY; i++)
		len += (size_t)snprintf(target + len, sizeof(target) - len, "%sp%d=1", i ? "&" : "", i);
	snprintf(target + len, sizeof(target) - len, " HTTP/1.1\r\nHost: t\r\n\r\n");
	exchange(fd, target, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(member(&r, "reason"), "TOO_MANY_PARAMETERS");
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(body_at_the_cap_is_taken)
{
	char req[MAX_BODY + 256];
	int fd = client();
	struct reply r;
	int n = snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", MAX_BODY);

	memset(req + n, 'b', MAX_BODY);
	send_all(fd, req, (size_t)n + MAX_BODY);
	ck_assert(read_reply(fd, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(strlen(member(&r, "body")), MAX_BODY);
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(announced_body_over_the_cap_is_413_and_closes)
{
	char req[256];
	int fd = client();
	struct reply r;
	char v[64];

	/* refused from Content-Length alone, before any of the body is sent */
	snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n", MAX_BODY + 1);
	exchange(fd, req, &r);
	ck_assert_int_eq(r.status, 413);
	ck_assert_str_eq(member(&r, "reason"), "BODY_TOO_LARGE");
	ck_assert_ptr_nonnull(strstr(member(&r, "detail"), "1024 bytes"));
	ck_assert_str_eq(header(&r, "Connection", v, sizeof(v)), "close");
	ck_assert(closed_by_server(fd));
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(chunked_body_over_the_cap_is_413)
{
	char chunk[700];
	char req[2048];
	int fd = client();
	struct reply r;
	int n;

	memset(chunk, 'c', sizeof(chunk));
	/* two chunks of 700 bytes: the cap is passed in the second, the client still finishes sending */
	n = snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
				       "2bc\r\n%.700s\r\n2bc\r\n%.700s\r\n0\r\n\r\n", chunk, chunk);
	send_all(fd, req, (size_t)n);
	ck_assert(read_reply(fd, &r));
	ck_assert_int_eq(r.status, 413);
	ck_assert_str_eq(member(&r, "reason"), "BODY_TOO_LARGE");
	reply_release(&r);
	close(fd);

	/* one chunk under the cap goes through */
	fd = client();
	n = snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
				       "2bc\r\n%.700s\r\n0\r\n\r\n", chunk);
	send_all(fd, req, (size_t)n);
	ck_assert(read_reply(fd, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(strlen(member(&r, "body")), 700);
	ck_assert(json_is_true(json_object_get(r.json, "has_body")));
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(json_depth_is_the_servers)
{
	int fd = client();
	struct reply r;

	/* max_json_depth 4 reaches the handler's request */
	exchange(fd, "POST /json HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n"
		     "[[[[1]]]]", &r);
	ck_assert_int_eq(r.status, 200);
	reply_release(&r);
	exchange(fd, "POST /json HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
		     "[[[[[1]]]]]", &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(member(&r, "reason"), "JSON_TOO_DEEP");
	reply_release(&r);
	close(fd);
}
END_TEST

/* --- connections --- */

START_TEST(keep_alive_serves_requests_in_turn)
{
	int fd = client();
	struct reply r;
	char first[80];
	char v[80];
	struct conns_stats st;

	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(header(&r, "Connection", v, sizeof(v))); /* HTTP/1.1 keeps it open unless told */
	ck_assert_ptr_nonnull(header(&r, "X-Request-Id", first, sizeof(first)));
	reply_release(&r);
	for (int i = 0; i < 3; i++) {
		exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
		ck_assert_int_eq(r.status, 200);
		ck_assert_str_ne(header(&r, "X-Request-Id", v, sizeof(v)), first); /* each request its own id */
		reply_release(&r);
	}
	http_server_conn_stats(srv, &st);
	ck_assert_uint_eq(st.open, 1); /* one connection served all four */
	ck_assert_uint_eq(st.max, 16);
	close(fd);
}
END_TEST

START_TEST(closing_marks_answers_and_ends_connections)
{
	int fd = client();
	struct reply r;
	char v[64];

	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	reply_release(&r);
	http_server_set_closing(srv);
	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(header(&r, "Connection", v, sizeof(v)), "close");
	ck_assert(closed_by_server(fd));
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(quiesce_refuses_new_connections_only)
{
	unsigned port = http_server_port(srv);
	int fd = client();
	int other;
	struct reply r;

	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	reply_release(&r);
	http_server_quiesce(srv);
	http_server_quiesce(srv); /* a second call is harmless */
	other = connect_to(port);
	ck_assert_int_lt(other, 0); /* nothing listens any more */
	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r); /* the open connection is still served */
	ck_assert_int_eq(r.status, 200);
	reply_release(&r);
	close(fd);
}
END_TEST

START_TEST(observe_sees_each_answer)
{
	int fd = client();
	struct reply r;

	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	reply_release(&r);
	ck_assert(observed_n(1)); /* reported when the request completes */
	pthread_mutex_lock(&observed_mu);
	ck_assert_str_eq(observed_line, "GET /echo 200");
	pthread_mutex_unlock(&observed_mu);

	exchange(fd, "BREW /nowhere HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 404);
	reply_release(&r);
	ck_assert(observed_n(2));
	pthread_mutex_lock(&observed_mu);
	ck_assert_str_eq(observed_line, "OTHER - 404"); /* a method of no name, and no route matched */
	pthread_mutex_unlock(&observed_mu);
	close(fd);
}
END_TEST

/* --- deferred answers --- */

START_TEST(deferred_answer_comes_later)
{
	int fd = client();
	struct http_deferred *d;
	struct http_resp resp;
	struct reply r;
	char v[64];

	send_str(fd, "GET /defer HTTP/1.1\r\nHost: t\r\nX-Request-Id: rid-later\r\n\r\n");
	d = take_pending();
	ck_assert_uint_eq(http_server_inflight(srv), 1); /* received, not answered */
	ck_assert_str_eq(http_deferred_request_id(d), "rid-later");
	http_resp_init(&resp, http_deferred_request_id(d));
	http_resp_json(&resp, 202, json_pack("{s:s}", "state", "done"));
	http_deferred_finish(d, &resp);
	ck_assert(read_reply(fd, &r));
	ck_assert_int_eq(r.status, 202);
	ck_assert_str_eq(member(&r, "state"), "done");
	ck_assert_str_eq(header(&r, "X-Request-Id", v, sizeof(v)), "rid-later");
	reply_release(&r);
	/* the connection goes on after a deferred answer */
	exchange(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	reply_release(&r);
	ck_assert(wait_for(nothing_inflight, NULL));
	close(fd);
}
END_TEST

START_TEST(stop_answers_waiting_requests_503)
{
	int fd = client();
	struct http_deferred *d;
	struct http_resp resp;
	struct reply r;

	send_str(fd, "GET /defer HTTP/1.1\r\nHost: t\r\n\r\n");
	d = take_pending();
	http_server_stop(srv);
	srv = NULL;
	ck_assert(read_reply(fd, &r)); /* sent before the stop returned */
	ck_assert_int_eq(r.status, 503);
	ck_assert_str_eq(member(&r, "reason"), "SHUTTING_DOWN");
	reply_release(&r);
	/* the handler's own answer, late, is dropped with its reference */
	http_resp_init(&resp, "late");
	http_resp_text(&resp, 200, "too late");
	http_deferred_finish(d, &resp);
	close(fd);
}
END_TEST

/* --- the budget per client address --- */

START_TEST(per_address_budget_evicts_idle_and_refuses_busy)
{
	int a;
	int b;
	int c;
	struct reply r;
	struct conns_stats st;
	struct http_deferred *d;
	struct http_resp resp;

	teardown();
	start_with(1);
	/* a is answered and idle: a second connection from the address takes its place */
	a = client();
	exchange(a, "GET /echo HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	reply_release(&r);
	ck_assert(observed_n(1)); /* the table has seen the answer complete */
	b = client();
	ck_assert(closed_by_server(a));
	close(a);
	http_server_conn_stats(srv, &st);
	ck_assert_uint_eq(st.evicted[CONNS_EVICTED_IDLE_KEEPALIVE], 1);

	/* b waits on a deferred answer, its request whole: never chosen, so a third connection is refused */
	send_str(b, "GET /defer HTTP/1.1\r\nHost: t\r\n\r\n");
	d = take_pending();
	c = client();
	ck_assert(closed_by_server(c));
	close(c);
	ck_assert(wait_for(refused_per_address, &(unsigned){1}));
	http_resp_init(&resp, http_deferred_request_id(d));
	http_resp_text(&resp, 200, "ok");
	http_deferred_finish(d, &resp);
	ck_assert(read_reply(b, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "ok");
	reply_release(&r);
	close(b);
}
END_TEST

/* --- starting --- */

START_TEST(start_fails_with_a_reason)
{
	struct http_server_opts o = {.host = "127.0.0.1", .port = http_server_port(srv), .threads = 1,
				     .max_connections = 4, .max_body = 16, .dispatch = dispatch};
	struct http_server *second = NULL;
	char err[256] = "";

	/* the port is taken by the running server */
	ck_assert_int_eq(http_server_start(&o, &second, err, sizeof(err)), -1);
	ck_assert_ptr_null(second);
	ck_assert_ptr_nonnull(strstr(err, "cannot listen on 127.0.0.1:"));
	http_server_stop(NULL); /* allowed */
}
END_TEST

/* log.h's promise, one JSON object per line on stderr, holds for what libmicrohttpd says while starting too. */
START_TEST(one_thread_server_logs_only_json)
{
	struct http_server_opts o = {.host = "127.0.0.1", .threads = 1, .max_connections = 4, .idle_timeout_s = 5,
				     .conn_memory = 32768, .max_body = 16, .max_json_depth = 4, .dispatch = dispatch};
	struct http_server *one = NULL;
	char path[] = "/tmp/acceld-http-stderr-XXXXXX";
	char text[4096];
	char err[256] = "";
	int fd = mkstemp(path);
	int saved = dup(2);
	FILE *f;
	size_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	log_set_level(LOGL_DEBUG); /* whatever it says, at any level */
	fflush(stderr);
	ck_assert_int_eq(dup2(fd, 2), 2);
	ck_assert_int_eq(http_server_start(&o, &one, err, sizeof(err)), 0);
	http_server_stop(one);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(path);
	for (char *line = text; *line != '\0'; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != '\0'))
		ck_assert_msg(line[0] == '{', "not a JSON line on stderr: %.*s", (int)strcspn(line, "\n"), line);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("http_server");
	TCase *tc = tcase_create("server");

	/* generous: the sanitizer builds run these on a loaded machine */
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, port_zero_binds_a_free_port);
	tcase_add_test(tc, request_reaches_the_handler_whole);
	tcase_add_test(tc, request_ids_taken_or_made);
	tcase_add_test(tc, unknown_path_is_a_problem_404);
	tcase_add_test(tc, too_many_query_parameters);
	tcase_add_test(tc, body_at_the_cap_is_taken);
	tcase_add_test(tc, announced_body_over_the_cap_is_413_and_closes);
	tcase_add_test(tc, chunked_body_over_the_cap_is_413);
	tcase_add_test(tc, json_depth_is_the_servers);
	tcase_add_test(tc, keep_alive_serves_requests_in_turn);
	tcase_add_test(tc, closing_marks_answers_and_ends_connections);
	tcase_add_test(tc, quiesce_refuses_new_connections_only);
	tcase_add_test(tc, observe_sees_each_answer);
	tcase_add_test(tc, deferred_answer_comes_later);
	tcase_add_test(tc, stop_answers_waiting_requests_503);
	tcase_add_test(tc, per_address_budget_evicts_idle_and_refuses_busy);
	tcase_add_test(tc, start_fails_with_a_reason);
	tcase_add_test(tc, one_thread_server_logs_only_json);
	suite_add_tcase(s, tc);
	return s;
}
