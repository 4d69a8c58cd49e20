/*
 * Unit tests for app.c, the wiring of the service, on this host's CPU and the tpu-v6e-8 fixture's chips: starting every service on a database file (what start-up logs, which devices run jobs) and stopping them all;
 * a job's record reaching the history with its price in force (a prices file) and its figures, then counting for
 * app_select's fastest choice; what a crash left running (jobs, health checks) marked interrupted at the next
 * start; a database that cannot be used yet, and an in-memory one; stopping an app that never started.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check/devcheck_store.h"
#include "check_cli.h"
#include "check_main.h"
#include "core/log.h"
#include "core/pool.h"
#include "detect/detect.h"
#include "exec/exec.h"
#include "http/http.h"
#include "api/routes.h"
#include "metrics/metrics.h"
#include "select/select.h"
#include "store/store.h"

static char tmp[64];
static char db[128];
static struct app app;
static struct check_capture cap;
static bool capturing;
static char *out;
static char *err;

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "app");
	check_cli_env(tmp, "tpu-v6e-8");
	snprintf(db, sizeof(db), "%s/acceld.db", tmp);
	setenv("ACCELD_DB", db, 1);
	memset(&app, 0, sizeof(app));
	out = err = NULL;
	capturing = false;
}

static void teardown(void)
{
	if (capturing)
		check_capture_end(&cap, &out, &err);
	app_services_stop(&app);
	metrics_free(app.metrics);
	config_release(&app.cfg);
	free(out);
	free(err);
	check_rmtree(tmp);
}

/* Loads app.cfg from the environment and the settings given (NULL-terminated). */
static void configure(const char *const *args)
{
	char *argv[32];
	char msg[512];
	int argc = 0;

	for (; args[argc] != NULL; argc++) {
		ck_assert_int_lt(argc, 32);
		argv[argc] = strdup(args[argc]);
	}
	ck_assert_msg(config_load(&app.cfg, argc, argv, NULL, msg, sizeof(msg)) == 0, "%s", msg);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

/*
 * Starts the services with what start-up logs captured (in err afterwards); later info lines (jobs, the cloud
 * thread's answer) are not written.
 */
static void start(void)
{
	app.metrics = metrics_new();
	check_capture_begin(&cap);
	capturing = true;
	app_services_start(&app);
	log_set_level(LOGL_WARN);
	check_capture_end(&cap, &out, &err);
	capturing = false;
}

/* The log line whose msg is msg, parsed (decref it), or NULL. */
static json_t *log_line(const char *msg)
{
	char needle[128];
	const char *p;
	const char *line;
	char *copy;
	json_t *doc;

	snprintf(needle, sizeof(needle), "\"msg\":\"%s\"", msg);
	p = strstr(err, needle);
	if (p == NULL)
		return NULL;
	line = p;
	while (line > err && line[-1] != '\n')
		line--;
	copy = strndup(line, strcspn(line, "\n"));
	doc = json_loads(copy, 0, NULL);
	free(copy);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

START_TEST(services_start_and_stop)
{
	const struct detect_snapshot *snap;
	json_t *line;

	configure((const char *const[]){NULL});
	start();
	ck_assert_ptr_nonnull(app.store);
	ck_assert_ptr_nonnull(app.detect);
	ck_assert_ptr_nonnull(app.exec);
	ck_assert_ptr_nonnull(app.cost);
	ck_assert_ptr_nonnull(app.sampler);
	ck_assert_ptr_nonnull(app.cloud);
	ck_assert_ptr_nonnull(app.devcheck);
	ck_assert_ptr_nonnull(app.devcheck_store); /* a database file holds the checks' history */

	line = log_line("database open");
	ck_assert_msg(line != NULL, "%s", err);
	ck_assert_str_eq(json_string_value(json_object_get(line, "path")), db);
	ck_assert_str_eq(json_string_value(json_object_get(line, "component")), "store");
	json_decref(line);
	line = log_line("devices found");
	ck_assert_msg(line != NULL, "%s", err);
	ck_assert_int_eq(json_integer_value(json_object_get(line, "devices")), 9);
	json_decref(line);
	ck_assert_ptr_null(strstr(err, "\"level\":\"error\""));

	/* the executor says what runs jobs: the CPU (native); no backend serves the chips without a PJRT plugin */
	ck_assert_ptr_nonnull(exec_device(app.exec, "cpu:0"));
	ck_assert_ptr_null(exec_device(app.exec, "tpu:0"));
	snap = detect_acquire(app.detect);
	ck_assert_uint_eq(snap->n, 9);
	ck_assert(detect_find(snap, "cpu:0")->executable);
	ck_assert(!detect_find(snap, "tpu:0")->executable);
	detect_release(snap);

	app_checks_interrupt(&app);
	app_services_stop(&app);
	ck_assert_ptr_null(app.store);
	ck_assert_ptr_null(app.detect);
	ck_assert_ptr_null(app.exec);
	ck_assert_ptr_null(app.cost);
	ck_assert_ptr_null(app.sampler);
	ck_assert_ptr_null(app.cloud);
	ck_assert_ptr_null(app.devcheck);
	ck_assert_ptr_null(app.devcheck_store);
	/* stopping twice is harmless */
	app_services_stop(&app);
}
END_TEST

/* Runs a verified job of kernel k on cpu:0 and returns its id (in id); recorded: whether the store took it. */
static void run_job(enum kernel_id k, uint64_t n, bool recorded, char *id, size_t idsz)
{
	struct exec_request req;
	struct refusal why = {.err = ACCELD_OK};
	struct exec_job *job = NULL;

	exec_request_init(&req);
	req.kernel = k;
	req.shape.n = n;
	if (kernel_params(k) & KERNEL_PARAM_M)
		req.shape.m = n;
	if (kernel_params(k) & KERNEL_PARAM_K)
		req.shape.k = n;
	req.verify = true;
	exec_request_add_device(&req, "cpu:0");
	ck_assert_msg(exec_submit(app.exec, &req, NULL, NULL, &job, &why) == ACCELD_OK, "%s", why.detail);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	/* answered once the store made its record durable, or said it could not */
	ck_assert_int_eq(exec_job_was_recorded(job), recorded);
	snprintf(id, idsz, "%s", exec_job_id(job));
	exec_job_unref(job);
	exec_request_release(&req);
}

/* A finished job reaches the history with the price in force, and its throughput then counts for selection. */
START_TEST(jobs_reach_the_history)
{
	char prices[160];
	char id[64];
	struct store_job row;
	const struct detect_snapshot *snap;
	struct select_request req;
	struct select_result res;
	const struct select_candidate *cpu = NULL;
	double flops_per_s;
	unsigned jobs;

	snprintf(prices, sizeof(prices), "%s/prices.json", tmp);
	check_write_file(prices, "{\"prices\": [{\"type\": \"cpu\", \"usd_per_hour\": 360000}]}");
	configure((const char *const[]){"--prices-file", prices, NULL});
	start();

	run_job(KERNEL_SGEMM, 64, true, id, sizeof(id));
	ck_assert_int_eq(store_job_get(app.store, id, &row), ACCELD_OK);
	ck_assert_str_eq(row.state, "succeeded");
	ck_assert_str_eq(row.device, "cpu:0");
	ck_assert_str_eq(row.kernel, "sgemm");
	ck_assert_str_eq(row.backend, "native");
	ck_assert_uint_eq(row.m, 64);
	ck_assert_uint_eq(row.n, 64);
	ck_assert_uint_eq(row.k, 64);
	ck_assert_double_eq(row.flops, 2.0 * 64 * 64 * 64);
	ck_assert(row.submitted_ms > 0 && row.started_ms >= row.submitted_ms && row.finished_ms >= row.started_ms);
	ck_assert(isfinite(row.total_ms) && isfinite(row.kernel_ms));
	ck_assert_str_eq(row.reason, "");
	/* 360000 USD/h is 0.1 USD/ms: the run's cost at most that over its whole time */
	ck_assert_msg(isfinite(row.cost_usd) && row.cost_usd >= 0.0 && row.cost_usd <= 0.1 * row.total_ms * 1.000001,
		      "cost %g for %g ms", row.cost_usd, row.total_ms);

	/* once committed, the history's figure decides the fastest device for sgemm */
	ck_assert(store_flush(app.store, 30000));
	ck_assert_int_eq(store_throughput(app.store, "cpu:0", "sgemm", &flops_per_s, &jobs), ACCELD_OK);
	ck_assert_uint_eq(jobs, 1);
	snap = detect_acquire(app.detect);
	select_request_init(&req, &app.cfg);
	req.policy = SELECT_FASTEST;
	req.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(app_select(&app, snap, &req, &res), ACCELD_OK);
	for (size_t i = 0; i < res.ncandidates; i++)
		if (strcmp(res.candidates[i].dev->id, "cpu:0") == 0)
			cpu = &res.candidates[i];
	ck_assert_ptr_nonnull(cpu);
	ck_assert_str_eq(cpu->source, "measured");
	ck_assert_double_eq_tol(cpu->score, flops_per_s / 1e9, flops_per_s / 1e9 * 1e-5); /* 6 significant digits */
	ck_assert_str_eq(res.device->id, "cpu:0"); /* the chips have no FP32 figure */
	select_result_release(&res);
	detect_release(snap);
}
END_TEST

/* Without jobs the peak figure decides; without a price for the CPU a job's cost is unknown, not 0. */
START_TEST(unpriced_jobs_cost_nothing_known)
{
	char id[64];
	struct store_job row;
	const struct detect_snapshot *snap;
	struct select_request req;
	struct select_result res;

	configure((const char *const[]){NULL});
	start();
	snap = detect_acquire(app.detect);
	select_request_init(&req, &app.cfg);
	req.policy = SELECT_FASTEST;
	req.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(app_select(&app, snap, &req, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "cpu:0");
	ck_assert_str_eq(res.candidates[0].dev->id, "cpu:0");
	ck_assert_str_eq(res.candidates[0].source, "peak");
	select_result_release(&res);
	detect_release(snap);

	run_job(KERNEL_SAXPY, 1000, true, id, sizeof(id));
	ck_assert_int_eq(store_job_get(app.store, id, &row), ACCELD_OK);
	ck_assert_str_eq(row.state, "succeeded");
	ck_assert(isnan(row.cost_usd));
}
END_TEST

/* What a crash left running is marked interrupted when the services start again. */
START_TEST(a_crash_is_cleaned_up)
{
	struct store *st = NULL;
	struct devcheck_store *cs;
	struct store_job job = {.submitted_ms = 1767225600000, .started_ms = 1767225600100, .n = 1000,
				.flops = NAN, .bytes = NAN, .queued_ms = NAN, .transfer_ms = NAN, .kernel_ms = NAN,
				.total_ms = NAN, .cost_usd = NAN};
	json_t *check;
	json_t *line;
	char msg[256];

	log_set_level(LOGL_WARN); /* the first open's migrations */
	ck_assert_int_eq(store_open(db, &st, msg, sizeof(msg)), ACCELD_OK);
	snprintf(job.id, sizeof(job.id), "01crashedjob");
	snprintf(job.device, sizeof(job.device), "cpu:0");
	snprintf(job.kernel, sizeof(job.kernel), "saxpy");
	snprintf(job.state, sizeof(job.state), "running");
	store_job_record(st, &job);
	cs = devcheck_store_new(st, 0);
	ck_assert_ptr_nonnull(cs);
	check = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "chk-crashed", "device", "cpu:0", "level", "quick",
			  "state", "running", "created_at", "2026-01-01T00:00:00.000Z");
	ck_assert_int_eq(devcheck_store_put(cs, check, msg, sizeof(msg)), ACCELD_OK);
	json_decref(check);
	devcheck_store_free(cs);
	store_close(st);

	configure((const char *const[]){NULL});
	start();
	ck_assert(store_flush(app.store, 30000));
	ck_assert_int_eq(store_job_get(app.store, "01crashedjob", &job), ACCELD_OK);
	ck_assert_str_eq(job.state, "interrupted");
	line = log_line("checks interrupted by the last stop");
	ck_assert_msg(line != NULL, "%s", err);
	ck_assert_int_eq(json_integer_value(json_object_get(line, "checks")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(line, "level")), "warn");
	json_decref(line);
}
END_TEST

/* A database that cannot be used yet is said in the log; the services run without it meanwhile. */
START_TEST(a_database_not_usable_yet)
{
	char blocker[128];
	char path[160];
	char id[64];
	json_t *line;

	snprintf(blocker, sizeof(blocker), "%s/a-file", tmp);
	check_write_file(blocker, "not a folder\n");
	snprintf(path, sizeof(path), "%s/acceld.db", blocker);
	setenv("ACCELD_DB", path, 1);
	configure((const char *const[]){NULL});
	start();
	ck_assert_ptr_nonnull(app.store); /* kept, retrying */
	line = log_line("database not usable yet");
	ck_assert_msg(line != NULL, "%s", err);
	ck_assert_str_eq(json_string_value(json_object_get(line, "level")), "warn");
	ck_assert_ptr_nonnull(json_string_value(json_object_get(line, "error")));
	json_decref(line);
	ck_assert_ptr_nonnull(app.exec);
	ck_assert_ptr_nonnull(app.devcheck);
	/* a job still runs, and is answered though its record waits for the database */
	run_job(KERNEL_DOT, 1000, false, id, sizeof(id));
}
END_TEST

/* An in-memory database: checks are kept in it like every other record, for the life of the process. */
START_TEST(an_in_memory_database)
{
	configure((const char *const[]){"--db", ":memory:", NULL});
	start();
	ck_assert_ptr_nonnull(app.store);
	ck_assert_ptr_nonnull(app.devcheck);
	ck_assert_ptr_nonnull(app.devcheck_store);
	ck_assert_ptr_nonnull(strstr(err, "\"msg\":\"database open\""));
}
END_TEST

/* An app whose services never started stops cleanly. */
START_TEST(stop_without_start)
{
	app_checks_interrupt(&app);
	app_services_stop(&app);
	ck_assert_ptr_null(app.store);
	ck_assert_ptr_null(app.detect);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("app");
	TCase *tc = tcase_create("app");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, services_start_and_stop);
	tcase_add_test(tc, jobs_reach_the_history);
	tcase_add_test(tc, unpriced_jobs_cost_nothing_known);
	tcase_add_test(tc, a_crash_is_cleaned_up);
	tcase_add_test(tc, a_database_not_usable_yet);
	tcase_add_test(tc, an_in_memory_database);
	tcase_add_test(tc, stop_without_start);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
