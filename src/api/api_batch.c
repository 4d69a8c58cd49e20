/*
 * api_batch: GET /batch-config: the batch size for a device (the one /select would pick when none is named),
 * every step of the arithmetic, and 422 with the arithmetic when the model or a sample cannot fit. The route
 * needs the device registry (ROUTE_DETECT).
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "select/batch.h"
#include "detect/detect.h"
#include "http/http.h"
#include "select/select.h"

/* The device asked for, or the default choice; NULL after filling an error answer. */
static const struct device *resolve_device(struct app *app, const struct detect_snapshot *snap,
					   const struct batch_request *breq, struct http_resp *resp)
{
	struct select_request sreq;
	struct select_result res;
	const struct device *d;
	enum acceld_err rc;
	json_t *doc;

	if (breq->device[0] != '\0') {
		d = detect_find(snap, breq->device);
		if (d == NULL) /* gone since api_device_check */
			api_unknown_device(resp, breq->device, API_DEVICE_PRESENT);
		return d;
	}
	select_request_init(&sreq, &app->cfg);
	rc = select_choose(snap->devices, snap->n, &sreq, NULL, 0, &res);
	d = res.device;
	if (rc != ACCELD_OK) {
		doc = http_resp_error(resp, rc, "no device given and none can be chosen: %s", res.reason);
		json_object_set_new(doc, "candidates", select_candidates_json(&res));
		d = NULL;
	}
	select_result_release(&res);
	return d;
}

void api_batch_config(struct app *app, struct http_req *req, struct http_resp *resp)
{
	const char *device = http_req_query(req, "device");
	struct batch_request breq;
	struct batch_result res;
	const struct detect_snapshot *snap;
	const struct device *d;
	const char *param;
	char err[256];
	enum acceld_err rc;

	if (!http_req_check_query(req, resp, batch_param_names))
		return;
	if (device != NULL && !api_device_check(app, "device", device, API_DEVICE_PRESENT, resp))
		return;
	batch_request_init(&breq, &app->cfg);
	for (size_t i = 0; i < req->nquery; i++) {
		const char *key = req->query[i].key;
		const char *value = req->query[i].value ? req->query[i].value : "";

		if (batch_request_set(&breq, key, value, err, sizeof(err)) != ACCELD_OK) {
			http_resp_bad_param(resp, key, "%s", err);
			if (batch_param_values(key) != NULL)
				http_resp_accepted(resp, batch_param_values(key));
			return;
		}
	}
	if (batch_request_check(&breq, &param, err, sizeof(err)) != ACCELD_OK) {
		http_resp_bad_param(resp, param, "%s", err);
		return;
	}
	snap = detect_acquire(app->detect);
	d = resolve_device(app, snap, &breq, resp);
	if (d != NULL) {
		rc = batch_compute(d, &breq, &res);
		if (rc == ACCELD_OK) {
			http_resp_json(resp, 200, batch_result_to_json(&res, &breq, snap));
		} else {
			json_t *doc = http_resp_error(resp, rc, "%s", res.detail);

			json_object_set_new(doc, "device", json_string(d->id));
			json_object_set_new(doc, "memory", batch_memory_json(&res.memory));
			json_object_set_new(doc, "steps", batch_steps_json(&res));
		}
	}
	detect_release(snap);
}
