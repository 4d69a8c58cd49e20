/* Unit tests for pjrt_resident.c: taking, keeping within the budget, eviction of the least recently used idle one,
 * buffers in use never destroyed, letting go without destroying. */
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "exec/backend/pjrt_resident.h"

static int destroyed[16];

static void destroy(void *ctx, void *buf)
{
	(void)ctx;
	destroyed[(intptr_t)buf]++;
}

static void *buf(intptr_t i)
{
	return (void *)i;
}

START_TEST(taken_by_key_shape_and_device)
{
	struct resident_set s = {.destroy = destroy};
	int64_t d1[1] = {100}, d2[2] = {10, 10};
	struct resident *r;

	ck_assert(resident_keep(&s, 0, 7, d1, 1, 400, buf(1), 1000));
	ck_assert(resident_keep(&s, 0, 7, d2, 2, 400, buf(2), 1000));
	ck_assert_uint_eq(s.bytes, 800);
	ck_assert_ptr_null(resident_take(&s, 1, 7, d1, 1)); /* another device */
	ck_assert_ptr_null(resident_take(&s, 0, 8, d1, 1)); /* another key */
	r = resident_take(&s, 0, 7, d2, 2);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_eq(r->buf, buf(2));
	ck_assert_uint_eq(r->busy, 1);
	resident_give_back(r);
	ck_assert_uint_eq(r->busy, 0);
}
END_TEST

START_TEST(the_budget_and_the_least_recently_used)
{
	struct resident_set s = {.destroy = destroy};
	int64_t d[1] = {100};
	struct resident *busy;

	memset(destroyed, 0, sizeof(destroyed));
	ck_assert(!resident_keep(&s, 0, 1, d, 1, 2000, buf(1), 1000)); /* larger than the budget */
	ck_assert(resident_keep(&s, 0, 1, d, 1, 400, buf(1), 1000));
	ck_assert(resident_keep(&s, 0, 2, d, 1, 400, buf(2), 1000));
	resident_give_back(resident_take(&s, 0, 1, d, 1)); /* 1 used after 2 */
	ck_assert(resident_keep(&s, 0, 3, d, 1, 400, buf(3), 1000));
	ck_assert_int_eq(destroyed[2], 1); /* 2 made room */
	ck_assert_int_eq(destroyed[1], 0);
	/* one in use is never destroyed: with only busy ones in the way, nothing is kept */
	busy = resident_take(&s, 0, 1, d, 1);
	resident_take(&s, 0, 3, d, 1);
	ck_assert(!resident_keep(&s, 0, 4, d, 1, 400, buf(4), 1000));
	ck_assert_int_eq(destroyed[1] + destroyed[3], 0);
	/* clearing spares the busy ones too */
	resident_clear(&s);
	ck_assert_int_eq(destroyed[1] + destroyed[3], 0);
	resident_give_back(busy);
	resident_clear(&s);
	ck_assert_int_eq(destroyed[1], 1);
	ck_assert_uint_eq(s.bytes, 400);
}
END_TEST

START_TEST(forgotten_not_destroyed)
{
	struct resident_set s = {.destroy = destroy};
	int64_t d[1] = {100};
	struct resident *r;

	memset(destroyed, 0, sizeof(destroyed));
	ck_assert(resident_keep(&s, 0, 1, d, 1, 400, buf(5), 1000));
	r = resident_take(&s, 0, 1, d, 1);
	resident_forget(&s, r);
	ck_assert_uint_eq(s.bytes, 0);
	ck_assert_int_eq(destroyed[5], 0);
	ck_assert_ptr_null(resident_take(&s, 0, 1, d, 1));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pjrt_resident");
	TCase *tc = tcase_create("resident");

	tcase_add_test(tc, taken_by_key_shape_and_device);
	tcase_add_test(tc, the_budget_and_the_least_recently_used);
	tcase_add_test(tc, forgotten_not_destroyed);
	suite_add_tcase(s, tc);
	return s;
}
