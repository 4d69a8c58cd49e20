/*
 * Unit tests for plan_json.c: the JSON document.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

/* No float anywhere in the document but the reserve (the fraction a request gives): integers and strings only. */
static void assert_no_reals(json_t *v, const char *where)
{
	const char *key;
	json_t *child;
	size_t i;

	ck_assert_msg(!json_is_real(v) || strcmp(where, "reserve") == 0, "a real number at %s", where);
	if (json_is_object(v)) {
		json_object_foreach(v, key, child)
			assert_no_reals(child, key);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			assert_no_reals(child, where);
	}
}

START_TEST(json_document)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	json_t *doc, *mem, *rej;

	llama2_7b(&r.model);
	r.seq_len = 4096;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	doc = plan_json(&res);
	assert_no_reals(doc, "root");
	ck_assert(json_is_true(json_object_get(doc, "fits")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "mesh"), "fsdp")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "batch"), "global")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "model"), "params")), 6738415616);
	ck_assert(json_is_true(json_object_get(json_object_get(doc, "model"), "params_derived")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "model"), "head_dim")), 128);
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(doc, "devices"), "reserve")), 0.1, 1e-12);
	mem = json_object_get(doc, "memory");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(mem, "weights"), "bytes")),
			 2 * 6738415616 / 8);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(mem, "optimizer"), "formula")),
				     "ZeRO"));
	ck_assert_str_eq(json_string_value(json_object_get(mem, "remat")), "selective");
	rej = json_object_get(doc, "rejected");
	ck_assert_uint_eq(json_array_size(rej), res.ncandidates - 1); /* all but the chosen one */
	ck_assert(json_is_string(json_object_get(json_array_get(rej, 0), "reason")));
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "suggestions")), 0);
	ck_assert_ptr_null(json_object_get(doc, "detail"));
	json_decref(doc);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* nothing fits: mesh and batch null, the closest memory, suggestions and the detail */
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	doc = plan_json(&res);
	assert_no_reals(doc, "root");
	ck_assert(json_is_null(json_object_get(doc, "mesh")));
	ck_assert(json_is_false(json_object_get(json_object_get(doc, "memory"), "fits")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(doc, "suggestions"), 0),
							   "kind")), "devices");
	ck_assert(json_is_string(json_object_get(doc, "detail")));
	json_decref(doc);
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_json");
	TCase *tc = tcase_create("plan_json");

	tcase_add_test(tc, json_document);
	suite_add_tcase(s, tc);
	return s;
}
