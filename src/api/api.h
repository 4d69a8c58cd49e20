/*
 * api: the HTTP handlers, one api_<resource>.c file per resource. Each parses and validates the request, calls
 * the domain module and serialises its answer; errors map to problem+json through http_resp_error.
 */
#ifndef ACCELD_API_H
#define ACCELD_API_H

#include "http/http.h"

struct app;

/* api_health.c */
void api_livez(struct app *app, struct http_req *req, struct http_resp *resp);
void api_readyz(struct app *app, struct http_req *req, struct http_resp *resp);
void api_version(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_devices.c */

/* Where a device named by a request must be for the request to make sense. */
enum api_device_scope {
	API_DEVICE_PRESENT,    /* listed by detection now */
	API_DEVICE_OR_HISTORY, /* listed now, or known to the history database (/history, /cost read the past) */
};

/*
 * The one rule for a device id a request names, in its path, its query or its body, on every endpoint: an id that
 * is not cpu:N, gpu:N or tpu:N (device_id_valid) is a 400 naming where it came from (where: the parameter, "id"
 * or "device", or the body field's JSONPath, "$.device"; see http_resp_bad_value), and a well-formed id of no
 * device on this host (scope) a 404 UNKNOWN_DEVICE with `device`. Returns true when the device is there; otherwise
 * resp holds the answer. A history that cannot be read counts as knowing the device: the handler's own read of it
 * answers the fault.
 */
bool api_device_check(struct app *app, const char *where, const char *id, enum api_device_scope scope,
		      struct http_resp *resp);

/* The 404 UNKNOWN_DEVICE of api_device_check, for a device found gone after the check (a refresh in between). */
void api_unknown_device(struct http_resp *resp, const char *id, enum api_device_scope scope);

void api_devices_list(struct app *app, struct http_req *req, struct http_resp *resp);
void api_devices_get(struct app *app, struct http_req *req, struct http_resp *resp);
void api_devices_refresh(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_check.c */
void api_check_post(struct app *app, struct http_req *req, struct http_resp *resp);
void api_check_list(struct app *app, struct http_req *req, struct http_resp *resp);
void api_check_get(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_select.c, api_batch.c */
void api_select_get(struct app *app, struct http_req *req, struct http_resp *resp);
void api_select_post(struct app *app, struct http_req *req, struct http_resp *resp);
void api_batch_config(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_plan.c */
void api_plan_get(struct app *app, struct http_req *req, struct http_resp *resp);
void api_plan_post(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_history.c, api_cost.c */
void api_history(struct app *app, struct http_req *req, struct http_resp *resp);
void api_cost(struct app *app, struct http_req *req, struct http_resp *resp);
void api_cost_estimate(struct app *app, struct http_req *req, struct http_resp *resp);
void api_cost_prices_get(struct app *app, struct http_req *req, struct http_resp *resp);
void api_cost_prices_put(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_run.c */
void api_run_post(struct app *app, struct http_req *req, struct http_resp *resp);
void api_run_list(struct app *app, struct http_req *req, struct http_resp *resp);
void api_run_get(struct app *app, struct http_req *req, struct http_resp *resp);
void api_run_delete(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_metrics.c, api_static.c */
void api_static_index(struct app *app, struct http_req *req, struct http_resp *resp);
void api_metrics(struct app *app, struct http_req *req, struct http_resp *resp);

#endif
