/*
 * Unit tests for jobdata.c: aligned buffers; generated inputs that depend only on the seed, the input and the index
 * (the same with one thread or four, a prefix of a longer run, the SplitMix64 values themselves), in [-1, 1);
 * and summaries of outputs (checksum, min, max, mean, the leading values) and of a scalar output's value.
 * Verification is the kernel table's (test_kernel.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "check_pools.h"
#include "exec/jobdata.h"

/* The generator as kernel.h describes it, written out again: lowbias32 over the index and the input's key, 24 bits
 * scaled to [-1, 1). */
static uint32_t lowbias32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

static float reference_value(uint64_t seed, unsigned input, size_t i)
{
	uint32_t key = lowbias32((uint32_t)seed ^ lowbias32((uint32_t)(seed >> 32) + 0x9e3779b9u * (input + 1u)));
	uint32_t h = lowbias32((uint32_t)i * 0x9e3779b9u + (key ^ (uint32_t)((uint64_t)i >> 32) * 0x85ebca6bu));

	return (float)(h >> 8) / 8388608.0f - 1.0f;
}

START_TEST(aligned_buffers)
{
	float *a = jobdata_alloc(0);
	float *b = jobdata_alloc(1001);

	ck_assert_ptr_nonnull(a); /* one float at least */
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq((uintptr_t)a % 64, 0);
	ck_assert_uint_eq((uintptr_t)b % 64, 0);
	a[0] = 1.0f;
	b[1000] = 2.0f;
	free(a);
	free(b);
	/* a count whose bytes overflow size_t */
	ck_assert_ptr_null(jobdata_alloc(SIZE_MAX / sizeof(float) + 1));
}
END_TEST

START_TEST(generation_is_deterministic_per_seed)
{
	const size_t n = 300000; /* several of the pool's 65536-element grains */
	float *a = generated(one, n, 7, 0);
	float *b = generated(four, n, 7, 0);
	float *prefix = generated(four, 10, 7, 0);
	float *other_seed = generated(four, n, 8, 0);
	float *other_input = generated(four, n, 7, 1);
	size_t same_seed = 0;
	size_t same_input = 0;
	float mn = 1.0f;
	float mx = -1.0f;

	/* the same values whatever the thread count, and element i does not depend on n */
	ck_assert_int_eq(memcmp(a, b, n * sizeof(float)), 0);
	ck_assert_int_eq(memcmp(a, prefix, 10 * sizeof(float)), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(a[i] >= -1.0f && a[i] < 1.0f, "a[%zu] = %g", i, a[i]);
		mn = a[i] < mn ? a[i] : mn;
		mx = a[i] > mx ? a[i] : mx;
		same_seed += a[i] == other_seed[i];
		same_input += a[i] == other_input[i];
	}
	/* the range is covered, and another seed or input gives other values (a few equal by chance at most) */
	ck_assert(mn < -0.999f && mx > 0.999f);
	ck_assert_uint_lt(same_seed, 100);
	ck_assert_uint_lt(same_input, 100);
	/* the counter-based generator itself: a seed names the same inputs in every release */
	for (size_t i = 0; i < n; i += 997) {
		ck_assert_msg(a[i] == reference_value(7, 0, i), "a[%zu] = %.9g, want %.9g", i, a[i],
			      reference_value(7, 0, i));
		ck_assert(other_input[i] == reference_value(7, 1, i));
		ck_assert(other_seed[i] == reference_value(8, 0, i));
	}
	free(a);
	free(b);
	free(prefix);
	free(other_seed);
	free(other_input);
}
END_TEST

START_TEST(summaries)
{
	const float small[] = {1.0f, -2.0f, 3.5f, 0.25f};
	struct jobdata_summary s;
	const size_t n = 200001;
	float *big = jobdata_alloc(n);
	double want = 0.0;

	jobdata_summarise(one, small, 4, &s);
	ck_assert_double_eq(s.checksum, 2.75);
	ck_assert_double_eq(s.min, -2.0);
	ck_assert_double_eq(s.max, 3.5);
	ck_assert_double_eq(s.mean, 0.6875);
	ck_assert_uint_eq(s.nfirst, 4);
	ck_assert_int_eq(memcmp(s.first, small, sizeof(small)), 0);

	/* integers sum exactly, so every split of the work gives the same figures */
	for (size_t i = 0; i < n; i++) {
		big[i] = (float)((int)(i % 7) - 3);
		want += big[i];
	}
	big[123457] = -9.0f;
	big[199999] = 11.0f;
	want += -9.0 - (double)((int)(123457 % 7) - 3) + 11.0 - (double)((int)(199999 % 7) - 3);
	for (int k = 0; k < 2; k++) {
		jobdata_summarise(k ? four : one, big, n, &s);
		ck_assert_double_eq(s.checksum, want);
		ck_assert_double_eq(s.min, -9.0);
		ck_assert_double_eq(s.max, 11.0);
		ck_assert_double_eq(s.mean, want / (double)n);
		ck_assert_uint_eq(s.nfirst, JOBDATA_FIRST);
		ck_assert_int_eq(memcmp(s.first, big, JOBDATA_FIRST * sizeof(float)), 0);
	}
	free(big);

	/* an empty output: nothing to sum, and no extremes (not finite, so documents show null) */
	jobdata_summarise(four, small, 0, &s);
	ck_assert_double_eq(s.checksum, 0.0);
	ck_assert_double_eq(s.mean, 0.0);
	ck_assert_uint_eq(s.nfirst, 0);
	ck_assert(!isfinite(s.min) && !isfinite(s.max));

	jobdata_summarise_value(-4.25, &s);
	ck_assert_double_eq(s.checksum, -4.25);
	ck_assert_double_eq(s.min, -4.25);
	ck_assert_double_eq(s.max, -4.25);
	ck_assert_double_eq(s.mean, -4.25);
	ck_assert_uint_eq(s.nfirst, 1);
	ck_assert(s.first[0] == -4.25f);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("jobdata");
	TCase *tc = tcase_create("jobdata");

	tcase_add_checked_fixture(tc, check_pools_setup, check_pools_teardown);
	tcase_add_test(tc, aligned_buffers);
	tcase_add_test(tc, generation_is_deterministic_per_seed);
	tcase_add_test(tc, summaries);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
