/*
 * http_server: the server behind http.h: libmicrohttpd, the connections and the request's way from the socket to
 * the dispatch function and back. The request and response helpers it hands to handlers are http_resp.c's.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/mem.h"
#include "http/conns.h"
#include "http/http_int.h"

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
		char *text = jsonval_dumps(resp->json, JSON_COMPACT);
		size_t len;

		if (text == NULL) {
			/* only a document with invalid strings gets here; answer rather than drop the request */
			http_resp_problem(resp, REASON_INTERNAL, "the answer could not be encoded as JSON");
			text = jsonval_dumps(resp->json, JSON_COMPACT);
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
	http_resp_move(&resp, &d->resp);
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
	d->resume = MHD_resume_connection;
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
	http_deferred_unref(d);
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
	req.method = http_method_of(method);
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
		socklen_t len =
			sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

		/* a refused connection gets no entry: it is cut already, and libmicrohttpd closes it */
		if (fd != NULL)
			*socket_context = conns_open(srv->conns, fd->connect_fd, sa, len, clock_mono_ns());
		return;
	}
	/* libmicrohttpd closes the socket once this returns: the table lets go of it first, so nothing cuts it later */
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
		srv->opts.observe(srv->opts.observe_ctx, http_method_name(http_method_of(cr->method)), cr->route,
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
	/* the logger comes first: libmicrohttpd reports on the options that follow as it reads them (a pool of one
	 * thread is "ignored" with a warning), and anything it says must be a JSON line like the rest of the log */
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
		MHD_OPTION_LISTEN_SOCKET, srv->listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned)(opts->threads > 1 ? opts->threads : 0),
		MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT, opts->idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, opts->conn_memory, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
		MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
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
		log_msg(LOGL_WARN, "http",
			"no request deadline thread; slow clients are bounded by the idle timeout only");
	*out = srv;
	return 0;
}

const char *http_library_version(void)
{
	return MHD_get_version();
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

