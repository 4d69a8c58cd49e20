/* The generated inputs kept on the devices between runs: a small table with a byte budget and LRU eviction. */
#include <string.h>

#include "exec/backend/pjrt_resident.h"

static bool same_shape(const struct resident *r, const int64_t *dims, size_t ndims)
{
	return r->ndims == ndims && (ndims == 0 || memcmp(r->dims, dims, ndims * sizeof(dims[0])) == 0);
}

struct resident *resident_take(struct resident_set *s, int device_id, uint32_t key, const int64_t *dims,
			       size_t ndims)
{
	for (unsigned i = 0; i < RESIDENT_MAX; i++) {
		struct resident *r = &s->slot[i];

		if (r->buf != NULL && r->device_id == device_id && r->key == key && same_shape(r, dims, ndims)) {
			r->busy++;
			r->last_use = ++s->tick;
			return r;
		}
	}
	return NULL;
}

void resident_give_back(struct resident *r)
{
	if (r->busy > 0)
		r->busy--;
}

static void drop(struct resident_set *s, struct resident *r, bool destroy)
{
	if (destroy)
		s->destroy(s->ctx, r->buf);
	s->bytes -= r->bytes;
	memset(r, 0, sizeof(*r));
}

bool resident_keep(struct resident_set *s, int device_id, uint32_t key, const int64_t *dims, size_t ndims,
		   uint64_t bytes, void *buf, uint64_t budget)
{
	if (buf == NULL || ndims > 2 || bytes > budget)
		return false;
	for (;;) {
		struct resident *free_slot = NULL, *oldest = NULL;

		for (unsigned i = 0; i < RESIDENT_MAX; i++) {
			struct resident *r = &s->slot[i];

			if (r->buf == NULL)
				free_slot = free_slot != NULL ? free_slot : r;
			else if (r->busy == 0 && (oldest == NULL || r->last_use < oldest->last_use))
				oldest = r;
		}
		if (free_slot != NULL && s->bytes + bytes <= budget) {
			*free_slot = (struct resident){.buf = buf, .device_id = device_id, .key = key, .ndims = ndims,
						       .bytes = bytes, .last_use = ++s->tick};
			if (ndims > 0)
				memcpy(free_slot->dims, dims, ndims * sizeof(dims[0]));
			s->bytes += bytes;
			return true;
		}
		if (oldest == NULL)
			return false;
		drop(s, oldest, true);
	}
}

void resident_forget(struct resident_set *s, struct resident *r)
{
	drop(s, r, false);
}

void resident_clear(struct resident_set *s)
{
	for (unsigned i = 0; i < RESIDENT_MAX; i++)
		if (s->slot[i].buf != NULL && s->slot[i].busy == 0)
			drop(s, &s->slot[i], true);
}
