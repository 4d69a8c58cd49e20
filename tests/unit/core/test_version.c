/* Unit tests for version.c: the build's identity, as /version and acceld_build_info report it. */
#include <ctype.h>
#include <string.h>

#include "check_main.h"
#include "core/version.h"

START_TEST(version_is_the_builds)
{
	ck_assert_str_eq(version_string(), ACCELD_VERSION); /* the Makefile's VERSION, given to every file */
}
END_TEST

START_TEST(commit_is_a_short_hash_or_unknown)
{
	const char *c = version_commit();

	ck_assert_ptr_nonnull(c);
	if (strcmp(c, "unknown") == 0)
		return; /* built outside a git checkout */
	ck_assert_uint_eq(strlen(c), 12);
	for (const char *p = c; *p; p++)
		ck_assert_msg(isxdigit((unsigned char)*p) && !isupper((unsigned char)*p), "commit '%s'", c);
}
END_TEST

START_TEST(build_time_is_rfc3339_utc_or_unknown)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	const char *t = version_build_time();

	ck_assert_ptr_nonnull(t);
	if (strcmp(t, "unknown") == 0)
		return;
	ck_assert_uint_eq(strlen(t), sizeof(shape) - 1);
	for (size_t i = 0; shape[i]; i++)
		ck_assert_msg(shape[i] == 'd' ? isdigit((unsigned char)t[i]) != 0 : t[i] == shape[i], "build time '%s'",
			      t);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");

	tcase_add_test(tc, version_is_the_builds);
	tcase_add_test(tc, commit_is_a_short_hash_or_unknown);
	tcase_add_test(tc, build_time_is_rfc3339_utc_or_unknown);
	suite_add_tcase(s, tc);
	return s;
}
