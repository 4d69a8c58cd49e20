/* Unit tests for stablehlo.c: the compile options' bytes (docs/pjrt.md) and the program text of every kernel. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "exec/backend/stablehlo.h"

START_TEST(compile_options_bytes)
{
	/* one replica, one partition, device_ordinal -1, a device assignment naming device 5 */
	static const unsigned char want[] = {0x1a, 0x1a, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					     0x01, 0x20, 0x01, 0x28, 0x01, 0x4a, 0x09, 0x08, 0x01, 0x10, 0x01, 0x1a,
					     0x03, 0x0a, 0x01, 0x05};
	unsigned char out[STABLEHLO_OPTIONS_MAX];
	size_t n = stablehlo_compile_options(5, out);

	ck_assert_uint_eq(n, sizeof(want));
	ck_assert(memcmp(out, want, n) == 0);
	/* a device id past one varint byte grows every enclosing length */
	n = stablehlo_compile_options(300, out);
	ck_assert_uint_eq(n, sizeof(want) + 1);
	ck_assert_uint_eq(out[1], 0x1b);
	ck_assert_uint_eq(out[n - 2], 0xac); /* 300 = 0xac 0x02 */
	ck_assert_uint_eq(out[n - 1], 0x02);
}
END_TEST

static char *program(enum kernel_id k, struct kernel_shape s, bool with_c, enum stablehlo_dot dot)
{
	size_t len = 0;
	char *text = stablehlo_program(k, &s, with_c, dot, &len);

	ck_assert_uint_eq(strlen(text), len);
	ck_assert_ptr_nonnull(strstr(text, "func.func public @main("));
	return text;
}

START_TEST(programs_name_their_kernel_and_shapes)
{
	char *t = program(KERNEL_SAXPY, (struct kernel_shape){.n = 1024}, false, STABLEHLO_DOT_HIGHEST);

	ck_assert(strncmp(t, "module @acceld_saxpy {", 22) == 0);
	ck_assert_ptr_nonnull(strstr(t, "(%arg0: tensor<f32>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>)"));
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.add\"(%scaled, %arg2)"));
	free(t);
	t = program(KERNEL_TRIAD, (struct kernel_shape){.n = 7}, false, STABLEHLO_DOT_HIGHEST);
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.multiply\"(%scale, %arg2)"));
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.add\"(%arg1, %scaled)"));
	free(t);
	t = program(KERNEL_DOT, (struct kernel_shape){.n = 9}, false, STABLEHLO_DOT_HIGHEST);
	ck_assert_ptr_nonnull(strstr(t, "-> tensor<f32> {"));
	ck_assert_ptr_nonnull(strstr(t, "{dimensions = array<i64: 0>} : (tensor<9xf32>, tensor<f32>) -> tensor<f32>"));
	free(t);
	t = program(KERNEL_SOFTMAX, (struct kernel_shape){.m = 3, .n = 5}, false, STABLEHLO_DOT_HIGHEST);
	ck_assert_ptr_nonnull(strstr(t, "dense<0xFF800000>"));
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.maximum\""));
	ck_assert_ptr_nonnull(strstr(t, "-> tensor<3xf32>"));
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.divide\"(%e, %rsum_b) : (tensor<3x5xf32>"));
	free(t);
	t = program(KERNEL_SGEMM, (struct kernel_shape){.m = 4, .n = 6, .k = 5}, true, STABLEHLO_DOT_HIGHEST);
	ck_assert_ptr_nonnull(strstr(t, "%a: tensor<4x5xf32>, %b: tensor<5x6xf32>, %c: tensor<4x6xf32>"));
	ck_assert_ptr_nonnull(strstr(t, "precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]"));
	ck_assert_ptr_nonnull(strstr(t, "func.return %out"));
	free(t);
	t = program(KERNEL_SGEMM, (struct kernel_shape){.m = 4, .n = 6, .k = 5}, false, STABLEHLO_DOT_BF16);
	ck_assert_ptr_null(strstr(t, "%c:"));
	ck_assert_ptr_nonnull(strstr(t, "\"stablehlo.convert\"(%a) : (tensor<4x5xf32>) -> tensor<4x5xbf16>"));
	ck_assert_ptr_nonnull(strstr(t, "(tensor<4x5xbf16>, tensor<5x6xbf16>) -> tensor<4x6xf32>"));
	ck_assert_ptr_nonnull(strstr(t, "precision DEFAULT"));
	free(t);
	ck_assert_uint_eq(stablehlo_operands(KERNEL_SGEMM, true), 5);
	ck_assert_uint_eq(stablehlo_operands(KERNEL_SGEMM, false), 3);
	ck_assert_uint_eq(stablehlo_operands(KERNEL_DOT, false), 2);
	ck_assert_uint_eq(stablehlo_operands(KERNEL_SOFTMAX, false), 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("stablehlo");
	TCase *tc = tcase_create("stablehlo");

	tcase_add_test(tc, compile_options_bytes);
	tcase_add_test(tc, programs_name_their_kernel_and_shapes);
	suite_add_tcase(s, tc);
	return s;
}
