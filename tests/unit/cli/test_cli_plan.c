/*
 * Unit tests for cli_plan.c: `acceld plan` called in-process on the tpu-v6e-8 fixture's eight chips (a v6e-8 slice
 * when TPU_ACCELERATOR_TYPE says so), its output captured. A summary for a person first (fits, the mesh, why, the
 * batch, the memory per device with its formulas), the document with --json or --format json, export lines with
 * --format env; nothing fitting is exit 1 with what would fit; an unknown device is exit 1; a flag without its
 * value, a bad value, an unknown option and fields that do not go together are exit 2 naming flags, not the API's
 * fields; --help is exit 0 on a screen, whatever the environment holds.
 */
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "cli/cli_plan.h"

static char tmp[64];
static struct check_cli_run r;
static json_t *doc;

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli-plan");
	check_cli_env(tmp, "tpu-v6e-8");
	setenv("TPU_ACCELERATOR_TYPE", "v6e-8", 1);
	setenv("TPU_TOPOLOGY", "2x4", 1);
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

static json_t *member(const json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

/* A usage error: exit 2, nothing on stdout, "acceld plan: ..." on stderr holding text. */
static void usage_error(const char *text)
{
	ck_assert_msg(r.rc == CLI_EXIT_USAGE, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld plan: ", 13) == 0 && strstr(r.err, text) != NULL, "%s", r.err);
}

#define PLAN(...)                                                                                                  \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, cli_plan_main, __VA_ARGS__, (const char *)NULL);                                \
	} while (0)

START_TEST(summary_for_a_person)
{
	/* Llama 2 7B on a v6e-8 slice: FSDP over its eight chips, as MaxText's default shards */
	PLAN("--model", "llama-2-7b", "--mode", "train", "--flash-attention");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	{
		static const char head[] = "llama-2-7b (6738415616 parameters), training with adam, mixed precision, "
					   "bf16 weights, sequence 2048\non a v6e-8 slice: 8 chips, 8 a host\n";

		ck_assert_msg(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
	}
	ck_assert_msg(strstr(r.out, "\nfits: data 1 x fsdp 8 x tensor 1 x expert 1\n  chosen: sharded (FSDP)") != NULL,
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "\nbatch: 1 a device, 8 in all\n") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\nmemory per device: ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "ZeRO section 3.1") != NULL, "%s", r.out); /* the optimizer's formula */
	ck_assert_msg(strstr(r.out, "other meshes rejected or ranked below") != NULL, "%s", r.out);
	ck_assert_ptr_null(strstr(r.out, "{"));
	ck_assert_ptr_null(strstr(r.out, "multi-host")); /* one host */

	/* inference counts the KV cache, not gradients; params with units */
	PLAN("--params", "1.1B", "--layers", "16", "--hidden", "2048", "--heads", "16");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strncmp(r.out, "1100000000 parameters, inference", 32) == 0, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "  kv cache "));
	ck_assert_ptr_null(strstr(r.out, "  gradients "));
}
END_TEST

START_TEST(the_document_and_export_lines)
{
	PLAN("--json", "--model", "llama-2-7b", "--mode=train", "--flash-attention=true", "--mixed-precision",
	     "true");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	parsed();
	ck_assert(json_is_true(json_object_get(doc, "fits")));
	ck_assert_int_eq(json_integer_value(member(doc, "mesh", "fsdp")), 8);
	ck_assert_str_eq(json_string_value(member(doc, "devices", "torus")), "2x4");
	ck_assert_str_eq(json_string_value(member(doc, "devices", "source")), "host");
	ck_assert_str_eq(json_string_value(member(doc, "model", "name")), "llama-2-7b");
	ck_assert(json_is_true(json_object_get(doc, "flash_attention")));
	/* --format json is the same document */
	PLAN("--format", "json", "--model", "llama-2-7b", "--mode=train", "--flash-attention");
	ck_assert_int_eq(json_integer_value(member(parsed(), "mesh", "fsdp")), 8);

	/* a job over a v5p-128 slice, this process its worker 3: export lines for JAX */
	setenv("TPU_WORKER_HOSTNAMES", "w-0,w-1,w-2,w-3,w-4,w-5,w-6,w-7,w-8,w-9,w-10,w-11,w-12,w-13,w-14,w-15", 1);
	setenv("TPU_WORKER_ID", "3", 1);
	PLAN("--model", "llama-2-70b", "--mode", "train", "--devices", "tpu: v5p-128", "--format", "env");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.out, "export JAX_COORDINATOR_ADDRESS='w-0:8476'\nexport JAX_NUM_PROCESSES='16'\n"
				"export JAX_PROCESS_ID='3'\n");
	PLAN("--model", "llama-2-70b", "--mode", "train", "--devices", "tpu:v5p-128", "--coordinator-port", "1234",
	     "--json");
	ck_assert_str_eq(json_string_value(json_object_get(member(parsed(), "env", "env"), "JAX_COORDINATOR_ADDRESS")),
			 "w-0:1234");
	ck_assert_int_eq(json_integer_value(member(doc, "devices", "hosts")), 16);
	/* the summary says it too */
	PLAN("--model", "llama-2-70b", "--mode", "train", "--devices", "tpu:v5p-128");
	ck_assert_msg(strstr(r.out, "\nmulti-host (acceld plan --format env prints the export lines):\n"
				    "  JAX_COORDINATOR_ADDRESS=w-0:8476\n") != NULL, "%s", r.out);
}
END_TEST

START_TEST(nothing_fits_says_what_would)
{
	/* Llama 2 70B with mixed-precision Adam is 1.1 TB of state; eight 32 GB chips hold 247 GB */
	PLAN("--model", "llama-2-70b", "--mode", "train");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strstr(r.out, "\nnothing fits: no mesh of 8 tpu devices fits") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\nwhat would:\n  devices ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\nthe closest mesh, ") != NULL, "%s", r.out);
	PLAN("--model", "llama-2-70b", "--mode", "train", "--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert(json_is_false(json_object_get(parsed(), "fits")));
	ck_assert_uint_ge(json_array_size(json_object_get(doc, "suggestions")), 1);
}
END_TEST

START_TEST(devices_by_id)
{
	PLAN("--params", "1B", "--layers", "16", "--hidden", "2048", "--heads", "16", "--devices", "tpu:0,tpu:1", "--json");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_int_eq(json_integer_value(member(parsed(), "devices", "count")), 2);
	ck_assert_str_eq(json_string_value(member(doc, "devices", "source")), "ids");
	PLAN("--params", "1B", "--devices", "gpu:3");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.out, "");
	ck_assert_str_eq(r.err, "acceld plan: no device gpu:3 on this host (acceld report lists the devices)\n");
	/* this host's CPU, with more memory than it has */
	PLAN("--params", "1B", "--layers", "16", "--hidden", "2048", "--heads", "16", "--devices", "cpu:0", "--memory-bytes",
	     "64GiB", "--json");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_int_eq(json_integer_value(member(parsed(), "devices", "memory_bytes")), 64ll << 30);
}
END_TEST

START_TEST(usage)
{
	PLAN("--layers");
	usage_error("option --layers needs a value");
	PLAN("--params", "1B", "--mode", "serve");
	usage_error("invalid --mode 'serve'; accepted: infer, train");
	PLAN("--params", "1B", "--memory-bytes", "2x");
	usage_error("invalid --memory-bytes '2x'; accepted: a size from 1 byte to 1024TiB");
	PLAN("--params", "7X");
	usage_error("invalid --params '7X'; accepted: a count from 1");
	PLAN("--model", "llama-2-7b", "--kv-heads", "4");
	usage_error("--kv-heads: model llama-2-7b sets the shape");
	PLAN("--params", "1B", "--devices", "H100x8", "--hosts", "2");
	usage_error("--hosts: a shape names its devices' count");
	/* plan.c's words, said as flags */
	PLAN("--layers", "32", "--hidden", "4095", "--heads", "32", "--vocab", "32000");
	usage_error("--heads: --hidden 4095 is not a multiple of --heads 32; give --head-dim");
	/* no model at all is a missing flag, named as --model with the other ways to give one */
	PLAN("--mode", "train");
	usage_error("--model: give model (a preset: llama-2-7b");
	ck_assert_msg(strstr(r.err, "--params (a count such as 7B), or a shape: --layers, --hidden, --heads and --vocab"),
		      "%s", r.err);
	PLAN("--layers", "32", "--hidden", "4096", "--heads", "32");
	usage_error("--params: give model (a preset), --params, or --layers, --hidden, --heads and --vocab");
	PLAN("--params", "1B", "--colour", "red");
	usage_error("unknown option '--colour'");
	PLAN("--params", "1B", "--devices", "gpu1");
	usage_error("invalid --devices 'gpu1'");

	/* the help, whatever the environment holds: plan's flags on a screen, not every setting */
	setenv("COMPUTE_PREFER", "fpga", 1);
	PLAN("--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "usage: acceld plan ", 19) == 0, "%.100s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "--model NAME"));
	ck_assert_ptr_nonnull(strstr(r.out, "Exit status: 0 it fits, 1 nothing fits"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN"));
	{
		size_t lines = 0;

		for (const char *p = r.out; *p != '\0'; p++)
			lines += *p == '\n';
		ck_assert_uint_le(lines, 40);
	}
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cli_plan");
	TCase *tc = tcase_create("cli_plan");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, summary_for_a_person);
	tcase_add_test(tc, the_document_and_export_lines);
	tcase_add_test(tc, nothing_fits_says_what_would);
	tcase_add_test(tc, devices_by_id);
	tcase_add_test(tc, usage);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
