/*
 * libFuzzer harness: whole requests through the running service. The process starts acceld's HTTP server and
 * services once (a fixture TPU host, a database in a temporary folder, OpenCL off so inputs stay fast), then each
 * input becomes one well-formed HTTP/1.1 request on a kept-alive loopback connection:
 *
 *   byte 0        method (low 3 bits) and content type (bit 3: text/plain instead of application/json)
 *   up to '\n'    the request target: path, path parameters and query string, exactly as a client writes them
 *                 (libmicrohttpd decodes them as it does for every client); bytes a request line cannot carry are
 *                 sent %-escaped
 *   the rest      the body
 *
 * So every query-string, path-parameter and body validator behind every route is reached through the real parser.
 * Any 5xx other than a 503 from the probes, or a 4xx that is not problem+json, aborts, as does a request that gets
 * no answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/routes.h"
#include "app.h"
#include "core/config.h"
#include "exec/backend.h"
#include "http/http.h"
#include "core/log.h"
#include "metrics/metrics.h"

#define TARGET_MAX 2048
#define REQ_MAX (TARGET_MAX * 3 + 65536 + 512)
#define HEAD_MAX 8192

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct app app;
static unsigned port;
static int sock = -1;

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

static char dir[] = "/tmp/acceld-fuzz-XXXXXX";

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The temporary folder (database, OpenCL vendors folder) goes when the fuzzer exits. */
static void cleanup(void)
{
	if (sock >= 0)
		close(sock);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what)
{
	fprintf(stderr, "fuzz_request: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char db[sizeof(dir) + 16], icd[sizeof(dir) + 16], pocl[sizeof(dir) + 16];
	char *args[] = {"--listen", "127.0.0.1:0", "--db", db, "--access-log", "false", "--log-level", "error",
			"--threads", "2", "--sysfs-root", "tests/fixtures/tpu-v6e-8/sys", "--dev-root",
			"tests/fixtures/tpu-v6e-8/dev", "--nvml-library", "/nonexistent/libnvml.so.1",
			"--gce-metadata-url", "http://127.0.0.1:1", "--exec-max-elements", "65536",
			"--exec-max-timeout", "2s", "--pocl-cache-dir", pocl};
	struct http_server_opts hopts;
	char err[512];

	(void)argc;
	(void)argv;
	if (mkdtemp(dir) == NULL)
		die("mkdtemp");
	atexit(cleanup);
	snprintf(db, sizeof(db), "%s/acceld.db", dir);
	snprintf(icd, sizeof(icd), "%s/icd", dir);
	snprintf(pocl, sizeof(pocl), "%s/pocl", dir);
	if (mkdir(icd, 0700) != 0)
		die("mkdir");
	setenv("OCL_ICD_VENDORS", icd, 1); /* no OpenCL platform: CPU jobs run on the native kernels */
	if (config_load(&app.cfg, (int)(sizeof(args) / sizeof(args[0])), args, no_env, err, sizeof(err)) != 0)
		die(err);
	log_set_level((enum log_level)app.cfg.log_level);
	backend_prepare_all(&app.cfg);
	app.metrics = metrics_new();
	routes_server_opts(&app, &hopts);
	if (http_server_start(&hopts, &app.http, err, sizeof(err)) != 0)
		die(err);
	port = http_server_port(app.http);
	app_services_start(&app);
	atomic_store(&app.started, true);
	return 0;
}

static int connect_once(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 30};
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* a request that is not answered in 30 s is a hang: the read fails and the input aborts */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("connect");
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Appends the request target, %-escaping what a request line cannot carry (the server decodes the rest). */
static size_t put_target(char *out, const uint8_t *t, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (n == 0 || t[0] != '/')
		out[o++] = '/';
	for (size_t i = 0; i < n; i++) {
		if (t[i] > 0x20 && t[i] < 0x7f && t[i] != '#') {
			out[o++] = (char)t[i];
		} else {
			out[o++] = '%';
			out[o++] = hex[t[i] >> 4];
			out[o++] = hex[t[i] & 15];
		}
	}
	return o;
}

struct answer {
	int status;
	char content_type[128];
	size_t content_length;
	bool has_length;
	bool close;
};

/* Reads the status line and headers (up to the blank line) into a; returns -1 when the connection failed. */
static int read_head(int fd, struct answer *a, char *head, size_t *extra_len)
{
	size_t len = 0;
	char *end = NULL;

	while (end == NULL) {
		ssize_t r;

		if (len == HEAD_MAX - 1)
			die("response headers too long");
		r = recv(fd, head + len, HEAD_MAX - 1 - len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		len += (size_t)r;
		head[len] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	*extra_len = len - (size_t)(end + 4 - head);
	*end = '\0';
	memset(a, 0, sizeof(*a));
	if (sscanf(head, "HTTP/1.%*d %d", &a->status) != 1)
		die("no status line");
	for (char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
		char *v = line + 2;

		if (strncasecmp(v, "Content-Type:", 13) == 0)
			sscanf(v + 13, " %127[^\r]", a->content_type);
		else if (strncasecmp(v, "Content-Length:", 15) == 0)
			a->has_length = sscanf(v + 15, " %zu", &a->content_length) == 1;
		else if (strncasecmp(v, "Connection:", 11) == 0 && strncasecmp(v + 11, " close", 6) == 0)
			a->close = true;
	}
	return 0;
}

/* Skips the body of a; returns -1 when the connection failed or the body has no length (then it is closed). */
static int skip_body(int fd, const struct answer *a, size_t already)
{
	static char sink[65536];
	size_t left;

	if (!a->has_length)
		return -1;
	left = a->content_length > already ? a->content_length - already : 0;
	while (left > 0) {
		ssize_t r = recv(fd, sink, left < sizeof(sink) ? left : sizeof(sink), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		left -= (size_t)r;
	}
	return 0;
}

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "GET"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char req[REQ_MAX];
	static char head[HEAD_MAX];
	const uint8_t *nl;
	const char *method;
	size_t tlen, blen, o, extra_len;
	struct answer a;

	if (size == 0 || size > 65536)
		return 0;
	method = methods[data[0] & 7];
	data++;
	size--;
	nl = memchr(data, '\n', size);
	tlen = nl ? (size_t)(nl - data) : size;
	if (tlen > TARGET_MAX)
		return 0;
	blen = nl ? size - tlen - 1 : 0;
	o = (size_t)snprintf(req, sizeof(req), "%s ", method);
	o += put_target(req + o, data, tlen);
	o += (size_t)snprintf(req + o, sizeof(req) - o,
			      " HTTP/1.1\r\nHost: fuzz\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
			      (data[-1] & 8) ? "text/plain" : "application/json", blen);
	if (blen > 0)
		memcpy(req + o, nl + 1, blen);
	o += blen;

	for (int attempt = 0;; attempt++) {
		if (sock < 0)
			sock = connect_once();
		if (send_all(sock, req, o) == 0 && read_head(sock, &a, head, &extra_len) == 0)
			break;
		/* the server closed a kept-alive connection (idle timeout, Connection: close): once more, fresh */
		close(sock);
		sock = -1;
		if (attempt == 1)
			die("no answer");
	}
	if (a.status >= 500 && !(a.status == 503 && tlen >= 7 && memcmp(data, "/readyz", 7) == 0)) {
		fprintf(stderr, "fuzz_request: %d for %.*s\n", a.status, (int)(o < 600 ? o : 600), req);
		abort();
	}
	if (a.status >= 400 && strcmp(a.content_type, "application/problem+json") != 0) {
		fprintf(stderr, "fuzz_request: %d answered as '%s' for %.*s\n", a.status, a.content_type,
			(int)(o < 600 ? o : 600), req);
		abort();
	}
	if (strcmp(method, "HEAD") == 0 || a.status == 204 || a.status == 304)
		a.content_length = 0, a.has_length = true;
	if (a.close || skip_body(sock, &a, extra_len) != 0) {
		close(sock);
		sock = -1;
	}
	return 0;
}
