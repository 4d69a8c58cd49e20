/* api_window: the [start_time, end_time) windows and steps of GET /history and GET /cost. */
#include "api/api_window.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/config.h"

#define STEP_MAX_MS (400LL * 86400000LL)

static enum acceld_err fail(const char **param, enum reason *reason, const char *p, enum reason r)
{
	*param = p;
	*reason = r;
	return ACCELD_EINVAL;
}

enum acceld_err api_window_parse(const char *start, const char *end, int64_t now_ms, int64_t default_span_ms,
				     int64_t retention_ms, struct api_window *out, const char **param,
				     enum reason *reason, char *why, size_t whysz)
{
	char t[CLOCK_RFC3339_LEN];

	out->end_ms = now_ms;
	if (end != NULL && clock_parse_rfc3339(end, &out->end_ms) != 0) {
		snprintf(why, whysz, "end_time: '%.64s' is not an RFC 3339 date-time such as 2026-01-02T15:04:05Z", end);
		return fail(param, reason, "end_time", REASON_INVALID_TIME);
	}
	out->start_ms = out->end_ms - default_span_ms;
	if (start != NULL && clock_parse_rfc3339(start, &out->start_ms) != 0) {
		snprintf(why, whysz, "start_time: '%.64s' is not an RFC 3339 date-time such as 2026-01-02T15:04:05Z",
			 start);
		return fail(param, reason, "start_time", REASON_INVALID_TIME);
	}
	if (out->end_ms <= out->start_ms) {
		snprintf(why, whysz, "end_time must be after start_time (the window is [start_time, end_time))");
		return fail(param, reason, "end_time", REASON_INVALID_WINDOW);
	}
	if (out->start_ms < now_ms - retention_ms) {
		clock_rfc3339(now_ms - retention_ms, t);
		snprintf(why, whysz,
			 "start_time is beyond the retention of %lld days: the oldest answerable time is %s",
			 (long long)(retention_ms / 86400000LL), t);
		return fail(param, reason, "start_time", REASON_BEYOND_RETENTION);
	}
	return ACCELD_OK;
}

int api_window_step_parse(const char *text, int64_t *ms)
{
	uint64_t v;
	char *end = NULL;
	double secs;

	if (text == NULL || *text == '\0')
		return -1;
	if (config_parse_duration_ms(text, &v) == 0) {
		if (v < 1 || v > (uint64_t)STEP_MAX_MS)
			return -1;
		*ms = (int64_t)v;
		return 0;
	}
	/* fractional seconds: "0.5" */
	errno = 0;
	secs = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(secs) || secs * 1000.0 < 1 ||
	    secs * 1000.0 > (double)STEP_MAX_MS)
		return -1;
	*ms = (int64_t)llround(secs * 1000.0);
	return 0;
}

int64_t api_window_buckets(const struct api_window *w, int64_t step_ms)
{
	return (w->end_ms - w->start_ms + step_ms - 1) / step_ms;
}
