/*
 * log: one JSON object per line on stderr.
 *
 * Every line has time (RFC 3339 UTC), level, severity (the Cloud Logging name), msg and component, then any
 * fields the caller adds. Lines are whole when written, so lines from threads never interleave.
 */
#ifndef ACCELD_LOG_H
#define ACCELD_LOG_H

#include <jansson.h>

enum log_level { LOGL_DEBUG, LOGL_INFO, LOGL_WARN, LOGL_ERROR };

enum log_type { LOGF_STR, LOGF_INT, LOGF_DBL, LOGF_BOOL };

struct log_field {
	const char *key;
	enum log_type type;
	union {
		const char *s; /* NULL is written as null */
		long long i;
		double d;
		int b;
	};
};

#define LOG_S(k, v) ((struct log_field){.key = (k), .type = LOGF_STR, .s = (v)})
#define LOG_I(k, v) ((struct log_field){.key = (k), .type = LOGF_INT, .i = (long long)(v)})
#define LOG_D(k, v) ((struct log_field){.key = (k), .type = LOGF_DBL, .d = (double)(v)})
#define LOG_B(k, v) ((struct log_field){.key = (k), .type = LOGF_BOOL, .b = !!(v)})

/* Sets the lowest level written; the default is LOGL_INFO. */
void log_set_level(enum log_level level);
int log_enabled(enum log_level level);

/* Parses "debug|info|warn|error"; returns 0, or -1 when the text is none of them. */
int log_parse_level(const char *text, enum log_level *out);

/*
 * Starts buffering debug and info lines, written out by a thread every 100 ms (warnings and errors still go out at
 * once, after whatever is buffered). Returns 0, or -1 when the thread cannot start (lines are then unbuffered).
 */
int log_buffering_start(void);

/* Writes out what is buffered and stops buffering. */
void log_buffering_stop(void);

/* Writes a line with a printf-formatted message. */
void log_msg(enum log_level level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes a line with the message and n extra fields. */
void log_fields(enum log_level level, const char *component, const char *msg, const struct log_field *fields,
		size_t n);

/* Writes a line with the message and one field whose value is a JSON document (borrowed). */
void log_json(enum log_level level, const char *component, const char *msg, const char *key, const json_t *value);

#endif
