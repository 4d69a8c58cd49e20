/* cli_select: `acceld select` and `acceld batch`, the command-line twins of /select and /batch-config. */
#include "cli/cli_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/batch.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/jsonval.h"
#include "detect/detect.h"
#include "core/log.h"
#include "core/mem.h"
#include "select/select.h"

/* Request fields that are not settings; --prefer and --allow-tpu are settings, read by config_load. */
static const char *const select_flags[] = {"policy", "device", "min_memory_bytes", "executable",
					   "kernel", "format", "tpu_scope", NULL};

typedef enum acceld_err (*set_fn)(void *req, const char *name, const char *value, char *err, size_t errsz);

static enum acceld_err set_select(void *req, const char *name, const char *value, char *err, size_t errsz)
{
	return select_request_set(req, name, value, err, errsz);
}

static enum acceld_err set_batch(void *req, const char *name, const char *value, char *err, size_t errsz)
{
	return batch_request_set(req, name, value, err, errsz);
}

static bool in_list(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

/*
 * Takes the request fields (--min-memory-bytes X, --kernel=sgemm) out of argv into fields/values and puts every
 * other argument, in order, into rest. A flag named in bools may stand alone (meaning true). Returns 0, or -1 with
 * a message in err.
 */
static int split_args(int argc, char **argv, const char *const *flags, const char *const *bools, char **fields,
		      const char **values, size_t *nfields, char **rest, int *nrest, char *err, size_t errsz)
{
	*nfields = 0;
	*nrest = 0;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t len;
		char name[40];

		if (strncmp(arg, "--", 2) != 0) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if (len == 0 || len >= sizeof(name)) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		memcpy(name, arg + 2, len);
		name[len] = '\0';
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		if (!in_list(flags, name)) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		fields[*nfields] = xstrdup(name);
		if (eq) {
			values[*nfields] = eq + 1;
		} else if (in_list(bools, name) && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
			values[*nfields] = "true";
		} else if (i + 1 < argc) {
			values[*nfields] = argv[++i];
		} else {
			snprintf(err, errsz, "option --%.40s needs a value", arg + 2);
			(*nfields)++;
			return -1;
		}
		(*nfields)++;
	}
	return 0;
}

static void select_usage(FILE *out)
{
	fprintf(out,
		"usage: acceld select [--prefer auto|cpu|gpu|tpu] [--allow-tpu BOOL] [--policy P] [--device ID]\n"
		"                     [--min-memory-bytes N] [--executable] [--kernel K] [--format json|env]\n"
		"                     [--tpu-scope chip|host] [SETTINGS]\n"
		"\n"
		"Probes the devices once and prints the choice GET /select would give.\n"
		"  --policy            priority|fastest|cheapest|efficient (default priority)\n"
		"  --device            use this device (cpu:0, gpu:1, tpu:3) if it meets the constraints\n"
		"  --min-memory-bytes  only devices with at least this much memory (64GiB style units accepted)\n"
		"  --executable        only devices /run can execute on\n"
		"  --kernel            saxpy|dot|sgemm|softmax|triad: which figure counts for fastest/efficient\n"
		"  --format            json (default) or env: export lines for eval \"$(acceld select --format env)\"\n"
		"  --tpu-scope         chip (one chip, bounds 1,1,1; default) or host (every chip)\n"
		"Exit status: 0 chosen, 1 no device meets the constraints or unknown device, 2 bad usage.\n\n");
	config_usage(out);
}

static void batch_usage(FILE *out)
{
	fprintf(out,
		"usage: acceld batch [--device ID] [--base N] [--model-bytes N | --params N [--dtype D]]\n"
		"                    [--sample-bytes N] [--mode infer|train] [--reserve R] [SETTINGS]\n"
		"\n"
		"Probes the devices once and prints what GET /batch-config would give.\n"
		"  --device        the device (default: what acceld select would choose)\n"
		"  --base          base batch, 1..1048576 (default 1), multiplied by the device kind's factor\n"
		"  --model-bytes   model weights in bytes (training state counts 8x)\n"
		"  --params        parameter count; --dtype fp32|fp16|bf16|int8|fp8 (default bf16) sizes inference\n"
		"                  weights, training counts 16 bytes per parameter (mixed-precision Adam)\n"
		"  --sample-bytes  memory one sample needs (activations); with a model size it caps the batch\n"
		"  --mode          infer (default) or train\n"
		"  --reserve       fraction of memory kept back, 0..0.9 (default 0.1)\n"
		"Exit status: 0 computed, 1 unknown device or the model/sample cannot fit, 2 bad usage.\n\n");
	config_usage(out);
}

struct cli {
	struct config cfg;
	struct detect *det;
	const struct detect_snapshot *snap;
	char **fields;
	const char **values;
	size_t nfields;
};

/*
 * Splits the arguments, loads the settings, applies the fields, probes. Returns -1 to go on, else an exit code;
 * cli_finish releases what it took either way.
 */
static int cli_start(struct cli *c, const char *command, int argc, char **argv, const char *const *flags,
		     const char *const *bools, void *req, void (*init)(void *req, const struct config *cfg), set_fn set,
		     void (*usage)(FILE *))
{
	char **rest = xcalloc((size_t)argc + 1, sizeof(*rest));
	char err[1024] = "";
	int nrest;
	int rc;
	bool loaded;

	memset(c, 0, sizeof(*c));
	c->fields = xcalloc((size_t)argc + 1, sizeof(*c->fields));
	c->values = xcalloc((size_t)argc + 1, sizeof(*c->values));
	if (split_args(argc, argv, flags, bools, c->fields, c->values, &c->nfields, rest, &nrest, err,
		       sizeof(err)) != 0) {
		fprintf(stderr, "acceld %s: %s\n", command, err);
		free(rest);
		return CLI_EXIT_USAGE;
	}
	loaded = cli_load_config(&c->cfg, command, nrest, rest, usage, &rc);
	free(rest);
	if (!loaded)
		return rc;
	init(req, &c->cfg);
	for (size_t i = 0; i < c->nfields; i++) {
		if (set(req, c->fields[i], c->values[i], err, sizeof(err)) != ACCELD_OK) {
			fprintf(stderr, "acceld %s: %s\n", command, err);
			return CLI_EXIT_USAGE;
		}
	}
	/* the answer goes to stdout; only warnings and errors go to stderr */
	log_set_level(LOGL_WARN);
	c->det = cli_detect_new(&c->cfg);
	c->snap = detect_acquire(c->det);
	return -1;
}

static void cli_finish(struct cli *c)
{
	if (c->snap)
		detect_release(c->snap);
	detect_free(c->det);
	for (size_t i = 0; i < c->nfields; i++)
		free(c->fields[i]);
	free(c->fields);
	free(c->values);
	config_release(&c->cfg);
}

static void print_json(json_t *doc)
{
	jsonval_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
}

static void init_select(void *req, const struct config *cfg)
{
	select_request_init(req, cfg);
}

static void init_batch(void *req, const struct config *cfg)
{
	batch_request_init(req, cfg);
}

int cli_select_main(int argc, char **argv)
{
	static const char *const bools[] = {"executable", NULL};
	struct cli c;
	struct select_request req;
	struct select_result res;
	enum acceld_err err;
	int rc = cli_start(&c, "select", argc, argv, select_flags, bools, &req, init_select, set_select, select_usage);

	if (rc >= 0)
		goto out;
	err = select_choose(c.snap->devices, c.snap->n, &req, NULL, 0, &res);
	if (err != ACCELD_OK) {
		fprintf(stderr, "acceld select: %s\n", res.reason);
		if (req.format == SELECT_FORMAT_JSON)
			print_json(json_pack("{s:s, s:o}", "error", res.reason, "candidates",
					     select_candidates_json(&res)));
		rc = CLI_EXIT_FAIL;
	} else if (req.format == SELECT_FORMAT_ENV) {
		size_t len;
		char *text = envfmt_to_text(&res.env, &len);

		fwrite(text, 1, len, stdout);
		free(text);
		rc = CLI_EXIT_OK;
	} else {
		print_json(select_result_to_json(&res, &req, c.snap));
		rc = CLI_EXIT_OK;
	}
	select_result_release(&res);
out:
	cli_finish(&c);
	return rc;
}

int cli_batch_main(int argc, char **argv)
{
	static const char *const bools[] = {NULL};
	struct cli c;
	struct batch_request req;
	struct batch_result res;
	const struct device *d;
	const char *param;
	char msg[256];
	int rc = cli_start(&c, "batch", argc, argv, batch_param_names, bools, &req, init_batch, set_batch, batch_usage);

	if (rc >= 0)
		goto out;
	if (batch_request_check(&req, &param, msg, sizeof(msg)) != ACCELD_OK) {
		fprintf(stderr, "acceld batch: %s\n", msg);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (req.device[0] != '\0') {
		d = detect_find(c.snap, req.device);
		if (d == NULL) {
			fprintf(stderr, "acceld batch: no device %s on this host\n", req.device);
			rc = CLI_EXIT_FAIL;
			goto out;
		}
	} else {
		struct select_request sreq;
		struct select_result sres;

		select_request_init(&sreq, &c.cfg);
		select_choose(c.snap->devices, c.snap->n, &sreq, NULL, 0, &sres);
		d = sres.device;
		if (d == NULL)
			fprintf(stderr, "acceld batch: no device given and none can be chosen: %s\n", sres.reason);
		select_result_release(&sres);
		if (d == NULL) {
			rc = CLI_EXIT_FAIL;
			goto out;
		}
	}
	if (batch_compute(d, &req, &res) != ACCELD_OK) {
		fprintf(stderr, "acceld batch: %s\n", res.detail);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	print_json(batch_result_to_json(&res, &req, c.snap));
	rc = CLI_EXIT_OK;
out:
	cli_finish(&c);
	return rc;
}
