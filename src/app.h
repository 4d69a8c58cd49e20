/*
 * app: the application context that main() builds and passes down.
 *
 * State lives here, not in globals. Modules keep their own structs behind pointers; this struct only wires them.
 */
#ifndef ACCELD_APP_H
#define ACCELD_APP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/config.h"
#include "core/err.h"

struct http_server;
struct store;
struct detect;
struct exec;
struct sampler;
struct metrics;
struct cost;
struct cloud;
struct devcheck;
struct devcheck_store;

struct app {
	struct config cfg;          /* read-only after start-up */
	struct http_server *http;
	struct http_server *health_http; /* the probes-and-metrics listener (--health-listen); NULL when not set */
	struct store *store;        /* NULL while the database cannot be opened */
	atomic_bool started;        /* start-up work is done */
	atomic_bool draining;       /* SIGTERM received */
	int64_t started_at_ms;      /* wall clock at start */
	uint64_t startup_ns;        /* time from start to ready */
	struct detect *detect;      /* device registry (detect.c) */
	struct exec *exec;          /* job executor (exec/exec.h) */
	struct sampler *sampler;    /* telemetry sampler (sampler.c) */
	struct metrics *metrics;    /* Prometheus counters (metrics.c) */
	struct cost *cost;          /* prices and accrued cost (cost.c) */
	struct cloud *cloud;        /* which cloud VM the host is, learned once after start (cloud.c) */
	struct devcheck *devcheck;  /* device health checks (devcheck.c); NULL without an executor */
	struct devcheck_store *devcheck_store; /* their history (devcheck_store.c); NULL without a store */
};

/*
 * Starts the services on app->cfg (loaded) and app->metrics (may be NULL): opens the store (a database that cannot
 * be used yet is retried in the background), detects devices and starts the refresher, the executor, the price
 * book, the sampler, and the thread that asks the cloud's metadata service what the host is. Failures are logged
 * and leave the member NULL; the handlers answer 503 for it.
 */
void app_services_start(struct app *app);

struct exec_opts;

/*
 * Has the executor of opts hand every job to app->store (its start and its end, the end answered once durable) and
 * to app->metrics (may be NULL): the service's executor, and `acceld run`'s with the database it names.
 */
void app_exec_records(struct app *app, struct exec_opts *opts);

struct detect_snapshot;
struct select_request;
struct select_result;
struct select_measured;
struct cost;

/*
 * The applied price of each device of snap in cost's book (overrides, a prices file, the host's share) as the
 * figures selection's cost policies weigh, into out[0..cap); returns how many. The service's and `acceld select`'s.
 */
size_t app_selection_prices(struct cost *cost, const struct detect_snapshot *snap, struct select_measured *out,
			    size_t cap);

/*
 * Chooses a device among the snapshot's for req with the measured throughput of earlier jobs from the history
 * (select_choose): the one selection behind GET/POST /select and the placement of POST /run.
 */
enum acceld_err app_select(struct app *app, const struct detect_snapshot *snap, const struct select_request *req,
			   struct select_result *res);

/*
 * Ends the health checks that run now, recording them as interrupted (SIGTERM): called before the executor stops,
 * also on the way out that does not wait for running kernels.
 */
void app_checks_interrupt(struct app *app);

/* Stops and frees what app_services_start started, in reverse order; the members are NULL afterwards. */
void app_services_stop(struct app *app);

/* {version, commit, build_time, libraries: {name: version}}: the build and the run-time versions of the libraries
 * acceld uses (libmicrohttpd, jansson, SQLite, hwloc, OpenBLAS), as a new object. */
json_t *app_version_json(void);

#endif
