/*
 * acceld: accelerator broker. main() reads the command, loads the configuration and wires the modules in order;
 * teardown runs in reverse.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "cli/cli.h"
#include "cli/cli_check.h"
#include "cli/cli_plan.h"
#include "cli/cli_run.h"
#include "cli/cli_select.h"
#include "core/clock.h"
#include "core/jsonval.h"
#include "exec/exec.h"
#include "exec/backend/worker_main.h"
#include "http/http.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "core/reason.h"
#include "cli/report.h"
#include "api/routes.h"
#include "store/sampler.h"
#include "core/signals.h"
#include "store/store.h"
#include "core/version.h"

/* serve's help: the only one with every setting, since serve is what reads them all */
/* serve's help: its settings in groups, the ones most deployments set; the rest is a pointer away. */
static void serve_help(FILE *out)
{
	static const struct {
		const char *title;
		const char *const flags[8];
	} groups[] = {
		{"Where it listens, and who may change state",
		 {"listen", "health-listen", "token", "token-file", "tls-cert", "tls-key", NULL}},
		{"What it keeps", {"db", "db-sync", "prices-file", "retention-raw", "retention-hour", NULL}},
		{"What it runs",
		 {"exec-queue-depth", "exec-max-timeout", "pjrt-plugins", "pjrt-idle", "pjrt-create-timeout",
		  "check-interval", NULL}},
		{"How it tells", {"log-level", "access-log", "config", NULL}},
	};

	fprintf(out, "usage: acceld serve [SETTINGS]\n"
		     "\n"
		     "Runs the HTTP service until SIGTERM or SIGINT (then drains for --shutdown-grace). It logs JSON\n"
		     "lines on stderr at --log-level (default info). Exit status: 0 stopped, 1 it could not start (an\n"
		     "address it cannot listen on), 2 a bad setting.\n\n"
		     "Settings (flag, environment twin, default); precedence: flag > environment > file > default.\n");
	config_usage_units(out);
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
		fprintf(out, "\n%s:\n", groups[i].title);
		config_usage_of(out, groups[i].flags);
	}
	fprintf(out, "\nEvery other setting (connection limits, detection, cloud metadata, intervals, batch factors,\n"
		     "check thresholds): acceld help settings, or docs/configuration.md.\n");
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

static int cmd_serve(int argc, char **argv)
{
	struct app app;
	struct http_server_opts hopts;
	char err[512];
	int sig = 0;
	uint64_t t0 = clock_mono_ns();
	int rc;
	json_t *cfg_json;

	if (cli_help_asked(argc, argv)) {
		serve_help(stdout);
		return CLI_EXIT_OK;
	}
	memset(&app, 0, sizeof(app));
	if (!cli_load_config(&app.cfg, "serve", argc, argv, CLI_LOG_CONFIGURED, &rc))
		return rc;
	app.started_at_ms = clock_real_ms();

	log_buffering_start();
	if (signals_init() != 0) {
		log_msg(LOGL_ERROR, "main", "cannot install signal handlers");
		log_buffering_stop();
		config_release(&app.cfg);
		return CLI_EXIT_FAIL;
	}

	cfg_json = config_to_json(&app.cfg);
	log_json(LOGL_INFO, "main", "starting", "config", cfg_json);
	json_decref(cfg_json);

	app.metrics = metrics_new(); /* before the server, which reports every request to it */
	routes_server_opts(&app, &hopts);
	/* before any thread or OpenCL call: the backends' process-wide settings (PoCL's cache, OpenBLAS's core) */
	backend_prepare_all(&app.cfg);
	/* serve first, so /livez answers while start-up work runs */
	if (http_server_start(&hopts, &app.http, err, sizeof(err)) != 0) {
		log_msg(LOGL_ERROR, "http", "%s", err);
		metrics_free(app.metrics);
		log_buffering_stop();
		config_release(&app.cfg);
		return CLI_EXIT_FAIL;
	}
	log_fields(LOGL_INFO, "http", "listening",
		   (struct log_field[]){LOG_S("listener", "main"), LOG_S("host", app.cfg.listen_host),
					LOG_I("port", http_server_port(app.http)), LOG_I("threads", hopts.threads),
					LOG_B("tls", app.cfg.tls_cert_pem != NULL)},
		   5);
	/* probes and scrapes on an address of their own, so a full API connection table never reaches them */
	if (app.cfg.health_listen != NULL) {
		routes_health_server_opts(&app, &hopts);
		if (http_server_start(&hopts, &app.health_http, err, sizeof(err)) != 0) {
			log_msg(LOGL_ERROR, "http", "health listener: %s", err);
			http_server_stop(app.http);
			metrics_free(app.metrics);
			log_buffering_stop();
			config_release(&app.cfg);
			return 1;
		}
		log_fields(LOGL_INFO, "http", "listening",
			   (struct log_field[]){LOG_S("listener", "health"), LOG_S("host", app.cfg.health_listen_host),
						LOG_I("port", http_server_port(app.health_http)),
						LOG_I("max_connections", hopts.max_connections)},
			   4);
	}

	app_services_start(&app); /* store, detection, executor, prices and sampler */
	app.startup_ns = clock_mono_ns() - t0;
	atomic_store(&app.started, true);
	log_fields(LOGL_INFO, "main", "ready", (struct log_field[]){LOG_D("startup_ms", (double)app.startup_ns / 1e6)},
		   1);

	while (sig <= 0)
		sig = signals_wait(1000);

	drain(&app, sig);
	http_server_stop(app.health_http); /* probes were answered through the drain */
	http_server_stop(app.http); /* answers requests still waiting on a job with 503 first */
	app_checks_interrupt(&app); /* checks still running are recorded as interrupted, whatever comes next */
	if (app.exec != NULL && !exec_stop(app.exec, 0)) {
		/* a kernel cannot be interrupted and the grace period is over: keep what is committed and go */
		log_msg(LOGL_WARN, "main", "jobs still running after the grace period; exiting without them");
		sampler_free(app.sampler);
		store_flush(app.store, 2000);
		log_buffering_stop();
		_exit(CLI_EXIT_OK);
	}
	app_services_stop(&app);
	metrics_free(app.metrics);
	log_msg(LOGL_INFO, "main", "stopped");
	log_buffering_stop();
	config_release(&app.cfg);
	return CLI_EXIT_OK;
}

/*
 * The commands that read no settings take no option but --help: true to go on, false when *rc ends the command (the
 * help printed, or an option refused).
 */
static bool no_options(const char *command, const char *what, int argc, char **argv, int *rc)
{
	if (cli_help_asked(argc, argv)) {
		printf("usage: acceld %s\n\nPrints %s.\nTakes no options and reads no settings.\n", command, what);
		*rc = CLI_EXIT_OK;
		return false;
	}
	if (argc > 0) {
		fprintf(stderr, "acceld %s: takes no options (see acceld help %s)\n", command, command);
		*rc = CLI_EXIT_USAGE;
		return false;
	}
	return true;
}

static int cmd_version(int argc, char **argv)
{
	json_t *v;
	int rc;

	if (!no_options("version", "the version, git commit, build time and library versions as JSON", argc, argv,
			&rc))
		return rc;
	v = app_version_json();
	jsonval_dumpf(v, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(v);
	return CLI_EXIT_OK;
}

static int cmd_routes(int argc, char **argv)
{
	size_t n;
	const struct route *t = routes_table(&n);
	int rc;

	if (!no_options("routes", "the HTTP routes the service answers, a line each: METHOD PATH [auth]", argc, argv,
			&rc))
		return rc;
	for (size_t i = 0; i < n; i++)
		printf("%s %s%s\n", http_method_name(t[i].method), t[i].pattern,
		       (t[i].flags & ROUTE_AUTH) ? " auth" : "");
	return CLI_EXIT_OK;
}

static int cmd_reasons(int argc, char **argv)
{
	int rc;

	if (!no_options("reasons", "every problem reason the API answers, a line each: REASON STATUS TITLE", argc, argv,
			&rc))
		return rc;
	for (int i = 0; i < REASON_COUNT; i++)
		printf("%s %d %s\n", reason_name((enum reason)i), reason_status((enum reason)i),
		       reason_title((enum reason)i));
	return CLI_EXIT_OK;
}

static int cmd_help(int argc, char **argv);

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary; /* for the general help */
	const char *(*summarise)(void); /* where the summary is made from a table: instead of summary */
} commands[] = {
	{"serve", cmd_serve, "run the HTTP service (default address 127.0.0.1:9470)", NULL},
	{"report", report_main, "the devices found: a table, --json as GET /devices, --nfd PATH as NFD labels", NULL},
	{"select", cli_select_main, "the device to use and the environment to export (--format env)", NULL},
	{"batch", cli_batch_main, "the batch size for a device, step by step (--json for scripts)", NULL},
	{"plan", cli_plan_main, "lay a model over devices: mesh, memory per device, batch, multi-host env", NULL},
	{"run", cli_run_main, NULL, cli_run_summary},
	{"check", cli_check_main, "health-check devices: exit 0 all pass, 1 a warning or a failure, 2 none could run",
	 NULL},
	{"version", cmd_version, "version, commit, build time and library versions (JSON)", NULL},
	{"routes", cmd_routes, "the HTTP routes the service answers", NULL},
	{"reasons", cmd_reasons, "every problem reason the API answers, with its status and title", NULL},
	{"help", cmd_help, "this text; help COMMAND for a command's help, help settings for every setting", NULL},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: acceld COMMAND [OPTIONS] [SETTINGS]\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-9s %s\n", commands[i].name,
			commands[i].summarise != NULL ? commands[i].summarise() : commands[i].summary);
	fprintf(out, "\n"
		     "`acceld COMMAND --help` (or `acceld help COMMAND`) prints a command's options and the\n"
		     "settings it reads. Every command but version, routes and reasons takes the settings: flags,\n"
		     "ACCELD_* and COMPUTE_* variables, a config file (`acceld help settings` lists them all).\n"
		     "Output goes to stdout; logs (JSON lines) to stderr, at warn unless -v or --log-level asks\n"
		     "for more (serve: info).\n"
		     "\n"
		     "Exit status: 0 done (or help printed), 1 the command failed or found what it reports (no\n"
		     "device meets the constraints, a job failed), 2 bad usage or a bad setting (a flag, the\n"
		     "environment or the config file).\n");
}

/* help, help COMMAND (that command's --help), help settings (every setting) */
static int cmd_help(int argc, char **argv)
{
	const struct command *c;
	char help[] = "--help";
	char *args[] = {help, NULL};

	if (argc == 0 || strcmp(argv[0], "help") == 0 || cli_help_asked(argc, argv)) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 1) {
		fprintf(stderr, "acceld help: takes one command or \"settings\" (see acceld help)\n");
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[0], "settings") == 0) {
		config_usage(stdout);
		return CLI_EXIT_OK;
	}
	c = find_command(argv[0]);
	if (c == NULL) {
		fprintf(stderr, "acceld help: unknown command '%s' (see acceld help)\n", argv[0]);
		return CLI_EXIT_USAGE;
	}
	return c->fn(1, args);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(argc - 2, argv + 2);
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(argc - 2, argv + 2);
	/* not a command of the help: the worker process acceld starts itself (worker_main.h) */
	if (strcmp(argv[1], "worker") == 0)
		return worker_main(argc - 1, argv + 1);
	c = find_command(argv[1]);
	if (c != NULL)
		return c->fn(argc - 2, argv + 2);
	fprintf(stderr, "acceld: unknown command '%s' (see acceld help)\n", argv[1]);
	return CLI_EXIT_USAGE;
}
