/* cli_run: `acceld run KERNEL SIZES [--device ID] [--prefer ...] [--verify] [--seed S] [--json]`. */
#include "cli/cli_run.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/jsonval.h"
#include "detect/detect.h"
#include "exec/backend.h"
#include "exec/exec.h"
#include "exec/jobparams.h"
#include "exec/kernel.h"
#include "core/mem.h"
#include "select/place.h"
#include "select/select.h"
#include "store/store.h"

#define MAX_ARGS 128

struct run_args {
	struct jobparams p;         /* the job, as POST /run's fields take it */
	char device[DEVICE_ID_MAX];
	uint64_t square;            /* --square N: every size the kernel takes N (N x N matrices); 0 not given */
	bool json;
	bool verbose;
};

/*
 * The names of the kernels from first on that take the same sizes and help as first, joined by sep, into out; marks
 * them in done.
 */
static void kernel_group(unsigned first, const char *sep, bool done[KERNEL_COUNT], char *out, size_t outsz)
{
	enum kernel_id f = (enum kernel_id)first;

	out[0] = '\0';
	for (unsigned j = first; j < KERNEL_COUNT; j++) {
		enum kernel_id k = (enum kernel_id)j;
		size_t len = strlen(out);

		if (done[j] || strcmp(kernel_help_flags(k), kernel_help_flags(f)) != 0 ||
		    strcmp(kernel_help_text(k), kernel_help_text(f)) != 0)
			continue;
		snprintf(out + len, outsz - len, "%s%s", len > 0 ? sep : "", kernel_name(k));
		done[j] = true;
	}
}

static void run_help(FILE *out)
{
	static const char *const settings[] = {"prefer", "exec-max-elements", "exec-default-timeout", "pjrt-cache-dir",
					       NULL};
	bool done[KERNEL_COUNT] = {false};
	char names[128];

	fprintf(out, "usage: acceld run KERNEL SIZES [OPTIONS] [SETTINGS]\n"
		     "\n"
		     "Runs one job on the best device (or --device) without a server and prints it: a line of\n"
		     "text, or with --json the job document POST /run answers. Exit status: 0 the job succeeded\n"
		     "(and verified, when asked), 1 it failed or was refused, 2 bad usage.\n"
		     "\n"
		     "Kernels and their sizes, as POST /run takes them:\n");
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		if (done[i])
			continue;
		kernel_group(i, ", ", done, names, sizeof(names));
		fprintf(out, "  %-20s%-19s%s\n", names, kernel_help_flags((enum kernel_id)i),
			kernel_help_text((enum kernel_id)i));
	}
	fprintf(out, "  --square N          %s: N x N matrices (M, N and K all N)\n"
		     "Options:\n",
		kernel_names_join(KERNEL_PARAM_M, " and ", names, sizeof(names)));
	jobparams_help(out);
	fprintf(out, "  --json              print the job (or the refusal) as POST /run answers it\n"
		     "  -v, --verbose       log at info on stderr (default: warn; --log-level L for another)\n");
	cli_help_settings(out, settings);
}

/* The first lines of the help, after an error on stderr. */
static void run_usage(FILE *out)
{
	bool done[KERNEL_COUNT] = {false};
	char names[128];

	fprintf(out, "usage: acceld run");
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		if (done[i])
			continue;
		kernel_group(i, "|", done, names, sizeof(names));
		fprintf(out, "%s %s %s", i > 0 ? " |" : "", names, kernel_help_flags((enum kernel_id)i));
	}
	fprintf(out, "\n       [--square N] [--device ID] [OPTIONS] [SETTINGS] (see acceld help run)\n");
}

static char summary[256];

static void summary_make(void)
{
	size_t len = (size_t)snprintf(summary, sizeof(summary), "run a kernel once");

	for (unsigned i = 0; i < KERNEL_COUNT && len < sizeof(summary); i++) {
		const char *example = kernel_help_example((enum kernel_id)i);

		if (example != NULL)
			len += (size_t)snprintf(summary + len, sizeof(summary) - len, "%s run %s %s",
						strchr(summary, ':') != NULL ? "," : ":", kernel_name((enum kernel_id)i),
						example);
	}
}

const char *cli_run_summary(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, summary_make);
	return summary;
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

#define SQUARE_FLAG "--square"

/* A flag that takes a value, or a switch: its row of the job's table (NULL: --square, the command's own). */
static bool flag_matches(const char *flag, bool takes_value, const char *arg, const char **val)
{
	size_t len = strlen(flag);

	if (strncmp(arg, flag, len) != 0 || (arg[len] != '\0' && (arg[len] != '=' || !takes_value)))
		return false;
	*val = arg[len] == '=' ? arg + len + 1 : NULL;
	return true;
}

/*
 * Which of the job's flags arg is ("--n", "--n=64", "--verify"): its row, or NULL with *square set for --square;
 * false when it is none of them. *val points at an inline value.
 */
static bool which_flag(const char *arg, const struct jobparam **row, bool *square, const char **val)
{
	*row = NULL;
	*square = flag_matches(SQUARE_FLAG, true, arg, val);
	for (size_t f = 0; !*square && f < jobparams_count; f++) {
		const struct jobparam *r = &jobparams_table[f];

		if (r->flag != NULL && flag_matches(r->flag, !r->flag_switch, arg, val)) {
			*row = r;
			return true;
		}
	}
	return *square;
}

/* Stores val for the flag into a. Returns 0, or -1 when the value is not one it takes. */
static int set_flag(struct run_args *a, const struct jobparam *row, const char *val)
{
	struct select_request probe;

	if (row == NULL)
		return config_parse_u64(val, &a->square) == 0 && a->square > 0 ? 0 : -1;
	if (row->kind != JOBPARAM_DEVICE)
		return jobparams_set_text(&a->p, row, val);
	/* the id's form as selection checks it; whether the host has it is known after probing */
	memset(&probe, 0, sizeof(probe));
	if (select_request_set(&probe, "device", val, NULL, 0) != ACCELD_OK)
		return -1;
	return strlcpy_checked(a->device, val, sizeof(a->device));
}

/* The flags of a kernel's sizes and fields, in the order messages list them: sizes, --square, the others. */
struct kernel_flag {
	const char *flag;
	unsigned param;             /* the enum kernel_param it needs; 0 every kernel */
	bool given;
};

static size_t kernel_flags(const bool given[], bool square, struct kernel_flag *out)
{
	size_t n = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t f = 0; f < jobparams_count; f++) {
			const struct jobparam *r = &jobparams_table[f];
			bool size = r->kind == JOBPARAM_SIZE;

			if ((size && pass == 0) ||
			    (pass == 1 && (r->kind == JOBPARAM_FLOAT || r->kind == JOBPARAM_PRECISION)))
				out[n++] = (struct kernel_flag){r->flag, r->kernel_param, given[f]};
		}
		if (pass == 0)
			out[n++] = (struct kernel_flag){SQUARE_FLAG, KERNEL_PARAM_M, square};
	}
	return n;
}

/* Whether the size field name was given. */
static bool size_given(const bool given[], const char *name)
{
	return given[jobparams_field(name) - jobparams_table];
}

/* The sizes the kernel needs, from --n, --m, --k or --square. Returns 0 or an exit code. */
static int check_sizes(struct run_args *a, const bool given[])
{
	enum kernel_id k = a->p.req.kernel;
	const char *name = kernel_name(k);
	unsigned params = kernel_params(k);
	struct kernel_flag flags[JOBPARAMS_MAX + 1];
	size_t nflags = kernel_flags(given, a->square != 0, flags);
	char missing[32] = "";

	for (size_t f = 0; f < nflags; f++) {
		char takes[96] = "";

		if (!flags[f].given || flags[f].param == 0 || (params & flags[f].param))
			continue;
		/* the flags of the kernel's own sizes and parameters, as POST /run refuses the others */
		for (size_t t = 0; t < nflags; t++)
			if (flags[t].param == 0 || (params & flags[t].param))
				snprintf(takes + strlen(takes), sizeof(takes) - strlen(takes), "%s%s",
					 takes[0] ? ", " : "", flags[t].flag);
		return usage_error("%s does not apply to %s (it takes %s)", flags[f].flag, name, takes);
	}
	if (a->square != 0) {
		if (size_given(given, "n") || size_given(given, "m") || size_given(given, "k"))
			return usage_error("give --square N or the sizes (--m, --n%s), not both",
					   params & KERNEL_PARAM_K ? ", --k" : "");
		a->p.req.shape.m = a->p.req.shape.n = a->square;
		if (params & KERNEL_PARAM_K)
			a->p.req.shape.k = a->square;
		return 0;
	}
	/* every size the kernel has is given, as POST /run asks: n is always the kernel's own n */
	if ((params & KERNEL_PARAM_M) && !size_given(given, "m"))
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s--m", missing[0] ? ", " : "");
	if (!size_given(given, "n"))
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s--n", missing[0] ? ", " : "");
	if ((params & KERNEL_PARAM_K) && !size_given(given, "k"))
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s--k", missing[0] ? ", " : "");
	if (missing[0] == '\0')
		return 0;
	if (params & KERNEL_PARAM_K)
		return usage_error("%s multiplies an M x K matrix by a K x N one: give --m, --n and --k (%s missing), "
				   "or --square N for N x N matrices", name, missing);
	if (params & KERNEL_PARAM_M)
		return usage_error("%s takes M rows of N: give --m and --n (%s missing), or --square N for an N x N "
				   "matrix", name, missing);
	return usage_error("%s needs --n N, the vector length", name);
}

/* Takes the run flags out of argv; everything else goes to rest for config_load. Returns 0 or an exit code. */
static int parse_args(int argc, char **argv, struct run_args *a, char **rest, int *nrest)
{
	bool given[JOBPARAMS_MAX] = {false};

	*nrest = 0;
	if (argc < 1 || strncmp(argv[0], "-", 1) == 0)
		return usage_error("name a kernel: %s", kernel_names_text());
	if (!kernel_parse(argv[0], &a->p.req.kernel))
		return usage_error("unknown kernel '%s'; accepted: %s", argv[0], kernel_names_text());
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = NULL;
		const struct jobparam *row;
		bool square;

		if (strcmp(arg, "--json") == 0) {
			a->json = true;
		} else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
			a->verbose = true;
		} else if (which_flag(arg, &row, &square, &val)) {
			bool takes_value = row == NULL || !row->flag_switch;

			if (takes_value && val == NULL && i + 1 >= argc)
				return usage_error("%s needs a value", arg);
			if (takes_value && val == NULL)
				val = argv[++i];
			if (set_flag(a, row, val) != 0) {
				char names[128];

				backend_names(backend_builtin, names, sizeof(names));
				return usage_error("invalid %s '%.64s'; accepted: %s",
						   row != NULL ? row->flag : SQUARE_FLAG, val,
						   row == NULL		   ? "a positive integer"
						   : row->accepted != NULL ? row->accepted
									   : names);
			}
			if (row != NULL)
				given[row - jobparams_table] = true;
		} else {
			if (*nrest >= MAX_ARGS)
				return usage_error("%s", "too many arguments");
			rest[(*nrest)++] = argv[i];
		}
	}
	return check_sizes(a, given);
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

/* A refusal: on stderr, or with --json the problem POST /run would answer, in the command line's words. */
static void print_refusal(const struct run_args *a, const struct refusal *why)
{
	static const char *const fields[] = {"timeout_ms", NULL};
	char detail[sizeof(why->detail) + 64];

	cli_words(why->detail, fields, detail, sizeof(detail));
	if (a->json) {
		json_t *p = json_pack("{s:s, s:i, s:s}", "reason", reason_name(why->reason), "status",
				      reason_status(why->reason), "detail", detail);

		if (why->extra)
			json_object_update(p, why->extra);
		jsonval_dumpf(p, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(p);
	} else {
		fprintf(stderr, "acceld run: %s (%s)\n", detail, reason_name(why->reason));
	}
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
	struct refusal why = {.err = ACCELD_OK};
	struct app recorder = {.store = NULL}; /* only what records jobs: the history */
	int rc;
	json_t *doc;

	if (cli_help_asked(argc, argv)) {
		run_help(stdout);
		return CLI_EXIT_OK;
	}
	memset(&a, 0, sizeof(a));
	jobparams_init(&a.p);
	snprintf(a.p.req.trigger, sizeof(a.p.req.trigger), "cli");
	rc = parse_args(argc, argv, &a, rest, &nrest);
	if (rc != 0) {
		exec_request_release(&a.p.req);
		return rc;
	}
	if (!cli_load_config(&cfg, "run", nrest, rest, a.verbose ? CLI_LOG_VERBOSE : CLI_LOG_QUIET, &rc)) {
		exec_request_release(&a.p.req);
		return rc;
	}
	select_request_init(&sreq, &cfg);
	if (a.device[0] != '\0' && select_request_set(&sreq, "device", a.device, err, sizeof(err)) != ACCELD_OK) {
		exec_request_release(&a.p.req);
		config_release(&cfg);
		return usage_error("%s", err);
	}
	a.p.req.fallback = a.device[0] == '\0';
	rc = CLI_EXIT_FAIL;
	det = cli_detect_new(&cfg);
	snap = detect_acquire(det);
	if (a.device[0] != '\0' && detect_find(snap, a.device) == NULL) {
		refusal_set(&why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE,
			    "no device '%s' on this host (acceld report lists the devices)", a.device);
		print_refusal(&a, &why);
		goto out;
	}
	exec_opts_from_config(&cfg, &opts);
	opts.devices = snap->devices;
	opts.ndevices = snap->n;
	/* the job goes into the history the command names (--db; the service's by default), as the service's do */
	if (store_open(cfg.db_path, &recorder.store, err, sizeof(err)) != ACCELD_OK || err[0] != '\0')
		fprintf(stderr, "acceld run: the job is not recorded: %s\n", err);
	app_exec_records(&recorder, &opts);
	if (exec_new(&opts, &ex) != ACCELD_OK) {
		fprintf(stderr, "acceld run: cannot start the executor\n");
		goto out;
	}
	if (place_rank_devices(choose, &(struct chooser){.snap = snap}, &sreq, &a.p.req, &why) != ACCELD_OK ||
	    exec_submit(ex, &a.p.req, NULL, NULL, &job, &why) != ACCELD_OK) {
		print_refusal(&a, &why);
		refusal_release(&why);
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
	if (exec_job_state(job) == EXEC_SUCCEEDED && (!a.p.req.verify || json_is_true(json_object_get(doc, "verified"))))
		rc = CLI_EXIT_OK;
	json_decref(doc);
out:
	exec_job_unref(job);
	exec_free(ex);
	store_close(recorder.store); /* after the executor, whose records it commits */
	if (snap)
		detect_release(snap);
	detect_free(det);
	exec_request_release(&a.p.req);
	config_release(&cfg);
	return rc;
}
