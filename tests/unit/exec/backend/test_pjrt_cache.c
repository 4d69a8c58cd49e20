/* Unit tests for pjrt_cache.c: entries kept and found by key, never trusted when corrupt, truncated or foreign, and
 * the folder bounded, least recently used out. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "exec/backend/pjrt_cache.h"

static char dir[256];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/acceld-pjrt-cache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	pjrt_cache_configure(dir, 1 << 20);
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	pjrt_cache_configure(NULL, 0);
}

/* A key for program `prog` under plugin version `version`. */
static void key(struct pjrt_cache_key *k, const char *prog, const char *version)
{
	memset(k, 0, sizeof(*k));
	pjrt_cache_key_add(k, "plugin", "/opt/plugin.so", 14);
	pjrt_cache_key_add(k, "program", prog, strlen(prog));
	pjrt_cache_key_seal(k);
	pjrt_cache_key_add(k, "api_version", version, strlen(version));
}

static enum pjrt_cache_result load(const struct pjrt_cache_key *k, char *out, size_t outsz, char *why)
{
	void *p = NULL;
	size_t n = 0;
	enum pjrt_cache_result r = pjrt_cache_load(k, &p, &n, why, 256);

	if (r == PJRT_CACHE_HIT) {
		ck_assert_uint_lt(n, outsz);
		memcpy(out, p, n);
		out[n] = '\0';
	}
	free(p);
	return r;
}

static off_t file_size(const struct pjrt_cache_key *k)
{
	char path[4200];
	struct stat st;

	pjrt_cache_path(k, path, sizeof(path));
	return stat(path, &st) == 0 ? st.st_size : -1;
}

START_TEST(stored_then_loaded)
{
	struct pjrt_cache_key k;
	char out[64], why[256];

	key(&k, "module @a", "0.115");
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_MISS);
	ck_assert(pjrt_cache_store(&k, "compiled-a", 10, why, sizeof(why)));
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_HIT);
	ck_assert_str_eq(out, "compiled-a");
	pjrt_cache_drop(&k);
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_MISS);
	pjrt_cache_key_release(&k);
}
END_TEST

START_TEST(truncated_is_dropped)
{
	struct pjrt_cache_key k;
	char out[64], why[256], path[4200];

	key(&k, "module @a", "0.115");
	ck_assert(pjrt_cache_store(&k, "compiled-a", 10, why, sizeof(why)));
	pjrt_cache_path(&k, path, sizeof(path));
	ck_assert_int_eq(truncate(path, file_size(&k) - 3), 0);
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	ck_assert_ptr_nonnull(strstr(why, "truncated"));
	ck_assert_int_eq(file_size(&k), -1); /* removed */
	/* and stored anew */
	ck_assert(pjrt_cache_store(&k, "compiled-b", 10, why, sizeof(why)));
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_HIT);
	ck_assert_str_eq(out, "compiled-b");
	/* shorter than a header */
	ck_assert_int_eq(truncate(path, 5), 0);
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	pjrt_cache_key_release(&k);
}
END_TEST

START_TEST(corrupt_is_dropped)
{
	struct pjrt_cache_key k;
	char out[64], why[256], path[4200];
	FILE *f;

	key(&k, "module @a", "0.115");
	ck_assert(pjrt_cache_store(&k, "compiled-a", 10, why, sizeof(why)));
	pjrt_cache_path(&k, path, sizeof(path));
	/* one byte of the payload flipped: same length, wrong checksum */
	f = fopen(path, "r+b");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, -1, SEEK_END), 0);
	fputc('X', f);
	fclose(f);
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	ck_assert_ptr_nonnull(strstr(why, "checksum"));
	/* not an entry at all */
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	fputs("garbage that is long enough to pass for a header, but is none", f);
	fclose(f);
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	ck_assert_ptr_nonnull(strstr(why, "magic"));
	pjrt_cache_key_release(&k);
}
END_TEST

START_TEST(foreign_is_dropped_and_replaced)
{
	struct pjrt_cache_key old, now;
	char out[64], why[256];

	/* the same program for another plugin version shares the file, and is not trusted */
	key(&old, "module @a", "0.114");
	key(&now, "module @a", "0.115");
	ck_assert_uint_eq(old.slot, now.slot);
	ck_assert(pjrt_cache_store(&old, "compiled-old", 12, why, sizeof(why)));
	ck_assert_int_eq(load(&now, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	ck_assert_ptr_nonnull(strstr(why, "another key"));
	ck_assert(pjrt_cache_store(&now, "compiled-new", 12, why, sizeof(why)));
	ck_assert_int_eq(load(&now, out, sizeof(out), why), PJRT_CACHE_HIT);
	ck_assert_str_eq(out, "compiled-new");
	ck_assert_int_eq(load(&old, out, sizeof(out), why), PJRT_CACHE_DROPPED);
	pjrt_cache_key_release(&old);
	pjrt_cache_key_release(&now);
}
END_TEST

START_TEST(bounded_least_recently_used_out)
{
	struct pjrt_cache_key a, b, c;
	char payload[300], out[512], why[256], path[4200];
	struct timespec past[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};

	memset(payload, 'p', sizeof(payload));
	key(&a, "module @a", "0.115");
	key(&b, "module @b", "0.115");
	key(&c, "module @c", "0.115");
	ck_assert(pjrt_cache_store(&a, payload, sizeof(payload), why, sizeof(why)));
	/* room for two entries, not three */
	pjrt_cache_configure(dir, (uint64_t)file_size(&a) * 2 + 10);
	ck_assert(pjrt_cache_store(&b, payload, sizeof(payload), why, sizeof(why)));
	/* a is older than b, then used: b becomes the least recently used */
	pjrt_cache_path(&a, path, sizeof(path));
	ck_assert_int_eq(utimensat(AT_FDCWD, path, past, 0), 0);
	pjrt_cache_path(&b, path, sizeof(path));
	past[0].tv_sec = past[1].tv_sec = 2000;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, past, 0), 0);
	ck_assert_int_eq(load(&a, out, sizeof(out), why), PJRT_CACHE_HIT);
	ck_assert(pjrt_cache_store(&c, payload, sizeof(payload), why, sizeof(why)));
	ck_assert_int_eq(file_size(&b), -1);
	ck_assert_int_gt(file_size(&a), 0);
	ck_assert_int_gt(file_size(&c), 0);
	/* an entry larger than the whole bound is not stored */
	pjrt_cache_configure(dir, 100);
	ck_assert(!pjrt_cache_store(&b, payload, sizeof(payload), why, sizeof(why)));
	ck_assert_ptr_nonnull(strstr(why, "bound"));
	pjrt_cache_key_release(&a);
	pjrt_cache_key_release(&b);
	pjrt_cache_key_release(&c);
}
END_TEST

START_TEST(off_without_a_folder)
{
	struct pjrt_cache_key k;
	char out[64], why[256] = "x";

	pjrt_cache_configure(NULL, 1 << 20);
	ck_assert(!pjrt_cache_on());
	key(&k, "module @a", "0.115");
	ck_assert(!pjrt_cache_store(&k, "compiled-a", 10, why, sizeof(why)));
	ck_assert_int_eq(load(&k, out, sizeof(out), why), PJRT_CACHE_MISS);
	pjrt_cache_key_release(&k);
}
END_TEST

START_TEST(folder_beside_the_database)
{
	struct config cfg = {.db_path = "var/acceld.db"};
	char out[256];

	pjrt_cache_dir_for(&cfg, out, sizeof(out));
	ck_assert_str_eq(out, "var/pjrt-cache");
	cfg.db_path = "acceld.db";
	pjrt_cache_dir_for(&cfg, out, sizeof(out));
	ck_assert_str_eq(out, "pjrt-cache");
	cfg.db_path = ":memory:";
	pjrt_cache_dir_for(&cfg, out, sizeof(out));
	ck_assert_str_eq(out, "");
	cfg.pjrt_cache_dir = "/srv/cache";
	pjrt_cache_dir_for(&cfg, out, sizeof(out));
	ck_assert_str_eq(out, "/srv/cache");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pjrt_cache");
	TCase *tc = tcase_create("pjrt_cache");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, stored_then_loaded);
	tcase_add_test(tc, truncated_is_dropped);
	tcase_add_test(tc, corrupt_is_dropped);
	tcase_add_test(tc, foreign_is_dropped_and_replaced);
	tcase_add_test(tc, bounded_least_recently_used_out);
	tcase_add_test(tc, off_without_a_folder);
	tcase_add_test(tc, folder_beside_the_database);
	suite_add_tcase(s, tc);
	return s;
}
