/*
 * Unit tests for cli_select.c: `acceld select` and `acceld batch` called in-process on this host's CPU and the
 * tpu-v6e-8 fixture's eight chips, their output captured. Select: the automatic order, --prefer and --allow-tpu
 * (settings), --device, --executable (alone, =false, or with a value), --min-memory-bytes with units and either
 * spelling, --policy with --kernel, --format env and --tpu-scope; no device is exit 1 with the error and the
 * candidates (JSON) or nothing (env) on stdout. Batch: the chosen or named device, the base and factors, the model's
 * memory cap, sizes with units; a summary for a person first, the document with --json; an unknown device or a
 * model that cannot fit is exit 1. Both: a flag without its value, a bad value, an unknown option and conflicting
 * fields are exit 2 with "acceld COMMAND:" on stderr, naming flags (not the API's fields); --help is exit 0 with the
 * command's own flags and few settings, whatever the environment holds.
 */
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "cli/cli_select.h"

static char tmp[64];
static struct check_cli_run r;
static json_t *doc;

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli-select");
	check_cli_env(tmp, "tpu-v6e-8");
	memset(&r, 0, sizeof(r));
	doc = NULL;
}

static void teardown(void)
{
	json_decref(doc);
	check_cli_release(&r);
	check_rmtree(tmp);
}

/* Parses what the last command printed as JSON into doc. */
static json_t *parsed(void)
{
	return check_cli_json(&r, &doc);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The chosen device's id, after checking the command succeeded quietly. */
static const char *chosen(void)
{
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	return str(json_object_get(parsed(), "device"), "id");
}

/* A usage error: exit 2, nothing on stdout, "acceld COMMAND: ..." on stderr holding text. */
static void usage_error(const char *command, const char *text)
{
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "acceld %s: ", command);
	ck_assert_msg(r.rc == CLI_EXIT_USAGE, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, prefix, strlen(prefix)) == 0 && strstr(r.err, text) != NULL, "%s", r.err);
}

/* Runs the command with the arguments given (none: NULL) into r. */
#define SELECT(...)                                                                                                \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, cli_select_main, __VA_ARGS__, (const char *)NULL);                              \
	} while (0)
#define BATCH(...)                                                                                                 \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, cli_batch_main, __VA_ARGS__, (const char *)NULL);                               \
	} while (0)

START_TEST(select_order_and_preferences)
{
	SELECT(NULL);
	ck_assert_str_eq(chosen(), "tpu:0");
	ck_assert_str_eq(str(doc, "policy"), "priority");
	ck_assert_str_eq(str(doc, "prefer"), "auto");
	ck_assert_msg(strstr(str(doc, "reason"), "auto order TPU > GPU > CPU") != NULL, "%s", str(doc, "reason"));
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "candidates")), 9);

	/* --prefer and --allow-tpu are settings: flags here, the environment as well */
	SELECT("--prefer", "cpu");
	ck_assert_str_eq(chosen(), "cpu:0");
	SELECT("--allow-tpu", "false");
	ck_assert_str_eq(chosen(), "cpu:0");
	ck_assert(json_is_false(json_object_get(doc, "allow_tpu")));
	setenv("COMPUTE_PREFER", "cpu", 1);
	SELECT(NULL);
	ck_assert_str_eq(chosen(), "cpu:0");
	/* a GPU preference on a host without one falls back */
	SELECT("--prefer", "gpu");
	ck_assert_str_eq(chosen(), "tpu:0");
	ck_assert(json_is_true(json_object_get(doc, "fell_back")));
	ck_assert_str_eq(str(doc, "fallback_from"), "gpu");
}
END_TEST

START_TEST(select_fields)
{
	json_t *tpu;

	SELECT("--device", "tpu:3");
	ck_assert_str_eq(chosen(), "tpu:3");
	SELECT("--device=cpu:0");
	ck_assert_str_eq(chosen(), "cpu:0");

	/* no PJRT plugin: only the CPU runs jobs; the flag may stand alone or take a value */
	SELECT("--executable");
	ck_assert_str_eq(chosen(), "cpu:0");
	ck_assert(json_is_true(json_object_get(json_object_get(doc, "constraints"), "executable")));
	SELECT("--executable", "--allow-tpu", "true");
	ck_assert_str_eq(chosen(), "cpu:0");
	SELECT("--executable=false");
	ck_assert_str_eq(chosen(), "tpu:0");
	SELECT("--executable", "false");
	ck_assert_str_eq(chosen(), "tpu:0");

	/* 32 GiB chips meet 16 GiB, with units and either spelling of the flag */
	SELECT("--min-memory-bytes", "16GiB", "--prefer", "tpu");
	ck_assert_str_eq(chosen(), "tpu:0");
	SELECT("--min_memory_bytes=17179869184", "--prefer", "tpu");
	ck_assert_str_eq(chosen(), "tpu:0");
	/* a 32 GiB chip holds 32gi (binary, in any case, B left out) and 34GB (34e9 bytes), not 35GB */
	SELECT("--min-memory-bytes", "32gi", "--device", "tpu:0");
	ck_assert_str_eq(chosen(), "tpu:0");
	SELECT("--min-memory-bytes", "34GB", "--device", "tpu:0");
	ck_assert_str_eq(chosen(), "tpu:0");
	SELECT("--min-memory-bytes", "35GB", "--device", "tpu:0");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);

	/* cheapest: the built-in price of a v6e chip; this host's CPU has none (ACCELD_CLOUD=none) */
	SELECT("--policy", "cheapest");
	ck_assert_str_eq(chosen(), "tpu:0");
	ck_assert_msg(strstr(str(doc, "reason"), "cheapest of 9 eligible devices (2.7 USD per hour)") != NULL, "%s",
		      str(doc, "reason"));
	/* fastest for sgemm weighs FP32 figures, which the v6e table does not give */
	SELECT("--policy", "fastest", "--kernel", "sgemm");
	chosen();
	ck_assert_str_eq(str(doc, "policy"), "fastest");
	ck_assert_str_eq(str(doc, "kernel"), "sgemm");
	tpu = json_array_get(json_object_get(doc, "candidates"), 1);
	ck_assert_str_eq(str(tpu, "id"), "tpu:0");
	ck_assert_msg(strstr(str(tpu, "why"), "no figure known") != NULL, "%s", r.out);
}
END_TEST

START_TEST(select_env_format)
{
	SELECT("--format", "env");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "export JAX_PLATFORMS='tpu'\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "export TPU_VISIBLE_CHIPS='0'\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "export TPU_CHIPS_PER_PROCESS_BOUNDS='1,1,1'\n"));
	/* every line an export */
	for (const char *p = r.out; *p != '\0'; p = strchr(p, '\n') + 1)
		ck_assert_msg(strncmp(p, "export ", 7) == 0, "%s", p);

	SELECT("--format", "env", "--tpu-scope", "host");
	ck_assert_ptr_nonnull(strstr(r.out, "export TPU_VISIBLE_CHIPS='0,1,2,3,4,5,6,7'\n"));
	ck_assert_ptr_null(strstr(r.out, "TPU_CHIPS_PER_PROCESS_BOUNDS"));

	SELECT("--format=env", "--device", "cpu:0");
	ck_assert_ptr_nonnull(strstr(r.out, "export JAX_PLATFORMS='cpu'\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "export CUDA_VISIBLE_DEVICES=''\n"));
}
END_TEST

/* No device meets the constraints: exit 1, the reason on stderr, and the candidates as JSON (none as env lines). */
START_TEST(select_finds_nothing)
{
	json_t *c;
	size_t i;
	json_t *v;

	SELECT("--device", "gpu:7");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.err, "acceld select: no device gpu:7 on this host (9 devices detected)\n");
	parsed();
	ck_assert_str_eq(str(doc, "error"), "no device gpu:7 on this host (9 devices detected)");
	c = json_object_get(doc, "candidates");
	ck_assert_uint_eq(json_array_size(c), 9);
	json_array_foreach(c, i, v)
		ck_assert_str_eq(str(v, "excluded_by"), "device");

	SELECT("--device", "tpu:0", "--executable");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_ptr_nonnull(parsed());

	SELECT("--min-memory-bytes", "9223372036854775807", "--format", "env");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld select: ", 15) == 0, "%s", r.err);
}
END_TEST

START_TEST(select_usage)
{
	SELECT("--policy");
	usage_error("select", "option --policy needs a value");
	SELECT("--policy", "fast");
	usage_error("select", "invalid --policy 'fast'; accepted: priority, fastest, cheapest, efficient");
	SELECT("--format", "yaml");
	usage_error("select", "format");
	SELECT("--kernel", "fft");
	usage_error("select", "fft");
	SELECT("--min-memory-bytes", "-1");
	usage_error("select", "invalid --min-memory-bytes '-1'; accepted: a size such as 16GiB, 16GB");
	SELECT("--colour", "red");
	usage_error("select", "unknown option '--colour'");
	SELECT("--prefer", "fpga");
	usage_error("select", "auto|cpu|gpu|tpu");
	SELECT("stray");
	usage_error("select", "unexpected argument 'stray'");

	/* the help, whatever the environment holds: select's flags and the settings it reads, not every one */
	setenv("COMPUTE_PREFER", "fpga", 1);
	SELECT("--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "usage: acceld select ", 21) == 0, "%.100s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "Exit status: 0 chosen, 1 no device"));
	ck_assert_ptr_nonnull(strstr(r.out, "COMPUTE_ALLOW_TPU"));
	ck_assert_ptr_nonnull(strstr(r.out, "KB, MB, GB, TB (powers of 1000)"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN"));
}
END_TEST

START_TEST(batch_sizes)
{
	json_t *tpu;

	/* the device select would choose: the first chip, factor 128, per-chip and global figures */
	BATCH("--json");
	ck_assert_str_eq(chosen(), "tpu:0");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "factor")), 128);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "batch_size")), 128);
	tpu = json_object_get(doc, "tpu");
	ck_assert_int_eq(json_integer_value(json_object_get(tpu, "chips")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(tpu, "global_batch_size")), 1024);
	ck_assert(json_is_null(json_object_get(doc, "max_batch_size")));

	/* a CPU's factor is 1: base 3 rounds to 4 */
	BATCH("--device", "cpu:0", "--base", "3", "--json");
	ck_assert_str_eq(chosen(), "cpu:0");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "factor")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "batch_size")), 4);
	ck_assert_ptr_null(json_object_get(doc, "tpu"));

	/* a factor from the settings, and the model's memory cap on a 32 GiB chip: (32 GiB x 0.9 - 2e9) / 1e9 = 28 */
	BATCH("--device=tpu:1", "--tpu-batch-factor", "2", "--json");
	ck_assert_str_eq(chosen(), "tpu:1");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "batch_size")), 8); /* 2, aligned to 8 */
	BATCH("--json", "--device=tpu:1", "--model-bytes=2GB", "--sample-bytes", "1000000000");
	ck_assert_str_eq(chosen(), "tpu:1");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "max_batch_size")), 28);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "batch_size")), 24);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "model"), "model_bytes")),
			 2000000000);
}
END_TEST

/* Without --json, the answer for a person: the batch first, its memory cap, the TPU split, then the steps. */
START_TEST(batch_text)
{
	BATCH(NULL);
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "batch size 128 on tpu:0 (", 25) == 0, "%s", r.out);
	ck_assert_msg(strstr(r.out, "), for inference\nTPU: 128 per chip, ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, ", 1024 over the host's 8 chips\n") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\nsteps:\n  factor  base 1 x tpu factor 128 = 128\n") != NULL, "%s", r.out);
	/* a step that names what to give says the flags */
	ck_assert_msg(strstr(r.out, "  memory  no cap: give --model-bytes or --params, and --sample-bytes") != NULL,
		      "%s", r.out);
	ck_assert_ptr_null(strstr(r.out, "{"));

	BATCH("--device=tpu:1", "--model-bytes=2GB", "--sample-bytes", "1GB", "--mode", "train");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, "on tpu:1 (") != NULL && strstr(r.out, "), for training\n") != NULL, "%s",
		      r.out);
	ck_assert_msg(strstr(r.out, "\nat most 14 fit in memory (model state 16GB, 1GB a sample)\n") != NULL, "%s",
		      r.out);
}
END_TEST

START_TEST(batch_failures)
{
	BATCH("--device", "tpu:9");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.out, "");
	ck_assert_str_eq(r.err, "acceld batch: no device tpu:9 on this host (acceld report lists the devices)\n");

	/* 20e9 bf16 parameters are 40 GB: more than a chip's 32 GiB */
	BATCH("--device", "tpu:0", "--params", "20000000000");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld batch: ", 14) == 0 && strstr(r.err, "does not fit") != NULL, "%s",
		      r.err);

	BATCH("--base", "0");
	usage_error("batch", "invalid --base '0'; accepted: an integer from 1 to 1048576");
	BATCH("--base");
	usage_error("batch", "option --base needs a value");
	BATCH("--model-bytes", "2 GB");
	usage_error("batch", "invalid --model-bytes '2 GB'; accepted: a size such as 16GiB");
	BATCH("--params", "10", "--model-bytes", "10");
	usage_error("batch", "give --model-bytes or --params (with --dtype), not both");
	BATCH("--dtype", "fp16");
	usage_error("batch", "--dtype applies to --params");
	BATCH("--mode", "serve");
	usage_error("batch", "invalid --mode 'serve'; accepted: infer, train");
	BATCH("--policy", "fastest"); /* a select field, not a batch one */
	usage_error("batch", "unknown option '--policy'");

	BATCH("-h");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_msg(strncmp(r.out, "usage: acceld batch ", 20) == 0, "%.100s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "ACCELD_GPU_BATCH_FACTOR"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN"));
	ck_assert_str_eq(r.err, "");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cli_select");
	TCase *tc = tcase_create("cli_select");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, select_order_and_preferences);
	tcase_add_test(tc, select_fields);
	tcase_add_test(tc, select_env_format);
	tcase_add_test(tc, select_finds_nothing);
	tcase_add_test(tc, select_usage);
	tcase_add_test(tc, batch_sizes);
	tcase_add_test(tc, batch_text);
	tcase_add_test(tc, batch_failures);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
