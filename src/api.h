/*
 * api: the HTTP handlers, one api_<resource>.c file per resource. Each parses and validates the request, calls
 * the domain module and serialises its answer; errors map to problem+json through http_resp_error.
 */
#ifndef ACCELD_API_H
#define ACCELD_API_H

#include "http.h"

struct app;

/* api_health.c */
void api_livez(struct app *app, struct http_req *req, struct http_resp *resp);
void api_readyz(struct app *app, struct http_req *req, struct http_resp *resp);
void api_version(struct app *app, struct http_req *req, struct http_resp *resp);

/* api_devices.c */

/* api_select.c, api_batch.c */

/* api_history.c, api_cost.c */

/* api_run.c */

/* api_metrics.c, api_static.c */

#endif
