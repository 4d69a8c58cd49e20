/*
 * Unit tests for jsonval.c: null for unknown figures, float32 figures as the shortest number that reads back as the
 * same float, and the shortest reals: the examples the float noise was seen in, the layout jansson uses, strings and
 * integers left alone, and a fuzz-style pass over random doubles (random bits, short decimals, float32 values) that
 * each reads back to the same double, with no fewer digits reading back, the same whether rewritten from jansson's text
 * or written from the double, never longer than jansson's own text and read back by jansson as a real.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/jsonval.h"

static const char *real_text(double v)
{
	static char out[JSONVAL_REAL_MAX];

	jsonval_real_text(v, out);
	return out;
}

/* The text of a document as acceld writes it (freed at the next call). */
static const char *dumped(json_t *doc, size_t flags)
{
	static char *text;

	free(text);
	text = jsonval_dumps(doc, flags);
	json_decref(doc);
	ck_assert_ptr_nonnull(text);
	return text;
}

START_TEST(unknown_is_null_or_left_out)
{
	json_t *o = json_object();

	ck_assert(json_is_null(jsonval_num(NAN)));
	json_decref(jsonval_num(NAN));
	jsonval_set_num(o, "a", INFINITY);
	jsonval_set_num(o, "b", 2.5);
	jsonval_set_time(o, "t", 0);
	ck_assert_str_eq(dumped(o, JSON_COMPACT | JSON_SORT_KEYS), "{\"b\":2.5}");
}
END_TEST

START_TEST(the_examples_read_as_typed)
{
	/* what jansson alone writes, and what acceld writes */
	json_t *r = json_real(0.1);
	char *plain = json_dumps(r, JSON_ENCODE_ANY);

	ck_assert_str_eq(plain, "0.10000000000000001");
	free(plain);
	json_decref(r);
	ck_assert_str_eq(dumped(json_pack("{s:f}", "reserve", 0.1), JSON_COMPACT), "{\"reserve\":0.1}");
	ck_assert_str_eq(dumped(json_pack("[f, f]", 0.3328, 1.0 / 3.0), JSON_COMPACT), "[0.3328,0.3333333333333333]");
	ck_assert_str_eq(real_text(0.33279999999999998), "0.3328");
	ck_assert_str_eq(real_text(0.1 + 0.2), "0.30000000000000004");
	ck_assert_str_eq(real_text(2.5 * 3600.0 / 3600.0), "2.5");
	ck_assert_str_eq(real_text(209.6), "209.6");
}
END_TEST

/* A float32 figure (a job's alpha) as the shortest number that reads back as the same float. */
START_TEST(floats_read_as_typed)
{
	ck_assert_str_eq(dumped(json_pack("[o, o, o, o, o]", jsonval_float(0.1f), jsonval_float(3.3f),
					  jsonval_float(-2.5f), jsonval_float(1e-45f), jsonval_float(16777216.0f)),
			       JSON_COMPACT),
			 "[0.1,3.3,-2.5,1e-45,16777216.0]");
	ck_assert_str_eq(dumped(jsonval_float(NAN), JSON_ENCODE_ANY), "null");
	for (unsigned i = 0; i < 100000; i++) {
		uint32_t bits = (uint32_t)(i * 2654435761u);
		float f;
		json_t *v;

		memcpy(&f, &bits, sizeof(f));
		if (!isfinite(f))
			continue;
		v = jsonval_float(f);
		ck_assert_msg((float)json_real_value(v) == f, "%.9g", (double)f);
		json_decref(v);
	}
}
END_TEST

START_TEST(layout_is_janssons)
{
	/* integral values keep ".0" so jansson reads a real; in full from 1e-4 up to 1e17, an exponent elsewhere */
	ck_assert_str_eq(real_text(0.0), "0.0");
	ck_assert_str_eq(real_text(-0.0), "-0.0");
	ck_assert_str_eq(real_text(2.0), "2.0");
	ck_assert_str_eq(real_text(100000.0), "100000.0");
	ck_assert_str_eq(real_text(67000.0), "67000.0");
	ck_assert_str_eq(real_text(1e16), "10000000000000000.0");
	ck_assert_str_eq(real_text(1e17), "1e17");
	ck_assert_str_eq(real_text(1.5e300), "1.5e300");
	ck_assert_str_eq(real_text(0.0001), "0.0001");
	ck_assert_str_eq(real_text(0.00001), "1e-5");
	ck_assert_str_eq(real_text(-1.25e-7), "-1.25e-7");
	ck_assert_str_eq(real_text(123456.789), "123456.789");
	ck_assert_str_eq(real_text(DBL_MAX), "1.7976931348623157e308");
	ck_assert_str_eq(real_text(DBL_MIN), "2.2250738585072014e-308");
	ck_assert_str_eq(real_text(5e-324), "5e-324"); /* the smallest subnormal: one digit */
	ck_assert_str_eq(real_text(NAN), "");
	ck_assert_uint_eq(jsonval_real_text(INFINITY, (char[JSONVAL_REAL_MAX]){0}), 0);
}
END_TEST

START_TEST(strings_keys_and_integers_are_left_alone)
{
	json_t *doc = json_pack("{s:s, s:[f, i, i, f], s:f}", "a", "0.10000000000000001 \\\"1.0000000000000002",
				"k\"0.5", 0.1, (json_int_t)12, (json_int_t)-3, -2.0, "x", 1e-7);
	char text[] = "{\"s\": \"-0.10000000000000001\", \"n\": 12345678901234567, "
		      "\"r\": [-0.29999999999999999, 1.0e+2]}";
	size_t len;

	ck_assert_str_eq(dumped(doc, JSON_COMPACT | JSON_SORT_KEYS),
			 "{\"a\":\"0.10000000000000001 \\\\\\\"1.0000000000000002\",\"k\\\"0.5\":[0.1,12,-3,-2.0],"
			 "\"x\":1e-7}");
	/* indented text as the commands print it */
	ck_assert_str_eq(dumped(json_pack("{s:f}", "v", 0.7), JSON_INDENT(2)), "{\n  \"v\": 0.7\n}");
	len = jsonval_shorten(text, strlen(text));
	ck_assert_str_eq(text, "{\"s\": \"-0.10000000000000001\", \"n\": 12345678901234567, \"r\": [-0.3, 1.0e+2]}");
	ck_assert_uint_eq(len, strlen(text));
}
END_TEST

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The i-th test value: random bits, a short random decimal, or a float32 value. */
static double fuzz_value(unsigned i)
{
	uint64_t bits = next_random();
	double v;
	char text[48];
	float f;

	switch (i % 3) {
	case 0:
		memcpy(&v, &bits, sizeof(v));
		return v;
	case 1:
		snprintf(text, sizeof(text), "%llue%d", (unsigned long long)(bits % 100000000ull),
			 (int)((bits >> 40) % 40) - 20);
		return strtod(text, NULL);
	default:
		memcpy(&f, &bits, sizeof(f));
		return (double)f;
	}
}

static int digits_of(const char *t)
{
	int first = -1, last = -1, n = 0;

	for (const char *p = t; *p != '\0' && *p != 'e'; p++) {
		if (*p < '0' || *p > '9')
			continue;
		if (*p != '0') {
			if (first < 0)
				first = n;
			last = n;
		}
		n++;
	}
	return first < 0 ? 1 : last - first + 1;
}

START_TEST(random_doubles_read_back_exactly)
{
	unsigned checked = 0;

	for (unsigned i = 0; i < 300000; i++) {
		double v = fuzz_value(i);
		char out[JSONVAL_REAL_MAX];
		size_t n = jsonval_real_text(v, out);
		json_t *r, *back;
		char *plain;
		size_t plain_len;
		int nd;

		if (!isfinite(v)) {
			ck_assert_uint_eq(n, 0);
			continue;
		}
		checked++;
		ck_assert_uint_eq(n, strlen(out));
		ck_assert_msg(memcmp(&(double){strtod(out, NULL)}, &v, sizeof(v)) == 0,
			      "%s does not read back as %.17g", out, v);
		/* no precision under the digits written reads back (checked on a sample: it costs 16 printfs) */
		nd = digits_of(out);
		for (int q = 1; i % 16 == 0 && q < nd; q++) {
			char t[320]; /* %g of any double fits */

			snprintf(t, sizeof(t), "%.*g", q, v);
			ck_assert_msg(strtod(t, NULL) != v, "%s: %s has fewer digits and reads back", out, t);
		}
		/* through a whole dump: no longer than jansson's text, a real again when jansson reads it */
		r = json_real(v);
		plain = json_dumps(r, JSON_ENCODE_ANY);
		plain_len = strlen(plain);
		ck_assert_uint_le(jsonval_shorten(plain, plain_len), plain_len);
		ck_assert_str_eq(plain, out);
		back = json_loads(plain, JSON_DECODE_ANY, NULL);
		ck_assert_msg(json_is_real(back) && memcmp(&(double){json_real_value(back)}, &v, sizeof(v)) == 0,
			      "%s: jansson reads back another value", plain);
		json_decref(back);
		json_decref(r);
		free(plain);
	}
	ck_assert_uint_gt(checked, 290000);
}
END_TEST

START_TEST(text_not_utf8_keeps_its_readable_part)
{
	json_t *v = jsonval_text("caf\xc3\xa9 \xff\xfe ok \xe2\x82");

	ck_assert_str_eq(json_string_value(v), "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd ok \xef\xbf\xbd\xef\xbf\xbd");
	json_decref(v);
	v = jsonval_text("plain");
	ck_assert_str_eq(json_string_value(v), "plain");
	json_decref(v);
	ck_assert_uint_eq(jsonval_utf8_len((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
	ck_assert_uint_eq(jsonval_utf8_len((const unsigned char *)"\xed\xa0\x80"), 0); /* a surrogate */
	ck_assert_uint_eq(jsonval_utf8_len((const unsigned char *)"\xc0\xaf"), 0);     /* overlong */
}
END_TEST

START_TEST(as_of_and_age)
{
	json_t *o = json_object();
	int64_t nov28 = 1795824000000; /* 2026-11-28T00:00:00Z */

	jsonval_set_as_of(o, "2026-06-18", nov28);
	ck_assert_str_eq(json_string_value(json_object_get(o, "as_of")), "2026-06-18");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "age_days")), 163);
	/* undated: both null, never an age of 0 */
	jsonval_set_as_of(o, "", nov28);
	ck_assert(json_is_null(json_object_get(o, "as_of")) && json_is_null(json_object_get(o, "age_days")));
	jsonval_set_as_of(o, "soon", nov28);
	ck_assert(json_is_null(json_object_get(o, "as_of")) && json_is_null(json_object_get(o, "age_days")));
	/* a date after now is 0 days old */
	jsonval_set_as_of(o, "2026-12-01", nov28);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "age_days")), 0);
	json_decref(o);
}
END_TEST

START_TEST(a_figure_rounded_as_its_text_says_it)
{
	ck_assert(jsonval_round(0.166144 * 1000.0, 9) == 166.144);
	ck_assert(jsonval_round(121000 / 0.56, 6) == 216071.0);
	ck_assert(jsonval_round(0.04, 6) == 0.04);
	ck_assert(isnan(jsonval_round(NAN, 6)));
	ck_assert(isinf(jsonval_round(INFINITY, 6)));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("jsonval");
	TCase *tc = tcase_create("jsonval");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, unknown_is_null_or_left_out);
	tcase_add_test(tc, the_examples_read_as_typed);
	tcase_add_test(tc, floats_read_as_typed);
	tcase_add_test(tc, layout_is_janssons);
	tcase_add_test(tc, strings_keys_and_integers_are_left_alone);
	tcase_add_test(tc, random_doubles_read_back_exactly);
	tcase_add_test(tc, text_not_utf8_keeps_its_readable_part);
	tcase_add_test(tc, as_of_and_age);
	tcase_add_test(tc, a_figure_rounded_as_its_text_says_it);
	suite_add_tcase(s, tc);
	return s;
}
