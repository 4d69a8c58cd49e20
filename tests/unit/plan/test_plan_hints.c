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

START_TEST(tpu_grows_its_slice_first)
{
	struct plan_request r = request(PLAN_TRAIN, tpu(4, 4, 95 * GIB, 2, 2, 1));
	struct plan_result res;
	const struct plan_hint *h;

	/* issue #35, item 2: Llama 2 70B at 4K with flash attention on a v5p-8 (4 chips, 2x2x1): one v5p-32 slice
	 * (16 chips, 2x2x4) holds it with FSDP over ICI; never FSDP over 4 slices across the data-centre network */
	llama2_70b(&r.model);
	r.seq_len = 4096;
	r.flash_attention = true;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	h = hint(&res, PLAN_HINT_DEVICES);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 16);
	ck_assert(same_mesh(&h->mesh, 1, 16, 1, 1));
	ck_assert_str_eq(h->text, "one slice of 16 chips (a 2x2x4 torus, 4 hosts of 4): data 1 x fsdp 16 x tensor 1 x "
			 "expert 1");
	plan_result_free(&res);
}
END_TEST

START_TEST(a_global_batch_that_does_not_split)
{
	struct plan_request r = request(PLAN_INFER, h100x8());
	struct plan_result res;
	const struct plan_hint *h;

	/* issue #35: 12 sequences over 8 GPUs force tensor 2 (data 4); 8 or 16 would split over data 8 */
	llama2_7b(&r.model);
	r.global_batch = 12;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert(same_mesh(&res.memory.mesh, 4, 1, 2, 1));
	h = hint(&res, PLAN_HINT_GLOBAL_BATCH);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->value, 8);
	ck_assert(same_mesh(&h->mesh, 8, 1, 1, 1));
	ck_assert_str_eq(h->text, "global batch 8 or 16, which split over 8 batch shards as 12 does not: data 8 x fsdp 1 "
			 "x tensor 1 x expert 1");
	plan_result_free(&res);
	/* one that splits gets none */
	r.global_batch = 16;
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_OK);
	ck_assert_ptr_null(hint(&res, PLAN_HINT_GLOBAL_BATCH));
	plan_result_free(&res);
}
END_TEST

START_TEST(what_would_is_never_empty)
{
	struct plan_request r = request(PLAN_INFER, (struct plan_devices){.kind = PLAN_CPU, .count = 1,
									.memory_bytes = 8 * GIB});
	struct plan_result res;
	const struct plan_hint *h;

	/* issue #35, item 9: 70B inference on one 8 GiB CPU: no dtype or device count helps, the memory would */
	llama2_70b(&r.model);
	ck_assert_int_eq(plan_compute(&r, &res), ACCELD_EUNPROCESSABLE);
	ck_assert_uint_ge(res.nhints, 1);
	h = hint(&res, PLAN_HINT_MEMORY);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_ge(h->value, 68976648192ull * 2 * 10 / 9);
	ck_assert_msg(strstr(h->text, "1 device of ") != NULL, "%s", h->text);
	plan_result_free(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_hints");
	TCase *tc = tcase_create("plan_hints");

	tcase_add_test(tc, hints_recompute_flash_and_batch);
	tcase_add_test(tc, tpu_grows_its_slice_first);
	tcase_add_test(tc, a_global_batch_that_does_not_split);
	tcase_add_test(tc, what_would_is_never_empty);
	suite_add_tcase(s, tc);
	return s;
}
