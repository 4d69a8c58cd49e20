/*
 * pjrt_resident: the generated inputs a PJRT client keeps on its devices between runs, so that the next run with the
 * same seed and shape takes them as they are (docs/api.md, "Where the data lives"). A table of at most RESIDENT_MAX
 * buffers within a byte budget, the least recently used idle one going first; the buffers are the caller's type,
 * destroyed through the callback the set was made with. Not thread-safe: the caller holds its client's lock.
 */
#ifndef ACCELD_PJRT_RESIDENT_H
#define ACCELD_PJRT_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RESIDENT_MAX 8

struct resident {
	void *buf;     /* NULL: a free slot */
	int device_id;
	uint32_t key;  /* kernel_gen_key of the run's seed and the input */
	int64_t dims[2];
	size_t ndims;
	uint64_t bytes;
	unsigned busy; /* runs reading it now */
	uint64_t last_use;
};

struct resident_set {
	struct resident slot[RESIDENT_MAX];
	uint64_t bytes; /* of the buffers held */
	uint64_t tick;
	void (*destroy)(void *ctx, void *buf);
	void *ctx;
};

/* The buffer made from key with these dims on device_id, taken for a run (give it back), or NULL. */
struct resident *resident_take(struct resident_set *s, int device_id, uint32_t key, const int64_t *dims,
			       size_t ndims);

/* A run is done with r. */
void resident_give_back(struct resident *r);

/*
 * Keeps buf (bytes, made from key with these dims on device_id) when the held ones and it fit budget bytes, the least
 * recently used idle ones making room; true: the set owns it now.
 */
bool resident_keep(struct resident_set *s, int device_id, uint32_t key, const int64_t *dims, size_t ndims,
		   uint64_t bytes, void *buf, uint64_t budget);

/* Lets go of r without destroying its buffer (whoever took it over destroys it). */
void resident_forget(struct resident_set *s, struct resident *r);

/* Destroys every buffer no run reads now. */
void resident_clear(struct resident_set *s);

#endif
