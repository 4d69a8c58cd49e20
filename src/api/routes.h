/*
 * routes: the one route table (method, path pattern, handler, needs) and the dispatcher in front of it.
 *
 * The dispatcher answers what no handler should repeat: 404 for an unknown path, 405 with Allow for a known path
 * and another method, 204 with Allow for OPTIONS, 401 when a route needs the bearer token, 503 UNAVAILABLE when a
 * service the route needs is not running, and 415/400 for routes that take a JSON body. Patterns are literal
 * segments and {name} captures ("/devices/{id}").
 */
#ifndef ACCELD_ROUTES_H
#define ACCELD_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"

struct app;

typedef void (*route_fn)(struct app *app, struct http_req *req, struct http_resp *resp);

#define ROUTE_AUTH 1u /* needs the bearer token when one is configured */
#define ROUTE_JSON 2u /* takes a JSON body: req->json is set before the handler runs */
#define ROUTE_JSON_OPTIONAL 4u /* like ROUTE_JSON, but a request without a body is passed on with json NULL */
#define ROUTE_EARLY 8u /* answered during start-up too (probes); others get 503 until start-up is done */
#define ROUTE_HEALTH 512u /* also served by the health listener (--health-listen): probes and /metrics */

/*
 * The services a route needs: when the member of struct app is NULL (it failed to start), the dispatcher answers
 * 503 UNAVAILABLE with `service` naming it ("devices", "executor", "database", "prices", "metrics", "checks"), so the
 * handler may use the member without checking it.
 */
#define ROUTE_DETECT 16u   /* app->detect, the device registry */
#define ROUTE_EXEC 32u     /* app->exec, the job executor */
#define ROUTE_STORE 64u    /* app->store, the history database */
#define ROUTE_COST 128u    /* app->cost, the price book */
#define ROUTE_METRICS 256u /* app->metrics, the Prometheus registry */
#define ROUTE_CHECK 1024u  /* app->devcheck, the device health checks */

struct route {
	enum http_method method;
	const char *pattern;
	route_fn fn;
	unsigned flags;
};

/* The service's route table and its length. */
const struct route *routes_table(size_t *n);

/* Matches path against pattern, filling req->params with captures; req may be NULL. */
bool routes_match(const char *pattern, const char *path, struct http_req *req);

/* Dispatches req through table (the service's table in production, a test's own in unit tests). */
void routes_dispatch_table(const struct route *table, size_t n, struct app *app, struct http_req *req,
			   struct http_resp *resp);

/* http_dispatch_fn for the server: ctx is the struct app. */
void routes_dispatch(void *ctx, struct http_req *req, struct http_resp *resp);

/*
 * http_dispatch_fn for the health listener (--health-listen): /livez, /readyz, /healthz and /metrics as on the
 * main listener; any other path is a 404. ctx is the struct app.
 */
void routes_dispatch_health(void *ctx, struct http_req *req, struct http_resp *resp);

struct http_server_opts;

/*
 * The HTTP server's settings from app->cfg (threads: the usable CPUs when not set), dispatching to the route table
 * with app as context and reporting to app->metrics (create it first).
 */
void routes_server_opts(struct app *app, struct http_server_opts *out);

/*
 * The health listener's settings (--health-listen, which must be set): the main listener's limits, one thread, a
 * small connection budget of its own, plain HTTP, and only the probe and metrics routes.
 */
void routes_health_server_opts(struct app *app, struct http_server_opts *out);

/* Constant-time check of an Authorization header against the token. */
bool routes_token_ok(const char *authorization, const char *token);

#endif
