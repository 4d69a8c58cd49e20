/*
 * pool: a small fork-join thread pool. A task is a function over the index range [0, n), split into one contiguous
 * part per thread; the calling thread runs part 0 and returns when every part is done. The native backend runs its
 * kernels on it, and the executor generates inputs, summarises outputs and verifies results on it.
 */
#ifndef ACCELD_POOL_H
#define ACCELD_POOL_H

#include <stddef.h>

#define POOL_MAX_THREADS 256 /* parts of one task at most: callers may size per-part arrays by it */

struct pool;

/*
 * A pool of threads threads, the caller's thread counting as one (0 = the CPUs this process may use, at most
 * POOL_MAX_THREADS). Helpers that cannot be started leave a smaller pool, down to the caller's thread alone: a pool
 * always works. Free with pool_free.
 */
struct pool *pool_new(unsigned threads);
void pool_free(struct pool *p); /* NULL allowed */

/* The number of parts a task is split into (1 to POOL_MAX_THREADS). */
unsigned pool_threads(const struct pool *p);

/* The CPUs this process may use (its affinity mask), at least 1. */
unsigned pool_usable_cpus(void);

/*
 * Runs fn(arg, part, begin, end) over [0, n) split into one contiguous part per thread (begin aligned to align
 * elements; 0 means 1), and returns when every part is done. Small n (below grain) runs on the caller's thread
 * alone as part 0, without taking the pool's lock, so it never waits for another caller. Larger tasks from several
 * threads are serialised.
 */
typedef void (*pool_fn)(void *arg, unsigned part, size_t begin, size_t end);
void pool_parallel(struct pool *p, size_t n, size_t grain, size_t align, pool_fn fn, void *arg);

#endif
