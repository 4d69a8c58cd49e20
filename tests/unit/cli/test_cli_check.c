/*
 * Unit tests for cli_check.c: `acceld check` called in-process on this host's CPU and the tpu-v6e-8 fixture's chips
 * (which no backend runs jobs on), its output captured. Argument errors (a flag without its value, an unknown level
 * or backend, a duration out of range or without the long level, a device id too long, too many arguments, a bad
 * setting) are exit 2 with the usage on stderr; --help is exit 0, whatever else is given. A device that cannot be
 * checked (unknown, no backend, a backend it lacks) is exit 2, said on stderr or listed under "skipped" with --json.
 * A quick check of the CPU, with thresholds no figure can miss, passes: exit 0, its lines of text, or the JSON
 * document with the chips skipped beside it, and nothing on stderr (the checks' info lines are not logged unless
 * asked). The thresholds make the verdict certain; what the CPU measures is not asserted.
 */
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "cli/cli_check.h"

static char tmp[64];
static struct check_cli_run r;
static json_t *doc;

#define CHECK(...)                                                                                                 \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, cli_check_main, __VA_ARGS__, (const char *)NULL);                               \
	} while (0)

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli-check");
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

static json_t *parsed(void)
{
	return check_cli_json(&r, &doc);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Exit 2, nothing on stdout, "acceld check: <text>" on stderr, the usage after it when usage is set. */
static void usage_error(const char *text, bool usage)
{
	ck_assert_msg(r.rc == CLI_EXIT_USAGE, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld check: ", 14) == 0 && strstr(r.err, text) != NULL, "'%s' not in: %s",
		      text, r.err);
	ck_assert_int_eq(strstr(r.err, "\nusage: acceld check ") != NULL, usage);
}

START_TEST(argument_errors)
{
	char long_id[80];
	const char *argv[130];

	CHECK("--level");
	usage_error("--level needs a value", true);
	CHECK("--level", "medium");
	usage_error("invalid --level 'medium'; accepted: quick, long", true);
	CHECK("--duration", "4", "--level", "long");
	usage_error("invalid --duration '4'; accepted: a duration from 5s to 1h, such as 120 (seconds) or 2m", true);
	CHECK("--level", "long", "--duration", "3601");
	usage_error("invalid --duration '3601'", true);
	CHECK("--level", "long", "--duration", "61m");
	usage_error("invalid --duration '61m'", true);
	CHECK("--duration", "ten");
	usage_error("invalid --duration 'ten'", true);
	CHECK("--duration", "10");
	usage_error("--duration applies to --level long only", true);
	CHECK("--backend", "cuda");
	usage_error("invalid --backend 'cuda'; accepted: ", true);
	ck_assert_msg(strstr(r.err, "native") != NULL && strstr(r.err, "opencl") != NULL, "%s", r.err);
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	CHECK("--device", long_id);
	usage_error("invalid --device 'xxxx", true);
	/* settings are the configuration's */
	CHECK("--check-warn-percent", "101");
	usage_error("--check-warn-percent", false);
	CHECK("--check-warn-percent", "10", "--check-fail-percent", "20");
	usage_error("a failure must be worse than a warning", false);
	CHECK("--colour");
	usage_error("unknown option '--colour'", false);

	for (int i = 0; i < 129; i++)
		argv[i] = "--access-log";
	check_cli_release(&r);
	check_cli_callv(&r, cli_check_main, 129, argv);
	usage_error("too many arguments", true);
}
END_TEST

START_TEST(help)
{
	CHECK("--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "usage: acceld check [--device ID] [--level quick|long]", 54) == 0, "%.100s",
		      r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "Exit status: 0 every device passes,\n1 one warns or fails, 2 no check"));
	ck_assert_ptr_nonnull(strstr(r.out, "ACCELD_CHECK_WARN_PERCENT"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN")); /* a service setting: in acceld help settings */
	/* before the arguments and the environment are read */
	setenv("ACCELD_CHECK_WARN_PERCENT", "lots", 1);
	CHECK("--level", "medium", "-h");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
}
END_TEST

/* A device named that cannot be checked: exit 2 and no check runs. */
START_TEST(devices_that_cannot_be_checked)
{
	json_t *skipped;

	CHECK("--device", "gpu:9");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(r.out, "");
	ck_assert_str_eq(r.err, "acceld check: no device 'gpu:9' (see acceld report)\n");

	/* found, but no backend runs jobs on it */
	CHECK("--device", "tpu:0");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld check: tpu:0 not checked: ", 33) == 0 &&
			      strstr(r.err, "no backend of acceld runs jobs on it") != NULL,
		      "%s", r.err);

	/* --json: the same in the document, with the exit code */
	CHECK("--device", "tpu:0", "--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(r.err, "");
	parsed();
	ck_assert(json_is_null(json_object_get(doc, "verdict")));
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "checks")), 0);
	skipped = json_object_get(doc, "skipped");
	ck_assert_uint_eq(json_array_size(skipped), 1);
	ck_assert_str_eq(str(json_array_get(skipped, 0), "device"), "tpu:0");
	ck_assert_str_eq(str(json_array_get(skipped, 0), "reason"), "UNSUPPORTED");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "exit_code")), CLI_EXIT_USAGE);

	/* a backend the device lacks (no OpenCL platform here) */
	CHECK("--device", "cpu:0", "--backend", "opencl");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_msg(strstr(r.err, "acceld check: cpu:0 not checked: the opencl backend does not run jobs on cpu:0") !=
			      NULL,
		      "%s", r.err);
}
END_TEST

/* Every device: the CPU is checked, the chips are skipped; thresholds of 0 % make the CPU's verdict a pass. */
START_TEST(a_quick_check_as_json)
{
	json_t *checks;
	json_t *c;
	json_t *skipped;
	size_t i;
	json_t *v;

	CHECK("--json", "--check-warn-percent", "0", "--check-fail-percent", "0");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s %s", r.rc, r.out, r.err);
	ck_assert_str_eq(r.err, "");
	parsed();
	ck_assert_str_eq(str(doc, "verdict"), "pass");
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "exit_code")), CLI_EXIT_OK);
	checks = json_object_get(doc, "checks");
	ck_assert_uint_eq(json_array_size(checks), 1);
	c = json_array_get(checks, 0);
	ck_assert_str_eq(str(c, "device"), "cpu:0");
	ck_assert_str_eq(str(c, "level"), "quick");
	ck_assert_str_eq(str(c, "trigger"), "cli");
	ck_assert_str_eq(str(c, "state"), "succeeded");
	ck_assert_str_eq(str(c, "verdict"), "pass");
	ck_assert_str_eq(str(c, "backend"), "native");
	ck_assert_msg(strncmp(str(c, "id"), "chk-", 4) == 0, "%s", str(c, "id"));
	ck_assert_uint_ge(json_array_size(json_object_get(c, "tests")), 2);
	json_array_foreach(json_object_get(c, "tests"), i, v)
		ck_assert_msg(json_is_true(json_object_get(v, "verified")) || json_object_get(v, "verified") == NULL,
			      "%s not verified", str(v, "name"));
	skipped = json_object_get(doc, "skipped");
	ck_assert_uint_eq(json_array_size(skipped), 8);
	json_array_foreach(skipped, i, v)
		ck_assert_str_eq(str(v, "reason"), "UNSUPPORTED");
}
END_TEST

START_TEST(a_quick_check_as_text)
{
	CHECK("--device", "cpu:0", "--level", "quick", "--check-warn-percent", "0", "--check-fail-percent", "0");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s %s", r.rc, r.out, r.err);
	ck_assert_str_eq(r.err, "");
	/* "cpu:0 pass (MODEL, quick check chk-..., 3.4 s): RULE", then a line per test */
	ck_assert_msg(strncmp(r.out, "cpu:0 pass (", 12) == 0 && strstr(r.out, ", quick check chk-") != NULL, "%s",
		      r.out);
	ck_assert_msg(strstr(r.out, "\n  sgemm     pass ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "\n  triad     pass ") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, " GFLOP/s") != NULL, "%s", r.out);
	ck_assert_int_eq(r.out[strlen(r.out) - 1], '\n');
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cli_check");
	TCase *tc = tcase_create("cli_check");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, argument_errors);
	tcase_add_test(tc, help);
	tcase_add_test(tc, devices_that_cannot_be_checked);
	tcase_add_test(tc, a_quick_check_as_json);
	tcase_add_test(tc, a_quick_check_as_text);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
