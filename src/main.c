/*
 * acceld: accelerator broker. main() reads the command, loads the configuration and wires the modules in order;
 * teardown runs in reverse.
 */
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cli_select.h"
#include "clock.h"
#include "cost.h"
#include "detect.h"
#include "exec.h"
#include "cli_run.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "report.h"
#include "routes.h"
#include "sampler.h"
#include "signals.h"
#include "store.h"
#include "version.h"

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
		"usage: acceld COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  serve      run the HTTP service (default address 127.0.0.1:9470)\n"
		"  version    print version, commit, build time and library versions as JSON\n"
		"  routes     print the HTTP routes the service answers\n"
		"  report     print the devices found (--json, --verbose, --nfd PATH)\n"
		"  select     print the device to use and the environment to export (--format env)\n"
		"  batch      print the batch size for a device, step by step\n"
		"  run        run a kernel on the best device: run KERNEL [--n N] [--m M --k K] [--device ID] ...\n"
		"  help       print this text\n"
		"\n"
		"Every command takes the settings below; `acceld COMMAND --help` prints them too.\n\n");
	config_usage(out);
}

/* Loads the configuration for a command; returns 0, or the exit code to leave with. */
static int load_config(struct config *cfg, int argc, char **argv)
{
	char err[1024];
	int rc = config_load(cfg, argc, argv, NULL, err, sizeof(err));

	if (rc == 1) {
		usage(stdout);
		config_release(cfg);
		return -1;
	}
	if (rc != 0) {
		fprintf(stderr, "acceld: %s\n", err);
		config_release(cfg);
		return EXIT_USAGE;
	}
	log_set_level((enum log_level)cfg->log_level);
	return 0;
}

static unsigned usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned)n : 1;
}

static void try_open_store(struct app *app)
{
	char err[512];

	struct store_opts sopts = {.path = app->cfg.db_path,
				   .retention_raw_ms = (int64_t)app->cfg.retention_raw_ms,
				   .retention_minute_ms = (int64_t)app->cfg.retention_minute_ms,
				   .retention_hour_ms = (int64_t)app->cfg.retention_hour_ms};

	/* the store keeps retrying a database it cannot use yet; /readyz says why meanwhile */
	if (store_open_opts(&sopts, &app->store, err, sizeof(err)) != ACCELD_OK)
		log_msg(LOGL_ERROR, "store", "%s", err);
	else if (err[0] != '\0')
		log_fields(LOGL_WARN, "store", "database not usable yet", (struct log_field[]){LOG_S("error", err)}, 1);
	else
		log_fields(LOGL_INFO, "store", "database open", (struct log_field[]){LOG_S("path", app->cfg.db_path)},
			   1);
}

/* Waits for in-flight requests to finish, at most the grace period; a second signal cuts the wait short. */
static void drain(struct app *app, int sig)
{
	uint64_t deadline = clock_mono_ns() + app->cfg.shutdown_grace_ms * 1000000ull;
	unsigned left;

	atomic_store(&app->draining, true);
	http_server_set_closing(app->http);
	http_server_quiesce(app->http);
	log_fields(LOGL_INFO, "main", "draining",
		   (struct log_field[]){LOG_S("signal", sig == SIGINT ? "SIGINT" : "SIGTERM"),
					LOG_I("grace_ms", app->cfg.shutdown_grace_ms),
					LOG_I("inflight", http_server_inflight(app->http))},
		   3);
	while ((left = http_server_inflight(app->http)) > 0 && clock_mono_ns() < deadline) {
		if (signals_wait(10) > 0) {
			log_msg(LOGL_WARN, "main", "second signal: stopping now");
			break;
		}
	}
	log_fields(LOGL_INFO, "main", "stopping", (struct log_field[]){LOG_I("inflight_abandoned", left)}, 1);
}

/* Finds the devices (the first snapshot exists when detect_new returns) and starts the periodic refresher. */
static void start_detect(struct app *app)
{
	const struct detect_snapshot *snap;

	detect_new(&app->cfg, NULL, 0, &app->detect);
	if (detect_start(app->detect) != ACCELD_OK)
		log_msg(LOGL_ERROR, "detect", "cannot start the refresher thread; devices are probed once");
	snap = detect_acquire(app->detect);
	log_fields(LOGL_INFO, "detect", "devices found",
		   (struct log_field[]){LOG_I("devices", snap->n), LOG_I("generation", snap->generation),
					LOG_D("duration_ms", snap->refresh_ms)},
		   3);
	detect_release(snap);
}

/* on_job_done: every finished job goes to the history store and the job metrics. */
static void record_job(void *ctx, const struct exec_job_record *rec)
{
	struct app *app = ctx;
	struct store_job job = {.submitted_ms = rec->created_ms,
				.started_ms = rec->started_ms,
				.finished_ms = rec->finished_ms,
				.n = rec->n,
				.m = rec->m,
				.k = rec->k,
				.flops = rec->flops,
				.bytes = rec->bytes,
				.kernel_ms = rec->kernel_ms,
				.total_ms = rec->total_ms,
				.cost_usd = rec->cost_usd};

	snprintf(job.id, sizeof(job.id), "%s", rec->id);
	snprintf(job.device, sizeof(job.device), "%s", rec->device_id ? rec->device_id : "");
	snprintf(job.kernel, sizeof(job.kernel), "%s", rec->kernel);
	snprintf(job.backend, sizeof(job.backend), "%s", rec->backend ? rec->backend : "");
	/* the store names an overrun "timeout" */
	snprintf(job.state, sizeof(job.state), "%s", strcmp(rec->state, "timed_out") == 0 ? "timeout" : rec->state);
	snprintf(job.error, sizeof(job.error), "%s", rec->error ? rec->error : "");
	store_job_record(app->store, &job);
	metrics_job_observe(app->metrics, rec->kernel, rec->device_id ? rec->device_id : "none", rec->state,
			    rec->total_ms / 1000.0);
}

/* The sampler's busy fraction for devices with no telemetry of their own: the executor's. */
static double exec_busy(void *ctx, const char *device_id, uint64_t window_ms)
{
	struct app *app = ctx;

	return app->exec != NULL ? exec_busy_fraction(app->exec, device_id, window_ms) : NAN;
}

/* Starts the executor on the devices detection found (after start_detect). */
static void start_exec(struct app *app)
{
	const struct detect_snapshot *snap = detect_acquire(app->detect);
	struct exec_opts eopts;

	exec_opts_from_config(&app->cfg, &eopts);
	eopts.devices = snap->devices;
	eopts.ndevices = snap->n;
	eopts.on_job_done = record_job;
	eopts.on_job_done_ctx = app;
	if (exec_new(&eopts, &app->exec) != ACCELD_OK)
		log_msg(LOGL_ERROR, "exec", "cannot start the executor; POST /run answers 503");
	detect_release(snap);
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
	if (app->detect == NULL || sampler_new(&so, &app->sampler) != ACCELD_OK ||
	    sampler_start(app->sampler) != ACCELD_OK)
		log_msg(LOGL_ERROR, "sampler", "cannot start the sampler; no history is recorded");
}

static int cmd_serve(int argc, char **argv)
{
	struct app app;
	struct http_server_opts hopts;
	char err[512];
	int sig = 0;
	uint64_t t0 = clock_mono_ns();
	int rc;
	json_t *cfg_json;

	memset(&app, 0, sizeof(app));
	rc = load_config(&app.cfg, argc, argv);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	app.started_at_ms = clock_real_ms();

	log_buffering_start();
	if (signals_init() != 0) {
		log_msg(LOGL_ERROR, "main", "cannot install signal handlers");
		log_buffering_stop();
		config_release(&app.cfg);
		return 1;
	}

	cfg_json = config_to_json(&app.cfg);
	log_json(LOGL_INFO, "main", "starting", "config", cfg_json);
	json_decref(cfg_json);

	app.metrics = metrics_new(); /* before the server, which reports every request to it */
	hopts = (struct http_server_opts){
		.host = app.cfg.listen_host,
		.port = app.cfg.listen_port,
		.threads = app.cfg.threads ? app.cfg.threads : usable_cpus(),
		.max_connections = app.cfg.max_connections,
		.max_connections_per_ip = app.cfg.max_connections_per_ip,
		.idle_timeout_s = (unsigned)((app.cfg.idle_timeout_ms + 999) / 1000),
		.conn_memory = app.cfg.conn_memory,
		.max_body = app.cfg.max_body,
		.max_json_depth = app.cfg.max_json_depth,
		.access_log = app.cfg.access_log,
		.tls_cert_pem = app.cfg.tls_cert_pem,
		.tls_key_pem = app.cfg.tls_key_pem,
		.dispatch = routes_dispatch,
		.ctx = &app,
		.observe = metrics_http_hook,
		.observe_ctx = app.metrics,
	};
	{
		char pocl_dir[4096];

		/* before any thread or OpenCL call: PoCL's cache folder and OpenBLAS's core type (exec.h) */
		exec_pocl_cache_dir(&app.cfg, pocl_dir, sizeof(pocl_dir));
		exec_prepare_process(pocl_dir);
	}
	/* serve first, so /livez answers while start-up work runs */
	if (http_server_start(&hopts, &app.http, err, sizeof(err)) != 0) {
		log_msg(LOGL_ERROR, "http", "%s", err);
		metrics_free(app.metrics);
		log_buffering_stop();
		config_release(&app.cfg);
		return 1;
	}
	log_fields(LOGL_INFO, "http", "listening",
		   (struct log_field[]){LOG_S("host", app.cfg.listen_host), LOG_I("port", http_server_port(app.http)),
					LOG_I("threads", hopts.threads), LOG_B("tls", app.cfg.tls_cert_pem != NULL)},
		   4);

	/* start-up work, in dependency order: store, detection, executor, sampler */
	try_open_store(&app);
	start_detect(&app);
	start_exec(&app);
	start_history(&app);
	app.startup_ns = clock_mono_ns() - t0;
	atomic_store(&app.started, true);
	log_fields(LOGL_INFO, "main", "ready", (struct log_field[]){LOG_D("startup_ms", (double)app.startup_ns / 1e6)},
		   1);

	while (sig <= 0)
		sig = signals_wait(1000);

	drain(&app, sig);
	http_server_stop(app.http); /* answers requests still waiting on a job with 503 first */
	if (app.exec != NULL && !exec_stop(app.exec, 0)) {
		/* a kernel cannot be interrupted and the grace period is over: keep what is committed and go */
		log_msg(LOGL_WARN, "main", "jobs still running after the grace period; exiting without them");
		sampler_free(app.sampler);
		store_flush(app.store, 2000);
		log_buffering_stop();
		_exit(0);
	}
	/* teardown in reverse order of start-up */
	sampler_free(app.sampler);
	cost_free(app.cost);
	exec_free(app.exec);
	detect_free(app.detect);
	store_close(app.store);
	metrics_free(app.metrics);
	log_msg(LOGL_INFO, "main", "stopped");
	log_buffering_stop();
	config_release(&app.cfg);
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	json_t *v;

	(void)argv;
	if (argc > 0) {
		fprintf(stderr, "acceld: version takes no options\n");
		return EXIT_USAGE;
	}
	v = version_json();
	json_dumpf(v, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(v);
	return 0;
}

static int cmd_routes(int argc, char **argv)
{
	size_t n;
	const struct route *t = routes_table(&n);

	(void)argv;
	if (argc > 0) {
		fprintf(stderr, "acceld: routes takes no options\n");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s %s%s\n", http_method_name(t[i].method), t[i].pattern,
		       (t[i].flags & ROUTE_AUTH) ? " auth" : "");
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	usage(stdout);
	return 0;
}

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"serve", cmd_serve},
	{"version", cmd_version},
	{"routes", cmd_routes},
	{"report", report_main},
	{"select", cli_select_main},
	{"batch", cli_batch_main},
	{"run", cli_run_main},
	{"help", cmd_help},
	{"--help", cmd_help},
	{"-h", cmd_help},
	{"--version", cmd_version},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 2, argv + 2);
	fprintf(stderr, "acceld: unknown command '%s' (see acceld --help)\n", argv[1]);
	return EXIT_USAGE;
}
