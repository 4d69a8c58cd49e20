/*
 * api_metrics: GET /metrics, the Prometheus text exposition of the registry (ROUTE_METRICS), the device snapshot and
 * the prices in force.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "detect/cloud.h"
#include "cost/cost.h"
#include "detect/detect.h"
#include "check/devcheck.h"
#include "exec/exec.h"
#include "exec/backend/worker_proxy.h"
#include "http/http.h"
#include "core/mem.h"
#include "metrics/metrics.h"
#include "store/store.h"

void api_metrics(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	const struct detect_snapshot *snap = NULL;
	struct metrics_view view;
	struct metrics_listener listeners[2];
	size_t nlisteners = 0;
	struct devcheck_summary sums[64];
	struct metrics_check checks[64];
	size_t nchecks = 0;
	struct worker_counts counts[4];
	struct metrics_worker workers[4];
	size_t nworkers;
	enum acceld_err err;
	char *text = NULL;
	size_t len = 0;
	double *prices = NULL;
	struct cost_host_applied applied;
	struct metrics_host host;

	if (!http_req_check_query(req, resp, allowed))
		return;
	/* the snapshot is immutable: taking it never waits for a refresh in progress */
	if (app->detect != NULL)
		snap = detect_acquire(app->detect);
	/* queue and store figures are in-memory counters: reading them never waits on a device or the disk */
	for (size_t i = 0; snap != NULL && app->exec != NULL && i < snap->n; i++) {
		unsigned queued;
		unsigned running;

		if (exec_device_load(app->exec, snap->devices[i].id, &queued, &running) == ACCELD_OK)
			metrics_set_queue_depth(app->metrics, snap->devices[i].id, queued, running);
	}
	if (app->store != NULL) {
		struct store_stats ss;
		char why[256];

		store_stats(app->store, &ss);
		metrics_set_store_stats(app->metrics, &(struct metrics_store_stats){
							      .up = store_healthy(app->store, why, sizeof(why)),
							      .write_backlog = ss.backlog,
							      .rows_written = ss.written_samples + ss.written_records,
							      .samples_dropped = ss.dropped_samples,
							      .records_dropped = ss.dropped_records,
							      .write_errors = ss.write_errors,
							      .commits = ss.commits,
							      .confirmed = ss.confirmed,
							      .journaled = ss.journaled,
							      .unconfirmed = ss.unconfirmed,
						      });
	}
	if (app->http != NULL) {
		listeners[nlisteners].name = "main";
		http_server_conn_stats(app->http, &listeners[nlisteners++].conns);
	}
	if (app->health_http != NULL) {
		listeners[nlisteners].name = "health";
		http_server_conn_stats(app->health_http, &listeners[nlisteners++].conns);
	}
	/* prices from memory too: the price book does not read the database for them */
	if (app->cost != NULL && snap != NULL) {
		prices = xcalloc(snap->n ? snap->n : 1, sizeof(*prices));
		cost_applied_prices(app->cost, snap->devices, snap->n, prices, &applied);
		host = (struct metrics_host){.cloud = cloud_kind_name(applied.host.cloud),
					     .state = cloud_state_name(applied.host.state),
					     .instance_type = applied.host.instance_type,
					     .region = applied.host.region,
					     .zone = applied.host.zone,
					     .billing = applied.host.state == CLOUD_KNOWN ? applied.billing : "",
					     .usd_per_hour = applied.usd_per_hour};
	}
	/* the checks' summaries are in memory too */
	if (app->devcheck != NULL) {
		nchecks = devcheck_summaries(app->devcheck, sums, sizeof(sums) / sizeof(sums[0]));
		for (size_t i = 0; i < nchecks; i++) {
			const struct devcheck_summary *s = &sums[i];

			checks[i] = (struct metrics_check){
				.device = s->device,
				.verdict = s->has_verdict ? devcheck_verdict_name(s->verdict) : NULL,
				.gflops = s->gflops,
				.gbytes_per_s = s->gbytes_per_s,
				.matrix_ratio = s->matrix_ratio,
				.memory_ratio = s->memory_ratio,
				.finished_ms = s->finished_ms,
				.running = s->running_id[0] != '\0',
			};
			memcpy(checks[i].finished, s->finished, sizeof(checks[i].finished));
		}
	}
	view = (struct metrics_view){
		.devices = snap,
		.device_prices = prices,
		.host = prices != NULL ? &host : NULL,
		.store_open = app->store != NULL,
		.started_at_ms = app->started_at_ms,
		.http_inflight = app->http != NULL ? http_server_inflight(app->http) : 0,
		.listeners = listeners,
		.nlisteners = nlisteners,
		.checks = checks,
		.nchecks = nchecks,
	};
	nworkers = worker_proxy_counts(counts, sizeof(counts) / sizeof(counts[0]));
	for (size_t i = 0; i < nworkers; i++) {
		workers[i] = (struct metrics_worker){.backend = counts[i].backend, .starts = counts[i].starts};
		for (unsigned c = 0; c < WORKER_CAUSE_COUNT && c < METRICS_WORKER_CAUSES; c++) {
			workers[i].causes[c] = worker_cause_name((enum worker_cause)c);
			workers[i].exits[c] = counts[i].exits[c];
		}
	}
	view.workers = workers;
	view.nworkers = nworkers;
	err = metrics_render(app->metrics, &view, &text, &len);
	free(prices);
	if (snap != NULL)
		detect_release(snap);
	if (err != ACCELD_OK) {
		http_resp_error(resp, err, "the metrics text could not be rendered");
		return;
	}
	http_resp_bytes(resp, 200, METRICS_CONTENT_TYPE, text, len);
	http_resp_header(resp, "Cache-Control", "no-store");
}
