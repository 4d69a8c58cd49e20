/*
 * api_plan: GET /plan (query) and POST /plan (the same fields as a JSON object): how a model fits this host's
 * devices, named ones or a named shape -- the mesh, the memory per device with its formulas, the batch, why every
 * other mesh lost, what would fit when nothing does (still a 200, fits false) and a multi-host job's environment,
 * as JSON or, with format=env, as `export NAME='value'` lines. Both routes need the device registry (ROUTE_DETECT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "detect/detect.h"
#include "http/http.h"
#include "select/envfmt.h"
#include "plan/plan_params.h"

/* Refuses a field: a query parameter (400 INVALID_PARAMETER, the detail starting with its name) or a body field
 * (400 INVALID_VALUE at its JSONPath), with `accepted` where its values form a set. */
static void refuse(struct http_resp *resp, bool body, const char *name, const char *msg)
{
	if (body) {
		http_resp_bad_member(resp, name, NULL, plan_param_values(name), msg);
		return;
	}
	http_resp_bad_param(resp, name, "%s: %s", name, msg);
	if (plan_param_values(name) != NULL)
		http_resp_accepted(resp, plan_param_values(name));
}

/* The one rule for the device ids the devices field lists (400 malformed, 404 UNKNOWN_DEVICE); true when all are
 * here. Malformed ids are refused by the field's parser first, so this answers the 404s. */
static bool ids_present(struct app *app, const struct plan_params *p, bool body, struct http_resp *resp)
{
	char ids[PLAN_PARAMS_MAX_IDS][DEVICE_ID_MAX];
	size_t n = plan_params_ids(p, ids, PLAN_PARAMS_MAX_IDS);

	for (size_t i = 0; i < n; i++)
		if (!api_device_check(app, body ? "$.devices" : "devices", ids[i], API_DEVICE_PRESENT, resp))
			return false;
	return true;
}

static const char *process_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static void answer(struct app *app, struct plan_params *p, bool body, struct http_resp *resp)
{
	const struct detect_snapshot *snap;
	struct plan_devices_origin origin;
	struct plan_result res = {0};
	struct plan_env env;
	const char *param = NULL;
	char why[320];
	enum acceld_err rc;

	if (plan_params_missing(p) != NULL) {
		if (body) {
			http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.model", "%s", plan_params_missing(p));
		} else {
			http_resp_param_problem(resp, REASON_MISSING_PARAMETER, "model", "model: %s",
						plan_params_missing(p));
			http_resp_accepted(resp, plan_param_values("model"));
		}
		return;
	}
	if (plan_params_finish(p, &param, why, sizeof(why)) != ACCELD_OK) {
		refuse(resp, body, param, why);
		return;
	}
	if (!ids_present(app, p, body, resp))
		return;
	snap = detect_acquire(app->detect);
	rc = plan_params_devices(p, snap->devices, snap->n, &p->req.devices, &origin, &param, why, sizeof(why));
	if (rc == ACCELD_ENOTFOUND) { /* gone since ids_present */
		char ids[PLAN_PARAMS_MAX_IDS][DEVICE_ID_MAX];
		size_t n = plan_params_ids(p, ids, PLAN_PARAMS_MAX_IDS);

		for (size_t i = 0; i < n; i++)
			if (detect_find(snap, ids[i]) == NULL) {
				api_unknown_device(resp, ids[i], API_DEVICE_PRESENT);
				break;
			}
		if (n == 0)
			http_resp_error(resp, rc, "%s", why);
		goto out;
	}
	if (rc == ACCELD_EUNPROCESSABLE) {
		http_resp_error(resp, rc, "%s: %s", param, why);
		goto out;
	}
	if (rc != ACCELD_OK) {
		refuse(resp, body, param, why);
		goto out;
	}
	if (plan_request_check(&p->req, &param, why, sizeof(why)) != ACCELD_OK) {
		/* this host's devices as the registry gives them are not the caller's to fix */
		if (strcmp(param, "devices") == 0 && plan_params_source(p) == PLAN_SOURCE_HOST)
			http_resp_error(resp, ACCELD_EUNPROCESSABLE, "%s: %s", param, why);
		else
			refuse(resp, body, param, why);
		goto out;
	}
	/* nothing fitting is an answer (fits false, with what would fit), not a fault */
	rc = plan_compute(&p->req, &res);
	if (rc != ACCELD_OK && rc != ACCELD_EUNPROCESSABLE) {
		http_resp_error(resp, rc, "%s", res.detail[0] ? res.detail : "the plan could not be computed");
		goto out;
	}
	plan_params_env(p, snap->devices, snap->n, res.hosts, process_getenv, NULL, &env);
	if (p->format == PLAN_FORMAT_ENV && res.hosts > 1 && !plan_env_known(&env)) {
		/* empty export lines would let an eval go on as a lone process: say why instead */
		http_resp_error(resp, ACCELD_EUNPROCESSABLE, "format=env: this host's process of the %u-host plan cannot "
				"be placed: %s", res.hosts, env.note);
	} else if (p->format == PLAN_FORMAT_ENV) {
		struct envfmt e;
		size_t len;
		char *text;

		plan_env_to_envfmt(&env, &e);
		text = envfmt_to_text(&e, &len);
		http_resp_bytes(resp, 200, "text/plain; charset=utf-8", text, len);
	} else {
		http_resp_json(resp, 200, plan_params_json(p, &res, &origin, &env));
	}
out:
	plan_result_free(&res);
	detect_release(snap);
}

void api_plan_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	struct plan_params p;
	char err[512];

	if (!http_req_check_query(req, resp, plan_param_names))
		return;
	plan_params_init(&p);
	for (size_t i = 0; i < req->nquery; i++) {
		const char *key = req->query[i].key;
		const char *value = req->query[i].value ? req->query[i].value : "";

		if (plan_params_set(&p, key, value, err, sizeof(err)) != ACCELD_OK) {
			http_resp_bad_param(resp, key, "%s", err);
			if (plan_param_values(key) != NULL)
				http_resp_accepted(resp, plan_param_values(key));
			return;
		}
	}
	answer(app, &p, false, resp);
}

void api_plan_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const no_query[] = {NULL};
	struct plan_params p;
	const char *key;
	json_t *value;
	char err[512];

	if (!http_req_check_query_body(req, resp, no_query, plan_param_names) ||
	    !http_req_check_body(req, resp, plan_param_names))
		return;
	plan_params_init(&p);
	json_object_foreach(req->json, key, value) {
		const char *expected;

		if (plan_params_set_json(&p, key, value, &expected, err, sizeof(err)) == ACCELD_OK)
			continue;
		http_resp_bad_member(resp, key, expected, plan_param_values(key), err);
		return;
	}
	answer(app, &p, true, resp);
}
