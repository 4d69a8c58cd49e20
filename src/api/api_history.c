/* api_history: GET /history, a time series of one metric per device from the store (ROUTE_STORE). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/clock.h"
#include "detect/detect.h"
#include "api/api_window.h"
#include "core/mem.h"
#include "store/store.h"

#define DEFAULT_SPAN_MS (3600LL * 1000LL)
#define DEFAULT_POINTS 360

static const char *const metric_units[STORE_METRIC_COUNT] = {"ratio", "bytes", "celsius", "watts"};

/* "utilization_ratio, memory_used_bytes, ...": the store's metric names, for a message and `accepted`. */
static void metric_names(char *out, size_t outsz)
{
	size_t n = 0;

	out[0] = '\0';
	for (int i = 0; i < STORE_METRIC_COUNT; i++)
		n += (size_t)snprintf(out + n, n < outsz ? outsz - n : 0, "%s%s", i ? ", " : "",
				      store_metric_name((enum store_metric)i));
}

static json_t *series_json(const char *device, const struct store_series *s)
{
	json_t *o = json_object();
	json_t *pts = json_array();
	json_t *src = json_array();

	for (int i = 0; i < STORE_SRC_COUNT; i++)
		if (s->sources & (1u << i))
			json_array_append_new(src, json_string(store_source_name((enum store_source)i)));
	for (size_t i = 0; i < s->n; i++) {
		json_t *p = json_object();
		char t[CLOCK_RFC3339_LEN];

		clock_rfc3339(s->points[i].t_ms, t);
		json_object_set_new(p, "time", json_string(t));
		json_object_set_new(p, "value", json_real(s->points[i].value));
		if (isfinite(s->points[i].max))
			json_object_set_new(p, "max", json_real(s->points[i].max));
		json_array_append_new(pts, p);
	}
	json_object_set_new(o, "device", json_string(device));
	json_object_set_new(o, "sources", src);
	json_object_set_new(o, "points", pts);
	return o;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* The ids to answer for: the one asked, or every device present now or in history (sorted, unique). */
static enum acceld_err device_ids(struct app *app, const char *want, char (**ids)[DEVICE_ID_MAX], size_t *n)
{
	struct store_device_row *rows = NULL;
	size_t nrows = 0, len = 0;
	const struct detect_snapshot *snap = app->detect ? detect_acquire(app->detect) : NULL;
	size_t nsnap = snap ? snap->n : 0;
	enum acceld_err e = store_devices_list(app->store, &rows, &nrows);
	char(*v)[DEVICE_ID_MAX];

	if (e != ACCELD_OK) {
		if (snap)
			detect_release(snap);
		return e;
	}
	v = xcalloc(nsnap + nrows + 1, sizeof(*v));
	for (size_t i = 0; i < nsnap + nrows; i++) {
		const char *id = i < nsnap ? snap->devices[i].id : rows[i - nsnap].id;
		bool dup = false;

		if (want != NULL && strcmp(want, id) != 0)
			continue;
		for (size_t j = 0; j < len && !dup; j++)
			dup = strcmp(v[j], id) == 0;
		if (!dup)
			snprintf(v[len++], sizeof(v[0]), "%s", id);
	}
	if (snap)
		detect_release(snap);
	free(rows);
	qsort(v, len, sizeof(*v), cmp_id);
	*ids = v;
	*n = len;
	return want != NULL && len == 0 ? ACCELD_ENOTFOUND : ACCELD_OK;
}

void api_history(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"device", "metric", "start_time", "end_time", "step", NULL};
	const char *device = http_req_query(req, "device");
	const char *metric_text = http_req_query(req, "metric");
	const char *step_text = http_req_query(req, "step");
	enum store_metric metric = STORE_UTILIZATION;
	struct api_window w;
	const char *param;
	enum reason reason;
	char why[256];
	int64_t raw, minute, hour, step, now = clock_real_ms();
	char(*ids)[DEVICE_ID_MAX] = NULL;
	size_t nids = 0;
	enum store_tier tier;
	json_t *doc, *list;
	enum acceld_err e;

	if (!http_req_check_query(req, resp, allowed))
		return;
	if (device != NULL && !api_device_check(app, "device", device, API_DEVICE_OR_HISTORY, resp))
		return;
	if (metric_text != NULL && store_metric_parse(metric_text, &metric) != 0) {
		char names[160];

		metric_names(names, sizeof(names));
		http_resp_bad_value(resp, "metric", "'%.64s' is not one of %s", metric_text, names);
		http_resp_accepted(resp, names);
		return;
	}
	store_retention(app->store, &raw, &minute, &hour);
	if (api_window_parse(http_req_query(req, "start_time"), http_req_query(req, "end_time"), now,
				 DEFAULT_SPAN_MS, hour, &w, &param, &reason, why, sizeof(why)) != ACCELD_OK) {
		http_resp_param_problem(resp, reason, param, "%s", why);
		return;
	}
	if (step_text != NULL) {
		if (api_window_step_parse(step_text, &step) != 0) {
			http_resp_bad_value(resp, "step", "'%.64s' is not seconds (60, 0.5) or a duration (500ms, 5m, "
					    "1h) up to 400 days", step_text);
			return;
		}
	} else {
		/* about DEFAULT_POINTS points, in whole seconds */
		step = (w.end_ms - w.start_ms + DEFAULT_POINTS - 1) / DEFAULT_POINTS;
		step = (step + 999) / 1000 * 1000;
	}
	if (api_window_buckets(&w, step) > API_WINDOW_MAX_POINTS) {
		json_t *p = http_resp_param_problem(resp, REASON_TOO_MANY_POINTS, "step",
						    "the window holds %lld steps of %lld ms; the limit is %d points per "
						    "answer: use a larger step or a shorter window",
						    (long long)api_window_buckets(&w, step), (long long)step,
						    API_WINDOW_MAX_POINTS);

		json_object_set_new(p, "limit", json_integer(API_WINDOW_MAX_POINTS));
		return;
	}
	e = device_ids(app, device, &ids, &nids);
	if (e == ACCELD_ENOTFOUND) { /* gone since api_device_check */
		api_unknown_device(resp, device, API_DEVICE_OR_HISTORY);
		free(ids);
		return;
	}
	if (e != ACCELD_OK) {
		http_resp_error(resp, e, "cannot read history: the database is unavailable (see /readyz)");
		free(ids);
		return;
	}
	tier = store_pick_tier(app->store, w.start_ms, step, now);
	list = json_array();
	for (size_t i = 0; i < nids && e == ACCELD_OK; i++) {
		struct store_series s;

		e = store_series(app->store, ids[i], metric, w.start_ms, w.end_ms, step, now, &s);
		if (e == ACCELD_ENOTFOUND) {
			/* present now but never written yet: an empty series */
			memset(&s, 0, sizeof(s));
			e = ACCELD_OK;
		}
		if (e == ACCELD_OK)
			json_array_append_new(list, series_json(ids[i], &s));
		free(s.points);
	}
	free(ids);
	if (e != ACCELD_OK) {
		json_decref(list);
		http_resp_error(resp, e, "cannot read history: the database is unavailable (see /readyz)");
		return;
	}
	doc = json_object();
	{
		char t[CLOCK_RFC3339_LEN];

		json_object_set_new(doc, "metric", json_string(store_metric_name(metric)));
		json_object_set_new(doc, "unit", json_string(metric_units[metric]));
		clock_rfc3339(w.start_ms, t);
		json_object_set_new(doc, "start_time", json_string(t));
		clock_rfc3339(w.end_ms, t);
		json_object_set_new(doc, "end_time", json_string(t));
	}
	json_object_set_new(doc, "step_seconds", json_real((double)step / 1000.0));
	json_object_set_new(doc, "resolution", json_string(store_tier_name(tier)));
	json_object_set_new(doc, "series", list);
	http_resp_json(resp, 200, doc);
}
