/* routes: the route table and the dispatcher's shared checks. */
#include "api/routes.h"

#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/mem.h"
#include "core/pool.h"
#include "metrics/metrics.h"

/* Probes every few seconds and a scraper or two: a handful of connections, kept apart from the API's. */
#define HEALTH_MAX_CONNECTIONS 16

static const struct route table[] = {
	{HTTP_GET, "/livez", api_livez, ROUTE_EARLY | ROUTE_HEALTH},
	{HTTP_GET, "/readyz", api_readyz, ROUTE_EARLY | ROUTE_HEALTH},
	{HTTP_GET, "/healthz", api_readyz, ROUTE_EARLY | ROUTE_HEALTH},
	{HTTP_GET, "/version", api_version, ROUTE_EARLY},
	/* devices (api_devices.c) */
	{HTTP_GET, "/devices", api_devices_list, ROUTE_DETECT},
	{HTTP_GET, "/devices/{id}", api_devices_get, ROUTE_DETECT},
	{HTTP_POST, "/devices/refresh", api_devices_refresh, ROUTE_AUTH | ROUTE_DETECT},
	/* health checks (api_check.c) */
	{HTTP_POST, "/devices/{id}/check", api_check_post, ROUTE_AUTH | ROUTE_JSON_OPTIONAL | ROUTE_DETECT | ROUTE_CHECK},
	{HTTP_GET, "/devices/{id}/checks", api_check_list, ROUTE_DETECT | ROUTE_CHECK},
	{HTTP_GET, "/devices/{id}/checks/{check_id}", api_check_get, ROUTE_DETECT | ROUTE_CHECK},
	/* selection and batch configuration (api_select.c, api_batch.c) */
	{HTTP_GET, "/select", api_select_get, ROUTE_DETECT},
	{HTTP_POST, "/select", api_select_post, ROUTE_JSON | ROUTE_DETECT},
	{HTTP_GET, "/batch-config", api_batch_config, ROUTE_DETECT},
	/* parallel plans (api_plan.c) */
	{HTTP_GET, "/plan", api_plan_get, ROUTE_DETECT},
	{HTTP_POST, "/plan", api_plan_post, ROUTE_JSON | ROUTE_DETECT},
	/* history and cost (api_history.c, api_cost.c) */
	{HTTP_GET, "/history", api_history, ROUTE_STORE},
	{HTTP_GET, "/cost", api_cost, ROUTE_COST | ROUTE_STORE},
	{HTTP_GET, "/cost/estimate", api_cost_estimate, ROUTE_COST | ROUTE_STORE},
	{HTTP_GET, "/cost/prices", api_cost_prices_get, ROUTE_COST | ROUTE_STORE},
	{HTTP_PUT, "/cost/prices", api_cost_prices_put, ROUTE_AUTH | ROUTE_JSON | ROUTE_COST | ROUTE_STORE},
	/* jobs (api_run.c) */
	{HTTP_POST, "/run", api_run_post, ROUTE_AUTH | ROUTE_JSON | ROUTE_EXEC},
	{HTTP_GET, "/run", api_run_list, ROUTE_EXEC},
	{HTTP_GET, "/run/{id}", api_run_get, ROUTE_EXEC},
	{HTTP_DELETE, "/run/{id}", api_run_delete, ROUTE_AUTH | ROUTE_EXEC},
	/* observability and the dashboard (api_metrics.c, api_static.c) */
	{HTTP_GET, "/", api_static_index, 0},
	{HTTP_GET, "/metrics", api_metrics, ROUTE_METRICS | ROUTE_HEALTH},
};

/* The services behind the ROUTE_<service> flags: what the 503 names, and whether it is running. */
static const struct {
	unsigned flag;
	const char *service;
	const char *what;
} services[] = {
	{ROUTE_DETECT, "devices", "device detection"},
	{ROUTE_EXEC, "executor", "the job executor"},
	{ROUTE_STORE, "database", "the history database"},
	{ROUTE_COST, "prices", "the price book"},
	{ROUTE_METRICS, "metrics", "the metrics registry"},
	{ROUTE_CHECK, "checks", "the device health checks"},
};

static bool service_running(const struct app *app, unsigned flag)
{
	switch (flag) {
	case ROUTE_DETECT: return app->detect != NULL;
	case ROUTE_EXEC: return app->exec != NULL;
	case ROUTE_STORE: return app->store != NULL;
	case ROUTE_COST: return app->cost != NULL;
	case ROUTE_METRICS: return app->metrics != NULL;
	case ROUTE_CHECK: return app->devcheck != NULL;
	default: return true;
	}
}

/* Answers 503 UNAVAILABLE when a service the route needs is not running; returns false then. */
static bool services_up(const struct app *app, const struct route *route, struct http_resp *resp)
{
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++) {
		json_t *doc;

		if (!(route->flags & services[i].flag) || service_running(app, services[i].flag))
			continue;
		doc = http_resp_problem(resp, REASON_UNAVAILABLE, "%s is not running (see the log); %s %s needs it",
					services[i].what, http_method_name(route->method), route->pattern);
		json_object_set_new(doc, "service", json_string(services[i].service));
		return false;
	}
	return true;
}

const struct route *routes_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

bool routes_match(const char *pattern, const char *path, struct http_req *req)
{
	const char *p = pattern;
	const char *s = path;
	size_t nparams = 0;

	while (*p && *s) {
		if (*p == '{') {
			size_t seg = strcspn(s, "/");
			const char *close = strchr(p, '}');

			if (close == NULL || seg == 0 || seg >= HTTP_PARAM_MAX || nparams >= HTTP_MAX_PARAMS)
				return false;
			if (req) {
				memcpy(req->params[nparams], s, seg);
				req->params[nparams][seg] = '\0';
			}
			nparams++;
			p = close + 1;
			s += seg;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	if (*p != '\0' || *s != '\0')
		return false;
	if (req)
		req->nparams = nparams;
	return true;
}

bool routes_token_ok(const char *authorization, const char *token)
{
	size_t tlen = strlen(token);
	size_t alen;
	unsigned char diff = 0;

	if (authorization == NULL || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	authorization += 7;
	alen = strlen(authorization);
	/* compare every byte of the token whatever the given length, so timing says nothing of the prefix */
	for (size_t i = 0; i < tlen; i++)
		diff |= (unsigned char)(token[i] ^ (i < alen ? authorization[i] : 0));
	return diff == 0 && alen == tlen;
}

/* Writes "GET, HEAD, POST" for the methods of every route whose pattern matches path. */
static void allow_list(const struct route *t, size_t n, const char *path, char *out, size_t outsz)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *m = http_method_name(t[i].method);

		if (!routes_match(t[i].pattern, path, NULL) || strstr(out, m) != NULL)
			continue;
		len += (size_t)snprintf(out + len, len < outsz ? outsz - len : 0, "%s%s", len ? ", " : "", m);
		if (t[i].method == HTTP_GET)
			len += (size_t)snprintf(out + len, len < outsz ? outsz - len : 0, ", HEAD");
	}
	len += (size_t)snprintf(out + len, len < outsz ? outsz - len : 0, ", OPTIONS");
}

void routes_dispatch_table(const struct route *t, size_t n, struct app *app, struct http_req *req,
			   struct http_resp *resp)
{
	const struct route *found = NULL;
	bool path_known = false;
	enum http_method m = req->method == HTTP_HEAD ? HTTP_GET : req->method;
	char allow[128];

	for (size_t i = 0; i < n && found == NULL; i++) {
		if (!routes_match(t[i].pattern, req->path, req))
			continue;
		if (!path_known)
			resp->route = t[i].pattern;
		path_known = true;
		if (t[i].method == m)
			found = &t[i];
	}
	if (found != NULL)
		resp->route = found->pattern; /* for metrics: the pattern, never the raw path */
	if (!path_known) {
		http_resp_problem(resp, REASON_NOT_FOUND, "no resource at %.200s", req->path);
		return;
	}
	if (found == NULL) {
		allow_list(t, n, req->path, allow, sizeof(allow));
		if (req->method == HTTP_OPTIONS) {
			http_resp_bytes(resp, 204, NULL, NULL, 0);
		} else {
			json_t *doc = http_resp_problem(resp, REASON_METHOD_NOT_ALLOWED,
							"%.200s does not support %.16s; allowed: %s", req->path,
							req->method_name, allow);
			json_object_set_new(doc, "allow", json_string(allow));
		}
		http_resp_header(resp, "Allow", allow);
		return;
	}
	/* the module pointers in app are published by the start-up flag: nothing else may read them before it */
	if (app != NULL && !(found->flags & ROUTE_EARLY) && !atomic_load(&app->started)) {
		http_resp_problem(resp, REASON_STARTING, "start-up work is still running; retry shortly");
		return;
	}
	if (app != NULL && atomic_load(&app->draining) && found->method != HTTP_GET) {
		http_resp_problem(resp, REASON_SHUTTING_DOWN, "the service is shutting down and takes no new work");
		return;
	}
	if ((found->flags & ROUTE_AUTH) && app != NULL && app->cfg.token != NULL &&
	    !routes_token_ok(req->authorization, app->cfg.token)) {
		http_resp_problem(resp, REASON_UNAUTHORIZED, "%s %s needs a bearer token (Authorization: Bearer ...)",
				  req->method_name, found->pattern);
		http_resp_header(resp, "WWW-Authenticate",
				 req->authorization ? "Bearer realm=\"acceld\", error=\"invalid_token\""
						    : "Bearer realm=\"acceld\"");
		return;
	}
	if (app != NULL && !services_up(app, found, resp))
		return;
	if ((found->flags & ROUTE_JSON) || ((found->flags & ROUTE_JSON_OPTIONAL) && req->has_body)) {
		if (!http_req_parse_json(req, resp))
			return;
	}
	found->fn(app, req, resp);
}

void routes_dispatch(void *ctx, struct http_req *req, struct http_resp *resp)
{
	size_t n;
	const struct route *t = routes_table(&n);

	routes_dispatch_table(t, n, ctx, req, resp);
}

void routes_dispatch_health(void *ctx, struct http_req *req, struct http_resp *resp)
{
	size_t n;
	const struct route *t = routes_table(&n);

	for (size_t i = 0; i < n; i++) {
		if ((t[i].flags & ROUTE_HEALTH) && routes_match(t[i].pattern, req->path, NULL)) {
			routes_dispatch(ctx, req, resp);
			return;
		}
	}
	http_resp_problem(resp, REASON_NOT_FOUND,
			  "no resource at %.200s on the health listener, which serves /livez, /readyz, /healthz and "
			  "/metrics only", req->path);
}

void routes_server_opts(struct app *app, struct http_server_opts *out)
{
	*out = (struct http_server_opts){
		.host = app->cfg.listen_host,
		.port = app->cfg.listen_port,
		.threads = app->cfg.threads ? app->cfg.threads : pool_usable_cpus(),
		.max_connections = app->cfg.max_connections,
		.max_connections_per_ip = app->cfg.max_connections_per_ip,
		.idle_timeout_s = (unsigned)((app->cfg.idle_timeout_ms + 999) / 1000),
		.conn_memory = app->cfg.conn_memory,
		.max_body = app->cfg.max_body,
		.max_json_depth = app->cfg.max_json_depth,
		.access_log = app->cfg.access_log,
		.tls_cert_pem = app->cfg.tls_cert_pem,
		.tls_key_pem = app->cfg.tls_key_pem,
		.dispatch = routes_dispatch,
		.ctx = app,
		.observe = metrics_http_hook,
		.observe_ctx = app->metrics,
	};
}

void routes_health_server_opts(struct app *app, struct http_server_opts *out)
{
	routes_server_opts(app, out);
	out->host = app->cfg.health_listen_host;
	out->port = app->cfg.health_listen_port;
	out->threads = 1;
	out->max_connections = HEALTH_MAX_CONNECTIONS;
	out->max_connections_per_ip = 0; /* the kubelet probes from one address */
	out->tls_cert_pem = NULL;
	out->tls_key_pem = NULL;
	out->dispatch = routes_dispatch_health;
}
