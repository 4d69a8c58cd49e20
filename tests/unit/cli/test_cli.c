/*
 * Unit tests for cli.c, the configuration loading every command shares, with stdout and stderr captured: the exit
 * codes' values; settings from flags, the process environment and a config file, in that precedence, and the log
 * level they name; --help printing the command's usage (or the settings under a generic usage line) on stdout with
 * exit 0; a bad flag, environment value, config file line or missing config file ending in exit 2 with one line on
 * stderr that names the command and what is wrong, and nothing on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "core/log.h"

static char tmp[64];
static struct config cfg;
static char *out;
static char *err;
static int usage_calls;
static FILE *usage_out;

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli");
	check_cli_env(tmp, NULL);
	out = err = NULL;
	usage_calls = 0;
	usage_out = NULL;
}

static void teardown(void)
{
	free(out);
	free(err);
	check_rmtree(tmp);
}

static void custom_usage(FILE *f)
{
	usage_calls++;
	usage_out = f;
	fprintf(f, "usage: acceld unit [--thing]\n");
}

/* Calls cli_load_config("unit", argv...) with its output captured; returns whether cfg was loaded. */
static bool load(void (*usage)(FILE *), int *rc, const char *const *args)
{
	char *argv[16];
	int argc = 0;
	struct check_capture c;
	bool loaded;

	for (; args[argc] != NULL; argc++) {
		ck_assert_int_lt(argc, 15);
		argv[argc] = strdup(args[argc]);
	}
	argv[argc] = NULL;
	free(out);
	free(err);
	*rc = -1;
	check_capture_begin(&c);
	loaded = cli_load_config(&cfg, "unit", argc, argv, usage, rc);
	check_capture_end(&c, &out, &err);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return loaded;
}

/* A refusal: exit 2, nothing on stdout, one line on stderr holding each text. */
static void refused(const char *const *args, const char *const *texts)
{
	int rc;

	usage_calls = 0;
	ck_assert(!load(custom_usage, &rc, args));
	ck_assert_int_eq(rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(usage_calls, 0);
	ck_assert_msg(strncmp(err, "acceld unit: ", 13) == 0, "%s", err);
	ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
	for (size_t i = 0; texts[i] != NULL; i++)
		ck_assert_msg(strstr(err, texts[i]) != NULL, "'%s' not in: %s", texts[i], err);
}

START_TEST(exit_codes)
{
	/* scripts and probes rely on the numbers */
	ck_assert_int_eq(CLI_EXIT_OK, 0);
	ck_assert_int_eq(CLI_EXIT_FAIL, 1);
	ck_assert_int_eq(CLI_EXIT_USAGE, 2);
}
END_TEST

START_TEST(settings_load)
{
	char file[128];
	char flag[160];
	int rc = -1;

	snprintf(file, sizeof(file), "%s/acceld.conf", tmp);
	check_write_file(file, "# a comment\nACCELD_THREADS=3\nACCELD_DB=\"from-file.db\"\nACCELD_LOG_LEVEL=error\n");
	snprintf(flag, sizeof(flag), "--config=%s", file);

	ck_assert(load(NULL, &rc, (const char *const[]){flag, NULL}));
	ck_assert_int_eq(rc, -1); /* left alone when loaded */
	ck_assert_uint_eq(cfg.threads, 3);
	ck_assert_str_eq(cfg.db_path, "from-file.db");
	/* the level the settings name is the process's from now on */
	ck_assert(!log_enabled(LOGL_WARN));
	ck_assert(log_enabled(LOGL_ERROR));
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(err, "");
	config_release(&cfg);

	/* the environment over the file, flags over both */
	setenv("ACCELD_CONFIG", file, 1);
	setenv("ACCELD_THREADS", "5", 1);
	setenv("ACCELD_LOG_LEVEL", "debug", 1);
	ck_assert(load(NULL, &rc, (const char *const[]){"--db", ":memory:", NULL}));
	ck_assert_str_eq(cfg.config_file, file);
	ck_assert_uint_eq(cfg.threads, 5);
	ck_assert_str_eq(cfg.db_path, ":memory:");
	ck_assert(log_enabled(LOGL_DEBUG));
	config_release(&cfg);
	ck_assert(load(NULL, &rc, (const char *const[]){"--threads=7", "--log-level", "warn", NULL}));
	ck_assert_uint_eq(cfg.threads, 7);
	ck_assert(!log_enabled(LOGL_INFO));
	ck_assert(log_enabled(LOGL_WARN));
	config_release(&cfg);
}
END_TEST

START_TEST(help_prints_usage)
{
	int rc = -1;

	/* the command's own usage, on stdout */
	ck_assert(!load(custom_usage, &rc, (const char *const[]){"--threads", "2", "--help", NULL}));
	ck_assert_int_eq(rc, CLI_EXIT_OK);
	ck_assert_int_eq(usage_calls, 1);
	ck_assert_ptr_eq(usage_out, stdout);
	ck_assert_str_eq(out, "usage: acceld unit [--thing]\n");
	ck_assert_str_eq(err, "");

	/* none: a generic line, then every setting */
	ck_assert(!load(NULL, &rc, (const char *const[]){"-h", NULL}));
	ck_assert_int_eq(rc, CLI_EXIT_OK);
	ck_assert_msg(strncmp(out, "usage: acceld unit ... [SETTINGS]\n\n", 35) == 0, "%.200s", out);
	ck_assert_ptr_nonnull(strstr(out, "ACCELD_LISTEN"));
	ck_assert_ptr_nonnull(strstr(out, "COMPUTE_PREFER"));
	ck_assert_ptr_nonnull(strstr(out, "--pjrt-plugins"));
	ck_assert_str_eq(err, "");

	/* settings are read in order: a bad one before --help ends the command first */
	refused((const char *const[]){"--threads", "many", "--help", NULL},
		(const char *const[]){"--threads", "'many'", NULL});
}
END_TEST

START_TEST(bad_flags)
{
	refused((const char *const[]){"--idle-timeout", "soon", NULL}, (const char *const[]){"--idle-timeout", "'soon'",
											     NULL});
	refused((const char *const[]){"--no-such-option", NULL},
		(const char *const[]){"unknown option '--no-such-option'", NULL});
	refused((const char *const[]){"stray", NULL}, (const char *const[]){"unexpected argument 'stray'", NULL});
	refused((const char *const[]){"--db", NULL}, (const char *const[]){"option --db needs a value", NULL});
	refused((const char *const[]){"--pjrt-plugins", "rocm=/x.so", NULL},
		(const char *const[]){"invalid --pjrt-plugins", "'rocm=/x.so'", NULL});
}
END_TEST

START_TEST(bad_environment)
{
	setenv("COMPUTE_PREFER", "fpga", 1);
	refused((const char *const[]){NULL},
		(const char *const[]){"COMPUTE_PREFER", "auto|cpu|gpu|tpu", "'fpga'", NULL});
	/* a flag does not hide a bad environment value: every source is checked */
	refused((const char *const[]){"--prefer", "cpu", NULL}, (const char *const[]){"COMPUTE_PREFER", NULL});
	unsetenv("COMPUTE_PREFER");
	setenv("ACCELD_MAX_BODY", "lots", 1);
	refused((const char *const[]){NULL}, (const char *const[]){"ACCELD_MAX_BODY", "'lots'", NULL});
}
END_TEST

START_TEST(bad_config_file)
{
	char file[128];
	char missing[128];

	snprintf(file, sizeof(file), "%s/bad.conf", tmp);
	check_write_file(file, "ACCELD_THREADS=2\nACCELD_MAX_BODY=lots\n");
	refused((const char *const[]){"--config", file, NULL},
		(const char *const[]){"ACCELD_MAX_BODY", "'lots'", NULL});
	check_write_file(file, "ACCELD_NOTHING=1\n");
	refused((const char *const[]){"--config", file, NULL},
		(const char *const[]){"bad.conf:1: unknown setting 'ACCELD_NOTHING'", NULL});
	snprintf(missing, sizeof(missing), "%s/missing.conf", tmp);
	setenv("ACCELD_CONFIG", missing, 1);
	refused((const char *const[]){NULL}, (const char *const[]){"cannot read config file", "missing.conf", NULL});
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, exit_codes);
	tcase_add_test(tc, settings_load);
	tcase_add_test(tc, help_prints_usage);
	tcase_add_test(tc, bad_flags);
	tcase_add_test(tc, bad_environment);
	tcase_add_test(tc, bad_config_file);
	suite_add_tcase(s, tc);
	return s;
}
