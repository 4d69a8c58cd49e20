/* Unit tests for mem.c: the allocation helpers, the bounded copy, and the one out-of-memory policy (abort). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/mem.h"

START_TEST(zero_sizes_still_allocate)
{
	void *a = xmalloc(0);
	void *b = xcalloc(0, 0);
	void *c = xrealloc(NULL, 0);

	/* never NULL: a caller never has to tell "empty" from "failed" */
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(calloc_zeroes_and_realloc_keeps)
{
	unsigned char *p = xcalloc(64, 4);
	char *q;

	for (size_t i = 0; i < 256; i++)
		ck_assert_uint_eq(p[i], 0);
	free(p);
	q = xmalloc(4);
	memcpy(q, "abc", 4);
	q = xrealloc(q, 1 << 16);
	ck_assert_str_eq(q, "abc");
	free(q);
}
END_TEST

START_TEST(string_copies)
{
	char *s = xstrdup("hello");
	char *t = xstrndup("hello", 3);
	char *u = xstrndup("hi", 10); /* stops at the NUL, not at n */
	char *v = xstrdup("");

	ck_assert_str_eq(s, "hello");
	ck_assert_str_eq(t, "hel");
	ck_assert_str_eq(u, "hi");
	ck_assert_str_eq(v, "");
	free(s);
	free(t);
	free(u);
	free(v);
}
END_TEST

START_TEST(bounded_copy_says_when_it_cut)
{
	char dst[6];

	ck_assert_int_eq(strlcpy_checked(dst, "abcde", sizeof(dst)), 0);
	ck_assert_str_eq(dst, "abcde");
	ck_assert_int_eq(strlcpy_checked(dst, "abcdef", sizeof(dst)), -1); /* one too many: cut, terminated */
	ck_assert_str_eq(dst, "abcde");
	ck_assert_int_eq(strlcpy_checked(dst, "", sizeof(dst)), 0);
	ck_assert_str_eq(dst, "");
	memset(dst, 'x', sizeof(dst));
	ck_assert_int_eq(strlcpy_checked(dst, "a", 0), -1); /* no room at all: nothing written */
	ck_assert_int_eq(dst[0], 'x');
	ck_assert_int_eq(strlcpy_checked(dst, "a", 1), -1);
	ck_assert_str_eq(dst, "");
}
END_TEST

/*
 * Run in a child of its own (Check's fork mode): the allocation fails and the process aborts. Not under
 * AddressSanitizer, which reports an impossible allocation as its own error instead of returning NULL.
 */
#ifndef __SANITIZE_ADDRESS__
START_TEST(exhaustion_aborts)
{
	volatile size_t huge = SIZE_MAX / 2;
	void *p = xmalloc(huge);

	free(p); /* not reached */
}
END_TEST
#endif

Suite *make_suite(void)
{
	Suite *s = suite_create("mem");
	TCase *tc = tcase_create("mem");

	tcase_add_test(tc, zero_sizes_still_allocate);
	tcase_add_test(tc, calloc_zeroes_and_realloc_keeps);
	tcase_add_test(tc, string_copies);
	tcase_add_test(tc, bounded_copy_says_when_it_cut);
#ifndef __SANITIZE_ADDRESS__
	tcase_add_test_raise_signal(tc, exhaustion_aborts, SIGABRT);
#endif
	suite_add_tcase(s, tc);
	return s;
}
