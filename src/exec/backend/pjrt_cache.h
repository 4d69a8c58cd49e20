/*
 * pjrt_cache: compiled PJRT programs kept on disk, so a program compiled once is loaded, not compiled, by every
 * later process (a worker, a restarted daemon, `acceld run`). The PJRT backend keeps its in-memory cache in front.
 *
 * An entry is one file in the cache folder, named by the hash of its slot (what program for which plugin file and
 * device: pjrt_cache_key's slot part), holding a header (magic, format version, the hash of the whole key, the
 * lengths of key and payload, the payload's checksum), the whole key (plugin path and version, platform version,
 * device kind, compile options, program text) and the payload (PJRT_Executable_Serialize's bytes). An entry is
 * trusted only when all of that agrees: a corrupt, truncated or foreign one (another plugin version in the same
 * slot) is dropped, and the caller compiles and stores anew. The folder is bounded in size: storing removes the
 * least recently used entries (by modification time, which a load refreshes) until the new one fits. Files are
 * written under a temporary name and renamed, so several processes may share a folder.
 */
#ifndef ACCELD_PJRT_CACHE_H
#define ACCELD_PJRT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#define PJRT_CACHE_KEY_MAX (1u << 20)        /* a key longer than this (a huge program) is not cached */
#define PJRT_CACHE_ENTRY_MAX (1ull << 32)    /* nor a payload larger than this */

/* A key: slot (which file) and the full text that must match. Built with pjrt_cache_key_*; freed with
 * pjrt_cache_key_release. */
struct pjrt_cache_key {
	char *text;
	size_t len;
	size_t cap;
	uint64_t slot;     /* the hash of the slot part */
	bool sealed;       /* pjrt_cache_key_seal was called: the rest belongs to the full key only */
	bool too_long;
};

/* Appends a "name=value" line to the key (value of n bytes, any content). Lines added before seal name the slot. */
void pjrt_cache_key_add(struct pjrt_cache_key *k, const char *name, const void *value, size_t n);
/* Ends the slot part: what follows must match too but does not change the file (a plugin's version). */
void pjrt_cache_key_seal(struct pjrt_cache_key *k);
void pjrt_cache_key_release(struct pjrt_cache_key *k);

/* The folder (created when missing) and its bound; dir NULL turns the cache off. Not thread-safe against loads
 * and stores: call before any. */
void pjrt_cache_configure(const char *dir, uint64_t max_bytes);

/* Whether a folder is configured. */
bool pjrt_cache_on(void);

/* The configured folder: cfg's pjrt_cache_dir, else "pjrt-cache" beside the database, else none ("" when the
 * database is in memory). */
void pjrt_cache_dir_for(const struct config *cfg, char *out, size_t outsz);

enum pjrt_cache_result {
	PJRT_CACHE_HIT,
	PJRT_CACHE_MISS,     /* no entry (or the cache is off) */
	PJRT_CACHE_DROPPED,  /* there was one, not trusted: removed (why says why) */
};

/* Looks the key up: on a hit, *payload (malloc'd, the caller frees) and *len hold the entry. */
enum pjrt_cache_result pjrt_cache_load(const struct pjrt_cache_key *k, void **payload, size_t *len, char *why,
				       size_t whysz);

/* Stores the payload under the key, evicting least recently used entries to stay within the bound; false when it
 * was not stored (why says why, "" when the cache is off or the key too long to keep). */
bool pjrt_cache_store(const struct pjrt_cache_key *k, const void *payload, size_t len, char *why, size_t whysz);

/* Removes the key's entry (the plugin refused what it held). */
void pjrt_cache_drop(const struct pjrt_cache_key *k);

/* The entry file of the key (for tests and logs): "<dir>/<16 hex digits>.pjx". */
void pjrt_cache_path(const struct pjrt_cache_key *k, char *out, size_t outsz);

/* FNV-1a, 64 bits: the hash of keys and the checksum of payloads. */
uint64_t pjrt_cache_hash(const void *p, size_t n, uint64_t h);
#define PJRT_CACHE_HASH_SEED 0xcbf29ce484222325ull

#endif
