/*
 * app: the application's services and their wiring (store, detection, executor, prices, sampler), started in
 * dependency order and stopped in reverse, and the HTTP server's settings. main() builds the server around them;
 * the request fuzzer (tests/fuzz/fuzz_request.c) builds the same app.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "app.h"
#include "core/clock.h"
#include "core/version.h"
#include "detect/cloud.h"
#include "cost/cost.h"
#include "cost/hostprice.h"
#include "detect/detect.h"
#include "check/devcheck.h"
#include "check/devcheck_store.h"
#include "exec/backend.h"
#include "exec/exec.h"
#include "http/http.h"
#include "core/log.h"
#include "core/mem.h"
#include "metrics/metrics.h"
#include "core/pool.h"
#include "store/sampler.h"
#include "select/select.h"
#include "store/store.h"

static void try_open_store(struct app *app)
{
	char err[512];

	struct store_opts sopts = {.path = app->cfg.db_path,
				   .retention_raw_ms = (int64_t)app->cfg.retention_raw_ms,
				   .retention_minute_ms = (int64_t)app->cfg.retention_minute_ms,
				   .retention_hour_ms = (int64_t)app->cfg.retention_hour_ms,
				   .sync_full = app->cfg.db_sync == 1,
				   /* samples reach the file within one sampling interval (at most 1 s): a crash loses less
				    * than two intervals of them */
				   .flush_interval_ms = app->cfg.sample_interval_ms < 1000
							? (unsigned)(app->cfg.sample_interval_ms ? app->cfg.sample_interval_ms : 1000)
							: 1000};

	/* the store keeps retrying a database it cannot use yet; /readyz says why meanwhile */
	if (store_open_opts(&sopts, &app->store, err, sizeof(err)) != ACCELD_OK)
		log_msg(LOGL_ERROR, "store", "%s", err);
	else if (err[0] != '\0')
		log_fields(LOGL_WARN, "store", "database not usable yet", (struct log_field[]){LOG_S("error", err)}, 1);
	else
		log_fields(LOGL_INFO, "store", "database open", (struct log_field[]){LOG_S("path", app->cfg.db_path)},
			   1);
}

/* Finds the devices (the first snapshot exists when detect_new returns) and starts the periodic refresher. */
static void start_detect(struct app *app)
{
	const struct detect_snapshot *snap;

	app->detect = detect_new(&app->cfg, NULL, 0);
	/* until the executor runs, a device runs jobs when a backend serves it; the backends describe themselves */
	detect_set_executable(app->detect, backend_serves_any, NULL);
	detect_set_describe(app->detect, backend_describe_device, NULL);
	if (detect_start(app->detect) != ACCELD_OK)
		log_msg(LOGL_ERROR, "detect", "cannot start the refresher thread; devices are probed once");
	snap = detect_acquire(app->detect);
	log_fields(LOGL_INFO, "detect", "devices found",
		   (struct log_field[]){LOG_I("devices", snap->n), LOG_I("generation", snap->generation),
					LOG_D("duration_ms", snap->refresh_ms)},
		   3);
	detect_release(snap);
}

/* The store's row for an executor record. */
static void store_row_of(const struct exec_record *rec, struct store_job *job)
{
	*job = (struct store_job){.submitted_ms = rec->created_ms,
				  .started_ms = rec->started_ms,
				  .finished_ms = rec->finished_ms,
				  .n = rec->n,
				  .m = rec->m,
				  .k = rec->k,
				  .flops = rec->flops,
				  .bytes = rec->bytes,
				  .queued_ms = rec->queued_ms,
				  .transfer_ms = rec->transfer_ms,
				  .setup_ms = rec->setup_ms,
				  .generate_ms = rec->generate_ms,
				  .verify_ms = rec->verify_ms,
				  .transfer_bytes = rec->transfer_bytes,
				  .upload_ms = rec->upload_ms,
				  .upload_bytes = rec->upload_bytes,
				  .download_ms = rec->download_ms,
				  .download_bytes = rec->download_bytes,
				  .kernel_ms = rec->kernel_ms,
				  .total_ms = rec->total_ms,
				  .cost_usd = rec->cost_usd,
				  .peak_gflops = rec->peak_gflops,
				  .peak_gbytes_per_s = rec->peak_gbytes_per_s};
	snprintf(job->id, sizeof(job->id), "%s", rec->id);
	snprintf(job->device, sizeof(job->device), "%s", rec->device_id ? rec->device_id : "");
	snprintf(job->kernel, sizeof(job->kernel), "%s", rec->kernel);
	snprintf(job->backend, sizeof(job->backend), "%s", rec->backend ? rec->backend : "");
	snprintf(job->state, sizeof(job->state), "%s", rec->state);
	snprintf(job->reason, sizeof(job->reason), "%s", rec->reason ? rec->reason : "");
	snprintf(job->error, sizeof(job->error), "%s", rec->error ? rec->error : "");
	snprintf(job->trigger, sizeof(job->trigger), "%s", rec->trigger ? rec->trigger : "");
	snprintf(job->check_id, sizeof(job->check_id), "%s", rec->check_id ? rec->check_id : "");
	snprintf(job->transfer_memory, sizeof(job->transfer_memory), "%s",
		 rec->transfer_memory ? rec->transfer_memory : "");
}

/* on_job_start: a running job has its row, so one that a crash cuts short is marked interrupted at the next start. */
static void record_started(void *ctx, const struct exec_record *rec)
{
	struct app *app = ctx;
	struct store_job job;

	store_row_of(rec, &job);
	store_job_record(app->store, &job);
}

/* A job record waiting for its commit. */
struct pending_record {
	struct exec_job *job;
	bool provisional;
};

/* The store's completion of a job record: the job is answered now. */
static void record_confirmed(void *ctx, bool recorded)
{
	struct pending_record *p = ctx;

	exec_record_confirmed(p->job, p->provisional, recorded);
	exec_job_unref(p->job);
	free(p);
}

/*
 * on_job_record: every finished job goes to the job metrics and to the history store, and is answered once its
 * record is durable (journaled, or committed; see store_job_record_notify).
 */
static void record_ended(void *ctx, const struct exec_record *rec)
{
	struct app *app = ctx;
	struct store_job job;
	struct pending_record *p = xcalloc(1, sizeof(*p));

	store_row_of(rec, &job);
	if (!rec->provisional)
		metrics_job_observe(app->metrics, rec->kernel, rec->device_id ? rec->device_id : "none", rec->state,
				    rec->total_ms / 1000.0);
	exec_job_ref(rec->job);
	p->job = rec->job;
	p->provisional = rec->provisional;
	store_job_record_notify(app->store, &job, record_confirmed, p);
}

void app_exec_records(struct app *app, struct exec_opts *opts)
{
	opts->on_job_record = record_ended;
	opts->on_job_record_ctx = app;
	opts->on_job_start = record_started;
	opts->on_job_start_ctx = app;
}

/* The sampler's busy fraction for devices with no telemetry of their own: the executor's. */
static double exec_busy(void *ctx, const char *device_id, uint64_t window_ms)
{
	struct app *app = ctx;

	return app->exec != NULL ? exec_busy_fraction(app->exec, device_id, window_ms) : NAN;
}

/* The executor's devices are those found at start: one is used only while detection still sees the same device. */
static enum exec_presence exec_presence_of(void *ctx, const struct device *dev)
{
	const struct detect_snapshot *snap = detect_acquire(ctx);
	const struct device *now = detect_find(snap, dev->id);
	enum exec_presence p = EXEC_PRESENT;

	if (now == NULL)
		p = EXEC_GONE;
	else if (!detect_same_hardware(dev, now))
		p = EXEC_CHANGED;
	detect_release(snap);
	return p;
}

/*
 * A device's memory now for admission (exec_opts.memory_now): the free bytes of detection's latest sample, and for an
 * NVIDIA GPU the processes NVML lists as holding its memory (holders.c) when asked.
 */
static size_t exec_memory_now(void *ctx, const struct device *dev, uint64_t *available, struct holder *holders,
			      size_t max, uint64_t *own)
{
	struct app *app = ctx;
	const struct detect_snapshot *snap = detect_acquire(app->detect);
	const struct device *now = detect_find(snap, dev->id);
	char why[128];

	*available = now != NULL && detect_same_hardware(dev, now) ? now->memory_available_bytes : 0;
	detect_release(snap);
	if (holders == NULL || max == 0 || dev->type != DEVICE_GPU || strcmp(dev->vendor, "NVIDIA") != 0)
		return 0;
	return holders_gpu_memory(&app->cfg, dev->uuid, holders, max, own, why, sizeof(why));
}

/* Whether the executor runs jobs on dev: it has a running worker for the very hardware detection now sees. */
static bool executable_now(void *ctx, const struct device *dev)
{
	const struct device *mine = exec_device(ctx, dev->id);

	return mine != NULL && detect_same_hardware(mine, dev);
}

/* Without an executor no device runs jobs. */
static bool never_executable(void *ctx, const struct device *dev)
{
	(void)ctx;
	(void)dev;
	return false;
}

/* A device's price when a job on it ends: the price book's, the host's share included. */
static double price_now(void *ctx, const struct device *dev)
{
	struct app *app = ctx;
	const struct detect_snapshot *snap;
	struct cost_host_applied host;
	double *usd;
	double v = dev->price.usd_per_hour;

	if (app->cost == NULL || app->detect == NULL)
		return v;
	snap = detect_acquire(app->detect);
	usd = xcalloc(snap->n ? snap->n : 1, sizeof(*usd));
	cost_applied_prices(app->cost, snap->devices, snap->n, usd, &host);
	for (size_t i = 0; i < snap->n; i++)
		if (strcmp(snap->devices[i].id, dev->id) == 0)
			v = usd[i];
	free(usd);
	detect_release(snap);
	return v;
}

/* Starts the executor on the devices detection found (after start_detect); from then on it says what is
 * executable. */
static void start_exec(struct app *app)
{
	const struct detect_snapshot *snap = detect_acquire(app->detect);
	struct exec_opts eopts;

	exec_opts_from_config(&app->cfg, &eopts);
	eopts.devices = snap->devices;
	eopts.ndevices = snap->n;
	app_exec_records(app, &eopts);
	eopts.presence = exec_presence_of;
	eopts.presence_ctx = app->detect;
	eopts.memory_now = exec_memory_now;
	eopts.memory_now_ctx = app;
	eopts.price = price_now;
	eopts.price_ctx = app;
	if (exec_new(&eopts, &app->exec) != ACCELD_OK)
		log_msg(LOGL_ERROR, "exec", "cannot start the executor; POST /run answers 503");
	detect_release(snap);
	if (app->exec != NULL)
		detect_set_executable(app->detect, executable_now, app->exec);
	else
		detect_set_executable(app->detect, never_executable, NULL);
}

static const struct device *sampler_acquire(void *ctx, size_t *n, void **token)
{
	const struct detect_snapshot *snap = detect_acquire(ctx);

	*token = (void *)(uintptr_t)snap;
	*n = snap->n;
	return snap->devices;
}

static void sampler_release(void *ctx, void *token)
{
	(void)ctx;
	detect_release((const struct detect_snapshot *)(uintptr_t)token);
}

/* Prices, accrued cost and the sampler (after detection, whose snapshots it samples). */
static void start_history(struct app *app)
{
	char err[512];
	struct sampler_opts so = {.cfg = &app->cfg, .store = app->store,
				  .devices = {.acquire = sampler_acquire, .release = sampler_release, .ctx = app->detect},
				  .busy = exec_busy,
				  .busy_ctx = app};

	store_jobs_mark_interrupted(app->store);
	if (cost_new(app->store, app->cfg.prices_file, &app->cost, err, sizeof(err)) != ACCELD_OK)
		log_msg(LOGL_ERROR, "cost", "%s; /cost answers 503 until it is fixed and acceld restarted", err);
	app->sampler = sampler_new(&so);
	if (sampler_start(app->sampler) != ACCELD_OK)
		log_msg(LOGL_ERROR, "sampler", "cannot start the sampler; no history is recorded");
}

/*
 * Measured throughput of the hinted kernel (select_kernel) on each device, from the jobs history; fills
 * out[0..return). Devices with no finished job of that kernel are left out, so their peak figures count.
 */
static size_t measured_from_history(struct app *app, const struct detect_snapshot *snap, const char *kernel,
				    struct select_measured *out, size_t cap)
{
	const struct kernel_shape shape = {.m = 64, .n = 64, .k = 64};
	enum kernel_id k;
	double bytes_per_flop;
	size_t n = 0;

	if (app->store == NULL || !kernel_parse(kernel, &k))
		return 0;
	bytes_per_flop = kernel_bytes(k, &shape) / kernel_flops(k, &shape);
	for (size_t i = 0; i < snap->n && n < cap; i++) {
		double flops_per_s;
		unsigned jobs;

		if (store_throughput(app->store, snap->devices[i].id, kernel, &flops_per_s, &jobs) != ACCELD_OK ||
		    jobs == 0)
			continue;
		out[n++] = (struct select_measured){.device_id = snap->devices[i].id,
						    .kernel = kernel,
						    .gflops = flops_per_s / 1e9,
						    .gbytes_per_s = flops_per_s * bytes_per_flop / 1e9};
	}
	return n;
}

size_t app_selection_prices(struct cost *cost, const struct detect_snapshot *snap, struct select_measured *out,
			    size_t cap)
{
	double *usd = xcalloc(snap->n ? snap->n : 1, sizeof(*usd));
	struct cost_host_applied host;
	size_t n;

	cost_applied_prices(cost, snap->devices, snap->n, usd, &host);
	n = select_prices(snap->devices, usd, snap->n, out, cap);
	free(usd);
	return n;
}

enum acceld_err app_select(struct app *app, const struct detect_snapshot *snap, const struct select_request *req,
			   struct select_result *res)
{
	size_t cap = 64 + 320 + snap->n;
	struct select_measured *measured = xcalloc(cap, sizeof(*measured));
	char ids[320][DEVICE_ID_MAX];
	size_t nmeasured = 0;
	enum acceld_err rc;

	/* a recent health check's figures come first: selection takes the first figure of a device and kernel */
	if (app->devcheck != NULL)
		nmeasured = devcheck_measured(app->devcheck, clock_real_ms(), measured, ids, 320);
	nmeasured += measured_from_history(app, snap, kernel_name(select_kernel(req->kernel)), measured + nmeasured,
					   64);
	/* the prices in force (overrides, a prices file, the host's share), which the cost policies weigh */
	if (app->cost != NULL)
		nmeasured += app_selection_prices(app->cost, snap, measured + nmeasured, cap - nmeasured);
	rc = select_choose(snap->devices, snap->n, req, measured, nmeasured, res);
	free(measured);
	return rc;
}

/* --- health checks --- */

/* The device as detection sees it, its telemetry read anew first when asked. */
static bool devcheck_device(void *ctx, const char *id, bool fresh, struct device *out)
{
	struct app *app = ctx;
	const struct detect_snapshot *snap;
	const struct device *d;

	if (fresh)
		detect_refresh(app->detect, false);
	snap = detect_acquire(app->detect);
	d = detect_find(snap, id);
	if (d != NULL)
		*out = *d;
	detect_release(snap);
	return d != NULL;
}

static size_t devcheck_list(void *ctx, char (*ids)[DEVICE_ID_MAX], size_t cap)
{
	struct app *app = ctx;
	const struct detect_snapshot *snap = detect_acquire(app->detect);
	size_t n = 0;

	for (; n < snap->n && n < cap; n++)
		snprintf(ids[n], DEVICE_ID_MAX, "%s", snap->devices[n].id);
	detect_release(snap);
	return n;
}

/* A check's document goes to the history; a database that cannot take it now is said in the log. */
static void devcheck_record(void *ctx, const json_t *doc)
{
	struct app *app = ctx;
	char err[256];

	if (app->devcheck_store != NULL && devcheck_store_put(app->devcheck_store, doc, err, sizeof(err)) != ACCELD_OK)
		log_fields(LOGL_WARN, "check", "check not recorded",
			   (struct log_field[]){LOG_S("id", json_string_value(json_object_get(doc, "id"))),
						LOG_S("error", err)},
			   2);
}

/* A check started or ended: the next snapshot shows it (GET /devices, and a CPU's measured peak). */
static void devcheck_changed(void *ctx, const char *device_id)
{
	struct app *app = ctx;

	(void)device_id;
	detect_refresh(app->detect, false);
}

static void devcheck_decorate(void *ctx, struct device *dev)
{
	devcheck_apply(ctx, dev);
}

/* Health checks, after the executor that runs them and the store that migrated their table. */
static void start_checks(struct app *app)
{
	struct devcheck_opts copts = {.exec = app->exec,
				   .device = devcheck_device,
				   .device_ctx = app,
				   .list = devcheck_list,
				   .list_ctx = app,
				   .record = devcheck_record,
				   .record_ctx = app,
				   .changed = devcheck_changed,
				   .changed_ctx = app};
	json_t *latest = NULL;
	unsigned interrupted = 0;
	size_t i;
	json_t *doc;

	if (app->exec == NULL) {
		log_msg(LOGL_ERROR, "check", "no executor: health checks answer 503");
		return;
	}
	app->devcheck_store = devcheck_store_new(app->store, (int64_t)app->cfg.retention_hour_ms);
	/* checks a crash cut short are interrupted, like jobs */
	if (app->devcheck_store != NULL &&
	    devcheck_store_mark_interrupted(app->devcheck_store, clock_real_ms(), &interrupted) == ACCELD_OK &&
	    interrupted > 0)
		log_fields(LOGL_WARN, "check", "checks interrupted by the last stop",
			   (struct log_field[]){LOG_I("checks", interrupted)}, 1);
	devcheck_settings_from_config(&app->cfg, &copts.settings);
	if (devcheck_new(&copts, &app->devcheck) != ACCELD_OK) {
		log_msg(LOGL_ERROR, "check", "cannot start the health checks");
		return;
	}
	if (app->devcheck_store != NULL && devcheck_store_latest(app->devcheck_store, &latest) == ACCELD_OK) {
		json_array_foreach(latest, i, doc)
			devcheck_seed(app->devcheck, doc);
		json_decref(latest);
	}
	detect_set_decorate(app->detect, devcheck_decorate, app->devcheck);
}

void app_checks_interrupt(struct app *app)
{
	devcheck_stop(app->devcheck);
}

/* What the host is, once learned: detection prices its devices by it, the price book applies its Spot status. */
static void on_cloud(void *ctx, const struct cloud_host *host)
{
	struct app *app = ctx;

	if (app->detect != NULL)
		detect_set_host(app->detect, host, hostprice_for_registry, NULL);
	if (app->cost != NULL)
		cost_set_host(app->cost, host);
	log_fields(host->state == CLOUD_FAILED ? LOGL_WARN : LOGL_INFO, "cloud", "host",
		   (struct log_field[]){LOG_S("cloud", cloud_kind_name(host->cloud)),
					LOG_S("state", cloud_state_name(host->state)),
					LOG_S("instance_type", host->instance_type), LOG_S("region", host->region),
					LOG_S("zone", host->zone), LOG_I("spot", host->spot),
					LOG_S("detected_by", host->detected_by), LOG_S("note", host->note)},
		   8);
}

/* Asks the cloud's metadata service in a thread of its own: start-up and requests never wait for it. */
static void start_cloud(struct app *app)
{
	app->cloud = cloud_new(&app->cfg);
	if (cloud_start(app->cloud, on_cloud, app) != 0)
		log_msg(LOGL_ERROR, "cloud", "cannot start the metadata thread; the host price stays unknown");
}

void app_services_start(struct app *app)
{
	try_open_store(app);
	start_detect(app);
	start_exec(app);
	start_history(app);
	start_cloud(app);
	start_checks(app);
}

void app_services_stop(struct app *app)
{
	/* checks run jobs and decorate detection's snapshots: they go first */
	if (app->detect != NULL)
		detect_set_decorate(app->detect, NULL, NULL);
	devcheck_free(app->devcheck);
	devcheck_store_free(app->devcheck_store);
	app->devcheck = NULL;
	app->devcheck_store = NULL;
	/* the metadata thread calls into detection and the price book: it ends first */
	cloud_free(app->cloud);
	app->cloud = NULL;
	sampler_free(app->sampler);
	cost_free(app->cost);
	/* detection's refresher asks the executor what is executable: not any more */
	if (app->detect != NULL)
		detect_set_executable(app->detect, never_executable, NULL);
	exec_free(app->exec);
	detect_free(app->detect);
	store_close(app->store);
	app->sampler = NULL;
	app->cost = NULL;
	app->exec = NULL;
	app->detect = NULL;
	app->store = NULL;
}

json_t *app_version_json(void)
{
	unsigned hw = hwloc_get_api_version();
	char hwloc[32];
	json_t *doc;

	snprintf(hwloc, sizeof(hwloc), "%u.%u.%u", hw >> 16, (hw >> 8) & 0xff, hw & 0xff);
	doc = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "version", version_string(), "commit",
			version_commit(), "build_time", version_build_time(), "libraries", "libmicrohttpd",
			http_library_version(), "jansson", jansson_version_str(), "sqlite", store_sqlite_version(),
			"hwloc", hwloc);
	backend_libraries(NULL, json_object_get(doc, "libraries"));
	return doc;
}
