/*
 * check_pools: what the tests of generated data and of kernels (tests/unit/exec/test_jobdata.c, test_kernel.c) share:
 * a pool of one thread and one of four, made and freed around each test (check_pools_setup, check_pools_teardown as
 * a checked fixture), and inputs generated as a job generates them. Header only: the Makefile links each test with
 * check_main.o and check_api.o alone.
 */
#ifndef ACCELD_CHECK_POOLS_H
#define ACCELD_CHECK_POOLS_H

#include <check.h>
#include <stdint.h>

#include "core/pool.h"
#include "exec/jobdata.h"

static struct pool *one;
static struct pool *four;

static inline void check_pools_setup(void)
{
	one = pool_new(1);
	four = pool_new(4);
}

static inline void check_pools_teardown(void)
{
	pool_free(one);
	pool_free(four);
}

/* n floats generated on p from seed for input (free them). */
static inline float *generated(struct pool *p, size_t n, uint64_t seed, unsigned input)
{
	float *v = jobdata_alloc(n);

	ck_assert_ptr_nonnull(v);
	jobdata_generate(p, v, n, seed, input);
	return v;
}

#endif
