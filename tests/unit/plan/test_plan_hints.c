/*
 * Unit tests for plan_hints.c: what would fit when nothing does.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

START_TEST(hints_recompute_flash_and_batch)
{
	struct plan_request r = request(PLAN_TRAIN, h100x8());
	struct plan_result res;
	struct plan_memory mem;
	const struct plan_hint *h;

	/* 64 sequences of 4096 a GPU with every activation kept: nothing fits; full recomputation or a smaller
	 * per-device batch would, flash attention alone would not */
	llama2_7b(&r.model);
	r.seq_len = 4096;
	r.per_device_batch = 64;
	r.remat = PLAN_REMAT_NONE;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_BATCH);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_lt(h->value, 64);
	r.per_device_batch = h->value;
	ck_assert_int_eq(plan_evaluate(&r, &h->mesh, &mem), ACCELD_OK);
	ck_assert(mem.fits);
	r.per_device_batch = h->value + 1;
	ck_assert_int_eq(plan_evaluate(&r, &h->mesh, &mem), ACCELD_OK);
	ck_assert(!mem.fits);
	h = hint(&res, PLAN_HINT_REMAT);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_REMAT_FULL);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_FLASH)); /* 64 x 4096 tokens still need recomputation */
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* one sequence: flash attention alone (no stored scores) is enough */
	r.per_device_batch = 1;
	r.devices = gpus(8, 8, 24 * GIB, 8);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_FLASH);
	ck_assert_ptr_nonnull(h);
	ck_assert_msg(strstr(h->text, "flash attention") != NULL, "%s", h->text);
	assert_texts_whole(&res);
	plan_result_free(&res);

	/* 6B parameters of f32 Adam (16 B/param, 96 GB) on one 80 GB GPU: mixed precision is 16 B/param too, pure
	 * bf16 (8 B/param) fits */
	r.model = (struct plan_model){.params = 6000000000ull};
	r.dtype = PLAN_F32;
	r.mixed_precision = false;
	r.devices = gpus(1, 1, 80 * GIB, 1);
	r.remat = PLAN_REMAT_AUTO;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DTYPE);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, PLAN_BF16);
	ck_assert(same_mesh(&h->mesh, 1, 1, 1, 1));
	ck_assert_ptr_null(hint(&res, PLAN_HINT_FLASH)); /* no shape: nothing to say about attention */
	assert_texts_whole(&res);
	plan_result_free(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_hints");
	TCase *tc = tcase_create("plan_hints");

	tcase_add_test(tc, hints_recompute_flash_and_batch);
	suite_add_tcase(s, tc);
	return s;
}
