/*
 * Unit tests for envfmt.c: variable names, the ordered set, and export lines that sh evaluates back to the very
 * bytes of every value, hostile ones included, without running anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "select/envfmt.h"

START_TEST(env_names)
{
	struct envfmt e;
	char big[ENVFMT_VALUE_MAX + 1];

	ck_assert(envfmt_name_valid("A"));
	ck_assert(envfmt_name_valid("_X1"));
	ck_assert(envfmt_name_valid("CUDA_VISIBLE_DEVICES"));
	ck_assert(!envfmt_name_valid(""));
	ck_assert(!envfmt_name_valid("1A"));
	ck_assert(!envfmt_name_valid("a"));
	ck_assert(!envfmt_name_valid("A-B"));
	ck_assert(!envfmt_name_valid("A B"));
	ck_assert(!envfmt_name_valid("A=B"));
	ck_assert(!envfmt_name_valid("A;rm"));
	envfmt_init(&e);
	ck_assert_int_eq(envfmt_set(&e, "bad name", "x"), -1);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(envfmt_set(&e, "BIG", big), -1);
	ck_assert_int_eq(envfmt_set(&e, "A", "1"), 0);
	ck_assert_int_eq(envfmt_set(&e, "A", "2"), 0);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(envfmt_get(&e, "A"), "2");
}
END_TEST

static const char *const hostile[] = {
	"",
	"'",
	"''",
	"'\\''",
	"a'b\"c",
	"$(touch /tmp/acceld-envfmt-pwned)",
	"`touch /tmp/acceld-envfmt-pwned`",
	"x'; touch /tmp/acceld-envfmt-pwned; echo '",
	"line1\nline2\n",
	"\nexport EVIL=1\n",
	"back\\slash\\",
	"tab\tand $HOME and ${PATH} and !history",
	"'\n'\n'",
};

START_TEST(env_quote_text)
{
	struct buf b;
	char *text;

	buf_init(&b, 4096);
	ck_assert_int_eq(envfmt_quote(&b, "it's"), 0);
	text = buf_detach(&b, NULL);
	ck_assert_str_eq(text, "'it'\\''s'");
	free(text);
	ck_assert_int_eq(envfmt_export_line(&b, "X", "a\nb"), 0);
	text = buf_detach(&b, NULL);
	ck_assert_str_eq(text, "export X='a\nb'\n");
	free(text);
	ck_assert_int_eq(envfmt_export_line(&b, "x; rm", "v"), -1);
	buf_release(&b);

	/* a buffer cap is honoured */
	buf_init(&b, 4);
	ck_assert_int_eq(envfmt_quote(&b, "abcdef"), -1);
	buf_release(&b);
}
END_TEST

/* Every hostile value, written as an export line and evaluated by sh, comes back byte for byte and runs
 * nothing. */
START_TEST(env_quote_round_trip_in_sh)
{
	char dir[] = "/tmp/acceld-envfmt-XXXXXX";
	char script[256];
	char out[256];
	char cmd[1024];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	unlink("/tmp/acceld-envfmt-pwned");
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct envfmt e;
		char *text;
		size_t len;
		FILE *f;
		char got[1024];
		size_t n;

		envfmt_init(&e);
		ck_assert_int_eq(envfmt_set(&e, "V", hostile[i]), 0);
		ck_assert_int_eq(envfmt_set(&e, "OTHER", "ok"), 0);
		text = envfmt_to_text(&e, &len);
		snprintf(script, sizeof(script), "%s/env.sh", dir);
		snprintf(out, sizeof(out), "%s/out", dir);
		f = fopen(script, "w");
		ck_assert_ptr_nonnull(f);
		fwrite(text, 1, len, f);
		fclose(f);
		free(text);
		snprintf(cmd, sizeof(cmd), "sh -c 'eval \"$(cat %s)\"; printf %%s \"$V\"; printf %%s \"|$OTHER|$EVIL\"' "
			 "> %s", script, out);
		ck_assert_int_eq(system(cmd), 0);
		f = fopen(out, "r");
		ck_assert_ptr_nonnull(f);
		n = fread(got, 1, sizeof(got) - 1, f);
		fclose(f);
		got[n] = '\0';
		ck_assert_uint_eq(n, strlen(hostile[i]) + 4);
		ck_assert_msg(memcmp(got, hostile[i], strlen(hostile[i])) == 0, "value %zu came back as %s", i, got);
		ck_assert_str_eq(got + strlen(hostile[i]), "|ok|");
		ck_assert_msg(access("/tmp/acceld-envfmt-pwned", F_OK) != 0, "value %zu ran a command", i);
		unlink(script);
		unlink(out);
	}
	rmdir(dir);
}
END_TEST

START_TEST(set_keeps_order_and_replaces_in_place)
{
	struct envfmt e;
	char name[8];
	char *text;
	size_t len;
	json_t *doc;
	const char *key;
	json_t *value;
	size_t i = 0;
	static const char *const order[] = {"B", "A", "C"};

	envfmt_init(&e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_ptr_null(envfmt_get(&e, "A"));
	ck_assert_int_eq(envfmt_set(&e, "B", "1"), 0);
	ck_assert_int_eq(envfmt_set(&e, "A", "2"), 0);
	ck_assert_int_eq(envfmt_set(&e, "C", "3"), 0);
	ck_assert_int_eq(envfmt_set(&e, "B", "it's"), 0); /* replaced where it stands: B stays first */
	text = envfmt_to_text(&e, &len);
	ck_assert_str_eq(text, "export B='it'\\''s'\nexport A='2'\nexport C='3'\n");
	ck_assert_uint_eq(len, strlen(text));
	free(text);
	doc = envfmt_to_json(&e);
	ck_assert_uint_eq(json_object_size(doc), 3);
	json_object_foreach(doc, key, value) { /* jansson keeps insertion order */
		ck_assert_str_eq(key, order[i]);
		ck_assert_str_eq(json_string_value(value), envfmt_get(&e, order[i]));
		i++;
	}
	ck_assert_str_eq(json_string_value(json_object_get(doc, "B")), "it's"); /* the value itself, unquoted */
	json_decref(doc);

	/* the set holds ENVFMT_MAX_VARS; one more is refused, replacing one still works */
	envfmt_init(&e);
	for (unsigned k = 0; k < ENVFMT_MAX_VARS; k++) {
		snprintf(name, sizeof(name), "V%u", k);
		ck_assert_int_eq(envfmt_set(&e, name, "x"), 0);
	}
	ck_assert_int_eq(envfmt_set(&e, "ONE_MORE", "x"), -1);
	ck_assert_ptr_null(envfmt_get(&e, "ONE_MORE"));
	ck_assert_int_eq(envfmt_set(&e, "V0", "y"), 0);
	ck_assert_str_eq(envfmt_get(&e, "V0"), "y");
	ck_assert_uint_eq(e.n, ENVFMT_MAX_VARS);

	/* an empty set is an empty text and an empty object */
	envfmt_init(&e);
	text = envfmt_to_text(&e, &len);
	ck_assert_str_eq(text, "");
	ck_assert_uint_eq(len, 0);
	free(text);
	doc = envfmt_to_json(&e);
	ck_assert_uint_eq(json_object_size(doc), 0);
	json_decref(doc);
}
END_TEST

START_TEST(name_length_limit)
{
	char name[ENVFMT_NAME_MAX + 1];
	char value[ENVFMT_VALUE_MAX];
	struct envfmt e;

	memset(name, 'N', sizeof(name));
	name[ENVFMT_NAME_MAX - 1] = '\0';
	ck_assert(envfmt_name_valid(name)); /* ENVFMT_NAME_MAX - 1 characters fit */
	name[ENVFMT_NAME_MAX - 1] = 'N';
	name[ENVFMT_NAME_MAX] = '\0';
	ck_assert(!envfmt_name_valid(name));
	envfmt_init(&e);
	memset(value, 'v', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	ck_assert_int_eq(envfmt_set(&e, "LONGEST", value), 0); /* ENVFMT_VALUE_MAX - 1 bytes fit */
	ck_assert_uint_eq(strlen(envfmt_get(&e, "LONGEST")), ENVFMT_VALUE_MAX - 1);
}
END_TEST

/* The largest set, every value all quotes, fits the text's own cap: nothing is dropped. */
START_TEST(worst_case_text_is_whole)
{
	struct envfmt e;
	char name[8];
	char value[ENVFMT_VALUE_MAX];
	char *text;
	size_t len;

	memset(value, '\'', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	envfmt_init(&e);
	for (unsigned k = 0; k < ENVFMT_MAX_VARS; k++) {
		snprintf(name, sizeof(name), "V%u", k);
		ck_assert_int_eq(envfmt_set(&e, name, value), 0);
	}
	text = envfmt_to_text(&e, &len);
	/* per line: "export Vk=" + 2 quotes + 4 bytes per value byte + "\n" */
	ck_assert_uint_eq(len, 10 * (strlen("export V0=") + 3) + (ENVFMT_MAX_VARS - 10) * (strlen("export V10=") + 3) +
				       ENVFMT_MAX_VARS * 4 * (ENVFMT_VALUE_MAX - 1));
	free(text);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("envfmt");
	TCase *tc = tcase_create("envfmt");

	tcase_add_test(tc, env_names);
	tcase_add_test(tc, name_length_limit);
	tcase_add_test(tc, set_keeps_order_and_replaces_in_place);
	tcase_add_test(tc, env_quote_text);
	tcase_add_test(tc, worst_case_text_is_whole);
	tcase_add_test(tc, env_quote_round_trip_in_sh);
	suite_add_tcase(s, tc);
	return s;
}
