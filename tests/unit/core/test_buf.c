/* Unit tests for buf.c: a buffer that grows, stays NUL-terminated and never passes its cap. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/buf.h"

START_TEST(starts_empty_and_detaches_an_empty_string)
{
	struct buf b;
	size_t len = 99;
	char *s;

	buf_init(&b, 16);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	s = buf_detach(&b, &len); /* never NULL, even before the first append */
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
	buf_release(&b);
}
END_TEST

START_TEST(grows_and_stays_terminated)
{
	struct buf b;
	char chunk[100];

	memset(chunk, 'x', sizeof(chunk));
	buf_init(&b, 1 << 20);
	for (int i = 0; i < 50; i++) /* 5000 bytes: several reallocations past the first block */
		ck_assert_int_eq(buf_append(&b, chunk, sizeof(chunk)), 0);
	ck_assert_uint_eq(b.len, 5000);
	ck_assert_uint_ge(b.alloc, b.len + 1);
	ck_assert_int_eq(b.data[b.len], '\0');
	ck_assert_uint_eq(strlen(b.data), 5000);
	ck_assert_int_eq(buf_append(&b, "", 0), 0); /* nothing appended is fine */
	ck_assert_uint_eq(b.len, 5000);
	buf_release(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(binary_bytes_are_kept)
{
	struct buf b;
	static const char bytes[] = {'a', '\0', 'b'};

	buf_init(&b, 16);
	ck_assert_int_eq(buf_append(&b, bytes, sizeof(bytes)), 0);
	ck_assert_uint_eq(b.len, 3);
	ck_assert(memcmp(b.data, bytes, 3) == 0);
	buf_release(&b);
}
END_TEST

START_TEST(the_cap_refuses_and_leaves_the_buffer_unchanged)
{
	struct buf b;
	char *s;
	size_t len;

	buf_init(&b, 8);
	ck_assert_int_eq(buf_append(&b, "abcd", 4), 0);
	ck_assert_int_eq(buf_printf(&b, "%d", 1234), 0); /* exactly the cap */
	ck_assert_int_eq(buf_append(&b, "x", 1), -1);    /* would pass the cap: refused, unchanged */
	ck_assert_str_eq(b.data, "abcd1234");
	ck_assert_int_eq(buf_printf(&b, "%s", "y"), -1);
	ck_assert_str_eq(b.data, "abcd1234");
	ck_assert_uint_eq(b.len, 8);
	s = buf_detach(&b, &len);
	ck_assert_str_eq(s, "abcd1234");
	ck_assert_uint_eq(len, 8);
	ck_assert_ptr_null(b.data); /* detaching resets the buffer, which keeps its cap */
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_append(&b, "12345678", 8), 0);
	ck_assert_int_eq(buf_append(&b, "9", 1), -1);
	free(s);
	buf_release(&b);

	/* a single append larger than the whole cap, and one so large the sum would wrap */
	buf_init(&b, 4);
	ck_assert_int_eq(buf_append(&b, "abcdef", 6), -1);
	ck_assert_ptr_null(b.data);
	ck_assert_int_eq(buf_append(&b, "ab", 2), 0);
	ck_assert_int_eq(buf_append(&b, "ab", (size_t)-1), -1);
	ck_assert_str_eq(b.data, "ab");
	buf_release(&b);
}
END_TEST

START_TEST(printf_formats_in_place)
{
	struct buf b;

	buf_init(&b, 64);
	ck_assert_int_eq(buf_printf(&b, "%s=%d", "n", 42), 0);
	ck_assert_int_eq(buf_printf(&b, ";%05.1f", 2.5), 0);
	ck_assert_str_eq(b.data, "n=42;002.5");
	ck_assert_uint_eq(b.len, strlen("n=42;002.5"));
	buf_release(&b);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");

	tcase_add_test(tc, starts_empty_and_detaches_an_empty_string);
	tcase_add_test(tc, grows_and_stays_terminated);
	tcase_add_test(tc, binary_bytes_are_kept);
	tcase_add_test(tc, the_cap_refuses_and_leaves_the_buffer_unchanged);
	tcase_add_test(tc, printf_formats_in_place);
	suite_add_tcase(s, tc);
	return s;
}
