/* Unit tests for pool.c: every index covered exactly once, small tasks on the caller alone, alignment of parts. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/pool.h"

struct count_task {
	size_t n;
	size_t align;
	unsigned char *seen;
	unsigned parts_used;
	int misaligned;
};

static void mark(void *arg, unsigned part, size_t b, size_t e)
{
	struct count_task *t = arg;

	__atomic_fetch_or(&t->parts_used, 1u << (part & 31), __ATOMIC_RELAXED);
	if (b % t->align != 0)
		__atomic_fetch_add(&t->misaligned, 1, __ATOMIC_RELAXED);
	for (size_t i = b; i < e; i++)
		t->seen[i]++;
}

START_TEST(parallel_covers_every_index_once)
{
	struct pool *p = pool_new((unsigned)_i + 1);
	static const size_t sizes[] = {0, 1, 5, 16, 17, 1000, 99991};

	ck_assert_uint_eq(pool_threads(p), (unsigned)_i + 1);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct count_task t = {.n = sizes[s], .align = 16, .seen = calloc(sizes[s] + 1, 1)};

		pool_parallel(p, t.n, 1, 16, mark, &t);
		for (size_t i = 0; i < t.n; i++)
			ck_assert_uint_eq(t.seen[i], 1);
		ck_assert_int_eq(t.misaligned, 0);
		free(t.seen);
	}
	pool_free(p);
}
END_TEST

START_TEST(small_tasks_stay_on_the_caller)
{
	struct pool *p = pool_new(4);
	struct count_task t = {.n = 100, .align = 1, .seen = calloc(101, 1)};

	pool_parallel(p, t.n, 1000, 1, mark, &t);
	ck_assert_uint_eq(t.parts_used, 1u); /* part 0 alone: below the grain */
	for (size_t i = 0; i < t.n; i++)
		ck_assert_uint_eq(t.seen[i], 1);
	free(t.seen);
	pool_free(p);
}
END_TEST

START_TEST(sizes_are_bounded)
{
	struct pool *p = pool_new(0);

	ck_assert_uint_eq(pool_threads(p), pool_usable_cpus() < POOL_MAX_THREADS ? pool_usable_cpus() : POOL_MAX_THREADS);
	pool_free(p);
	p = pool_new(POOL_MAX_THREADS + 50);
	ck_assert_uint_le(pool_threads(p), POOL_MAX_THREADS);
	pool_free(p);
	pool_free(NULL);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_add_loop_test(tc, parallel_covers_every_index_once, 0, 4);
	tcase_add_test(tc, small_tasks_stay_on_the_caller);
	tcase_add_test(tc, sizes_are_bounded);
	suite_add_tcase(s, tc);
	return s;
}
