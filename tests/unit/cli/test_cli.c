/*
 * Unit tests for cli.c, what every command shares, with stdout and stderr captured: the exit codes' values; a help
 * request found anywhere among the arguments; the settings part of a command's help; settings from flags, the
 * process environment and a config file, in that precedence; the log level a command gets (warn unless its command
 * line asks, serve the configured one); a bad flag, environment value, config file line or missing config file
 * ending in exit 2 with one line on stderr that names the command and what is wrong, and nothing on stdout; the
 * API's field names said as flags and its endpoints as commands.
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

static void setup(void)
{
	check_tmpdir(tmp, sizeof(tmp), "cli");
	check_cli_env(tmp, NULL);
	out = err = NULL;
}

static void teardown(void)
{
	free(out);
	free(err);
	check_rmtree(tmp);
}

/* Calls cli_load_config("unit", argv..., logging) with its output captured; returns whether cfg was loaded. */
static bool load_as(enum cli_logging logging, int *rc, const char *const *args)
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
	loaded = cli_load_config(&cfg, "unit", argc, argv, logging, rc);
	check_capture_end(&c, &out, &err);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return loaded;
}

static bool load(int *rc, const char *const *args)
{
	return load_as(CLI_LOG_CONFIGURED, rc, args);
}

/* A refusal: exit 2, nothing on stdout, one line on stderr holding each text. */
static void refused(const char *const *args, const char *const *texts)
{
	int rc;

	ck_assert(!load(&rc, args));
	ck_assert_int_eq(rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(out, "");
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

	ck_assert(load(&rc, (const char *const[]){flag, NULL}));
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
	ck_assert(load(&rc, (const char *const[]){"--db", ":memory:", NULL}));
	ck_assert_str_eq(cfg.config_file, file);
	ck_assert_uint_eq(cfg.threads, 5);
	ck_assert_str_eq(cfg.db_path, ":memory:");
	ck_assert(log_enabled(LOGL_DEBUG));
	config_release(&cfg);
	ck_assert(load(&rc, (const char *const[]){"--threads=7", "--log-level", "warn", NULL}));
	ck_assert_uint_eq(cfg.threads, 7);
	ck_assert(!log_enabled(LOGL_INFO));
	ck_assert(log_enabled(LOGL_WARN));
	config_release(&cfg);
}
END_TEST

START_TEST(help_asked)
{
	char *none[] = {"--threads", "2"};
	char *late[] = {"saxpy", "--n", "4", "--help"};
	char *short_form[] = {"-h"};
	char *value[] = {"--helpful"};

	ck_assert(!cli_help_asked(0, NULL));
	ck_assert(!cli_help_asked(2, none));
	ck_assert(cli_help_asked(4, late)); /* anywhere, before any argument is judged */
	ck_assert(cli_help_asked(1, short_form));
	ck_assert(!cli_help_asked(1, value));
}
END_TEST

START_TEST(help_settings)
{
	static const char *const flags[] = {"prefer", "check-warn-percent", NULL};
	struct check_capture c;

	free(out);
	free(err);
	check_capture_begin(&c);
	cli_help_settings(stdout, flags);
	check_capture_end(&c, &out, &err);
	ck_assert_str_eq(err, "");
	ck_assert_msg(strstr(out, "acceld help settings") != NULL, "%s", out);
	/* the settings named, and the config file, which every command reads; not the others */
	ck_assert_ptr_nonnull(strstr(out, "--prefer"));
	ck_assert_ptr_nonnull(strstr(out, "COMPUTE_PREFER"));
	ck_assert_ptr_nonnull(strstr(out, "ACCELD_CHECK_WARN_PERCENT"));
	ck_assert_ptr_nonnull(strstr(out, "ACCELD_CONFIG"));
	ck_assert_ptr_null(strstr(out, "ACCELD_LISTEN"));
	ck_assert_ptr_null(strstr(out, "ACCELD_PJRT_SEARCH"));
}
END_TEST

START_TEST(log_levels)
{
	int rc = -1;

	/* serve logs at the configured level; info by default */
	ck_assert(load_as(CLI_LOG_CONFIGURED, &rc, (const char *const[]){NULL}));
	ck_assert(log_enabled(LOGL_INFO));
	config_release(&cfg);

	/* another command at warn, whatever the service's environment asks, unless its command line asks */
	setenv("ACCELD_LOG_LEVEL", "debug", 1);
	ck_assert(load_as(CLI_LOG_QUIET, &rc, (const char *const[]){NULL}));
	ck_assert(!log_enabled(LOGL_INFO));
	ck_assert(log_enabled(LOGL_WARN));
	config_release(&cfg);
	ck_assert(load_as(CLI_LOG_QUIET, &rc, (const char *const[]){"--log-level=debug", NULL}));
	ck_assert(log_enabled(LOGL_DEBUG));
	config_release(&cfg);
	ck_assert(load_as(CLI_LOG_VERBOSE, &rc, (const char *const[]){NULL}));
	ck_assert(log_enabled(LOGL_INFO));
	ck_assert(!log_enabled(LOGL_DEBUG));
	config_release(&cfg);
	ck_assert(load_as(CLI_LOG_VERBOSE, &rc, (const char *const[]){"--log-level", "error", NULL}));
	ck_assert(!log_enabled(LOGL_WARN));
	config_release(&cfg);
	/* a quieter setting is kept */
	setenv("ACCELD_LOG_LEVEL", "error", 1);
	ck_assert(load_as(CLI_LOG_QUIET, &rc, (const char *const[]){NULL}));
	ck_assert(!log_enabled(LOGL_WARN));
	ck_assert(log_enabled(LOGL_ERROR));
	config_release(&cfg);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(words)
{
	static const char *const fields[] = {"model_bytes", "params", "dtype", "timeout_ms", NULL};
	char text[128];

	cli_words("give model_bytes or params (with dtype), not both", fields, text, sizeof(text));
	ck_assert_str_eq(text, "give --model-bytes or --params (with --dtype), not both");
	/* a value in quotes is the user's, words inside other words are not fields, an apostrophe is no quote */
	cli_words("invalid dtype 'params'; the device's params_x dtypes raise timeout_ms", fields, text,
		       sizeof(text));
	ck_assert_str_eq(text, "invalid --dtype 'params'; the device's params_x dtypes raise --timeout-ms");
	/* cut to fit */
	cli_words("raise timeout_ms", fields, text, 10);
	ck_assert_str_eq(text, "raise --t");
	/* the endpoints a shared text points to, as the commands and settings that do the same */
	cli_words("no device 'gpu:3' (see GET /devices); set one with PUT /cost/prices or ACCELD_PRICES_FILE", NULL,
		  text, sizeof(text));
	ck_assert_str_eq(text, "no device 'gpu:3' (see acceld report); set one with acceld serve --prices-file "
			       "(ACCELD_PRICES_FILE)");
	cli_words("an instance_type entry in PUT /cost/prices", NULL, text, sizeof(text));
	ck_assert_str_eq(text, "an instance_type entry in acceld serve --prices-file");
	cli_words("see GET /devices/gpu:0/checks", NULL, text, sizeof(text)); /* another endpoint: left */
	ck_assert_str_eq(text, "see GET /devices/gpu:0/checks");
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
	/* a help request is the command's to answer before loading (cli_help_asked), not a setting */
	refused((const char *const[]){"--threads", "2", "--help", NULL},
		(const char *const[]){"--help is not a setting", NULL});
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
	tcase_add_test(tc, help_asked);
	tcase_add_test(tc, help_settings);
	tcase_add_test(tc, log_levels);
	tcase_add_test(tc, words);
	tcase_add_test(tc, bad_flags);
	tcase_add_test(tc, bad_environment);
	tcase_add_test(tc, bad_config_file);
	suite_add_tcase(s, tc);
	return s;
}
