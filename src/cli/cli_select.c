/* cli_select: `acceld select` and `acceld batch`, the command-line twins of /select and /batch-config. */
#include "cli/cli_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "select/batch.h"
#include "cli/cli.h"
#include "core/mem.h"
#include "cost/cost.h"
#include "core/config.h"
#include "detect/detect.h"
#include "exec/kernel.h"
#include "select/select.h"

/* Request fields that are not settings; --prefer and --allow-tpu are settings, read by config_load. */
static const char *const select_flags[] = {"policy", "device", "min_memory_bytes", "executable",
					   "kernel", "format", "tpu_scope", NULL};

/* The fields that are sizes: the command line takes them with units (16GiB, 14GB), as the settings' sizes. */
static const char *const size_fields[] = {"min_memory_bytes", "model_bytes", "sample_bytes", NULL};

/* The words of batch's messages that name its fields (batch.h), said as flags here. */
static const char *const batch_words[] = {"model_bytes", "params", "dtype", "sample_bytes", NULL};

static bool in_list(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

static enum acceld_err set_select(void *req, const char *name, const char *value, char *err, size_t errsz)
{
	return select_request_set(req, name, value, err, errsz);
}

/* batch_request_set, with sizes in units read here: batch.h takes bytes as digits */
static enum acceld_err set_batch(void *req, const char *name, const char *value, char *err, size_t errsz)
{
	uint64_t bytes;
	char digits[24];

	if (in_list(size_fields, name)) {
		if (config_parse_size(value, &bytes) != 0) {
			snprintf(err, errsz, "not a size");
			return ACCELD_EINVAL;
		}
		snprintf(digits, sizeof(digits), "%llu", (unsigned long long)bytes);
		value = digits;
	}
	return batch_request_set(req, name, value, err, errsz);
}

static void select_help(FILE *out)
{
	static const char *const settings[] = {"prefer", "allow-tpu", NULL};
	char kernels[128];

	fprintf(out,
		"usage: acceld select [--policy P] [--device ID] [--min-memory-bytes SIZE] [--executable]\n"
		"                     [--kernel K] [--format json|env] [--json] [--tpu-scope chip|host] [-v]\n"
		"                     [SETTINGS]\n"
		"\n"
		"Probes the devices once and prints the device to use, as GET /select answers it (JSON), or the\n"
		"environment to export: eval \"$(acceld select --format env)\". Exit status: 0 chosen, 1 no device\n"
		"meets the constraints (or no --device on this host), 2 bad usage.\n"
		"\n"
		"Options:\n"
		"  --policy P               priority (default), fastest, cheapest or efficient\n"
		"  --device ID              this device (cpu:0, gpu:1, tpu:3), if it meets the constraints\n"
		"  --min-memory-bytes SIZE  only devices with at least this much memory: 16GiB, 16GB, 17179869184\n"
		"  --executable             only devices acceld runs jobs on\n"
		"  --kernel K               %s: the figure fastest and efficient weigh\n"
		"  --format F               json (the default) or env: export lines\n"
		"  --json                   the same as --format json\n"
		"  --tpu-scope S            chip (one chip, bounds 1,1,1; the default) or host (every chip)\n"
		"  -v, --verbose            log at info on stderr (default: warn; --log-level L for another)\n"
		"\n",
		kernel_names_join(0, "|", kernels, sizeof(kernels)));
	config_usage_units(out);
	cli_help_settings(out, settings);
}

static void batch_help(FILE *out)
{
	static const char *const settings[] = {"tpu-batch-factor", "gpu-batch-factor", "cpu-batch-factor", "prefer",
					       NULL};

	fprintf(out,
		"usage: acceld batch [--device ID] [--base N] [--model-bytes SIZE | --params N [--dtype D]]\n"
		"                    [--sample-bytes SIZE] [--mode infer|train] [--reserve R] [--json] [-v]\n"
		"                    [SETTINGS]\n"
		"\n"
		"Probes the devices once and prints the batch size for a device, step by step; with --json, the\n"
		"document GET /batch-config answers. Exit status: 0 computed, 1 an unknown device or a model that\n"
		"cannot fit, 2 bad usage.\n"
		"\n"
		"Options:\n"
		"  --device ID          the device (default: the one acceld select chooses)\n"
		"  --base N             base batch, 1 to 1048576 (default 1), times the device kind's factor\n"
		"  --model-bytes SIZE   the model's weights (14GB, 13GiB); training state counts 8x that\n"
		"  --params N           the parameter count instead; --dtype fp32|fp16|bf16|int8|fp8 (default bf16)\n"
		"                       sizes the weights; training counts 16 bytes a parameter (mixed-precision\n"
		"                       Adam)\n"
		"  --sample-bytes SIZE  memory one sample needs (activations); with a model it caps the batch\n"
		"  --mode M             infer (the default) or train\n"
		"  --reserve R          the fraction of memory kept back, 0 to 0.9 (default 0.1)\n"
		"  --json               print the document GET /batch-config answers\n"
		"  -v, --verbose        log at info on stderr (default: warn; --log-level L for another)\n"
		"\n");
	config_usage_units(out);
	cli_help_settings(out, settings);
}

static void init_select(void *req, const struct config *cfg)
{
	select_request_init(req, cfg);
}

static void init_batch(void *req, const struct config *cfg)
{
	batch_request_init(req, cfg);
}

/*
 * The prices in force for the command's devices, as the service's selection weighs them: a prices file's
 * (--prices-file), else the built-in table's. *out is malloc'ed (free() it); returns its length.
 */
static size_t cli_select_prices(const struct cli_request *c, struct select_measured **out)
{
	struct cost *book;
	char err[512];
	size_t n;

	*out = NULL;
	if (cost_new(NULL, c->cfg.prices_file, &book, err, sizeof(err)) != ACCELD_OK)
		return 0; /* refused before: cli_load_config checks the file */
	*out = xcalloc(c->snap->n ? c->snap->n : 1, sizeof(**out));
	n = app_selection_prices(book, c->snap, *out, c->snap->n);
	cost_free(book);
	return n;
}

int cli_select_main(int argc, char **argv)
{
	static const char *const bools[] = {"executable", NULL};
	static const struct cli_kind kind = {"select", select_flags, bools, size_fields, true, init_select,
					     set_select, select_param_accepted, select_help};
	struct cli_request c;
	struct select_request req;
	struct select_result res;
	struct select_measured *prices = NULL;
	size_t nprices = 0;
	enum acceld_err err;
	int rc = cli_request_start(&c, &kind, argc, argv, &req);

	if (rc >= 0)
		goto out;
	/* --json, as every command has it, is the default --format json */
	if (c.json && req.format == SELECT_FORMAT_ENV) {
		fprintf(stderr, "acceld select: --json and --format env ask for two formats; give one\n");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	nprices = cli_select_prices(&c, &prices);
	err = select_choose(c.snap->devices, c.snap->n, &req, prices, nprices, &res);
	free(prices);
	if (err != ACCELD_OK) {
		fprintf(stderr, "acceld select: %s\n", res.reason);
		if (req.format == SELECT_FORMAT_JSON)
			cli_print_json(json_pack("{s:s, s:o}", "error", res.reason, "candidates",
					     select_candidates_json(&res)));
		rc = CLI_EXIT_FAIL;
	} else if (req.format == SELECT_FORMAT_ENV) {
		size_t len;
		char *text = envfmt_to_text(&res.env, &len);

		fwrite(text, 1, len, stdout);
		free(text);
		rc = CLI_EXIT_OK;
	} else {
		cli_print_json(select_result_to_json(&res, &req, c.snap));
		rc = CLI_EXIT_OK;
	}
	select_result_release(&res);
out:
	cli_request_finish(&c);
	return rc;
}

/* A text of batch.c in the command line's words (its fields as flags). */
static void say(FILE *out, const char *prefix, const char *text)
{
	char words[1024];

	cli_words(text, batch_words, words, sizeof(words));
	fprintf(out, "%s%s\n", prefix, words);
}

/* The batch for a person: the answer first, then the steps that led to it. */
static void print_batch(const struct batch_result *res, const struct batch_request *req)
{
	const struct device *d = res->device;
	char state[32];
	char sample[32];

	printf("batch size %llu on %s (%s), for %s\n", (unsigned long long)res->batch_size, d->id,
	       d->model[0] != '\0' ? d->model : device_type_name(d->type),
	       req->mode == BATCH_TRAIN ? "training" : "inference");
	if (res->has_max) {
		config_format_size(res->memory.state_bytes, state, sizeof(state));
		config_format_size(res->memory.sample_bytes, sample, sizeof(sample));
		printf("at most %llu fit in memory (model state %s, %s a sample)\n",
		       (unsigned long long)res->max_batch_size, state, sample);
	}
	if (res->tpu) {
		printf("TPU: %llu per chip", (unsigned long long)res->batch_per_chip);
		if (res->batch_per_core != 0)
			printf(", %llu per core", (unsigned long long)res->batch_per_core);
		if (res->global_batch_size != 0)
			printf(", %llu over the host's %u chips", (unsigned long long)res->global_batch_size,
			       res->tpu_chips);
		printf("\n");
	}
	printf("\nsteps:\n");
	for (size_t i = 0; i < res->nsteps; i++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "  %-7s ", res->steps[i].name);
		say(stdout, prefix, res->steps[i].text);
	}
}

int cli_batch_main(int argc, char **argv)
{
	static const char *const bools[] = {NULL};
	static const struct cli_kind kind = {"batch", batch_param_names, bools, size_fields, true, init_batch,
					     set_batch, batch_param_accepted, batch_help};
	struct cli_request c;
	struct batch_request req;
	struct batch_result res;
	const struct device *d;
	const char *param;
	char msg[256];
	int rc = cli_request_start(&c, &kind, argc, argv, &req);

	if (rc >= 0)
		goto out;
	if (batch_request_check(&req, &param, msg, sizeof(msg)) != ACCELD_OK) {
		say(stderr, "acceld batch: ", msg);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (req.device[0] != '\0') {
		d = detect_find(c.snap, req.device);
		if (d == NULL) {
			fprintf(stderr, "acceld batch: no device %s on this host (acceld report lists the devices)\n",
				req.device);
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
		say(stderr, "acceld batch: ", res.detail);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (c.json)
		cli_print_json(batch_result_to_json(&res, &req, c.snap));
	else
		print_batch(&res, &req);
	rc = CLI_EXIT_OK;
out:
	cli_request_finish(&c);
	return rc;
}
