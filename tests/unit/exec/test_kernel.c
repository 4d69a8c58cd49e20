/* Unit tests for kernel.c: names, inputs and parameters, buffer lengths (saturating), and the work of a run. */
#include <stdint.h>
#include <string.h>

#include "check_main.h"
#include "exec/kernel.h"

START_TEST(names_parse_both_ways)
{
	enum kernel_id k;

	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		ck_assert(kernel_parse(kernel_name((enum kernel_id)i), &k));
		ck_assert_int_eq(k, (int)i);
		ck_assert_ptr_nonnull(strstr(kernel_names_text(), kernel_name(k)));
	}
	ck_assert(!kernel_parse("fft", &k));
	ck_assert(!kernel_parse(NULL, &k));
	ck_assert_str_eq(kernel_name(KERNEL_COUNT), "?");
	/* what the sizes mean, n always the kernel's own n */
	ck_assert_str_eq(kernel_sizes_text(KERNEL_SAXPY), "n, the vector length");
	ck_assert_str_eq(kernel_sizes_text(KERNEL_SGEMM), "m, n and k: C[m x n] = A[m x k] x B[k x n]");
	ck_assert_ptr_nonnull(strstr(kernel_sizes_text(KERNEL_SOFTMAX), "n is the row length"));
	ck_assert_str_eq(kernel_sizes_text(KERNEL_COUNT), "?");
}
END_TEST

START_TEST(inputs_and_parameters)
{
	const char *const *in = kernel_inputs(KERNEL_SGEMM);

	ck_assert_str_eq(in[0], "a");
	ck_assert_str_eq(in[1], "b");
	ck_assert_str_eq(in[2], "c");
	ck_assert_ptr_null(in[3]);
	ck_assert(kernel_input_optional(KERNEL_SGEMM, 2));
	ck_assert(!kernel_input_optional(KERNEL_SGEMM, 0));
	ck_assert_str_eq(kernel_inputs(KERNEL_TRIAD)[0], "b");
	ck_assert_ptr_null(kernel_inputs(KERNEL_SOFTMAX)[1]);
	ck_assert_uint_eq(kernel_params(KERNEL_SAXPY), KERNEL_PARAM_ALPHA);
	ck_assert_uint_eq(kernel_params(KERNEL_SOFTMAX), KERNEL_PARAM_M);
	ck_assert_uint_eq(kernel_params(KERNEL_DOT), 0);
	ck_assert(kernel_compute_bound(KERNEL_SGEMM));
	ck_assert(!kernel_compute_bound(KERNEL_SOFTMAX));
	ck_assert(kernel_shape_complete(KERNEL_SGEMM, &(struct kernel_shape){.m = 1, .n = 2, .k = 3}));
	ck_assert(!kernel_shape_complete(KERNEL_SGEMM, &(struct kernel_shape){.m = 1, .n = 2}));
	ck_assert(!kernel_shape_complete(KERNEL_SOFTMAX, &(struct kernel_shape){.n = 2}));
	ck_assert(kernel_shape_complete(KERNEL_DOT, &(struct kernel_shape){.n = 2}));
}
END_TEST

START_TEST(lengths_saturate)
{
	struct kernel_shape s = {.m = 3, .n = 5, .k = 7};
	struct kernel_shape huge = {.m = UINT64_MAX / 2, .n = 4, .k = 3};

	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 0), 21);
	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 1), 35);
	ck_assert_uint_eq(kernel_input_len(KERNEL_SGEMM, &s, 2), 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_SGEMM, &s), 15);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SGEMM, &s), 21 + 35 + 15 + 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_DOT, &s), 1);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SAXPY, &s), 15);
	ck_assert_uint_eq(kernel_output_len(KERNEL_SOFTMAX, &huge), UINT64_MAX);
	ck_assert_uint_eq(kernel_total_len(KERNEL_SOFTMAX, &huge), UINT64_MAX);
}
END_TEST

START_TEST(work_counts)
{
	struct kernel_shape v = {.n = 1000};
	struct kernel_shape g = {.m = 1024, .n = 512, .k = 256};
	struct kernel_shape sm = {.m = 30, .n = 50};

	ck_assert_double_eq(kernel_flops(KERNEL_SAXPY, &v), 2000);
	ck_assert_double_eq(kernel_bytes(KERNEL_SAXPY, &v), 12000);
	ck_assert_double_eq(kernel_bytes(KERNEL_TRIAD, &v), 12000);
	ck_assert_double_eq(kernel_bytes(KERNEL_DOT, &v), 8000);
	ck_assert_double_eq(kernel_flops(KERNEL_SGEMM, &g), 2.0 * 1024 * 512 * 256);
	/* A and B read, C read (it may be given) and the output written */
	ck_assert_double_eq(kernel_bytes(KERNEL_SGEMM, &g), 4.0 * (1024 * 256 + 256 * 512 + 2.0 * 1024 * 512));
	/* softmax counts every row */
	ck_assert_double_eq(kernel_flops(KERNEL_SOFTMAX, &sm), 4.0 * 30 * 50);
	ck_assert_double_eq(kernel_bytes(KERNEL_SOFTMAX, &sm), 8.0 * 30 * 50);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("kernel");
	TCase *tc = tcase_create("kernel");

	tcase_add_test(tc, names_parse_both_ways);
	tcase_add_test(tc, inputs_and_parameters);
	tcase_add_test(tc, lengths_saturate);
	tcase_add_test(tc, work_counts);
	suite_add_tcase(s, tc);
	return s;
}
