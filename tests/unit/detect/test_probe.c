/* Unit tests for probe.c: the notes a probe leaves in its result, and the one list of built-in probes. */
#include <string.h>

#include "check_main.h"
#include "detect/probe.h"

START_TEST(notes_are_joined_and_cut)
{
	struct probe_result res;
	char long_text[400];

	memset(&res, 0, sizeof(res));
	probe_note(&res, "no %s", "libnvidia-ml.so.1");
	ck_assert_str_eq(res.why, "no libnvidia-ml.so.1");
	probe_note(&res, "%d devices skipped", 2);
	ck_assert_str_eq(res.why, "no libnvidia-ml.so.1; 2 devices skipped");

	/* a note longer than the field is cut, terminated */
	memset(&res, 0, sizeof(res));
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	probe_note(&res, "%s", long_text);
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	/* a full field takes nothing more, not even the separator */
	probe_note(&res, "more");
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	ck_assert_ptr_null(strstr(res.why, ";"));

	/* with room for the separator but not the whole note, the note is cut */
	memset(&res, 0, sizeof(res));
	memset(res.why, 'y', sizeof(res.why) - 10);
	probe_note(&res, "0123456789abcdef");
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	ck_assert_ptr_nonnull(strstr(res.why, "y; 0123456"));
}
END_TEST

START_TEST(builtin_probes_in_order_with_their_trust)
{
	static const struct {
		const char *name;
		unsigned trust;
	} want[] = {{"cpu", 3}, {"opencl", 1}, {"nvml", 4}, {"sysfs-gpu", 3}, {"tpu", 2}};
	size_t n = 0;

	for (; probe_builtin[n] != NULL; n++) {
		ck_assert_uint_lt(n, sizeof(want) / sizeof(want[0]));
		ck_assert_str_eq(probe_builtin[n]->name, want[n].name);
		/* vendor libraries over the kernel's sysfs and hwloc over PCI ids and device nodes over OpenCL */
		ck_assert_uint_eq(probe_builtin[n]->trust, want[n].trust);
		ck_assert(probe_builtin[n]->probe != NULL);
	}
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, notes_are_joined_and_cut);
	tcase_add_test(tc, builtin_probes_in_order_with_their_trust);
	suite_add_tcase(s, tc);
	return s;
}
