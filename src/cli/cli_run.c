/* cli_run: `acceld run KERNEL [--n N] [--m M --k K] [--device ID] [--prefer ...] [--verify] [--seed S] [--json]`. */
#include "cli/cli_run.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "core/jsonval.h"
#include "detect/detect.h"
#include "exec/exec.h"
#include "exec/kernel.h"
#include "core/log.h"
#include "core/mem.h"
#include "select/place.h"
#include "select/select.h"

#define MAX_ARGS 128

struct run_args {
	struct exec_request req;
	char device[DEVICE_ID_MAX];
	bool json;
};

static void run_usage(FILE *out)
{
	fprintf(out, "usage: acceld run saxpy|triad|dot|sgemm|softmax [--n N] [--m M] [--k K] [--device ID]\n"
		     "       [--backend NAME] [--alpha A] [--beta B] [--s S] [--precision highest|tf32|bf16]\n"
		     "       [--seed S] [--timeout-ms T]\n"
		     "       [--verify] [--full] [--json] [settings, e.g. --prefer gpu]\n");
}

/* --help: the usage and every setting */
static void run_help(FILE *out)
{
	run_usage(out);
	fprintf(out, "\nsettings (flag, environment, default):\n");
	config_usage(out);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "acceld run: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	run_usage(stderr);
	return CLI_EXIT_USAGE;
}

static int parse_u64(const char *text, uint64_t *out)
{
	return config_parse_u64(text, out) == 0 && *out > 0 ? 0 : -1;
}

static int parse_float(const char *text, float *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(d) || fabs(d) > FLT_MAX)
		return -1;
	*out = (float)d;
	return 0;
}

/* Takes the run flags out of argv; everything else goes to rest for config_load. Returns 0 or an exit code. */
static int parse_args(int argc, char **argv, struct run_args *a, char **rest, int *nrest)
{
	*nrest = 0;
	if (argc < 1 || strncmp(argv[0], "-", 1) == 0)
		return usage_error("%s", "name a kernel");
	if (!kernel_parse(argv[0], &a->req.kernel))
		return usage_error("unknown kernel '%s'", argv[0]);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (strcmp(arg, "--verify") == 0) {
			a->req.verify = true;
		} else if (strcmp(arg, "--full") == 0) {
			a->req.full = true;
		} else if (strcmp(arg, "--json") == 0) {
			a->json = true;
		} else if (strcmp(arg, "--n") == 0 || strcmp(arg, "--m") == 0 || strcmp(arg, "--k") == 0 ||
			   strcmp(arg, "--seed") == 0 || strcmp(arg, "--timeout-ms") == 0 || strcmp(arg, "--device") == 0 ||
			   strcmp(arg, "--backend") == 0 || strcmp(arg, "--alpha") == 0 || strcmp(arg, "--beta") == 0 ||
			   strcmp(arg, "--s") == 0 || strcmp(arg, "--precision") == 0) {
			if (val == NULL)
				return usage_error("%s needs a value", arg);
			if (strcmp(arg, "--n") == 0)
				bad = parse_u64(val, &a->req.shape.n);
			else if (strcmp(arg, "--m") == 0)
				bad = parse_u64(val, &a->req.shape.m);
			else if (strcmp(arg, "--k") == 0)
				bad = parse_u64(val, &a->req.shape.k);
			else if (strcmp(arg, "--seed") == 0)
				bad = config_parse_u64(val, &a->req.seed);
			else if (strcmp(arg, "--timeout-ms") == 0)
				bad = parse_u64(val, &a->req.timeout_ms);
			else if (strcmp(arg, "--alpha") == 0)
				bad = parse_float(val, &a->req.alpha);
			else if (strcmp(arg, "--beta") == 0)
				bad = parse_float(val, &a->req.beta);
			else if (strcmp(arg, "--s") == 0)
				bad = parse_float(val, &a->req.s);
			else if (strcmp(arg, "--precision") == 0)
				bad = kernel_precision_parse(val, &a->req.precision) ? 0 : -1;
			else if (strcmp(arg, "--device") == 0)
				bad = strlcpy_checked(a->device, val, sizeof(a->device));
			else if (backend_find(backend_builtin, val) != NULL)
				snprintf(a->req.backend, sizeof(a->req.backend), "%s", val);
			else
				bad = -1;
			if (bad != 0)
				return usage_error("invalid value for %s", arg);
			i++;
		} else {
			if (*nrest >= MAX_ARGS)
				return usage_error("%s", "too many arguments");
			rest[(*nrest)++] = argv[i];
		}
	}
	for (int i = 0; i < *nrest; i++)
		if (strcmp(rest[i], "--help") == 0 || strcmp(rest[i], "-h") == 0)
			return 0; /* cli_load_config prints the help */
	if (a->req.shape.n == 0)
		return usage_error("%s", "--n is required");
	/* square by default */
	if ((kernel_params(a->req.kernel) & KERNEL_PARAM_M) && a->req.shape.m == 0)
		a->req.shape.m = a->req.shape.n;
	if ((kernel_params(a->req.kernel) & KERNEL_PARAM_K) && a->req.shape.k == 0)
		a->req.shape.k = a->req.shape.n;
	return 0;
}

static void print_text(json_t *doc)
{
	json_t *t = json_object_get(doc, "timing");
	json_t *tp = json_object_get(doc, "throughput");
	json_t *err = json_object_get(doc, "error");

	printf("%s %s on %s (%s): %s", json_string_value(json_object_get(doc, "id")),
	       json_string_value(json_object_get(doc, "kernel")), json_string_value(json_object_get(doc, "device")),
	       json_string_value(json_object_get(doc, "backend")), json_string_value(json_object_get(doc, "state")));
	if (tp)
		printf(", kernel %.3f ms, %.2f GFLOP/s, %.2f GB/s", json_real_value(json_object_get(t, "kernel_ms")),
		       json_real_value(json_object_get(tp, "gflops")), json_real_value(json_object_get(tp, "gbytes_per_s")));
	if (json_object_get(doc, "verified"))
		printf(", verified %s", json_is_true(json_object_get(doc, "verified")) ? "yes" : "NO");
	if (json_is_true(json_object_get(doc, "fell_back")))
		printf(", fell back: %s", json_string_value(json_object_get(doc, "fallback_reason")));
	if (err)
		printf(": %s", json_string_value(json_object_get(err, "detail")));
	printf("\n");
}

struct chooser {
	const struct detect_snapshot *snap;
};

/* The devices of the snapshot, chosen without measured figures (no history here). */
static enum acceld_err choose(void *ctx, const struct select_request *sreq, struct select_result *res)
{
	const struct chooser *c = ctx;

	return select_choose(c->snap->devices, c->snap->n, sreq, NULL, 0, res);
}

int cli_run_main(int argc, char **argv)
{
	struct run_args a;
	struct config cfg;
	char *rest[MAX_ARGS];
	int nrest = 0;
	char err[1024];
	struct detect *det = NULL;
	const struct detect_snapshot *snap = NULL;
	struct exec *ex = NULL;
	struct exec_job *job = NULL;
	struct exec_opts opts;
	struct select_request sreq;
	struct exec_refusal why = {.err = ACCELD_OK};
	int rc;
	json_t *doc;

	memset(&a, 0, sizeof(a));
	exec_request_init(&a.req);
	snprintf(a.req.trigger, sizeof(a.req.trigger), "cli");
	rc = parse_args(argc, argv, &a, rest, &nrest);
	if (rc != 0)
		return rc;
	if (!cli_load_config(&cfg, "run", nrest, rest, run_help, &rc))
		return rc;
	select_request_init(&sreq, &cfg);
	if (a.device[0] != '\0' && select_request_set(&sreq, "device", a.device, err, sizeof(err)) != ACCELD_OK) {
		config_release(&cfg);
		return usage_error("%s", err);
	}
	a.req.fallback = a.device[0] == '\0';
	rc = CLI_EXIT_FAIL;
	det = cli_detect_new(&cfg);
	snap = detect_acquire(det);
	exec_opts_from_config(&cfg, &opts);
	opts.devices = snap->devices;
	opts.ndevices = snap->n;
	if (exec_new(&opts, &ex) != ACCELD_OK) {
		fprintf(stderr, "acceld run: cannot start the executor\n");
		goto out;
	}
	if (place_job(choose, &(struct chooser){.snap = snap}, &sreq, &a.req, &why) != ACCELD_OK ||
	    exec_submit(ex, &a.req, NULL, NULL, &job, &why) != ACCELD_OK) {
		if (a.json) {
			json_t *p = json_pack("{s:s, s:i, s:s}", "reason", reason_name(why.reason), "status",
					      reason_status(why.reason), "detail", why.detail);

			if (why.extra)
				json_object_update(p, why.extra);
			jsonval_dumpf(p, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(p);
		} else {
			fprintf(stderr, "acceld run: %s (%s)\n", why.detail, reason_name(why.reason));
		}
		json_decref(why.extra);
		goto out;
	}
	exec_job_wait(job);
	doc = exec_job_json(job);
	if (a.json) {
		jsonval_dumpf(doc, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		print_text(doc);
	}
	if (exec_job_state(job) == EXEC_SUCCEEDED && (!a.req.verify || json_is_true(json_object_get(doc, "verified"))))
		rc = CLI_EXIT_OK;
	json_decref(doc);
out:
	exec_job_unref(job);
	exec_free(ex);
	if (snap)
		detect_release(snap);
	detect_free(det);
	exec_request_release(&a.req);
	config_release(&cfg);
	return rc;
}
