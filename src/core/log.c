/* log: JSON-lines logging to stderr. */
#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/names.h"

#define LOG_LINE_MAX (64 * 1024)

static atomic_int log_min = LOGL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const char *const severity_names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};

void log_set_level(enum log_level level)
{
	atomic_store(&log_min, (int)level);
}

int log_enabled(enum log_level level)
{
	return (int)level >= atomic_load(&log_min);
}

int log_parse_level(const char *text, enum log_level *out)
{
	int i = names_find(level_names, sizeof(level_names) / sizeof(level_names[0]), text);

	if (i < 0)
		return -1;
	*out = (enum log_level)i;
	return 0;
}

/*
 * Lines are built in a per-thread fixed buffer (no allocation on the hot path of the access log); a line that
 * would not fit is replaced by a short notice so every line stays one valid JSON object.
 */
struct line {
	char buf[LOG_LINE_MAX];
	size_t len;
	bool overflow;
};

static _Thread_local struct line tl_line;

/* The "2026-11-22T03:16:09" part is formatted once per second per thread. */
static _Thread_local struct {
	time_t sec;
	char text[24];
} tl_clock;

static void put(struct line *l, const void *p, size_t n)
{
	if (l->overflow || n > sizeof(l->buf) - l->len) {
		l->overflow = true;
		return;
	}
	memcpy(l->buf + l->len, p, n);
	l->len += n;
}

static void put_lit(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

static void put_fmt(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_fmt(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len)
		l->overflow = true;
	else
		l->len += (size_t)n;
}

/* Appends s as a JSON string literal; control characters and non-ASCII bytes are escaped. */
static void put_str(struct line *l, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;

	put(l, "\"", 1);
	while (*p) {
		const unsigned char *run = p;
		char esc[6] = {'\\', 'u', '0', '0', 0, 0};

		while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
			p++;
		put(l, run, (size_t)(p - run));
		if (*p == '\0')
			break;
		switch (*p) {
		case '"':
			put(l, "\\\"", 2);
			break;
		case '\\':
			put(l, "\\\\", 2);
			break;
		case '\n':
			put(l, "\\n", 2);
			break;
		case '\t':
			put(l, "\\t", 2);
			break;
		default:
			/* non-ASCII is escaped byte-wise so a line is always valid JSON */
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			put(l, esc, 6);
		}
		p++;
	}
	put(l, "\"", 1);
}

/* Appends v in decimal (the access log writes several numbers per request: no printf on that path). */
static void put_u64(struct line *l, unsigned long long v)
{
	char tmp[24];
	size_t n = sizeof(tmp);

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	put(l, tmp + n, sizeof(tmp) - n);
}

/* Appends 0 <= v < 1e12 with three decimals, rounded ("12.346"). */
static void put_fixed3(struct line *l, double v)
{
	unsigned long long thousandths = (unsigned long long)(v * 1000.0 + 0.5);
	char frac[4] = {'.', 0, 0, 0};

	put_u64(l, thousandths / 1000);
	frac[1] = (char)('0' + thousandths / 100 % 10);
	frac[2] = (char)('0' + thousandths / 10 % 10);
	frac[3] = (char)('0' + thousandths % 10);
	put(l, frac, sizeof(frac));
}

static void put_i64(struct line *l, long long v)
{
	if (v < 0) {
		put(l, "-", 1);
		put_u64(l, 0ull - (unsigned long long)v);
	} else {
		put_u64(l, (unsigned long long)v);
	}
}

static void put_head(struct line *l, enum log_level level, const char *component, const char *msg)
{
	struct timespec ts;
	char frac[5] = {'.', '0', '0', '0', 'Z'};
	int ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != tl_clock.sec || tl_clock.text[0] == '\0') {
		struct tm tm;

		gmtime_r(&ts.tv_sec, &tm);
		strftime(tl_clock.text, sizeof(tl_clock.text), "%Y-%m-%dT%H:%M:%S", &tm);
		tl_clock.sec = ts.tv_sec;
	}
	l->len = 0;
	l->overflow = false;
	ms = (int)(ts.tv_nsec / 1000000);
	frac[1] = (char)('0' + ms / 100);
	frac[2] = (char)('0' + ms / 10 % 10);
	frac[3] = (char)('0' + ms % 10);
	put_lit(l, "{\"time\":\"");
	put_lit(l, tl_clock.text);
	put(l, frac, sizeof(frac));
	put_lit(l, "\",\"level\":\"");
	put_lit(l, level_names[level]);
	put_lit(l, "\",\"severity\":\"");
	put_lit(l, severity_names[level]);
	put_lit(l, "\",\"msg\":");
	put_str(l, msg);
	put_lit(l, ",\"component\":");
	put_str(l, component ? component : "main");
}

static void put_field(struct line *l, const struct log_field *f)
{
	put(l, ",", 1);
	put_str(l, f->key);
	put(l, ":", 1);
	switch (f->type) {
	case LOGF_STR:
		if (f->s)
			put_str(l, f->s);
		else
			put_lit(l, "null");
		break;
	case LOGF_INT:
		put_i64(l, f->i);
		break;
	case LOGF_DBL:
		if (!isfinite(f->d))
			put_lit(l, "null");
		else if (f->d >= 0 && f->d < 1e12)
			put_fixed3(l, f->d); /* durations in ms, to the microsecond: no printf on the access-log path */
		else
			put_fmt(l, "%.6g", f->d);
		break;
	case LOGF_BOOL:
		put_lit(l, f->b ? "true" : "false");
		break;
	}
}

static void write_all(const char *p, size_t left)
{
	while (left > 0) {
		ssize_t n = write(STDERR_FILENO, p, left);

		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
}

/*
 * Output buffering: while started, debug and info lines (the access log above all) collect in one buffer that a
 * thread writes out every LOG_FLUSH_MS, so a request costs no system call; warnings and errors flush it and are
 * written at once. A full buffer is written by the caller, so nothing is dropped.
 */
#define LOG_BUF_MAX (256 * 1024)
#define LOG_FLUSH_MS 100

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	bool running;
	bool stop;
	size_t len;
	char data[LOG_BUF_MAX];
} out = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void out_flush_locked(void)
{
	write_all(out.data, out.len);
	out.len = 0;
}

static void out_line(const char *p, size_t n, enum log_level level)
{
	pthread_mutex_lock(&out.mu);
	if (!out.running || level >= LOGL_WARN) {
		out_flush_locked();
		write_all(p, n);
	} else {
		if (n > sizeof(out.data) - out.len)
			out_flush_locked();
		if (n > sizeof(out.data)) {
			write_all(p, n);
		} else {
			memcpy(out.data + out.len, p, n);
			out.len += n;
		}
	}
	pthread_mutex_unlock(&out.mu);
}

static void *flusher(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&out.mu);
	while (!out.stop) {
		struct timespec until = clock_deadline(CLOCK_REALTIME, LOG_FLUSH_MS * 1000000ull);

		pthread_cond_timedwait(&out.cond, &out.mu, &until);
		out_flush_locked();
	}
	pthread_mutex_unlock(&out.mu);
	return NULL;
}

int log_buffering_start(void)
{
	int rc = 0;

	pthread_mutex_lock(&out.mu);
	if (!out.running) {
		out.stop = false;
		rc = pthread_create(&out.thread, NULL, flusher, NULL) == 0 ? 0 : -1;
		out.running = rc == 0;
	}
	pthread_mutex_unlock(&out.mu);
	return rc;
}

void log_buffering_stop(void)
{
	bool joined;

	pthread_mutex_lock(&out.mu);
	joined = out.running;
	out.stop = true;
	pthread_cond_signal(&out.cond);
	pthread_mutex_unlock(&out.mu);
	if (joined)
		pthread_join(out.thread, NULL);
	pthread_mutex_lock(&out.mu);
	out.running = false;
	out_flush_locked();
	pthread_mutex_unlock(&out.mu);
}

static void emit(struct line *l, enum log_level level)
{
	static const char too_long[] = "{\"level\":\"warn\",\"severity\":\"WARNING\","
				       "\"msg\":\"log line over 64 KiB dropped\",\"component\":\"log\"}\n";

	put(l, "}\n", 2);
	if (l->overflow)
		out_line(too_long, sizeof(too_long) - 1, LOGL_WARN);
	else
		out_line(l->buf, l->len, level);
}

void log_fields(enum log_level level, const char *component, const char *msg, const struct log_field *fields,
		size_t n)
{
	struct line *l = &tl_line;

	if (!log_enabled(level))
		return;
	put_head(l, level, component, msg);
	for (size_t i = 0; i < n; i++)
		put_field(l, &fields[i]);
	emit(l, level);
}

void log_msg(enum log_level level, const char *component, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fields(level, component, msg, NULL, 0);
}

void log_json(enum log_level level, const char *component, const char *msg, const char *key, const json_t *value)
{
	struct line *l = &tl_line;
	char *text;

	if (!log_enabled(level))
		return;
	put_head(l, level, component, msg);
	text = jsonval_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	put(l, ",", 1);
	put_str(l, key);
	put(l, ":", 1);
	put_lit(l, text ? text : "null");
	free(text);
	emit(l, level);
}
