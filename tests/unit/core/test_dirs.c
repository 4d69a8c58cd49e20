/* Unit tests for dirs.c: folders made with their parents, each one said in the log, and what cannot be made. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_cli.h"
#include "check_main.h"
#include "core/dirs.h"
#include "core/log.h"

static char root[64];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/acceld-dirs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	log_set_level(LOGL_INFO);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* Whether root/rel is a folder. */
static bool is_dir(const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every missing folder is made, once, and each is said; a second call makes and says nothing. */
START_TEST(parents_made_and_said)
{
	struct check_capture cap;
	char dir[256], *out = NULL, *err = NULL;

	snprintf(dir, sizeof(dir), "%s/a/b//c/", root);
	check_capture_begin(&cap);
	ck_assert_int_eq(dirs_make(dir, 0700, "store", "created a folder for the database"), 0);
	check_capture_end(&cap, &out, &err);
	ck_assert(is_dir("a/b/c"));
	ck_assert_msg(strstr(err, "created a folder for the database") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "/a/b/c\"") != NULL, "%s", err);
	/* three folders made, three lines */
	ck_assert_ptr_nonnull(strstr(strstr(strstr(err, "\"folder\""), "\n") + 1, "\"folder\""));
	free(out);
	free(err);
	check_capture_begin(&cap);
	ck_assert_int_eq(dirs_make(dir, 0700, "store", "created a folder for the database"), 0);
	check_capture_end(&cap, &out, &err);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
}
END_TEST

/* The folder of a file: the file itself is not made; a bare name needs nothing. */
START_TEST(parent_of_a_file)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/var/acceld.db", root);
	ck_assert_int_eq(dirs_make_parent(path, 0750, "store", "created a folder for the database"), 0);
	ck_assert(is_dir("var"));
	ck_assert_int_ne(stat(path, &st), 0);
	ck_assert_int_eq(dirs_make_parent("acceld.db", 0750, "store", "x"), 0);
	ck_assert_int_eq(dirs_make_parent("/acceld.db", 0750, "store", "x"), 0);
}
END_TEST

/* A file where a folder should be, and a path too long, fail with errno saying why. */
START_TEST(what_cannot_be_made)
{
	char path[256];
	char *longpath = malloc(5000);
	FILE *f;

	snprintf(path, sizeof(path), "%s/file", root);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	errno = 0;
	ck_assert_int_eq(dirs_make(path, 0700, "x", "y"), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	snprintf(path, sizeof(path), "%s/file/below", root);
	ck_assert_int_eq(dirs_make(path, 0700, "x", "y"), -1);
	memset(longpath, 'a', 4999);
	longpath[0] = '/';
	longpath[4999] = '\0';
	errno = 0;
	ck_assert_int_eq(dirs_make(longpath, 0700, "x", "y"), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	free(longpath);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("dirs");
	TCase *tc = tcase_create("dirs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parents_made_and_said);
	tcase_add_test(tc, parent_of_a_file);
	tcase_add_test(tc, what_cannot_be_made);
	suite_add_tcase(s, tc);
	return s;
}
