/*
 * check_api: requests built by hand and a small service context, for the unit tests of the api_*.c handlers.
 *
 * Requests go through the real route table (routes_dispatch), so the dispatcher's checks (unknown parameters,
 * JSON bodies, the services a route needs) apply as they do in the service.
 */
#ifndef ACCELD_CHECK_API_H
#define ACCELD_CHECK_API_H

#include "app.h"
#include "http/http.h"
#include "api/routes.h"

/* A request and the storage its borrowed strings point into. */
struct check_req {
	struct http_req req;
	char target[1024];
};

/*
 * Fills r with method and target ("/history?metric=x&step" -- no percent-decoding) and, when json is not NULL, a
 * body sent as application/json.
 */
void check_req_init(struct check_req *r, enum http_method method, const char *target, const char *json);

/*
 * Loads the default configuration into app (the environment is not read), marks start-up done and starts the
 * services named by ROUTE_DETECT (one fake CPU, cpu:0: 4 threads, 8 GiB), ROUTE_STORE (an in-memory database)
 * ROUTE_COST (the built-in prices) and ROUTE_EXEC (the executor on the devices found, with the built-in backends;
 * needs ROUTE_DETECT); the other members stay NULL.
 */
void check_app_start(struct app *app, unsigned services);

/* Frees what check_app_start started. */
void check_app_stop(struct app *app);

/* Dispatches r through the service's route table into resp (initialised here); returns the status. */
int check_call(struct app *app, struct check_req *r, struct http_resp *resp);

/* A string member of the answer's JSON document, or NULL. */
const char *check_member(const struct http_resp *resp, const char *name);

/*
 * Asserts that, with only the given services started (check_app_start), method target (json the body, or NULL) is
 * answered 503 UNAVAILABLE naming the missing service (the problem's `service`).
 */
void check_unavailable(unsigned services, enum http_method method, const char *target, const char *json,
		       const char *service);

#endif
