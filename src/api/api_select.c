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
	if (rc == ACCELD_ENOTFOUND) { /* gone since api_device_check */
		api_unknown_device(resp, sreq->device, API_DEVICE_PRESENT);
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
	const char *device = http_req_query(req, "device");
	struct select_request sreq;
	char err[256];

	if (!http_req_check_query(req, resp, select_param_names))
		return;
	if (device != NULL && !api_device_check(app, "device", device, API_DEVICE_PRESENT, resp))
		return;
	select_request_init(&sreq, &app->cfg);
	for (size_t i = 0; i < req->nquery; i++) {
		const char *key = req->query[i].key;
		const char *value = req->query[i].value ? req->query[i].value : "";

		if (select_request_set(&sreq, key, value, err, sizeof(err)) != ACCELD_OK) {
			http_resp_bad_param(resp, key, "%s", err);
			if (select_param_values(key) != NULL)
				http_resp_accepted(resp, select_param_values(key));
			return;
		}
	}
	answer(app, &sreq, resp);
}

void api_select_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const no_query[] = {NULL};
	json_t *device = json_object_get(req->json, "device");
	struct select_request sreq;
	const char *key;
	json_t *value;
	char err[256];

	if (!http_req_check_query_body(req, resp, no_query, select_param_names) ||
	    !http_req_check_body(req, resp, select_param_names))
		return;
	if (json_is_string(device) && !api_device_check(app, "$.device", json_string_value(device),
							API_DEVICE_PRESENT, resp))
		return;
	select_request_init(&sreq, &app->cfg);
	json_object_foreach(req->json, key, value) {
		const char *expected;

		if (select_request_set_json(&sreq, key, value, &expected, err, sizeof(err)) == ACCELD_OK)
			continue;
		http_resp_bad_member(resp, key, expected, select_param_values(key), err);
		return;
	}
	answer(app, &sreq, resp);
}
