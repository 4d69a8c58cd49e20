/*
 * api_window: the time windows GET /history and GET /cost accept, checked once for both.
 *
 * A window is [start_time, end_time) in RFC 3339. end_time defaults to now and start_time to end_time minus a
 * default span. A window whose end is not after its start, that reaches back beyond the longest retention (so its
 * beginning cannot be answered), or that holds more buckets than a limit is refused, naming the parameter.
 */
#ifndef ACCELD_API_WINDOW_H
#define ACCELD_API_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define API_WINDOW_MAX_POINTS 11000 /* points (or groups) in one answer */

struct api_window {
	int64_t start_ms;
	int64_t end_ms;
};

/*
 * Parses and checks a window. start and end may be NULL (defaults). On failure returns ACCELD_EINVAL, sets *param
 * to the parameter at fault ("start_time" or "end_time"), *reason to the problem reason (REASON_INVALID_TIME,
 * REASON_INVALID_WINDOW, REASON_BEYOND_RETENTION) and writes the detail into why.
 */
enum acceld_err api_window_parse(const char *start, const char *end, int64_t now_ms, int64_t default_span_ms,
				     int64_t retention_ms, struct api_window *out, const char **param,
				     enum reason *reason, char *why, size_t whysz);

/*
 * Parses a step: a number of seconds ("60", "0.5") or a duration with a unit ("500ms", "5m", "1h"); from 1 ms to
 * 400 days. Returns 0 and the step in *ms, or -1.
 */
int api_window_step_parse(const char *text, int64_t *ms);

/* The number of buckets of step_ms in the window (rounded up). */
int64_t api_window_buckets(const struct api_window *w, int64_t step_ms);

#endif
