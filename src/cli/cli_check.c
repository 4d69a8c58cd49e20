/* cli_check: `acceld check [--device ID] [--level quick|long] [--duration S] [--backend NAME] [--json]`. */
#include "cli/cli_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/jsonval.h"
#include "detect/detect.h"
#include "check/devcheck.h"
#include "exec/exec.h"
#include "core/mem.h"

#define MAX_ARGS 128
#define DURATION_MIN_MS 5000u
#define DURATION_MAX_MS 3600000u

struct check_args {
	struct devcheck_request req;
	char device[DEVICE_ID_MAX];
	bool json;
	bool verbose;
};

static void check_help(FILE *out)
{
	static const char *const settings[] = {"check-warn-percent", "check-fail-percent", "check-long-duration",
					       "check-throttle-percent", NULL};
	char lo[24];
	char hi[24];

	config_format_duration(DURATION_MIN_MS, lo, sizeof(lo));
	config_format_duration(DURATION_MAX_MS, hi, sizeof(hi));
	fprintf(out, "usage: acceld check [--device ID] [--level quick|long] [--duration D] [--backend NAME] [--json]\n"
		     "                    [-v] [SETTINGS]\n"
		     "\n"
		     "Runs a health check of one device, or of every device acceld runs jobs on, one after the\n"
		     "other, and prints each verdict with its figures and the rule that decided. Nothing is stored:\n"
		     "it serves as a startup probe or a node-validation Job. Exit status: 0 every device passes,\n"
		     "1 one warns or fails, 2 no check could run (bad usage, an unknown device, one no backend runs\n"
		     "jobs on).\n"
		     "\n"
		     "Options:\n"
		     "  --device ID      check this device only (default: every device acceld runs jobs on)\n"
		     "  --level L        quick (the default, seconds) or long (adds a sustained phase)\n"
		     "  --duration D     the long level's sustained phase, %s to %s (default: --check-long-duration)\n"
		     "  --backend NAME   native, opencl or pjrt (default: the device's first)\n"
		     "  --json           print {verdict, checks, skipped, exit_code} as JSON\n"
		     "  -v, --verbose    log at info on stderr (default: warn; --log-level L for another)\n",
		lo, hi);
	cli_help_settings(out, settings);
}

/* The first lines of the help, after an error on stderr. */
static void check_usage(FILE *out)
{
	fprintf(out, "usage: acceld check [--device ID] [--level quick|long] [--duration D] [--backend NAME] [--json]\n"
		     "       [SETTINGS] (see acceld help check)\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "acceld check: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	check_usage(stderr);
	return CLI_EXIT_USAGE;
}

/* Takes the check's flags out of argv; everything else goes to rest for the configuration. 0 or an exit code. */
static int parse_args(int argc, char **argv, struct check_args *a, char **rest, int *nrest)
{
	*nrest = 0;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t ms;

		if (strcmp(arg, "--json") == 0) {
			a->json = true;
			continue;
		}
		if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
			a->verbose = true;
			continue;
		}
		if (strcmp(arg, "--device") != 0 && strcmp(arg, "--level") != 0 && strcmp(arg, "--duration") != 0 &&
		    strcmp(arg, "--backend") != 0) {
			if (*nrest >= MAX_ARGS)
				return usage_error("%s", "too many arguments");
			rest[(*nrest)++] = argv[i];
			continue;
		}
		if (val == NULL)
			return usage_error("%s needs a value", arg);
		i++;
		if (strcmp(arg, "--device") == 0) {
			if (strlcpy_checked(a->device, val, sizeof(a->device)) != 0)
				return usage_error("invalid --device '%.40s'", val);
		} else if (strcmp(arg, "--level") == 0) {
			if (!devcheck_level_parse(val, &a->req.level))
				return usage_error("invalid --level '%.40s'; accepted: quick, long", val);
		} else if (strcmp(arg, "--duration") == 0) {
			if (config_parse_duration_ms(val, &ms) != 0 || ms < DURATION_MIN_MS || ms > DURATION_MAX_MS) {
				char lo[24];
				char hi[24];

				config_format_duration(DURATION_MIN_MS, lo, sizeof(lo));
				config_format_duration(DURATION_MAX_MS, hi, sizeof(hi));
				return usage_error("invalid --duration '%.40s'; accepted: a duration from %s to %s, "
						   "such as 120 (seconds) or 2m", val, lo, hi);
			}
			a->req.duration_ms = ms;
		} else if (backend_find(backend_builtin, val) != NULL) {
			snprintf(a->req.backend, sizeof(a->req.backend), "%s", val);
		} else {
			char names[128];

			backend_names(backend_builtin, names, sizeof(names));
			return usage_error("invalid --backend '%.40s'; accepted: %s", val, names);
		}
	}
	if (a->req.duration_ms > 0 && a->req.level != DEVCHECK_LONG)
		return usage_error("%s", "--duration applies to --level long only");
	return 0;
}

/* The device view for the checks: the snapshot, its telemetry read anew when asked. */
static bool cli_device(void *ctx, const char *id, bool fresh, struct device *out)
{
	struct detect *det = ctx;
	const struct detect_snapshot *snap;
	const struct device *d;

	if (fresh)
		detect_refresh(det, false);
	snap = detect_acquire(det);
	d = detect_find(snap, id);
	if (d != NULL)
		*out = *d;
	detect_release(snap);
	return d != NULL;
}

/* A string member, or dflt when it is missing. */
static const char *text_of(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : dflt;
}

static void print_figure(const json_t *test)
{
	json_t *m = json_object_get(test, "measured");
	json_t *ratio = json_object_get(test, "ratio");

	printf("  %-9s %-4s", text_of(test, "name", "?"), text_of(test, "verdict", "-"));
	if (json_is_number(m))
		printf(" %.4g %s", json_number_value(m), json_string_value(json_object_get(test, "unit")));
	if (json_is_number(ratio))
		printf(" (%.0f %% of %.4g)", json_number_value(ratio) * 100.0,
		       json_number_value(json_object_get(test, "expected")));
	printf(": %s\n", text_of(test, "rule", ""));
}

static void print_text(const json_t *doc)
{
	size_t i;
	json_t *t;

	printf("%s %s (%s, %s check %s, %.1f s): %s\n", text_of(doc, "device", "?"),
	       text_of(doc, "verdict", text_of(doc, "state", "?")), text_of(doc, "model", "?"),
	       text_of(doc, "level", "?"), text_of(doc, "id", "?"), json_number_value(json_object_get(doc, "duration_s")),
	       text_of(doc, "rule", ""));
	json_array_foreach(json_object_get(doc, "tests"), i, t)
		print_figure(t);
}

int cli_check_main(int argc, char **argv)
{
	struct check_args a;
	struct config cfg;
	char *rest[MAX_ARGS];
	int nrest = 0;
	struct detect *det = NULL;
	const struct detect_snapshot *snap = NULL;
	struct exec *ex = NULL;
	struct devcheck *dc = NULL;
	struct exec_opts eopts;
	struct devcheck_opts copts;
	json_t *out = json_object();
	json_t *checks = json_array();
	json_t *skipped = json_array();
	size_t ran = 0;
	int worst = -1;
	int rc;

	if (cli_help_asked(argc, argv)) {
		check_help(stdout);
		rc = CLI_EXIT_OK;
		goto done;
	}
	memset(&a, 0, sizeof(a));
	devcheck_request_init(&a.req);
	snprintf(a.req.trigger, sizeof(a.req.trigger), "cli");
	rc = parse_args(argc, argv, &a, rest, &nrest);
	if (rc != 0)
		goto done;
	if (!cli_load_config(&cfg, "check", nrest, rest, a.verbose ? CLI_LOG_VERBOSE : CLI_LOG_QUIET, &rc))
		goto done;
	rc = CLI_EXIT_USAGE;
	det = cli_detect_new(&cfg);
	snap = detect_acquire(det);
	exec_opts_from_config(&cfg, &eopts);
	eopts.devices = snap->devices;
	eopts.ndevices = snap->n;
	if (exec_new(&eopts, &ex) != ACCELD_OK) {
		fprintf(stderr, "acceld check: cannot start the executor\n");
		goto out;
	}
	copts = (struct devcheck_opts){.exec = ex, .device = cli_device, .device_ctx = det};
	devcheck_settings_from_config(&cfg, &copts.settings);
	copts.settings.interval_ms = 0;
	if (devcheck_new(&copts, &dc) != ACCELD_OK) {
		fprintf(stderr, "acceld check: cannot start the checks\n");
		goto out;
	}
	for (size_t i = 0; i < snap->n; i++) {
		const char *id = snap->devices[i].id;
		struct refusal why;
		struct devcheck_run *run = NULL;
		enum devcheck_verdict v;
		json_t *doc;

		if (a.device[0] != '\0' && strcmp(a.device, id) != 0)
			continue;
		if (devcheck_start(dc, id, &a.req, NULL, NULL, &run, &why) != ACCELD_OK) {
			/* every device is checked that can be; one named on the command line must be */
			json_array_append_new(skipped, json_pack("{s:s, s:s, s:s}", "device", id, "reason",
								 reason_name(why.reason), "detail", why.detail));
			if (!a.json)
				fprintf(stderr, "acceld check: %s not checked: %s\n", id, why.detail);
			continue;
		}
		devcheck_run_wait(run);
		doc = devcheck_run_json(run);
		if (a.json)
			json_array_append(checks, doc);
		else
			print_text(doc);
		if (devcheck_run_verdict(run, &v)) {
			if ((int)v > worst)
				worst = (int)v;
		} else {
			worst = DEVCHECK_FAIL;
		}
		ran++;
		json_decref(doc);
		devcheck_run_unref(run);
	}
	if (a.device[0] != '\0' && ran == 0 && json_array_size(skipped) == 0)
		fprintf(stderr, "acceld check: no device '%s' (see acceld report)\n", a.device);
	if (ran == 0 || (a.device[0] != '\0' && json_array_size(skipped) > 0))
		rc = CLI_EXIT_USAGE;
	else
		rc = worst == DEVCHECK_PASS ? CLI_EXIT_OK : CLI_EXIT_FAIL;
	if (a.json) {
		json_object_set_new(out, "verdict", ran > 0 && worst >= 0
							    ? json_string(devcheck_verdict_name((enum devcheck_verdict)worst))
							    : json_null());
		json_object_set(out, "checks", checks);
		json_object_set(out, "skipped", skipped);
		json_object_set_new(out, "exit_code", json_integer(rc));
		jsonval_dumpf(out, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	}
out:
	devcheck_free(dc);
	exec_free(ex);
	if (snap)
		detect_release(snap);
	detect_free(det);
	config_release(&cfg);
done:
	json_decref(out);
	json_decref(checks);
	json_decref(skipped);
	return rc;
}
