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
