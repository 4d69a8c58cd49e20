/*
 * Unit tests for log.c, reading back what it writes to fd 2: level names and the level filter, the head of a line
 * (time, level, severity, msg, component, in that order), every field type (null strings, 64-bit integers,
 * three-decimal and %g numbers, non-finite numbers as null, booleans), escaping of quotes, control characters and
 * non-ASCII bytes, log_json's embedded document, a line over 64 KiB replaced by a notice, buffered lines kept in
 * order behind a warning and written out by log_buffering_stop, and whole lines from concurrent threads.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "check_main.h"
#include "core/clock.h"
#include "core/log.h"

static struct check_capture cap;
static char *out;
static char *err;

static void begin(void)
{
	check_capture_begin(&cap);
}

/* Ends the capture; err holds what went to fd 2 (freed by the teardown). */
static void end(void)
{
	free(out);
	free(err);
	check_capture_end(&cap, &out, &err);
}

static void setup(void)
{
	out = err = NULL;
}

static void teardown(void)
{
	free(out);
	free(err);
	out = err = NULL;
}

/* The lines of text, split in place; returns how many (at most max). */
static size_t lines(char *text, char **v, size_t max)
{
	size_t n = 0;

	for (char *p = text; *p != '\0' && n < max;) {
		char *nl = strchr(p, '\n');

		ck_assert_msg(nl != NULL, "a line without its newline: %s", p);
		*nl = '\0';
		v[n++] = p;
		p = nl + 1;
	}
	return n;
}

/* The one line of err as parsed JSON (decref it), checking it is one line. */
static json_t *one_line(void)
{
	json_error_t e;
	json_t *doc;
	size_t len = strlen(err);

	ck_assert_msg(len > 0 && err[len - 1] == '\n' && strchr(err, '\n') == err + len - 1, "not one line: %s", err);
	doc = json_loads(err, 0, &e);
	ck_assert_msg(doc != NULL, "%s: %s", e.text, err);
	return doc;
}

static const char *member(json_t *doc, const char *key)
{
	return json_string_value(json_object_get(doc, key));
}

START_TEST(level_names)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	enum log_level l = LOGL_ERROR;

	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(log_parse_level(names[i], &l), 0);
		ck_assert_int_eq(l, i);
	}
	l = LOGL_INFO;
	ck_assert_int_eq(log_parse_level("warning", &l), -1);
	ck_assert_int_eq(log_parse_level("WARN", &l), -1);
	ck_assert_int_eq(log_parse_level("", &l), -1);
	ck_assert_int_eq(log_parse_level("info ", &l), -1);
	ck_assert_int_eq(l, LOGL_INFO); /* left alone on refusal */
}
END_TEST

/* Check runs this in a fresh child: the level is the default one until a test sets it. */
START_TEST(default_level_is_info)
{
	ck_assert(!log_enabled(LOGL_DEBUG));
	ck_assert(log_enabled(LOGL_INFO));
	ck_assert(log_enabled(LOGL_ERROR));
}
END_TEST

START_TEST(level_filter)
{
	log_set_level(LOGL_WARN);
	ck_assert(!log_enabled(LOGL_INFO));
	ck_assert(log_enabled(LOGL_WARN));
	begin();
	log_msg(LOGL_DEBUG, "unit", "debug line");
	log_msg(LOGL_INFO, "unit", "info line");
	log_fields(LOGL_INFO, "unit", "info fields", (struct log_field[]){LOG_I("n", 1)}, 1);
	log_json(LOGL_INFO, "unit", "info json", "doc", json_true());
	log_msg(LOGL_WARN, "unit", "warn line");
	log_msg(LOGL_ERROR, "unit", "error line");
	end();
	ck_assert_ptr_null(strstr(err, "debug line"));
	ck_assert_ptr_null(strstr(err, "info "));
	ck_assert_ptr_nonnull(strstr(err, "warn line"));
	ck_assert_ptr_nonnull(strstr(err, "error line"));

	log_set_level(LOGL_DEBUG);
	begin();
	log_msg(LOGL_DEBUG, "unit", "debug line");
	end();
	ck_assert_ptr_nonnull(strstr(err, "\"level\":\"debug\",\"severity\":\"DEBUG\""));
}
END_TEST

START_TEST(head_of_a_line)
{
	static const char *const severity[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
	static const char *const level[] = {"debug", "info", "warn", "error"};
	int64_t before;
	int64_t after;
	int64_t at;
	json_t *doc;

	log_set_level(LOGL_DEBUG);
	for (int i = LOGL_DEBUG; i <= LOGL_ERROR; i++) {
		char prefix[64];

		before = clock_real_ms();
		begin();
		log_msg((enum log_level)i, "store", "opened %s in %d ms", "var/acceld.db", 12);
		end();
		after = clock_real_ms();
		doc = one_line();
		/* the members in their documented order, the message formatted */
		ck_assert_msg(strncmp(err, "{\"time\":\"", 9) == 0, "%s", err);
		snprintf(prefix, sizeof(prefix), "Z\",\"level\":\"%s\",\"severity\":\"%s\",\"msg\":", level[i],
			 severity[i]);
		ck_assert_msg(strstr(err, prefix) == err + 9 + 23, "%s", err);
		ck_assert_msg(strstr(err, "\"msg\":\"opened var/acceld.db in 12 ms\",\"component\":\"store\"}\n") !=
				      NULL,
			      "%s", err);
		ck_assert_uint_eq(json_object_size(doc), 5);
		/* an RFC 3339 UTC instant with milliseconds, between the clock's readings around the call */
		ck_assert_uint_eq(strlen(member(doc, "time")), 24);
		ck_assert_int_eq(clock_parse_rfc3339(member(doc, "time"), &at), 0);
		ck_assert_msg(before <= at && at <= after, "%lld not in [%lld, %lld]", (long long)at,
			      (long long)before, (long long)after);
		json_decref(doc);
	}
	/* no component: "main" */
	begin();
	log_fields(LOGL_INFO, NULL, "no component", NULL, 0);
	end();
	doc = one_line();
	ck_assert_str_eq(member(doc, "component"), "main");
	json_decref(doc);
}
END_TEST

START_TEST(fields_of_every_type)
{
	const struct log_field f[] = {
		LOG_S("s", "text"),       LOG_S("none", NULL),	    LOG_I("zero", 0),
		LOG_I("neg", -42),	  LOG_I("max", LLONG_MAX),  LOG_I("min", LLONG_MIN),
		LOG_D("ms", 12.3456),	  LOG_D("half", 2.5),	    LOG_D("round", 0.0004),
		LOG_D("big", 123456789.0), LOG_D("huge", 1e12),	    LOG_D("negd", -1.5),
		LOG_D("nan", NAN),	  LOG_D("inf", INFINITY),   LOG_B("yes", 7),
		LOG_B("no", 0),
	};
	const char *want = ",\"s\":\"text\",\"none\":null,\"zero\":0,\"neg\":-42,\"max\":9223372036854775807,"
			   "\"min\":-9223372036854775808,\"ms\":12.346,\"half\":2.500,\"round\":0.000,"
			   "\"big\":123456789.000,\"huge\":1e+12,\"negd\":-1.5,\"nan\":null,\"inf\":null,\"yes\":true,"
			   "\"no\":false}\n";
	json_t *doc;

	begin();
	log_fields(LOGL_INFO, "unit", "fields", f, sizeof(f) / sizeof(f[0]));
	end();
	ck_assert_msg(strlen(err) > strlen(want) && strcmp(err + strlen(err) - strlen(want), want) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "\"component\":\"unit\"" ",\"s\""));
	doc = one_line();
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "min")), LLONG_MIN);
	ck_assert(json_is_null(json_object_get(doc, "none")));
	ck_assert(json_is_null(json_object_get(doc, "nan")));
	ck_assert_double_eq_tol(json_number_value(json_object_get(doc, "ms")), 12.346, 1e-9);
	json_decref(doc);
}
END_TEST

START_TEST(escaping)
{
	json_t *doc;

	begin();
	log_fields(LOGL_INFO, "comp\"onent", "say \"hi\"\\ \n\t\r\x01\x7f caf\xc3\xa9",
		   (struct log_field[]){LOG_S("k\ney", "a\\b\"c"), LOG_S("path", "/tmp/x\x1f")}, 2);
	end();
	ck_assert_msg(strstr(err, "\"msg\":\"say \\\"hi\\\"\\\\ \\n\\t\\u000d\\u0001\\u007f caf\\u00c3\\u00a9\"") !=
			      NULL,
		      "%s", err);
	ck_assert_msg(strstr(err, "\"component\":\"comp\\\"onent\"") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "\"k\\ney\":\"a\\\\b\\\"c\",\"path\":\"/tmp/x\\u001f\"}") != NULL, "%s", err);
	/* every byte above 0x7e is escaped, so the line is ASCII whatever the text */
	for (const char *p = err; *p != '\0'; p++)
		ck_assert_msg((unsigned char)*p < 0x7f, "byte 0x%02x in %s", (unsigned char)*p, err);
	doc = one_line();
	ck_assert_str_eq(member(doc, "k\ney"), "a\\b\"c");
	ck_assert_str_eq(member(doc, "component"), "comp\"onent");
	json_decref(doc);
}
END_TEST

START_TEST(log_msg_cuts_long_messages)
{
	char *big = malloc(5001);
	json_t *doc;

	memset(big, 'a', 5000);
	big[5000] = '\0';
	begin();
	log_msg(LOGL_INFO, "unit", "%s", big);
	end();
	doc = one_line();
	ck_assert_uint_eq(strlen(member(doc, "msg")), 2047);
	json_decref(doc);
	free(big);
}
END_TEST

START_TEST(embedded_json)
{
	json_t *value = json_pack("{s:s, s:i, s:[b, n]}", "name", "caf\xc3\xa9 \"x\"", "n", 3, "list", 1);
	json_t *doc;

	begin();
	log_json(LOGL_WARN, "main", "starting", "config", value);
	log_json(LOGL_WARN, "main", "nothing", "config", NULL);
	end();
	/* the document compact and ASCII, after the head */
	ck_assert_msg(strstr(err, "\"component\":\"main\",\"config\":{\"name\":\"caf\\u00E9 \\\"x\\\"\",\"n\":3,"
				  "\"list\":[true,null]}}\n") != NULL,
		      "%s", err);
	ck_assert_msg(strstr(err, "\"msg\":\"nothing\",\"component\":\"main\",\"config\":null}\n") != NULL, "%s", err);
	*strchr(err, '\n') = '\0';
	doc = json_loads(err, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_equal(json_object_get(doc, "config"), value));
	json_decref(doc);
	json_decref(value);
}
END_TEST

START_TEST(a_line_over_64k_is_replaced)
{
	size_t size = 70 * 1024;
	char *big = malloc(size + 1);
	char *v[4];
	json_t *doc;

	memset(big, 'x', size);
	big[size] = '\0';
	begin();
	log_fields(LOGL_INFO, "unit", "huge", (struct log_field[]){LOG_S("blob", big)}, 1);
	log_msg(LOGL_INFO, "unit", "next");
	end();
	ck_assert_uint_eq(lines(err, v, 4), 2);
	doc = json_loads(v[0], 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(member(doc, "level"), "warn");
	ck_assert_str_eq(member(doc, "severity"), "WARNING");
	ck_assert_str_eq(member(doc, "msg"), "log line over 64 KiB dropped");
	ck_assert_str_eq(member(doc, "component"), "log");
	ck_assert_ptr_null(json_object_get(doc, "blob"));
	json_decref(doc);
	/* the next line is whole again */
	doc = json_loads(v[1], 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(member(doc, "msg"), "next");
	json_decref(doc);

	/* a line just under the limit is written as it is */
	big[60 * 1024] = '\0';
	begin();
	log_fields(LOGL_INFO, "unit", "large", (struct log_field[]){LOG_S("blob", big)}, 1);
	end();
	doc = one_line();
	ck_assert_uint_eq(strlen(member(doc, "blob")), 60 * 1024);
	json_decref(doc);
	free(big);
}
END_TEST

/* Buffered debug and info lines come out before a warning and at the stop, in the order they were logged. */
START_TEST(buffered_lines_keep_their_order)
{
	char *v[8];
	const char *want[] = {"one", "two", "three", "four"};

	log_buffering_stop(); /* not started: nothing to do */
	begin();
	ck_assert_int_eq(log_buffering_start(), 0);
	ck_assert_int_eq(log_buffering_start(), 0); /* already running */
	log_msg(LOGL_INFO, "unit", "one");
	log_msg(LOGL_INFO, "unit", "two");
	log_msg(LOGL_WARN, "unit", "three");
	log_msg(LOGL_INFO, "unit", "four");
	log_buffering_stop();
	end();
	ck_assert_uint_eq(lines(err, v, 8), 4);
	for (size_t i = 0; i < 4; i++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "\"msg\":\"%s\"", want[i]);
		ck_assert_msg(strstr(v[i], needle) != NULL, "line %zu: %s", i, v[i]);
	}
	/* after the stop lines go out unbuffered */
	begin();
	log_msg(LOGL_INFO, "unit", "five");
	end();
	ck_assert_ptr_nonnull(strstr(err, "\"msg\":\"five\""));
}
END_TEST

/* More than the buffer holds (256 KiB): the caller writes it out, nothing is dropped or reordered. */
START_TEST(a_full_buffer_loses_nothing)
{
	enum { N = 6000 };
	char **v = malloc(N * 2 * sizeof(*v));
	char pad[101];

	memset(pad, 'p', 100);
	pad[100] = '\0';
	begin();
	ck_assert_int_eq(log_buffering_start(), 0);
	for (int i = 0; i < N; i++)
		log_fields(LOGL_INFO, "unit", "bulk", (struct log_field[]){LOG_I("i", i), LOG_S("pad", pad)}, 2);
	log_buffering_stop();
	end();
	ck_assert_uint_gt(strlen(err), 256 * 1024);
	ck_assert_uint_eq(lines(err, v, N * 2), N);
	for (int i = 0; i < N; i++) {
		char needle[32];

		snprintf(needle, sizeof(needle), "\"i\":%d,", i);
		ck_assert_msg(strstr(v[i], needle) != NULL, "line %d: %.80s", i, v[i]);
	}
	free(v);
}
END_TEST

enum { THREADS = 4, PER_THREAD = 400 };

static void *writer(void *arg)
{
	long id = (long)(intptr_t)arg;
	char text[3000];

	/* long enough that a write could be split if lines were not whole */
	memset(text, 'a' + (int)id, sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	for (int i = 0; i < PER_THREAD; i++)
		log_fields(i % 2 ? LOGL_INFO : LOGL_WARN, "unit", "thread",
			   (struct log_field[]){LOG_I("thread", id), LOG_I("i", i), LOG_S("text", text)}, 3);
	return NULL;
}

START_TEST(lines_from_threads_stay_whole)
{
	pthread_t t[THREADS];
	char **v = malloc(THREADS * PER_THREAD * 2 * sizeof(*v));
	int seen[THREADS][PER_THREAD] = {{0}};
	size_t n;

	begin();
	ck_assert_int_eq(log_buffering_start(), 0);
	for (long i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	log_buffering_stop();
	end();
	n = lines(err, v, THREADS * PER_THREAD * 2);
	ck_assert_uint_eq(n, THREADS * PER_THREAD);
	for (size_t i = 0; i < n; i++) {
		json_t *doc = json_loads(v[i], 0, NULL);
		json_int_t id;
		json_int_t k;
		const char *text;

		ck_assert_msg(doc != NULL, "line %zu is not JSON: %.100s", i, v[i]);
		id = json_integer_value(json_object_get(doc, "thread"));
		k = json_integer_value(json_object_get(doc, "i"));
		text = member(doc, "text");
		ck_assert(id >= 0 && id < THREADS && k >= 0 && k < PER_THREAD);
		ck_assert_uint_eq(strlen(text), 2999);
		ck_assert_int_eq(text[0], 'a' + (int)id);
		ck_assert_int_eq(text[2998], 'a' + (int)id);
		seen[id][k]++;
		json_decref(doc);
	}
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < PER_THREAD; k++)
			ck_assert_int_eq(seen[i][k], 1);
	free(v);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, level_names);
	tcase_add_test(tc, default_level_is_info);
	tcase_add_test(tc, level_filter);
	tcase_add_test(tc, head_of_a_line);
	tcase_add_test(tc, fields_of_every_type);
	tcase_add_test(tc, escaping);
	tcase_add_test(tc, log_msg_cuts_long_messages);
	tcase_add_test(tc, embedded_json);
	tcase_add_test(tc, a_line_over_64k_is_replaced);
	tcase_add_test(tc, buffered_lines_keep_their_order);
	tcase_add_test(tc, a_full_buffer_loses_nothing);
	tcase_add_test(tc, lines_from_threads_stay_whole);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
