/*
 * pjrt_cache: compiled PJRT programs on disk (pjrt_cache.h has the format and the rules).
 */
#include "exec/backend/pjrt_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/dirs.h"
#include "core/mem.h"

#define MAGIC "ACCELDPJ"
#define FORMAT 1u
#define SUFFIX ".pjx"
#define ENTRIES_MAX 4096 /* files looked at when making room */

/* The header at the start of an entry, little-endian as written on the hosts acceld runs on. */
struct header {
	char magic[8];
	uint32_t format;
	uint32_t key_len;
	uint64_t key_hash;
	uint64_t payload_len;
	uint64_t payload_sum;
};

static char cache_dir[4096];
static uint64_t cache_max;

uint64_t pjrt_cache_hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void pjrt_cache_key_add(struct pjrt_cache_key *k, const char *name, const void *value, size_t n)
{
	size_t need = strlen(name) + 1 + n + 1;

	if (k->too_long || k->len + need > PJRT_CACHE_KEY_MAX) {
		k->too_long = true;
		return;
	}
	if (k->len + need > k->cap) {
		k->cap = (k->len + need) * 2;
		k->text = xrealloc(k->text, k->cap);
	}
	memcpy(k->text + k->len, name, strlen(name));
	k->len += strlen(name);
	k->text[k->len++] = '=';
	memcpy(k->text + k->len, value, n);
	k->len += n;
	k->text[k->len++] = '\n';
}

void pjrt_cache_key_seal(struct pjrt_cache_key *k)
{
	k->slot = pjrt_cache_hash(k->text, k->len, PJRT_CACHE_HASH_SEED);
	k->sealed = true;
}

void pjrt_cache_key_release(struct pjrt_cache_key *k)
{
	free(k->text);
	memset(k, 0, sizeof(*k));
}

void pjrt_cache_configure(const char *dir, uint64_t max_bytes)
{
	cache_dir[0] = '\0';
	cache_max = max_bytes;
	if (dir == NULL || dir[0] == '\0' || max_bytes == 0)
		return;
	snprintf(cache_dir, sizeof(cache_dir), "%s", dir);
}

bool pjrt_cache_on(void)
{
	return cache_dir[0] != '\0';
}

void pjrt_cache_dir_for(const struct config *cfg, char *out, size_t outsz)
{
	const char *slash;

	out[0] = '\0';
	if (cfg->pjrt_cache_dir != NULL)
		snprintf(out, outsz, "%s", cfg->pjrt_cache_dir);
	else if (cfg->db_path == NULL || strcmp(cfg->db_path, ":memory:") == 0 || strncmp(cfg->db_path, "file:", 5) == 0)
		return;
	else if ((slash = strrchr(cfg->db_path, '/')) == NULL)
		snprintf(out, outsz, "pjrt-cache");
	else
		snprintf(out, outsz, "%.*s/pjrt-cache", (int)(slash - cfg->db_path), cfg->db_path);
}

void pjrt_cache_path(const struct pjrt_cache_key *k, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/%016" PRIx64 SUFFIX, cache_dir, k->slot);
}

static bool usable(const struct pjrt_cache_key *k)
{
	return cache_dir[0] != '\0' && k->sealed && !k->too_long && k->len > 0;
}

/* Reads exactly n bytes; false on a short read or an error. */
static bool read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

static bool write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

enum pjrt_cache_result pjrt_cache_load(const struct pjrt_cache_key *k, void **payload, size_t *len, char *why,
				       size_t whysz)
{
	char path[4200];
	struct header h;
	struct stat st;
	char *key = NULL;
	void *data = NULL;
	int fd;

	*payload = NULL;
	*len = 0;
	if (whysz > 0)
		why[0] = '\0';
	if (!usable(k))
		return PJRT_CACHE_MISS;
	pjrt_cache_path(k, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PJRT_CACHE_MISS;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !read_all(fd, &h, sizeof(h))) {
		snprintf(why, whysz, "shorter than its header");
		goto bad;
	}
	if (memcmp(h.magic, MAGIC, 8) != 0 || h.format != FORMAT) {
		snprintf(why, whysz, "not an entry of this format (magic or format version)");
		goto bad;
	}
	if (h.key_len != k->len || h.key_hash != pjrt_cache_hash(k->text, k->len, PJRT_CACHE_HASH_SEED)) {
		snprintf(why, whysz, "written for another key (another plugin version, platform or device kind)");
		goto bad;
	}
	if (h.payload_len == 0 || h.payload_len > PJRT_CACHE_ENTRY_MAX ||
	    (uint64_t)st.st_size != sizeof(h) + h.key_len + h.payload_len) {
		snprintf(why, whysz, "%lld bytes, its header says %" PRIu64 " (truncated or grown)", (long long)st.st_size,
			 (uint64_t)(sizeof(h) + h.key_len + h.payload_len));
		goto bad;
	}
	key = xmalloc(h.key_len);
	data = xmalloc((size_t)h.payload_len);
	if (!read_all(fd, key, h.key_len) || !read_all(fd, data, (size_t)h.payload_len)) {
		snprintf(why, whysz, "cannot be read whole");
		goto bad;
	}
	if (memcmp(key, k->text, k->len) != 0) {
		snprintf(why, whysz, "written for another key of the same hash");
		goto bad;
	}
	if (pjrt_cache_hash(data, (size_t)h.payload_len, PJRT_CACHE_HASH_SEED) != h.payload_sum) {
		snprintf(why, whysz, "its payload's checksum does not match (corrupt)");
		goto bad;
	}
	close(fd);
	free(key);
	utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to be evicted */
	*payload = data;
	*len = (size_t)h.payload_len;
	return PJRT_CACHE_HIT;
bad:
	close(fd);
	free(key);
	free(data);
	unlink(path);
	return PJRT_CACHE_DROPPED;
}

/* One file of the folder, as making room sees it. */
struct entry {
	char name[32];
	uint64_t size;
	struct timespec used;
};

static int older_first(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Removes least recently used entries until `incoming` more bytes fit under the bound (skip: the slot's own file,
 * which the store replaces). */
static void make_room(uint64_t incoming, const char *skip)
{
	DIR *d = opendir(cache_dir);
	struct entry *list;
	size_t n = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (d == NULL)
		return;
	list = xcalloc(ENTRIES_MAX, sizeof(*list));
	while ((de = readdir(d)) != NULL && n < ENTRIES_MAX) {
		size_t l = strlen(de->d_name);
		char path[4200];
		struct stat st;

		if (l <= strlen(SUFFIX) || l >= sizeof(list[0].name) || strcmp(de->d_name + l - strlen(SUFFIX), SUFFIX) != 0 ||
		    strcmp(de->d_name, skip) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(list[n].name, sizeof(list[n].name), "%s", de->d_name);
		list[n].size = (uint64_t)st.st_size;
		list[n].used = st.st_mtim;
		total += list[n].size;
		n++;
	}
	closedir(d);
	qsort(list, n, sizeof(*list), older_first);
	for (size_t i = 0; i < n && total + incoming > cache_max; i++) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/%s", cache_dir, list[i].name);
		if (unlink(path) == 0)
			total -= list[i].size;
	}
	free(list);
}

bool pjrt_cache_store(const struct pjrt_cache_key *k, const void *payload, size_t len, char *why, size_t whysz)
{
	char path[4200], tmp[4300], name[32];
	struct header h = {.format = FORMAT};
	uint64_t size = sizeof(h) + k->len + len;
	bool ok;
	int fd;

	if (!usable(k))
		return false; /* off, or a key too long to keep: nothing to say */
	if (len == 0 || len > PJRT_CACHE_ENTRY_MAX) {
		snprintf(why, whysz, "a payload of %zu bytes", len);
		return false;
	}
	if (size > cache_max) {
		snprintf(why, whysz, "the entry's %" PRIu64 " bytes pass the cache's bound of %" PRIu64, size, cache_max);
		return false;
	}
	if (dirs_make(cache_dir, 0700, "pjrt", "created a folder for the compile cache") != 0) { /* the user's programs */
		snprintf(why, whysz, "cannot create %s: %s", cache_dir, strerror(errno));
		return false;
	}
	pjrt_cache_path(k, path, sizeof(path));
	snprintf(name, sizeof(name), "%016" PRIx64 SUFFIX, k->slot);
	make_room(size, name);
	memcpy(h.magic, MAGIC, 8);
	h.key_len = (uint32_t)k->len;
	h.key_hash = pjrt_cache_hash(k->text, k->len, PJRT_CACHE_HASH_SEED);
	h.payload_len = len;
	h.payload_sum = pjrt_cache_hash(payload, len, PJRT_CACHE_HASH_SEED);
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whysz, "cannot create %s: %s", tmp, strerror(errno));
		return false;
	}
	ok = write_all(fd, &h, sizeof(h)) && write_all(fd, k->text, k->len) && write_all(fd, payload, len);
	ok = close(fd) == 0 && ok;
	if (ok)
		ok = rename(tmp, path) == 0;
	if (!ok) {
		snprintf(why, whysz, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	return ok;
}

void pjrt_cache_drop(const struct pjrt_cache_key *k)
{
	char path[4200];

	if (!usable(k))
		return;
	pjrt_cache_path(k, path, sizeof(path));
	unlink(path);
}
