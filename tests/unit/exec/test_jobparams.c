/*
 * Unit tests for jobparams.c: the table (names and flags unique, every field with a flag says what it takes, the
 * kernel fields the kernel table's), JSON values set and refused with the reason, message and accepted values the
 * body's problems carry, flags' text, and the help made from the table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "exec/jobparams.h"
#include "exec/kernel.h"

START_TEST(table_is_consistent)
{
	const char *const *names = jobparams_names();
	size_t i;

	for (i = 0; i < jobparams_count; i++) {
		const struct jobparam *f = &jobparams_table[i];

		ck_assert_str_eq(names[i], f->name);
		ck_assert_ptr_eq(jobparams_field(f->name), f);
		if (f->flag != NULL) {
			ck_assert_ptr_eq(jobparams_flag(f->flag), f);
			ck_assert_msg(f->flag_switch || f->accepted != NULL || f->kind == JOBPARAM_BACKEND,
				      "%s: says nothing of what its flag takes", f->name);
		}
		/* a kernel's field is named as the kernel table names it */
		if (f->kernel_param != 0 && f->kind != JOBPARAM_SIZE)
			ck_assert_str_eq(kernel_param_name(f->kernel_param), f->name);
		if (f->usage != NULL)
			ck_assert_ptr_nonnull(f->help);
	}
	ck_assert_ptr_null(names[i]);
	ck_assert_uint_le(jobparams_count, JOBPARAMS_MAX);
	ck_assert_ptr_null(jobparams_field("bogus"));
	ck_assert_ptr_null(jobparams_flag("--json"));
	/* the triad's scale keeps its wire name */
	ck_assert_int_eq(jobparams_field("s")->kernel_param, KERNEL_PARAM_SCALE);
}
END_TEST

static bool set(struct jobparams *p, const char *name, const char *json, struct jobparams_refusal *why)
{
	json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
	bool ok;

	ck_assert_ptr_nonnull(v);
	ok = jobparams_set_json(p, jobparams_field(name), v, why);
	json_decref(v);
	return ok;
}

START_TEST(json_values)
{
	struct jobparams p;
	struct jobparams_refusal why;

	jobparams_init(&p);
	p.max_timeout_ms = 1000;
	ck_assert(p.wait);
	ck_assert(set(&p, "kernel", "\"triad\"", &why));
	ck_assert_int_eq(p.req.kernel, KERNEL_TRIAD);
	ck_assert(set(&p, "s", "2.5", &why));
	ck_assert(p.req.scale == 2.5f);
	ck_assert(set(&p, "n", "64", &why));
	ck_assert_uint_eq(p.req.shape.n, 64);
	ck_assert(set(&p, "wait", "false", &why));
	ck_assert(!p.wait);
	ck_assert(set(&p, "fallback", "false", &why));
	ck_assert(p.fallback_given && !p.req.fallback);
	ck_assert(set(&p, "return", "\"full\"", &why));
	ck_assert(p.req.full);
	ck_assert(set(&p, "generate", "{\"seed\": 9}", &why));
	ck_assert_uint_eq(p.req.seed, 9);
	ck_assert(set(&p, "timeout_ms", "1000", &why));
	ck_assert_uint_eq(p.req.timeout_ms, 1000);
	ck_assert(set(&p, "precision", "\"bf16\"", &why));
	ck_assert_int_eq(p.req.precision, KERNEL_PRECISION_BF16);

	ck_assert(!set(&p, "alpha", "\"NaN\"", &why));
	ck_assert_int_eq(why.reason, REASON_NOT_A_NUMBER);
	ck_assert(!set(&p, "alpha", "1e39", &why));
	ck_assert_int_eq(why.reason, REASON_INVALID_VALUE);
	ck_assert(!set(&p, "n", "0", &why));
	ck_assert_str_eq(why.detail, "0 is not an integer from 1 to 1099511627776");
	ck_assert(!set(&p, "timeout_ms", "1001", &why));
	ck_assert_str_eq(why.detail, "1001 is not an integer from 1 to 1000 (ACCELD_EXEC_MAX_TIMEOUT)");
	ck_assert(!set(&p, "return", "\"x\"", &why));
	ck_assert_int_eq(why.reason, REASON_INVALID_VALUE);
	ck_assert_str_eq(why.accepted, "summary, full");
	ck_assert(!set(&p, "kernel", "1", &why));
	ck_assert_int_eq(why.reason, REASON_INVALID_TYPE);
	ck_assert_str_eq(why.accepted, kernel_names_text());
	ck_assert(!set(&p, "backend", "\"x\"", &why));
	ck_assert_ptr_nonnull(strstr(why.accepted, "native"));
	ck_assert(!set(&p, "generate", "{\"x\": 1}", &why));
	ck_assert_int_eq(why.reason, REASON_UNKNOWN_FIELD);
	ck_assert_str_eq(why.subpath, ".x");
	ck_assert(!set(&p, "generate", "{\"seed\": -1}", &why));
	ck_assert_str_eq(why.subpath, ".seed");
	/* the caller's kinds */
	ck_assert(!set(&p, "device", "\"cpu:0\"", &why));
	ck_assert_str_eq(why.detail, "");
	exec_request_release(&p.req);
}
END_TEST

START_TEST(flags_text)
{
	struct jobparams p;

	jobparams_init(&p);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--m"), "12"), 0);
	ck_assert_uint_eq(p.req.shape.m, 12);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--m"), "0"), -1);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--alpha"), "inf"), -1);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--s"), "-0.5"), 0);
	ck_assert(p.req.scale == -0.5f);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--seed"), "0"), 0);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--verify"), NULL), 0);
	ck_assert(p.req.verify);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--full"), NULL), 0);
	ck_assert(p.req.full);
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--backend"), "native"), 0);
	ck_assert_str_eq(p.req.backend, "native");
	ck_assert_int_eq(jobparams_set_text(&p, jobparams_flag("--precision"), "fp64"), -1);
	exec_request_release(&p.req);
}
END_TEST

START_TEST(help_from_the_table)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	jobparams_help(out);
	fclose(out);
	ck_assert_ptr_nonnull(strstr(text, "  --alpha A, --beta B saxpy's alpha; sgemm's alpha and beta\n"));
	ck_assert_ptr_nonnull(strstr(text, "  --s S               triad's s\n"));
	ck_assert_ptr_nonnull(strstr(text, "  --precision P       sgemm's products: highest"));
	/* values first, then the switches */
	ck_assert(strstr(text, "--timeout-ms") < strstr(text, "--verify"));
	ck_assert_ptr_null(strstr(text, "--beta B\n"));
	free(text);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("jobparams");
	TCase *tc = tcase_create("jobparams");

	tcase_add_test(tc, table_is_consistent);
	tcase_add_test(tc, json_values);
	tcase_add_test(tc, flags_text);
	tcase_add_test(tc, help_from_the_table);
	suite_add_tcase(s, tc);
	return s;
}
