/* cli_run: `acceld run KERNEL [--n N] [--m M --k K] [--device ID] [--prefer ...] [--verify] [--seed S] [--json]`. */
#include "cli_run.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "detect.h"
#include "exec.h"
#include "log.h"
#include "mem.h"

#define MAX_ARGS 128

struct run_args {
	struct exec_request req;
	bool json;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "acceld run: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: acceld run saxpy|triad|dot|sgemm|softmax [--n N] [--m M] [--k K] [--device ID]\n"
			"       [--backend native|opencl] [--alpha A] [--beta B] [--s S] [--seed S] [--timeout-ms T]\n"
			"       [--verify] [--full] [--json] [settings, e.g. --prefer gpu]\n");
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
	if (exec_kernel_parse(argv[0], &a->req.kernel) != 0)
		return usage_error("unknown kernel '%s'", argv[0]);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = true;
		int bad = 0;

		if (strcmp(arg, "--verify") == 0) {
			a->req.verify = true;
			takes = false;
		} else if (strcmp(arg, "--full") == 0) {
			a->req.full = true;
			takes = false;
		} else if (strcmp(arg, "--json") == 0) {
			a->json = true;
			takes = false;
		} else if (strcmp(arg, "--n") == 0 || strcmp(arg, "--m") == 0 || strcmp(arg, "--k") == 0 ||
			   strcmp(arg, "--seed") == 0 || strcmp(arg, "--timeout-ms") == 0 || strcmp(arg, "--device") == 0 ||
			   strcmp(arg, "--backend") == 0 || strcmp(arg, "--alpha") == 0 || strcmp(arg, "--beta") == 0 ||
			   strcmp(arg, "--s") == 0) {
			if (val == NULL)
				return usage_error("%s needs a value", arg);
			if (strcmp(arg, "--n") == 0)
				bad = parse_u64(val, &a->req.n);
			else if (strcmp(arg, "--m") == 0)
				bad = parse_u64(val, &a->req.m);
			else if (strcmp(arg, "--k") == 0)
				bad = parse_u64(val, &a->req.k);
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
			else if (strcmp(arg, "--device") == 0)
				bad = strlcpy_checked(a->req.device, val, sizeof(a->req.device));
			else if (strcmp(val, "native") == 0)
				a->req.backend = EXEC_BACKEND_NATIVE;
			else if (strcmp(val, "opencl") == 0)
				a->req.backend = EXEC_BACKEND_OPENCL;
			else
				bad = -1;
			if (bad != 0)
				return usage_error("invalid value for %s", arg);
			i++;
		} else {
			if (*nrest >= MAX_ARGS)
				return usage_error("%s", "too many arguments");
			rest[(*nrest)++] = argv[i];
			continue;
		}
		(void)takes;
	}
	if (a->req.n == 0)
		return usage_error("%s", "--n is required");
	if ((a->req.kernel == EXEC_SGEMM || a->req.kernel == EXEC_SOFTMAX) && a->req.m == 0)
		a->req.m = a->req.n; /* square by default */
	if (a->req.kernel == EXEC_SGEMM && a->req.k == 0)
		a->req.k = a->req.n;
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

int cli_run_main(int argc, char **argv)
{
	struct run_args a;
	struct config cfg;
	char *rest[MAX_ARGS];
	int nrest = 0;
	char pocl_dir[4096];
	struct detect *det = NULL;
	const struct detect_snapshot *snap = NULL;
	struct exec *ex = NULL;
	struct exec_job *job = NULL;
	struct exec_opts opts;
	struct exec_refusal why;
	int rc;
	json_t *doc;

	memset(&a, 0, sizeof(a));
	exec_request_init(&a.req);
	rc = parse_args(argc, argv, &a, rest, &nrest);
	if (rc != 0)
		return rc;
	if (!cli_load_config(&cfg, "run", nrest, rest, NULL, &rc))
		return rc;
	a.req.prefer = cfg.prefer;
	exec_pocl_cache_dir(&cfg, pocl_dir, sizeof(pocl_dir));
	exec_prepare_process(pocl_dir);
	rc = CLI_EXIT_FAIL;
	det = detect_new(&cfg, NULL, 0);
	snap = detect_acquire(det);
	exec_opts_from_config(&cfg, &opts);
	opts.devices = snap->devices;
	opts.ndevices = snap->n;
	if (exec_new(&opts, &ex) != ACCELD_OK) {
		fprintf(stderr, "acceld run: cannot start the executor\n");
		goto out;
	}
	if (exec_submit(ex, &a.req, NULL, NULL, &job, &why) != ACCELD_OK) {
		if (a.json) {
			json_t *p = json_pack("{s:s, s:i, s:s}", "reason", why.reason, "status", acceld_err_http(why.err),
					      "detail", why.detail);

			if (why.extra)
				json_object_update(p, why.extra);
			json_dumpf(p, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(p);
		} else {
			fprintf(stderr, "acceld run: %s (%s)\n", why.detail, why.reason);
		}
		json_decref(why.extra);
		goto out;
	}
	exec_job_wait(job);
	doc = exec_job_json(job);
	if (a.json) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
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
