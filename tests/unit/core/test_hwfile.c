/*
 * Unit tests for hwfile.c: bounded reads of sysfs-style files in a temporary tree (padding, several lines, numbers
 * in both bases, links, missing files) and the one PCI address form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "core/hwfile.h"

static char root[] = "/tmp/acceld-hwfile-XXXXXX";

static void put(const char *name, const char *text)
{
	char path[HWFILE_PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	char path[HWFILE_PATH_MAX];

	snprintf(root, sizeof(root), "/tmp/acceld-hwfile-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	put("padded", "  Tesla T4 \t\nsecond line\n");
	put("lines", "a 1\nb 2\n\n  \n");
	put("empty", "");
	put("dec", "4096\n");
	put("hex", "0x10de\n");
	put("neg", "-1\n");
	put("junk", "12 13\n");
	put("word", "abc\n");
	put("bare0x", "0x\n");
	snprintf(path, sizeof(path), "%s/dir", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/driver", root);
	ck_assert_int_eq(symlink("../../bus/pci/drivers/nvidia/", path), 0);
	snprintf(path, sizeof(path), "%s/dangling", root);
	ck_assert_int_eq(symlink("/nonexistent/acceld/target", path), 0);
}

static void teardown(void)
{
	char cmd[HWFILE_PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(read_line_trims_and_keeps_the_first_line)
{
	char out[64];

	ck_assert_int_eq(hwfile_read_line(out, sizeof(out), "%s/%s", root, "padded"), 0);
	ck_assert_str_eq(out, "Tesla T4"); /* drivers pad attributes: the white space around goes */
	ck_assert_int_eq(hwfile_read_line(out, sizeof(out), "%s/lines", root), 0);
	ck_assert_str_eq(out, "a 1");
	ck_assert_int_eq(hwfile_read_line(out, sizeof(out), "%s/empty", root), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(hwfile_read_line(out, 5, "%s/padded", root), 0); /* at most outsz - 1 bytes are read */
	ck_assert_str_eq(out, "Te"); /* "  Te" read, then trimmed */
	ck_assert_int_eq(hwfile_read_line(out, sizeof(out), "%s/missing", root), -1);
}
END_TEST

START_TEST(read_text_keeps_every_line)
{
	char out[64];

	ck_assert_int_eq(hwfile_read_text(out, sizeof(out), "%s/lines", root), 0);
	ck_assert_str_eq(out, "a 1\nb 2"); /* only the white space that ends it goes */
	ck_assert_int_eq(hwfile_read_text(out, sizeof(out), "%s/missing", root), -1);
}
END_TEST

START_TEST(paths_too_long_are_refused)
{
	char longname[HWFILE_PATH_MAX + 8];
	char out[16];
	uint64_t u;
	int64_t i;

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(hwfile_read_line(out, sizeof(out), "%s/%s", root, longname), -1);
	ck_assert_int_eq(hwfile_read_text(out, sizeof(out), "%s/%s", root, longname), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/%s", root, longname), -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/%s", root, longname), -1);
	ck_assert_int_eq(hwfile_link_base(out, sizeof(out), "%s/%s", root, longname), -1);
	ck_assert(!hwfile_exists("%s/%s", root, longname));
}
END_TEST

START_TEST(fields_of_proc_files)
{
	uint64_t v = 7;

	ck_assert_int_eq(hwfile_parse_field_u64("123 45", &v), 0);
	ck_assert_uint_eq(v, 123);
	ck_assert_int_eq(hwfile_parse_field_u64("9\nnext", &v), 0);
	ck_assert_uint_eq(v, 9);
	ck_assert_int_eq(hwfile_parse_field_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 7;
	ck_assert_int_eq(hwfile_parse_field_u64("18446744073709551616", &v), -1); /* past 64 bits */
	ck_assert_int_eq(hwfile_parse_field_u64("", &v), -1);
	ck_assert_int_eq(hwfile_parse_field_u64(" 1", &v), -1);
	ck_assert_int_eq(hwfile_parse_field_u64("-1", &v), -1);
	ck_assert_int_eq(hwfile_parse_field_u64("12a", &v), -1);
	ck_assert_int_eq(hwfile_parse_field_u64("12\t3", &v), -1);
	ck_assert_uint_eq(v, 7); /* a refusal writes nothing */
}
END_TEST

START_TEST(numbers_in_files)
{
	uint64_t u = 5;
	int64_t i = 5;

	ck_assert_int_eq(hwfile_read_u64(&u, "%s/dec", root), 0);
	ck_assert_uint_eq(u, 4096);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/hex", root), 0);
	ck_assert_uint_eq(u, 0x10de);
	u = 5;
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/empty", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/junk", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/word", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/bare0x", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/neg", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/missing", root), -1);
	ck_assert_int_eq(hwfile_read_u64(&u, "%s/dir", root), -1); /* a directory holds no number */
	ck_assert_uint_eq(u, 5);

	ck_assert_int_eq(hwfile_read_i64(&i, "%s/neg", root), 0); /* numa_node's -1 */
	ck_assert_int_eq(i, -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/dec", root), 0);
	ck_assert_int_eq(i, 4096);
	i = 5;
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/junk", root), -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/word", root), -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/empty", root), -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/missing", root), -1);
	ck_assert_int_eq(i, 5);
}
END_TEST

START_TEST(links_and_existence)
{
	char out[32];

	ck_assert_int_eq(hwfile_link_base(out, sizeof(out), "%s/driver", root), 0);
	ck_assert_str_eq(out, "nvidia"); /* the last component, a trailing slash or not */
	ck_assert_int_eq(hwfile_link_base(out, sizeof(out), "%s/dangling", root), 0); /* the link, not its target */
	ck_assert_str_eq(out, "target");
	ck_assert_int_eq(hwfile_link_base(out, 6, "%s/driver", root), -1); /* "nvidia" needs 7 bytes */
	ck_assert_int_eq(hwfile_link_base(out, sizeof(out), "%s/dec", root), -1); /* not a link */
	ck_assert_int_eq(hwfile_link_base(out, sizeof(out), "%s/missing", root), -1);

	ck_assert(hwfile_exists("%s/dec", root));
	ck_assert(hwfile_exists("%s/dir", root));
	ck_assert(hwfile_exists("%s/dangling", root)); /* any file type, a broken link too */
	ck_assert(!hwfile_exists("%s/missing", root));
}
END_TEST

START_TEST(pci_addresses)
{
	static const char *const good[][2] = {
		{"0000:65:00.0", "0000:65:00.0"},
		{"00000000:65:00.0", "0000:65:00.0"}, /* NVML's eight-digit domain */
		{"65:00.0", "0000:65:00.0"},
		{"0001:AB:1F.7", "0001:ab:1f.7"},
		{"ffff:ff:1f.7", "ffff:ff:1f.7"},
		{"1:2:3.4", "0001:02:03.4"},
	};
	static const char *const bad[] = {
		"",       "65:00",        "65.00.0",       "0000:65:20.0", /* device past 0x1f */
		"65:00.8", /* function past 7 */ "65:00.0x",     "0000:65:00.0 ", "10000:65:00.0", /* domain past 16 bits */
		"g5:00.0", "1:2:3:4.0",    "0000:165:00.0", ":65:00.0",
	};
	char out[16];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(hwfile_pci_normalise(good[i][0], out, sizeof(out)) == 0, "'%s' refused", good[i][0]);
		ck_assert_str_eq(out, good[i][1]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(hwfile_pci_normalise(bad[i], out, sizeof(out)) == -1, "'%s' taken", bad[i]);
	ck_assert_int_eq(hwfile_pci_normalise(NULL, out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("65:00.0", out, 12), -1); /* the canonical form needs 13 bytes */
	ck_assert_int_eq(hwfile_pci_normalise("65:00.0", out, 13), 0);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("hwfile");
	TCase *tc = tcase_create("files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, read_line_trims_and_keeps_the_first_line);
	tcase_add_test(tc, read_text_keeps_every_line);
	tcase_add_test(tc, paths_too_long_are_refused);
	tcase_add_test(tc, fields_of_proc_files);
	tcase_add_test(tc, numbers_in_files);
	tcase_add_test(tc, links_and_existence);
	suite_add_tcase(s, tc);
	tc = tcase_create("pci");
	tcase_add_test(tc, pci_addresses);
	suite_add_tcase(s, tc);
	return s;
}
