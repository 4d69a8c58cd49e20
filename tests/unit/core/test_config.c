/*
 * Unit tests for config.c: parsers (sizes in every unit a person types), durations and sizes written in natural
 * units, precedence flag > env > file > default, validation messages with ranges in units, the help of every setting
 * or a few, the effective configuration for a person, redaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core/config.h"

/* A fake environment: NAME=VALUE pairs set by each test. */
static const char *fake_env[16][2];
static size_t fake_n;

static const char *fenv(const char *name)
{
	for (size_t i = 0; i < fake_n; i++)
		if (strcmp(fake_env[i][0], name) == 0)
			return fake_env[i][1];
	return NULL;
}

static void env_set(const char *name, const char *value)
{
	fake_env[fake_n][0] = name;
	fake_env[fake_n][1] = value;
	fake_n++;
}

static void setup(void)
{
	fake_n = 0;
}

static int load(struct config *cfg, char *err, size_t errsz, int argc, char **argv)
{
	return config_load(cfg, argc, argv, fenv, err, errsz);
}

START_TEST(defaults)
{
	struct config cfg;
	char err[512];

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 0, NULL), 0);
	ck_assert_str_eq(cfg.listen_host, "127.0.0.1");
	ck_assert_uint_eq(cfg.listen_port, 9470);
	ck_assert_str_eq(cfg.db_path, "var/acceld.db");
	ck_assert_uint_eq(cfg.idle_timeout_ms, 30000);
	ck_assert_uint_eq(cfg.max_body, 1048576);
	ck_assert_uint_eq(cfg.shutdown_grace_ms, 10000);
	ck_assert_int_eq(cfg.prefer, PREFER_AUTO);
	ck_assert(cfg.allow_tpu);
	ck_assert_uint_eq(cfg.tpu_batch_factor, 128);
	ck_assert_ptr_null(cfg.token);
	config_release(&cfg);
}
END_TEST

START_TEST(precedence_flag_env_file)
{
	struct config cfg;
	char err[512];
	char path[] = "/tmp/acceld-config-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	char *argv[] = {"--config", path, "--idle-timeout", "7s"};

	fprintf(f, "# comment\nACCELD_IDLE_TIMEOUT = 5\nmax-body=\"2MiB\"\nCOMPUTE_PREFER=cpu\n");
	fclose(f);
	env_set("COMPUTE_PREFER", "gpu");
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 4, argv), 0);
	ck_assert_uint_eq(cfg.idle_timeout_ms, 7000);  /* flag beats file */
	ck_assert_uint_eq(cfg.max_body, 2097152);      /* file beats default */
	ck_assert_int_eq(cfg.prefer, PREFER_GPU);      /* env beats file */
	config_release(&cfg);
	unlink(path);
}
END_TEST

START_TEST(bad_value_names_setting)
{
	struct config cfg;
	char err[512];
	char *argv[] = {"--idle-timeout=-5"};

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 1, argv), -1);
	ck_assert_ptr_nonnull(strstr(err, "--idle-timeout"));
	ck_assert_ptr_nonnull(strstr(err, "ACCELD_IDLE_TIMEOUT"));
	ck_assert_ptr_nonnull(strstr(err, "'-5'"));
	ck_assert_ptr_nonnull(strstr(err, "expected a duration"));
	config_release(&cfg);
}
END_TEST

START_TEST(bad_env_enum)
{
	struct config cfg;
	char err[512];

	env_set("COMPUTE_PREFER", "fpga");
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 0, NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "COMPUTE_PREFER"));
	ck_assert_ptr_nonnull(strstr(err, "auto|cpu|gpu|tpu"));
	ck_assert_ptr_nonnull(strstr(err, "'fpga'"));
	config_release(&cfg);
}
END_TEST

START_TEST(unknown_flag_and_missing_value)
{
	struct config cfg;
	char err[512];
	char *a1[] = {"--nope"};
	char *a2[] = {"--listen"};
	char *a3[] = {"stray"};

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 1, a1), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown option '--nope'"));
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 1, a2), -1);
	ck_assert_ptr_nonnull(strstr(err, "needs a value"));
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 1, a3), -1);
	config_release(&cfg);
}
END_TEST

START_TEST(help_flag)
{
	struct config cfg;
	char err[512];
	char *argv[] = {"--help"};

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 1, argv), 1);
	config_release(&cfg);
}
END_TEST

START_TEST(listen_forms)
{
	struct config cfg;
	char err[512];
	char *v6[] = {"--listen", "[::1]:0"};
	char *bad[] = {"--listen", "localhost"};
	char *port[] = {"--listen", "0.0.0.0:70000"};
	char *any[] = {"--listen", ":18499"};
	char *empty[] = {"--listen", ":"};

	/* ":PORT" is every IPv4 interface, as Go's and Prometheus's listen addresses read it */
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, any), 0);
	ck_assert_str_eq(cfg.listen_host, "0.0.0.0");
	ck_assert_uint_eq(cfg.listen_port, 18499);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, empty), -1);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, v6), 0);
	ck_assert_str_eq(cfg.listen_host, "::1");
	ck_assert_uint_eq(cfg.listen_port, 0);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, bad), -1);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, port), -1);
	config_release(&cfg);
}
END_TEST

START_TEST(health_listen)
{
	struct config cfg;
	char err[512];
	char *flag[] = {"--health-listen", "[::1]:9471"};
	char *same[] = {"--listen", "0.0.0.0:9470", "--health-listen", "0.0.0.0:9470"};
	char *both_free[] = {"--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"};
	char *bad[] = {"--health-listen", "9471"};
	char path[] = "/tmp/acceld-config-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	char *file[] = {"--config", path};
	json_t *j;

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 0, NULL), 0);
	ck_assert_ptr_null(cfg.health_listen); /* off by default */
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, flag), 0);
	ck_assert_str_eq(cfg.health_listen_host, "::1");
	ck_assert_uint_eq(cfg.health_listen_port, 9471);
	ck_assert_str_eq(cfg.listen_host, "127.0.0.1"); /* the main address is left alone */
	ck_assert_uint_eq(cfg.listen_port, 9470);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 4, same), -1);
	ck_assert_ptr_nonnull(strstr(err, "--health-listen"));
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 4, both_free), 0); /* two free ports are two ports */
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, bad), -1);
	ck_assert_ptr_nonnull(strstr(err, "ACCELD_HEALTH_LISTEN"));
	config_release(&cfg);

	/* flag > environment > file */
	ck_assert_ptr_nonnull(f);
	fputs("ACCELD_HEALTH_LISTEN=127.0.0.1:9001\n", f);
	fclose(f);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, file), 0);
	ck_assert_uint_eq(cfg.health_listen_port, 9001);
	config_release(&cfg);
	env_set("ACCELD_HEALTH_LISTEN", "127.0.0.1:9002");
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, file), 0);
	ck_assert_uint_eq(cfg.health_listen_port, 9002);
	j = config_to_json(&cfg);
	ck_assert_str_eq(json_string_value(json_object_get(j, "ACCELD_HEALTH_LISTEN")), "127.0.0.1:9002");
	json_decref(j);
	config_release(&cfg);
	unlink(path);
}
END_TEST

START_TEST(parsers)
{
	uint64_t v;
	bool b;

	ck_assert_int_eq(config_parse_duration_ms("30", &v), 0);
	ck_assert_uint_eq(v, 30000);
	ck_assert_int_eq(config_parse_duration_ms("500ms", &v), 0);
	ck_assert_uint_eq(v, 500);
	ck_assert_int_eq(config_parse_duration_ms("2m", &v), 0);
	ck_assert_uint_eq(v, 120000);
	ck_assert_int_eq(config_parse_duration_ms("1h", &v), 0);
	ck_assert_uint_eq(v, 3600000);
	ck_assert_int_eq(config_parse_duration_ms("1.5s", &v), -1);
	ck_assert_int_eq(config_parse_duration_ms("s", &v), -1);
	ck_assert_int_eq(config_parse_duration_ms("99999999999999999999h", &v), -1);
	ck_assert_int_eq(config_parse_size("64KiB", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(config_parse_size("17179869184GiB", &v), -1); /* overflows 64 bits */
	ck_assert_int_eq(config_parse_size("1 MiB", &v), -1);
	ck_assert_int_eq(config_parse_u64("18446744073709551615", &v), 0);
	ck_assert_int_eq(config_parse_u64("18446744073709551616", &v), -1);
	ck_assert_int_eq(config_parse_u64("005555550000007044477", &v), 0); /* leading zeros: a fuzzer's find */
	ck_assert_uint_eq(v, 5555550000007044477ull);
	ck_assert_int_eq(config_parse_u64("-1", &v), -1);
	ck_assert_int_eq(config_parse_bool("YES", &b), 0);
	ck_assert(b);
	ck_assert_int_eq(config_parse_bool("off", &b), 0);
	ck_assert(!b);
	ck_assert_int_eq(config_parse_bool("maybe", &b), -1);
}
END_TEST

/* The units a person types: binary with an i, decimal without, in any case, the B optional. */
START_TEST(size_units)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} ok[] = {
		{"0", 0},
		{"1048576", 1048576},
		{"512B", 512},
		{"512b", 512},
		{"64KiB", 65536},
		{"64kib", 65536},
		{"64Ki", 65536},
		{"64KB", 64000},
		{"64kb", 64000},
		{"64k", 64000},
		{"1MiB", 1048576},
		{"1Mi", 1048576},
		{"1MB", 1000000},
		{"1M", 1000000},
		{"2GiB", 2147483648ull},
		{"2gi", 2147483648ull},
		{"2GB", 2000000000},
		{"2g", 2000000000},
		{"1TiB", 1099511627776ull},
		{"1ti", 1099511627776ull},
		{"1TB", 1000000000000ull},
		{"1t", 1000000000000ull},
		{"16777215TiB", 18446742974197923840ull},
	};
	static const char *const bad[] = {"", "B", "KiB", "1.5GiB", "1 MiB", "-1", "1PiB", "1KiBs", "1iB", "1bk",
					  "16777216TiB", "18446744073709551616"};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 7;
		ck_assert_msg(config_parse_size(ok[i].text, &v) == 0, "'%s' refused", ok[i].text);
		ck_assert_msg(v == ok[i].bytes, "'%s' read as %llu", ok[i].text, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(config_parse_size(bad[i], &v) == -1, "'%s' taken", bad[i]);
}
END_TEST

/* A duration or size written back in the largest unit that holds it whole, and read back the same. */
START_TEST(natural_units)
{
	static const struct {
		uint64_t value;
		const char *text;
	} durations[] = {{0, "0s"}, {1, "1ms"}, {1500, "1500ms"}, {30000, "30s"}, {90000, "90s"}, {120000, "2m"},
			 {3600000, "1h"}, {86400000, "24h"}, {2592000000ull, "720h"}},
	  sizes[] = {{0, "0"}, {1000, "1KB"}, {1024, "1KiB"}, {8192, "8KiB"}, {32768, "32KiB"}, {1000000, "1MB"},
		     {1048576, "1MiB"}, {268435456, "256MiB"}, {14000000000ull, "14GB"}, {1099511627776ull, "1TiB"},
		     {12345, "12345"}};
	char text[32];
	uint64_t v;

	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		config_format_duration(durations[i].value, text, sizeof(text));
		ck_assert_str_eq(text, durations[i].text);
		ck_assert_int_eq(config_parse_duration_ms(text, &v), 0);
		ck_assert_uint_eq(v, durations[i].value);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		config_format_size(sizes[i].value, text, sizeof(text));
		ck_assert_str_eq(text, sizes[i].text);
		ck_assert_int_eq(config_parse_size(text, &v), 0);
		ck_assert_uint_eq(v, sizes[i].value);
	}
}
END_TEST

/* Ranges in messages read in natural units, and a size setting takes every unit. */
START_TEST(ranges_in_units)
{
	struct config cfg;
	char err[512];
	char *small[] = {"--max-body", "1k"};       /* 1000 bytes: below the 1KiB least */
	char *big[] = {"--max-body", "1GB"};
	char *soon[] = {"--retention-raw", "1s"};
	char *fine[] = {"--max-body", "2mb", "--conn-memory", "64Ki"};

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, small), -1);
	ck_assert_msg(strstr(err, "'1k' given; expected a size from 1KiB to 256MiB, such as 65536, 64KiB or 1MB "
				  "(KiB, MiB, GiB, TiB count in 1024s; KB, MB, GB, TB in 1000s)") != NULL,
		      "%s", err);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, big), -1);
	ck_assert_ptr_nonnull(strstr(err, "from 1KiB to 256MiB"));
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, soon), -1);
	ck_assert_msg(strstr(err, "expected a duration from 1m to 720h, such as 30s") != NULL, "%s", err);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 4, fine), 0);
	ck_assert_uint_eq(cfg.max_body, 2000000);
	ck_assert_uint_eq(cfg.conn_memory, 65536);
	config_release(&cfg);
}
END_TEST

/* The help: every setting, or the ones a command names; the effective values for a person. */
START_TEST(usage_and_print)
{
	static const char *const some[] = {"prefer", "max-body", "no-such-setting", NULL};
	struct config cfg;
	char err[512];
	char *argv[] = {"--idle-timeout", "90s", "--token", "s3cret"};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&text, &len);
	config_usage(f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "Sizes take KiB, MiB, GiB, TiB (powers of\n1024) or KB, MB, GB, TB"));
	ck_assert_ptr_nonnull(strstr(text, "ACCELD_LISTEN"));
	ck_assert_ptr_nonnull(strstr(text, "ACCELD_CHECK_CLOCK_PERCENT"));
	ck_assert_ptr_nonnull(strstr(text, "duration from 1s to 1h\n")); /* idle-timeout; brief, no examples */
	/* every line fits CONFIG_HELP_WIDTH columns: texts wrap at words, a long default goes below its flag */
	for (char *line = text, *end; *line != '\0'; line = end + (*end != '\0')) {
		end = strchrnul(line, '\n');
		ck_assert_int_le(end - line, CONFIG_HELP_WIDTH);
	}
	ck_assert_ptr_nonnull(strstr(text, "  --pjrt-search              ACCELD_PJRT_SEARCH\n      default $VIRTUAL_ENV"));
	free(text);

	f = open_memstream(&text, &len);
	config_usage_of(f, some);
	fclose(f);
	ck_assert_msg(strncmp(text, "  --prefer ", 11) == 0, "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\n  --max-body "));
	ck_assert_ptr_nonnull(strstr(text, "; a size from 1KiB to 256MiB\n"));
	ck_assert_ptr_null(strstr(text, "ACCELD_LISTEN"));
	free(text);

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 4, argv), 0);
	f = open_memstream(&text, &len);
	config_print(&cfg, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_IDLE_TIMEOUT            90s\n"));
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_MAX_BODY                1MiB\n"));
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_RETENTION_HOUR          9600h\n"));
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_TOKEN                   [redacted]\n"));
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_TLS_CERT                (unset)\n"));
	ck_assert_ptr_nonnull(strstr(text, "  ACCELD_ACCESS_LOG              true\n"));
	ck_assert_ptr_null(strstr(text, "s3cret"));
	free(text);
	config_release(&cfg);
}
END_TEST

START_TEST(token_redacted_and_file)
{
	struct config cfg;
	char err[512];
	char path[] = "/tmp/acceld-token-XXXXXX";
	int fd = mkstemp(path);
	char *argv[] = {"--token-file", path};
	json_t *j;
	char *text;

	ck_assert_int_eq(write(fd, "  s3cret-token \n", 16), 16);
	close(fd);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, argv), 0);
	ck_assert_str_eq(cfg.token, "s3cret-token");
	j = config_to_json(&cfg);
	text = json_dumps(j, 0);
	ck_assert_ptr_null(strstr(text, "s3cret"));
	free(text);
	json_decref(j);
	config_release(&cfg);

	env_set("ACCELD_TOKEN", "other");
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, argv), -1);
	ck_assert_ptr_nonnull(strstr(err, "not both"));
	config_release(&cfg);
	unlink(path);
}
END_TEST

START_TEST(secret_not_echoed_in_error)
{
	struct config cfg;
	char err[512];
	char *argv[] = {"--token", ""};

	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, argv), -1);
	ck_assert_ptr_nonnull(strstr(err, "[redacted]"));
	config_release(&cfg);
}
END_TEST

START_TEST(file_errors)
{
	struct config cfg;
	char err[512];
	char path[] = "/tmp/acceld-config-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	char *argv[] = {"--config", path};
	char *missing[] = {"--config", "/nonexistent/acceld.conf"};

	fprintf(f, "ACCELD_LISTEN=127.0.0.1:1\nNOT_A_SETTING=1\n");
	fclose(f);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, argv), -1);
	ck_assert_ptr_nonnull(strstr(err, ":2: unknown setting 'NOT_A_SETTING'"));
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, missing), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read config file"));
	config_release(&cfg);
	unlink(path);
}
END_TEST

START_TEST(counts)
{
	uint64_t v = 0;

	ck_assert_int_eq(config_parse_count("7000000000", &v), 0);
	ck_assert_uint_eq(v, 7000000000ull);
	ck_assert_int_eq(config_parse_count("7B", &v), 0);
	ck_assert_uint_eq(v, 7000000000ull);
	ck_assert_int_eq(config_parse_count("6.7b", &v), 0);
	ck_assert_uint_eq(v, 6700000000ull);
	ck_assert_int_eq(config_parse_count("1.5T", &v), 0);
	ck_assert_uint_eq(v, 1500000000000ull);
	ck_assert_int_eq(config_parse_count("100M", &v), 0);
	ck_assert_uint_eq(v, 100000000ull);
	ck_assert_int_eq(config_parse_count("2k", &v), 0);
	ck_assert_uint_eq(v, 2000ull);
	ck_assert_int_eq(config_parse_count("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	/* refused: decimals without a suffix, more than 3 decimals, two suffixes, overflow, signs, spaces */
	ck_assert_int_eq(config_parse_count("1.5", &v), -1);
	ck_assert_int_eq(config_parse_count("1.2345B", &v), -1);
	ck_assert_int_eq(config_parse_count("7BB", &v), -1);
	ck_assert_int_eq(config_parse_count("18446744073709551616", &v), -1);
	ck_assert_int_eq(config_parse_count("20000000000T", &v), -1);
	ck_assert_int_eq(config_parse_count("-7B", &v), -1);
	ck_assert_int_eq(config_parse_count("7 B", &v), -1);
	ck_assert_int_eq(config_parse_count("", &v), -1);
	ck_assert_int_eq(config_parse_count("B", &v), -1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, precedence_flag_env_file);
	tcase_add_test(tc, bad_value_names_setting);
	tcase_add_test(tc, bad_env_enum);
	tcase_add_test(tc, unknown_flag_and_missing_value);
	tcase_add_test(tc, help_flag);
	tcase_add_test(tc, listen_forms);
	tcase_add_test(tc, health_listen);
	tcase_add_test(tc, parsers);
	tcase_add_test(tc, size_units);
	tcase_add_test(tc, natural_units);
	tcase_add_test(tc, ranges_in_units);
	tcase_add_test(tc, usage_and_print);
	tcase_add_test(tc, token_redacted_and_file);
	tcase_add_test(tc, secret_not_echoed_in_error);
	tcase_add_test(tc, file_errors);
	tcase_add_test(tc, counts);
	suite_add_tcase(s, tc);
	return s;
}
