/*
 * api_devices: GET /devices, GET /devices/{id}, POST /devices/refresh. Bodies are the registry snapshot's
 * pre-serialised JSON, shared with the response until it is sent; ETag and If-None-Match give 304. Also the one
 * rule every handler applies to a device id a request names (api_device_check).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "http/http.h"
#include "store/store.h"

/* --- the device id of a request --- */

void api_unknown_device(struct http_resp *resp, const char *id, enum api_device_scope scope)
{
	json_t *doc;

	if (scope == API_DEVICE_OR_HISTORY)
		doc = http_resp_problem(resp, REASON_UNKNOWN_DEVICE, "no device '%.64s' on this host, now or in its "
					"history; GET /devices lists the devices present", id);
	else
		doc = http_resp_problem(resp, REASON_UNKNOWN_DEVICE, "no device '%.64s' on this host; GET /devices "
					"lists them", id);
	json_object_set_new(doc, "device", json_string(id));
}

/* Whether the history database has known the device; true when it cannot say (the caller's read reports that). */
static bool in_history(struct app *app, const char *id)
{
	struct store_device_row *rows = NULL;
	size_t n = 0;
	bool found = false;

	if (app->store == NULL || store_devices_list(app->store, &rows, &n) != ACCELD_OK)
		return app->store != NULL;
	for (size_t i = 0; i < n && !found; i++)
		found = strcmp(rows[i].id, id) == 0;
	free(rows);
	return found;
}

bool api_device_check(struct app *app, const char *where, const char *id, enum api_device_scope scope,
		      struct http_resp *resp)
{
	const struct detect_snapshot *snap;
	bool present = false;

	if (!device_id_valid(id))
		return http_resp_bad_value(resp, where, "'%.64s' is not " DEVICE_ID_SYNTAX, id);
	if (app->detect != NULL) {
		snap = detect_acquire(app->detect);
		present = detect_find(snap, id) != NULL;
		detect_release(snap);
	}
	if (present || (scope == API_DEVICE_OR_HISTORY && in_history(app, id)))
		return true;
	api_unknown_device(resp, id, scope);
	return false;
}

/* --- the routes --- */

static void release_snapshot(void *arg)
{
	detect_release(arg);
}

/* True when the If-None-Match list ("*", or tags with or without W/) names etag. */
static bool etag_matches(const char *header, const char *etag)
{
	size_t elen = strlen(etag);
	const char *p = header;

	if (header == NULL)
		return false;
	while (*p) {
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		n = strcspn(p, ",");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if ((n == 1 && *p == '*') || (n == elen && strncmp(p, etag, n) == 0))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

/* Answers with body (owned by snap, released after sending) or 304 when the client has it already. */
static void answer(struct http_req *req, struct http_resp *resp, const struct detect_snapshot *snap, bool conditional,
		   const char *body, size_t len, const char *etag)
{
	http_resp_header(resp, "ETag", etag);
	http_resp_header(resp, "Cache-Control", "no-cache");
	if (conditional && etag_matches(req->if_none_match, etag)) {
		http_resp_bytes(resp, 304, NULL, NULL, 0);
		detect_release(snap);
		return;
	}
	http_resp_shared(resp, 200, "application/json", body, len, release_snapshot,
			 (void *)(uintptr_t)snap);
}

void api_devices_list(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const struct detect_snapshot *snap;

	if (!http_req_check_query(req, resp, allowed))
		return;
	snap = detect_acquire(app->detect);
	answer(req, resp, snap, true, snap->json, snap->json_len, snap->etag);
}

void api_devices_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const struct detect_snapshot *snap;
	const char *id = req->params[0];
	const char *body;
	size_t len = 0;

	if (!http_req_check_query(req, resp, allowed) || !api_device_check(app, "id", id, API_DEVICE_PRESENT, resp))
		return;
	snap = detect_acquire(app->detect);
	body = detect_device_json(snap, id, &len);
	if (body == NULL) { /* gone since the check */
		detect_release(snap);
		api_unknown_device(resp, id, API_DEVICE_PRESENT);
		return;
	}
	answer(req, resp, snap, true, body, len, detect_device_etag(snap, id));
}

void api_devices_refresh(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const struct detect_snapshot *snap;

	if (!http_req_check_query(req, resp, allowed))
		return;
	/* runs in this request's thread; readers keep the previous snapshot until the new one is published */
	detect_refresh(app->detect, true);
	snap = detect_acquire(app->detect);
	answer(req, resp, snap, false, snap->json, snap->json_len, snap->etag);
}
