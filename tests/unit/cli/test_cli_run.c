/*
 * Unit tests for cli_run.c: `acceld run` called in-process on this host's CPU (the native backend; no OpenCL, GPU or
 * TPU), its output captured. Every argument error (no kernel, an unknown one, a missing or bad value, a size the
 * kernel lacks or does not take, a parameter of another kernel, a bad device id or setting, too many arguments) is
 * exit 2 with the usage on stderr and nothing on stdout; --help anywhere, even without a kernel, is exit 0 with
 * run's own help. A job runs and prints one line of text or the POST /run document: n always the kernel's own n
 * (sgemm's and softmax's sizes as POST /run takes them, or --square), parameters and seeds (the same seed, the
 * same output), --full, --verify, a requested precision, a preference that falls back. Refusals (too large, an
 * unknown device, a backend the device lacks, a timeout it cannot meet) are exit 1 with the reason on stderr in
 * the command line's words, or the problem as JSON with --json.
 */
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "cli/cli_run.h"
#include "detect/device.h"
#include "exec/jobdata.h"

static char tmp[64];
static struct check_cli_run r;
static json_t *doc;

#define RUN(...)                                                                                                   \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, cli_run_main, __VA_ARGS__, (const char *)NULL);                                 \
	} while (0)

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli-run");
	check_cli_env(tmp, NULL);
	memset(&r, 0, sizeof(r));
	doc = NULL;
}

static void teardown(void)
{
	json_decref(doc);
	check_cli_release(&r);
	check_rmtree(tmp);
}

static json_t *parsed(void)
{
	return check_cli_json(&r, &doc);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static json_int_t integer(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Exit 2, nothing on stdout, "acceld run: <text>" first on stderr and the usage after it. */
static void usage_error(const char *text)
{
	ck_assert_msg(r.rc == CLI_EXIT_USAGE, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld run: ", 12) == 0 && strstr(r.err, text) != NULL, "'%s' not in: %s", text,
		      r.err);
}

/* The usage line follows errors of the run's own arguments. */
static void usage_follows(void)
{
	ck_assert_msg(strstr(r.err, "\nusage: acceld run saxpy|triad|dot --n N | sgemm --m M --n N --k K") != NULL,
		      "%s", r.err);
}

/* A job that succeeded, printed as JSON. */
static json_t *succeeded(void)
{
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s %s", r.rc, r.out, r.err);
	parsed();
	ck_assert_str_eq(str(doc, "state"), "succeeded");
	ck_assert_str_eq(str(doc, "device"), "cpu:0");
	ck_assert_str_eq(str(doc, "backend"), "native");
	return doc;
}

START_TEST(argument_errors)
{
	check_cli_release(&r);
	check_cli_callv(&r, cli_run_main, 0, NULL);
	usage_error("name a kernel: saxpy, triad, dot, sgemm, softmax");
	usage_follows();
	RUN("--n", "4", "saxpy");
	usage_error("name a kernel");
	RUN("fft", "--n", "4");
	usage_error("unknown kernel 'fft'; accepted: saxpy, triad, dot, sgemm, softmax");
	usage_follows();
	RUN("saxpy");
	usage_error("saxpy needs --n N, the vector length");
	RUN("saxpy", "--n");
	usage_error("--n needs a value");
	RUN("saxpy", "--n", "0");
	usage_error("invalid --n '0'; accepted: a positive integer");
	RUN("saxpy", "--n=1e3");
	usage_error("invalid --n '1e3'");
	RUN("sgemm", "--m", "4", "--n", "4", "--k", "-1");
	usage_error("invalid --k '-1'");
	RUN("saxpy", "--n", "4", "--alpha", "nan");
	usage_error("invalid --alpha 'nan'; accepted: a finite float32 number");
	RUN("saxpy", "--n", "4", "--alpha", "1e39"); /* beyond float32 */
	usage_error("invalid --alpha");
	RUN("triad", "--n", "4", "--s", "1x");
	usage_error("invalid --s");
	RUN("sgemm", "--square", "4", "--precision", "fp8");
	usage_error("invalid --precision 'fp8'; accepted: highest, tf32, bf16");
	RUN("saxpy", "--n", "4", "--backend", "cuda");
	usage_error("invalid --backend 'cuda'; accepted: native");
	RUN("saxpy", "--n", "4", "--timeout-ms", "0");
	usage_error("invalid --timeout-ms");
	RUN("saxpy", "--n", "4", "--seed", "-1");
	usage_error("invalid --seed");
	RUN("saxpy", "--n", "4", "--device", "cpu0");
	usage_error("invalid --device 'cpu0'; accepted: " DEVICE_ID_SYNTAX);
	/* the settings are checked like every command's */
	RUN("saxpy", "--n", "4", "--colour", "red");
	usage_error("unknown option '--colour'");
	RUN("saxpy", "--n", "4", "--exec-max-elements", "lots");
	usage_error("--exec-max-elements");
}
END_TEST

/* n is the kernel's own n, as POST /run takes it: sgemm and softmax are given every size, or --square. */
START_TEST(sizes_as_the_api_takes_them)
{
	RUN("sgemm", "--n", "64");
	usage_error("sgemm multiplies an M x K matrix by a K x N one: give --m, --n and --k (--m, --k missing), or "
		    "--square N for N x N matrices");
	usage_follows();
	RUN("sgemm", "--m", "4", "--n", "4");
	usage_error("(--k missing)");
	RUN("softmax", "--n", "16");
	usage_error("softmax takes M rows of N: give --m and --n (--m missing), or --square N");
	RUN("sgemm", "--square", "4", "--n", "4");
	usage_error("give --square N or the sizes (--m, --n, --k), not both");
	/* what a kernel does not take is refused, as POST /run refuses it, saying what it takes */
	RUN("saxpy", "--square", "4");
	usage_error("--square does not apply to saxpy (it takes --n, --alpha)");
	RUN("saxpy", "--n", "4", "--m", "4");
	usage_error("--m does not apply to saxpy");
	RUN("triad", "--n", "4", "--alpha", "2");
	usage_error("--alpha does not apply to triad (it takes --n, --s)");
	RUN("softmax", "--m", "2", "--n", "4", "--k", "3");
	usage_error("--k does not apply to softmax (it takes --n, --m, --square)");
	RUN("dot", "--n", "4", "--precision", "tf32");
	usage_error("--precision does not apply to dot (it takes --n)");
}
END_TEST

START_TEST(too_many_arguments)
{
	const char *argv[132];

	/* 128 settings are taken; a 129th is refused */
	argv[0] = "saxpy";
	argv[1] = "--n";
	argv[2] = "4";
	for (int i = 3; i < 132; i++)
		argv[i] = "--access-log";
	check_cli_callv(&r, cli_run_main, 131, argv);
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	check_cli_release(&r);
	check_cli_callv(&r, cli_run_main, 132, argv);
	usage_error("too many arguments");
}
END_TEST

START_TEST(help)
{
	/* run's own flags and a few settings, on a screen; no kernel needed */
	RUN("--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "usage: acceld run KERNEL SIZES", 30) == 0, "%.100s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "  sgemm               --m M --n N --k K"));
	ck_assert_ptr_nonnull(strstr(r.out, "--square N"));
	ck_assert_ptr_nonnull(strstr(r.out, "ACCELD_EXEC_MAX_ELEMENTS"));
	ck_assert_ptr_nonnull(strstr(r.out, "acceld help settings"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN")); /* a service setting: in acceld help settings */
	RUN("sgemm", "--n", "4", "-h");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: acceld run"));
	/* before the arguments are judged, and before the environment is read */
	setenv("COMPUTE_PREFER", "fpga", 1);
	RUN("fft", "--n", "0", "--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
}
END_TEST

START_TEST(a_job_as_text)
{
	RUN("saxpy", "--n", "64", "--verify");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, ""); /* the jobs' info lines are not logged unless asked */
	/* "<id> saxpy on cpu:0 (native): succeeded, kernel X ms, Y GFLOP/s, Z GB/s, verified yes" */
	ck_assert_msg(strstr(r.out, " saxpy on cpu:0 (native): succeeded, kernel ") != NULL, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, " GFLOP/s, "));
	ck_assert_ptr_nonnull(strstr(r.out, " GB/s, verified yes\n"));
	ck_assert_msg(strchr(r.out, '\n') == r.out + strlen(r.out) - 1, "not one line: %s", r.out);

	/* a preference for a GPU this host lacks falls back, and says so */
	RUN("dot", "--n", "100", "--prefer", "gpu");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, " dot on cpu:0 (native): succeeded") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, ", fell back: no GPU detected") != NULL, "%s", r.out);
	ck_assert_ptr_null(strstr(r.out, "verified"));

	/* -v asks for the log: JSON lines on stderr, never on stdout */
	RUN("saxpy", "--n", "8", "-v");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.err, "\"msg\":\"job finished\"") != NULL, "%s", r.err);
	ck_assert_ptr_null(strstr(r.out, "\"msg\""));
}
END_TEST

START_TEST(a_job_as_json)
{
	json_t *sizes;
	json_t *params;

	RUN("saxpy", "--n", "64", "--alpha", "2", "--seed", "9", "--verify", "--json");
	succeeded();
	ck_assert_str_eq(str(doc, "kernel"), "saxpy");
	ck_assert_int_eq(integer(json_object_get(doc, "sizes"), "n"), 64);
	params = json_object_get(doc, "params");
	ck_assert_double_eq(json_number_value(json_object_get(params, "alpha")), 2.0);
	ck_assert_int_eq(integer(params, "seed"), 9);
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	ck_assert_int_eq(integer(json_object_get(doc, "verification"), "checked"), 64);
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "result"), "output")); /* a summary only */

	/* sgemm's sizes as POST /run takes them: m x k times k x n */
	RUN("sgemm", "--n", "8", "--m", "3", "--k", "5", "--verify", "--json");
	sizes = json_object_get(succeeded(), "sizes");
	ck_assert_int_eq(integer(sizes, "m"), 3);
	ck_assert_int_eq(integer(sizes, "n"), 8);
	ck_assert_int_eq(integer(sizes, "k"), 5);
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	/* --square: every size the same */
	RUN("sgemm", "--square=8", "--json");
	sizes = json_object_get(succeeded(), "sizes");
	ck_assert_int_eq(integer(sizes, "m"), 8);
	ck_assert_int_eq(integer(sizes, "n"), 8);
	ck_assert_int_eq(integer(sizes, "k"), 8);
	/* softmax: m rows of n */
	RUN("softmax", "--m", "3", "--n", "16", "--verify", "--json");
	sizes = json_object_get(succeeded(), "sizes");
	ck_assert_int_eq(integer(sizes, "m"), 3);
	ck_assert_int_eq(integer(sizes, "n"), 16);
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	RUN("softmax", "--square", "16", "--json");
	ck_assert_int_eq(integer(json_object_get(succeeded(), "sizes"), "m"), 16);

	/* TF32 asked; the native backend computes in float32 and says so */
	RUN("sgemm", "--square", "16", "--precision", "tf32", "--json");
	succeeded();
	ck_assert_str_eq(str(doc, "precision_asked"), "tf32");
	ck_assert_str_eq(str(doc, "precision"), "highest");
}
END_TEST

/* The seed names the inputs (jobdata.h): the same seed gives the same output, another seed another one. */
START_TEST(seeds_and_full_output)
{
	struct pool *pool = pool_new(1);
	float b[10];
	float c[10];
	json_t *first;
	json_t *out;

	RUN("triad", "--n", "10", "--s", "0.5", "--seed", "7", "--full", "--json");
	succeeded();
	ck_assert_str_eq(str(doc, "return"), "full");
	first = json_deep_copy(json_object_get(json_object_get(doc, "result"), "output"));
	ck_assert_uint_eq(json_array_size(first), 10);
	/* triad's b + s*c over the inputs generated from seed 7 */
	jobdata_generate(pool, b, 10, 7, 0);
	jobdata_generate(pool, c, 10, 7, 1);
	for (size_t i = 0; i < 10; i++)
		ck_assert_double_eq_tol(json_number_value(json_array_get(first, i)), b[i] + 0.5f * c[i], 1e-6);
	RUN("triad", "--n", "10", "--s", "0.5", "--seed", "7", "--full", "--json");
	ck_assert(json_equal(json_object_get(json_object_get(succeeded(), "result"), "output"), first));
	RUN("triad", "--n", "10", "--s", "0.5", "--seed", "8", "--full", "--json");
	out = json_object_get(json_object_get(succeeded(), "result"), "output");
	ck_assert_uint_eq(json_array_size(out), 10);
	ck_assert(!json_equal(out, first));
	json_decref(first);
	pool_free(pool);
}
END_TEST

START_TEST(refusals)
{
	json_t *p;

	RUN("triad", "--n", "1000000000");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strstr(r.err, "acceld run: the job needs 3000000000 float32 elements in all; the limit is "
				    "268435456 (ACCELD_EXEC_MAX_ELEMENTS) (JOB_TOO_LARGE)\n") != NULL,
		      "%s", r.err);
	/* the limit is a setting */
	RUN("triad", "--n", "1000", "--exec-max-elements", "2999");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(r.err, "(JOB_TOO_LARGE)"));

	/* --json: the problem POST /run would answer, with its members */
	RUN("triad", "--n", "1000000000", "--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	p = parsed();
	ck_assert_str_eq(str(p, "reason"), "JOB_TOO_LARGE");
	ck_assert_int_eq(integer(p, "status"), 413);
	ck_assert_int_eq(integer(p, "elements"), 3000000000);
	ck_assert_int_eq(integer(p, "limit"), 268435456);

	/* a device this host lacks, in the command line's words */
	RUN("saxpy", "--n", "4", "--device", "gpu:3");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(r.err, "acceld run: no device 'gpu:3' on this host (acceld report lists the devices) "
				"(UNKNOWN_DEVICE)\n");
	RUN("saxpy", "--n", "4", "--device", "gpu:3", "--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(str(parsed(), "reason"), "UNKNOWN_DEVICE");
	ck_assert_int_eq(integer(doc, "status"), 404);
	RUN("saxpy", "--n", "4", "--device", "cpu:0", "--backend", "opencl", "--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_str_eq(str(parsed(), "reason"), "UNSUPPORTED");
	ck_assert_int_eq(integer(doc, "status"), 422);

	/* 1.7e10 FLOP cannot finish in 1 ms on a CPU: refused before it runs */
	RUN("sgemm", "--square", "2048", "--timeout-ms", "1");
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_msg(strstr(r.err, "raise --timeout-ms") != NULL && strstr(r.err, "(WOULD_TIME_OUT)") != NULL, "%s",
		      r.err);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cli_run");
	TCase *tc = tcase_create("cli_run");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, argument_errors);
	tcase_add_test(tc, sizes_as_the_api_takes_them);
	tcase_add_test(tc, too_many_arguments);
	tcase_add_test(tc, help);
	tcase_add_test(tc, a_job_as_text);
	tcase_add_test(tc, a_job_as_json);
	tcase_add_test(tc, seeds_and_full_output);
	tcase_add_test(tc, refusals);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
