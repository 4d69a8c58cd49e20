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

#include "config.h"

struct http_server;
struct store;
struct detect;
struct exec;
struct sampler;
struct metrics;
struct cost;

struct app {
	struct config cfg;          /* read-only after start-up */
	struct http_server *http;
	struct store *store;        /* NULL while the database cannot be opened */
	atomic_bool started;        /* start-up work is done */
	atomic_bool draining;       /* SIGTERM received */
	int64_t started_at_ms;      /* wall clock at start */
	uint64_t startup_ns;        /* time from start to ready */
	struct detect *detect;      /* device registry (detect.c) */
	struct exec *exec;          /* job executor (exec.c) */
	struct sampler *sampler;    /* telemetry sampler (sampler.c) */
	struct metrics *metrics;    /* Prometheus counters (metrics.c) */
	struct cost *cost;          /* prices and accrued cost (cost.c) */
};

#endif
