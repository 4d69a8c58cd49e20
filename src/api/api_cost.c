/* api_cost: GET /cost, GET /cost/estimate, GET and PUT /cost/prices; every route needs the price book and the store
 * (ROUTE_COST | ROUTE_STORE). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/clock.h"
#include "core/config.h"
#include "cost/cost.h"
#include "detect/detect.h"
#include "api/api_window.h"
#include "exec/kernel.h"
#include "core/mem.h"
#include "store/store.h"

#define DEFAULT_SPAN_MS (24LL * 3600LL * 1000LL)
#define MAX_SECONDS 1e9
#define MAX_VECTOR_N 1000000000000ull
#define MAX_MATRIX_DIM 1000000ull

/* The devices present now (snap may be NULL before detection has run). */
static const struct device *present(struct app *app, const struct detect_snapshot **snap, size_t *n)
{
	*snap = app->detect ? detect_acquire(app->detect) : NULL;
	*n = *snap ? (*snap)->n : 0;
	return *snap ? (*snap)->devices : NULL;
}

static void done(const struct detect_snapshot *snap)
{
	if (snap)
		detect_release(snap);
}

void api_cost(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"device", "start_time", "end_time", "group_by", NULL};
	const char *group = http_req_query(req, "group_by");
	struct cost_query q = {.device = http_req_query(req, "device"), .bucket_ms = STORE_HOUR_MS};
	struct api_window w;
	const struct detect_snapshot *snap;
	const struct device *devs;
	const char *param;
	enum reason reason;
	char why[256];
	int64_t raw, minute, hour;
	size_t n;
	json_t *doc = NULL;
	enum acceld_err e;

	if (!http_req_check_query(req, resp, allowed))
		return;
	if (q.device != NULL && !api_device_check(app, "device", q.device, API_DEVICE_OR_HISTORY, resp))
		return;
	if (group != NULL && strcmp(group, "hour") != 0 && strcmp(group, "day") != 0) {
		http_resp_bad_value(resp, "group_by", "'%.64s' is not one of hour, day", group);
		http_resp_accepted(resp, "hour, day");
		return;
	}
	if (group != NULL && strcmp(group, "day") == 0)
		q.bucket_ms = STORE_DAY_MS;
	store_retention(app->store, &raw, &minute, &hour);
	if (api_window_parse(http_req_query(req, "start_time"), http_req_query(req, "end_time"), clock_real_ms(),
				 DEFAULT_SPAN_MS, hour, &w, &param, &reason, why, sizeof(why)) != ACCELD_OK) {
		http_resp_param_problem(resp, reason, param, "%s", why);
		return;
	}
	q.start_ms = w.start_ms;
	q.end_ms = w.end_ms;
	if (api_window_buckets(&w, q.bucket_ms) > API_WINDOW_MAX_POINTS) {
		json_t *p = http_resp_param_problem(resp, REASON_TOO_MANY_POINTS, "group_by",
						    "the window holds more than %d groups", API_WINDOW_MAX_POINTS);

		json_object_set_new(p, "limit", json_integer(API_WINDOW_MAX_POINTS));
		return;
	}
	devs = present(app, &snap, &n);
	e = cost_report(app->cost, devs, n, &q, &doc);
	done(snap);
	if (e == ACCELD_ENOTFOUND) { /* gone since api_device_check */
		api_unknown_device(resp, q.device, API_DEVICE_OR_HISTORY);
		return;
	}
	if (e != ACCELD_OK) {
		http_resp_error(resp, e, "cannot read usage: the database is unavailable (see /readyz)");
		return;
	}
	http_resp_json(resp, 200, doc);
}

/* Parses a positive integer size of kernel k up to max; false (and a 400) when it is not one. */
static bool u64_param(struct http_req *req, struct http_resp *resp, enum kernel_id k, const char *name, uint64_t max,
		      uint64_t *out)
{
	const char *text = http_req_query(req, name);

	if (text == NULL) {
		http_resp_param_problem(resp, REASON_MISSING_PARAMETER, name, "%s: %s takes %s", name, kernel_name(k),
					kernel_sizes_text(k));
		return false;
	}
	if (config_parse_u64(text, out) != 0 || *out < 1 || *out > max)
		return http_resp_bad_value(resp, name, "'%.64s' is not an integer from 1 to %llu", text,
					   (unsigned long long)max);
	return true;
}

void api_cost_estimate(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"device", "seconds", "kernel", "n", "m", "k", NULL};
	struct cost_estimate_query q = {.device = http_req_query(req, "device"), .kernel = -1};
	const char *kernel = http_req_query(req, "kernel");
	const char *secs = http_req_query(req, "seconds");
	char sizes[128];
	const struct detect_snapshot *snap;
	const struct device *devs;
	enum kernel_id k;
	size_t n;
	json_t *doc = NULL;
	enum acceld_err e;

	if (!http_req_check_query(req, resp, allowed))
		return;
	if (q.device != NULL && !api_device_check(app, "device", q.device, API_DEVICE_PRESENT, resp))
		return;
	if (secs != NULL && kernel != NULL) {
		http_resp_bad_param(resp, "kernel", "give either seconds, or kernel with its sizes (%s), not both",
				    kernel_sizes_brief(sizes, sizeof(sizes)));
		return;
	}
	if (secs == NULL && kernel == NULL) {
		http_resp_param_problem(resp, REASON_MISSING_PARAMETER, "seconds", "give either seconds, or kernel "
					"with its sizes (%s)", kernel_sizes_brief(sizes, sizeof(sizes)));
		return;
	}
	if (secs != NULL) {
		char *end = NULL;

		errno = 0;
		q.seconds = strtod(secs, &end);
		if (errno != 0 || end == secs || *end != '\0' || !isfinite(q.seconds) || q.seconds <= 0 ||
		    q.seconds > MAX_SECONDS) {
			http_resp_bad_value(resp, "seconds", "'%.64s' is not a number above 0, at most 1e9", secs);
			return;
		}
		if (http_req_query(req, "n") || http_req_query(req, "m") || http_req_query(req, "k")) {
			http_resp_bad_param(resp, http_req_query(req, "n") ? "n" : http_req_query(req, "m") ? "m" : "k",
					    "n, m and k go with kernel, not with seconds");
			return;
		}
	} else if (!kernel_parse(kernel, &k)) {
		http_resp_bad_value(resp, "kernel", "'%.64s' is not one of %s", kernel, kernel_names_text());
		http_resp_accepted(resp, kernel_names_text());
		return;
	} else {
		/* the sizes the kernel takes (kernel.h), each within its limit; the others are refused */
		unsigned params = kernel_params(k);
		uint64_t max_n = params & KERNEL_PARAM_M ? MAX_MATRIX_DIM : MAX_VECTOR_N;
		const char *extra = !(params & KERNEL_PARAM_M) && http_req_query(req, "m")   ? "m"
				    : !(params & KERNEL_PARAM_K) && http_req_query(req, "k") ? "k"
											     : NULL;

		q.kernel = (int)k;
		if (extra != NULL) {
			http_resp_bad_param(resp, extra, "%s takes no %s", kernel_name(k), extra);
			return;
		}
		if (((params & KERNEL_PARAM_M) && !u64_param(req, resp, k, "m", MAX_MATRIX_DIM, &q.shape.m)) ||
		    !u64_param(req, resp, k, "n", max_n, &q.shape.n) ||
		    ((params & KERNEL_PARAM_K) && !u64_param(req, resp, k, "k", MAX_MATRIX_DIM, &q.shape.k)))
			return;
	}
	devs = present(app, &snap, &n);
	e = cost_estimate(app->cost, devs, n, &q, &doc);
	done(snap);
	if (e == ACCELD_ENOTFOUND) { /* gone since api_device_check */
		api_unknown_device(resp, q.device, API_DEVICE_PRESENT);
		return;
	}
	if (e != ACCELD_OK) {
		http_resp_error(resp, e, "cannot estimate");
		return;
	}
	http_resp_json(resp, 200, doc);
}

/* The prices in force, as GET /cost/prices answers them (a new object). */
static json_t *prices_doc(struct app *app)
{
	const struct detect_snapshot *snap;
	const struct device *devs;
	size_t n;
	json_t *doc;

	devs = present(app, &snap, &n);
	doc = cost_prices_json(app->cost, devs, n);
	done(snap);
	return doc;
}

void api_cost_prices_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};

	if (!http_req_check_query(req, resp, allowed))
		return;
	http_resp_json(resp, 200, prices_doc(app));
}

/* A PUT waiting for its prices to be committed. */
struct prices_put {
	struct app *app;
	struct http_deferred *d;
};

/* The store's completion: the answer says whether the new prices are in the database (`recorded`). */
static void prices_recorded(void *ctx, bool recorded)
{
	struct prices_put *p = ctx;
	struct http_resp resp;
	json_t *doc = prices_doc(p->app);

	json_object_set_new(doc, "recorded", json_boolean(recorded));
	http_resp_init(&resp, http_deferred_request_id(p->d));
	http_resp_json(&resp, 200, doc);
	http_deferred_finish(p->d, &resp);
	free(p);
}

void api_cost_prices_put(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	static const char *const fields[] = {"currency", "prices", NULL};
	struct store_price *v = NULL;
	size_t n = 0;
	struct refusal why = {.err = ACCELD_OK};
	struct prices_put *put;

	if (!http_req_check_query_body(req, resp, allowed, fields) || !http_req_check_body(req, resp, fields))
		return;
	if (cost_parse_prices(req->json, &v, &n, &why) != ACCELD_OK) {
		json_t *accepted = json_object_get(why.extra, "accepted");

		http_resp_bad_field(resp, why.reason, json_string_value(json_object_get(why.extra, "path")), "%s",
				    why.detail);
		if (accepted != NULL && json_is_object(resp->json))
			json_object_set(resp->json, "accepted", accepted);
		refusal_release(&why);
		return;
	}
	/* answered once the prices are committed (at once with recorded false while the database fails) */
	put = xcalloc(1, sizeof(*put));
	put->app = app;
	put->d = http_resp_defer(resp);
	cost_set_overrides_notify(app->cost, v, n, prices_recorded, put);
	free(v);
}
