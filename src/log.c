/* log: JSON-lines logging to stderr. */
#include "log.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"

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
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(text, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

/* Appends s as a JSON string literal; control characters and invalid bytes are escaped. */
static void put_str(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	buf_append(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[6] = {'\\', 'u', '0', '0', 0, 0};

		switch (*p) {
		case '"':
			buf_append(b, "\\\"", 2);
			break;
		case '\\':
			buf_append(b, "\\\\", 2);
			break;
		case '\n':
			buf_append(b, "\\n", 2);
			break;
		case '\r':
			buf_append(b, "\\r", 2);
			break;
		case '\t':
			buf_append(b, "\\t", 2);
			break;
		default:
			if (*p < 0x20 || *p >= 0x7f) {
				/* non-ASCII is escaped byte-wise so a line is always valid JSON */
				esc[4] = hex[*p >> 4];
				esc[5] = hex[*p & 15];
				buf_append(b, esc, 6);
			} else {
				buf_append(b, p, 1);
			}
		}
	}
	buf_append(b, "\"", 1);
}

static void put_head(struct buf *b, enum log_level level, const char *component, const char *msg)
{
	char ts[CLOCK_RFC3339_LEN];

	clock_rfc3339(clock_real_ms(), ts);
	buf_printf(b, "{\"time\":\"%s\",\"level\":\"%s\",\"severity\":\"%s\",\"msg\":", ts, level_names[level],
		   severity_names[level]);
	put_str(b, msg);
	buf_append(b, ",\"component\":", 13);
	put_str(b, component ? component : "main");
}

static void put_field(struct buf *b, const struct log_field *f)
{
	buf_append(b, ",", 1);
	put_str(b, f->key);
	buf_append(b, ":", 1);
	switch (f->type) {
	case LOGF_STR:
		if (f->s)
			put_str(b, f->s);
		else
			buf_append(b, "null", 4);
		break;
	case LOGF_INT:
		buf_printf(b, "%lld", f->i);
		break;
	case LOGF_DBL:
		if (isfinite(f->d))
			buf_printf(b, "%.6g", f->d);
		else
			buf_append(b, "null", 4);
		break;
	case LOGF_BOOL:
		buf_append(b, f->b ? "true" : "false", f->b ? 4 : 5);
		break;
	}
}

static void emit(struct buf *b)
{
	const char *p;
	size_t left;

	if (b->data == NULL)
		return;
	if (buf_append(b, "}\n", 2) != 0) {
		/* a line over the cap is replaced rather than cut, so every line stays one valid JSON object */
		static const char too_long[] = "{\"level\":\"warn\",\"severity\":\"WARNING\","
					       "\"msg\":\"log line over 64 KiB dropped\",\"component\":\"log\"}\n";

		buf_release(b);
		buf_append(b, too_long, sizeof(too_long) - 1);
	}
	p = b->data;
	left = b->len;
	while (left > 0) {
		ssize_t n = write(STDERR_FILENO, p, left);

		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	buf_release(b);
}

void log_fields(enum log_level level, const char *component, const char *msg, const struct log_field *fields,
		size_t n)
{
	struct buf b;

	if (!log_enabled(level))
		return;
	buf_init(&b, LOG_LINE_MAX);
	put_head(&b, level, component, msg);
	for (size_t i = 0; i < n; i++)
		put_field(&b, &fields[i]);
	emit(&b);
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
	struct buf b;
	char *text;

	if (!log_enabled(level))
		return;
	buf_init(&b, LOG_LINE_MAX);
	put_head(&b, level, component, msg);
	text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	buf_append(&b, ",", 1);
	put_str(&b, key);
	buf_printf(&b, ":%s", text ? text : "null");
	free(text);
	emit(&b);
}
