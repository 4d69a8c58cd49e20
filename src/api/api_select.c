/*
 * api_select: GET /select (query) and POST /select (the same fields as a JSON object): which device to use, why,
 * every candidate, and the environment to export -- as JSON, or with format=env as `export NAME='value'` lines.
 * Both routes need the device registry (ROUTE_DETECT).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "detect/detect.h"
#include "http/http.h"
#include "select/select.h"

static void bad_value(struct http_resp *resp, const char *param, const char *msg)
{
	json_t *doc = http_resp_bad_param(resp, param, "%s", msg);

	json_object_set_new(doc, "accepted", json_string(select_param_accepted(param)));
}

/* {constraint: [{id, why}]} for every excluded device. */
static json_t *exclusions_json(const struct select_result *res)
{
	json_t *o = json_object();

	for (size_t i = 0; i < res->ncandidates; i++) {
		const struct select_candidate *c = &res->candidates[i];
		json_t *list;

		if (c->eligible || c->excluded_by == NULL)
			continue;
		list = json_object_get(o, c->excluded_by);
		if (list == NULL) {
			list = json_array();
			json_object_set_new(o, c->excluded_by, list);
		}
		json_array_append_new(list, json_pack("{s:s, s:s}", "id", c->dev->id, "why", c->why));
	}
	return o;
}

static void answer(struct app *app, const struct select_request *sreq, struct http_resp *resp)
{
	const struct detect_snapshot *snap;
	struct select_result res;
	enum acceld_err rc;
	json_t *doc;

	snap = detect_acquire(app->detect);
	rc = app_select(app, snap, sreq, &res);
	if (rc == ACCELD_ENOTFOUND) {
		json_t *ids = json_array();

		for (size_t i = 0; i < snap->n; i++)
			json_array_append_new(ids, json_string(snap->devices[i].id));
		doc = http_resp_error(resp, rc, "%s", res.reason);
		json_object_set_new(doc, "parameter", json_string("device"));
		json_object_set_new(doc, "devices", ids);
	} else if (rc != ACCELD_OK) {
		doc = http_resp_error(resp, rc, "%s", res.reason);
		json_object_set_new(doc, "constraints", exclusions_json(&res));
		json_object_set_new(doc, "candidates", select_candidates_json(&res));
	} else if (sreq->format == SELECT_FORMAT_ENV) {
		size_t len;
		char *text = envfmt_to_text(&res.env, &len);

		http_resp_bytes(resp, 200, "text/plain; charset=utf-8", text, len);
	} else {
		http_resp_json(resp, 200, select_result_to_json(&res, sreq, snap));
	}
	select_result_release(&res);
	detect_release(snap);
}

void api_select_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	struct select_request sreq;
	char err[256];

	if (!http_req_check_query(req, resp, select_param_names))
		return;
	select_request_init(&sreq, &app->cfg);
	for (size_t i = 0; i < req->nquery; i++) {
		const char *value = req->query[i].value ? req->query[i].value : "";

		if (select_request_set(&sreq, req->query[i].key, value, err, sizeof(err)) != ACCELD_OK) {
			bad_value(resp, req->query[i].key, err);
			return;
		}
	}
	answer(app, &sreq, resp);
}

/* Checks the body's field names; on unknown ones fills a 400 naming every one of them and returns false. */
static bool known_fields(json_t *body, struct http_resp *resp)
{
	const char *key;
	json_t *value;
	json_t *unknown = json_array();
	char list[256] = "";
	size_t len = 0;

	json_object_foreach(body, key, value) {
		(void)value;
		if (select_param_accepted(key) != NULL)
			continue;
		json_array_append_new(unknown, json_string(key));
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s'%.64s'", len ? ", " : "", key);
	}
	if (json_array_size(unknown) == 0) {
		json_decref(unknown);
		return true;
	}
	{
		json_t *doc = http_resp_problem(resp, REASON_UNKNOWN_FIELD,
						"unknown field%s %s; accepted: prefer, allow_tpu, policy, device, "
						"min_memory_bytes, executable, kernel, format, tpu_scope",
						json_array_size(unknown) > 1 ? "s" : "", list);

		json_object_set_new(doc, "fields", unknown);
	}
	return false;
}

static void wrong_type(struct http_resp *resp, const char *key, const char *expected)
{
	char path[80];
	json_t *doc;

	snprintf(path, sizeof(path), "$.%.64s", key);
	doc = http_resp_param_problem(resp, REASON_INVALID_TYPE, key, "%s must be %s", path, expected);
	json_object_set_new(doc, "path", json_string(path));
}

void api_select_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const no_query[] = {NULL};
	struct select_request sreq;
	const char *key;
	json_t *value;
	char err[256];

	if (!http_req_check_query(req, resp, no_query))
		return;
	if (!json_is_object(req->json)) {
		json_t *doc = http_resp_problem(resp, REASON_INVALID_TYPE,
						"the body must be a JSON object with the fields of GET /select");

		json_object_set_new(doc, "path", json_string("$"));
		return;
	}
	if (!known_fields(req->json, resp))
		return;
	select_request_init(&sreq, &app->cfg);
	json_object_foreach(req->json, key, value) {
		const char *expected;

		if (select_request_set_json(&sreq, key, value, &expected, err, sizeof(err)) == ACCELD_OK)
			continue;
		if (expected != NULL)
			wrong_type(resp, key, expected);
		else
			bad_value(resp, key, err);
		return;
	}
	answer(app, &sreq, resp);
}
