/* check_api: hand-built requests and a service context for the handler unit tests (see check_api.h). */
#include "check_api.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cost/cost.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "exec/backend.h"
#include "exec/exec.h"
#include "detect/probe.h"
#include "store/store.h"

void check_req_init(struct check_req *r, enum http_method method, const char *target, const char *json)
{
	char *query;
	char *save = NULL;

	memset(r, 0, sizeof(*r));
	snprintf(r->target, sizeof(r->target), "%s", target);
	query = strchr(r->target, '?');
	if (query != NULL) {
		*query++ = '\0';
		for (char *kv = strtok_r(query, "&", &save); kv != NULL && r->req.nquery < HTTP_MAX_QUERY;
		     kv = strtok_r(NULL, "&", &save)) {
			char *eq = strchr(kv, '=');

			if (eq != NULL)
				*eq++ = '\0';
			r->req.query[r->req.nquery].key = kv;
			r->req.query[r->req.nquery].value = eq; /* NULL for a bare "verbose" */
			r->req.nquery++;
		}
	}
	r->req.method = method;
	r->req.method_name = http_method_name(method);
	r->req.path = r->target;
	r->req.request_id = "unit";
	r->req.remote_addr = "127.0.0.1";
	r->req.body = json ? json : "";
	r->req.body_len = json ? strlen(json) : 0;
	r->req.has_body = json != NULL;
	r->req.content_type = json ? "application/json" : NULL;
	r->req.max_json_depth = 32;
}

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

static void fake_cpu(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res)
{
	struct device d;

	(void)state;
	(void)cfg;
	device_init(&d, DEVICE_CPU);
	d.sources = SOURCE_HWLOC;
	DEVICE_SET(d.vendor, "GenuineIntel");
	DEVICE_SET(d.model, "Unit Xeon");
	d.cpu.pus = 4;
	d.memory_total_bytes = 8ull << 30;
	device_list_add(out, &d);
	res->ok = true;
	res->available = true;
}

static const struct probe_ops cpu_ops = {.name = "cpu", .probe = fake_cpu};
static const struct probe_ops *const probes[] = {&cpu_ops};

void check_app_start(struct app *app, unsigned services)
{
	char err[256];

	memset(app, 0, sizeof(*app));
	ck_assert_int_eq(config_load(&app->cfg, 0, NULL, no_env, err, sizeof(err)), 0);
	if (services & ROUTE_DETECT) {
		app->detect = detect_new(&app->cfg, probes, 1);
		detect_set_executable(app->detect, backend_serves_any, NULL);
		detect_set_describe(app->detect, backend_describe_device, NULL);
	}
	if (services & ROUTE_STORE)
		ck_assert_int_eq(store_open(":memory:", &app->store, err, sizeof(err)), ACCELD_OK);
	if (services & ROUTE_COST)
		ck_assert_int_eq(cost_new(app->store, NULL, &app->cost, err, sizeof(err)), ACCELD_OK);
	if (services & ROUTE_EXEC) {
		const struct detect_snapshot *snap = detect_acquire(app->detect);
		struct exec_opts eo;

		exec_opts_from_config(&app->cfg, &eo);
		eo.devices = snap->devices;
		eo.ndevices = snap->n;
		eo.cpu_threads = 2;
		ck_assert_int_eq(exec_new(&eo, &app->exec), ACCELD_OK);
		detect_release(snap);
	}
	atomic_store(&app->started, true);
}

void check_app_stop(struct app *app)
{
	exec_free(app->exec);
	cost_free(app->cost);
	detect_free(app->detect);
	store_close(app->store);
	config_release(&app->cfg);
	memset(app, 0, sizeof(*app));
}

int check_call(struct app *app, struct check_req *r, struct http_resp *resp)
{
	http_resp_init(resp, r->req.request_id);
	routes_dispatch(app, &r->req, resp);
	json_decref(r->req.json);
	r->req.json = NULL;
	/* DELETE /run/{id} and PUT /cost/prices answer through a deferred answer, finished before the handler returns
	 * when the commit ran on its thread */
	if (resp->deferred != NULL && (r->req.method == HTTP_DELETE || r->req.method == HTTP_PUT)) {
		struct http_resp done;

		http_resp_init(&done, r->req.request_id);
		if (http_deferred_take(resp->deferred, &done)) {
			http_resp_release(resp);
			*resp = done;
		}
	}
	return resp->status;
}

const char *check_member(const struct http_resp *resp, const char *name)
{
	return json_string_value(json_object_get(resp->json, name));
}

void check_unavailable(unsigned services, enum http_method method, const char *target, const char *json,
		       const char *service)
{
	struct app bare;
	struct check_req r;
	struct http_resp resp;

	check_app_start(&bare, services);
	check_req_init(&r, method, target, json);
	ck_assert_int_eq(check_call(&bare, &r, &resp), 503);
	ck_assert_str_eq(check_member(&resp, "reason"), "UNAVAILABLE");
	ck_assert_str_eq(check_member(&resp, "service"), service);
	http_resp_release(&resp);
	check_app_stop(&bare);
}
