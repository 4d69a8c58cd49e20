/*
 * api_check: POST /devices/{id}/check, GET /devices/{id}/checks, GET /devices/{id}/checks/{check_id}.
 *
 * POST starts a health check (devcheck.h) and answers 202 with Location; with wait=true it answers when the check ends,
 * through a deferred answer the check completes, so no HTTP thread waits. The body is optional: {level, duration_s,
 * backend, wait}. GET lists a device's checks newest first from the history (the running one from memory), or from
 * memory when there is no history database.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "exec/backend.h"
#include "check/devcheck.h"
#include "check/devcheck_store.h"
#include "core/config.h"
#include "detect/detect.h"
#include "http/http.h"

#define PAGE_DEFAULT 20
#define PAGE_MAX 100
#define DURATION_MIN_S 5
#define DURATION_MAX_S 3600

static const char *const devcheck_fields[] = {"level", "duration_s", "backend", "wait", NULL};
#define LEVEL_NAMES "quick, long"

/* The request body (may be absent) into req and wait; false after answering 400. */
static bool parse_body(const struct http_req *hreq, struct devcheck_request *req, bool *wait, struct http_resp *resp)
{
	json_t *body = hreq->json;
	json_t *v;

	if (body == NULL)
		return true;
	if (!http_req_check_body(hreq, resp, devcheck_fields))
		return false;
	v = json_object_get(body, "level");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_string(v)) {
			http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.level", "expected a string, one of %s",
					    LEVEL_NAMES);
			return http_resp_accepted(resp, LEVEL_NAMES);
		}
		if (!devcheck_level_parse(json_string_value(v), &req->level)) {
			http_resp_bad_field(resp, REASON_INVALID_VALUE, "$.level", "'%.40s' is not one of %s",
					    json_string_value(v), LEVEL_NAMES);
			return http_resp_accepted(resp, LEVEL_NAMES);
		}
	}
	v = json_object_get(body, "duration_s");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_integer(v))
			return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.duration_s",
						   "expected an integer number of seconds");
		if (req->level != DEVCHECK_LONG)
			return http_resp_bad_field(resp, REASON_NOT_APPLICABLE, "$.duration_s",
						   "only the long level runs for a duration");
		if (json_integer_value(v) < DURATION_MIN_S || json_integer_value(v) > DURATION_MAX_S)
			return http_resp_bad_field(resp, REASON_INVALID_VALUE, "$.duration_s", "%" JSON_INTEGER_FORMAT
						   " is not from %d to %d seconds", json_integer_value(v),
						   DURATION_MIN_S, DURATION_MAX_S);
		req->duration_ms = (uint64_t)json_integer_value(v) * 1000u;
	}
	v = json_object_get(body, "backend");
	if (v != NULL && !json_is_null(v)) {
		char names[128];

		backend_names(backend_builtin, names, sizeof(names));
		if (!json_is_string(v)) {
			http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.backend", "expected a string, one of %s",
					    names);
			return http_resp_accepted(resp, names);
		}
		if (backend_find(backend_builtin, json_string_value(v)) == NULL) {
			http_resp_bad_value(resp, "$.backend", "'%.40s' is not one of %s", json_string_value(v), names);
			return http_resp_accepted(resp, names);
		}
		snprintf(req->backend, sizeof(req->backend), "%s", json_string_value(v));
	}
	v = json_object_get(body, "wait");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.wait", "expected true or false");
		*wait = json_is_true(v);
	}
	return true;
}

/* The answer for an ended check: 200 with it, or, when it was interrupted, 503 INTERRUPTED carrying it. */
static void answer_ended(struct devcheck_run *run, struct http_resp *resp)
{
	json_t *doc = devcheck_run_json(run);
	json_t *p;

	if (devcheck_run_state(run) != DEVCHECK_INTERRUPTED) {
		http_resp_json(resp, 200, doc);
		return;
	}
	p = http_resp_problem(resp, REASON_INTERRUPTED, "check %s of %s was interrupted: acceld is stopping",
			      devcheck_run_id(run), devcheck_run_device(run));
	json_object_set_new(p, "check", doc);
}

static void on_check_done(void *arg, struct devcheck_run *run)
{
	struct http_deferred *d = arg;
	struct http_resp resp;

	http_resp_init(&resp, http_deferred_request_id(d));
	answer_ended(run, &resp);
	http_deferred_finish(d, &resp);
}

static void refusal(struct http_resp *resp, const struct refusal *why, const char *device)
{
	json_t *p = http_resp_problem(resp, why->reason, "%s", why->detail);

	json_object_set_new(p, "device", json_string(device));
	if (why->reason == REASON_CHECK_RUNNING)
		http_resp_header(resp, "Retry-After", "5");
}

void api_check_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const char *id = req->params[0];
	struct devcheck_request creq;
	struct refusal why;
	struct devcheck_run *run = NULL;
	struct http_deferred *d = NULL;
	bool wait = false;
	char loc[HTTP_PARAM_MAX + DEVCHECK_ID_MAX + 32];

	if (!http_req_check_query_body(req, resp, allowed, devcheck_fields) ||
	    !api_device_check(app, "id", id, API_DEVICE_PRESENT, resp))
		return;
	devcheck_request_init(&creq);
	if (!parse_body(req, &creq, &wait, resp))
		return;
	if (wait)
		d = http_resp_defer(resp);
	if (devcheck_start(app->devcheck, id, &creq, wait ? on_check_done : NULL, d, &run, &why) != ACCELD_OK) {
		if (d != NULL) {
			struct http_resp now;

			http_resp_init(&now, http_deferred_request_id(d));
			refusal(&now, &why, id);
			http_deferred_finish(d, &now);
		} else {
			refusal(resp, &why, id);
		}
		return;
	}
	if (!wait) {
		snprintf(loc, sizeof(loc), "/devices/%s/checks/%s", id, devcheck_run_id(run));
		http_resp_json(resp, 202, devcheck_run_json(run));
		http_resp_header(resp, "Location", loc);
	}
	devcheck_run_unref(run);
}

static void bad_token(struct http_resp *resp, const char *token)
{
	http_resp_bad_value(resp, "page_token", "'%.64s' is not the next_page_token of a previous page", token);
}

/* Swaps each listed document for the live one when the check is still in memory and not ended in the history. */
static void prefer_live(struct app *app, json_t *docs)
{
	size_t i;
	json_t *doc;

	json_array_foreach(docs, i, doc) {
		const char *cid = json_string_value(json_object_get(doc, "id"));
		struct devcheck_run *run = cid ? devcheck_get(app->devcheck, cid) : NULL;

		if (run != NULL)
			json_array_set_new(docs, i, devcheck_run_json(run));
		devcheck_run_unref(run);
	}
}

void api_check_list(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"page_size", "page_token", NULL};
	const char *id = req->params[0];
	const char *size = http_req_query(req, "page_size");
	const char *token = http_req_query(req, "page_token");
	uint64_t page = PAGE_DEFAULT;
	json_t *docs = NULL;
	json_t *out;
	char running[DEVCHECK_ID_MAX];
	bool more = false;
	enum acceld_err rc;

	if (!http_req_check_query(req, resp, allowed) || !api_device_check(app, "id", id, API_DEVICE_PRESENT, resp))
		return;
	if (size != NULL && (config_parse_u64(size, &page) != 0 || page < 1 || page > PAGE_MAX)) {
		http_resp_bad_value(resp, "page_size", "'%.64s' is not an integer from 1 to %d", size, PAGE_MAX);
		return;
	}
	if (token != NULL && (token[0] == '\0' || strlen(token) >= DEVCHECK_ID_MAX)) {
		bad_token(resp, token);
		return;
	}
	if (app->devcheck_store == NULL) {
		out = devcheck_list_json(app->devcheck, id, (unsigned)page, token);
		if (out == NULL) {
			bad_token(resp, token);
			return;
		}
		json_object_set_new(out, "device", json_string(id));
		http_resp_json(resp, 200, out);
		return;
	}
	rc = devcheck_store_list(app->devcheck_store, id, (unsigned)page, token, &docs, &more);
	if (rc == ACCELD_ENOTFOUND) {
		bad_token(resp, token);
		return;
	}
	if (rc != ACCELD_OK) {
		http_resp_error(resp, ACCELD_EUNAVAILABLE, "the check history cannot be read now; try again shortly");
		return;
	}
	prefer_live(app, docs);
	/* a check that has just started may not be in the history yet: the first page shows it */
	if (token == NULL && devcheck_running_id(app->devcheck, id, running)) {
		bool listed = false;
		size_t i;
		json_t *doc;

		json_array_foreach(docs, i, doc) {
			const char *cid = json_string_value(json_object_get(doc, "id"));

			listed = listed || (cid != NULL && strcmp(cid, running) == 0);
		}
		if (!listed) {
			struct devcheck_run *run = devcheck_get(app->devcheck, running);

			if (run != NULL)
				json_array_insert_new(docs, 0, devcheck_run_json(run));
			devcheck_run_unref(run);
			if (json_array_size(docs) > page) {
				json_array_remove(docs, json_array_size(docs) - 1);
				more = true;
			}
		}
	}
	out = json_pack("{s:s, s:o}", "device", id, "checks", docs);
	if (more && json_array_size(docs) > 0)
		json_object_set(out, "next_page_token",
				json_object_get(json_array_get(docs, json_array_size(docs) - 1), "id"));
	http_resp_json(resp, 200, out);
}

void api_check_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const char *id = req->params[0];
	const char *cid = req->params[1];
	struct devcheck_run *run;
	json_t *doc = NULL;
	json_t *p;

	if (!http_req_check_query(req, resp, allowed) || !api_device_check(app, "id", id, API_DEVICE_PRESENT, resp))
		return;
	run = devcheck_get(app->devcheck, cid);
	if (run != NULL && strcmp(devcheck_run_device(run), id) == 0) {
		http_resp_json(resp, 200, devcheck_run_json(run));
		devcheck_run_unref(run);
		return;
	}
	devcheck_run_unref(run);
	if (app->devcheck_store != NULL && devcheck_store_get(app->devcheck_store, id, cid, &doc) == ACCELD_OK) {
		http_resp_json(resp, 200, doc);
		return;
	}
	p = http_resp_problem(resp, REASON_CHECK_NOT_FOUND, "no check '%.64s' of %.64s among the recent ones or in "
			      "the history", cid, id);
	json_object_set_new(p, "device", json_string(id));
}
