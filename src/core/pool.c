/* pool: the fork-join pool (helpers wait on a generation counter; the caller runs part 0 and waits for the rest). */
#include "core/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/mem.h"

struct pool {
	unsigned nthreads;       /* parts per task; the caller runs part 0 */
	pthread_t *threads;      /* nthreads - 1 helpers */
	pthread_mutex_t run_mu;  /* one task at a time */
	pthread_mutex_t mu;
	pthread_cond_t go;
	pthread_cond_t done;
	uint64_t gen;
	unsigned pending;
	bool stop;
	pool_fn fn;
	void *arg;
	size_t n;
	size_t align;
};

struct helper_arg {
	struct pool *p;
	unsigned part;
};

static void part_range(size_t n, unsigned parts, unsigned part, size_t align, size_t *begin, size_t *end)
{
	size_t chunk = (n + parts - 1) / parts;

	chunk = (chunk + align - 1) / align * align;
	*begin = chunk * part < n ? chunk * part : n;
	*end = *begin + chunk < n ? *begin + chunk : n;
}

static void *helper_main(void *arg)
{
	struct helper_arg ha = *(struct helper_arg *)arg;
	struct pool *p = ha.p;
	uint64_t seen = 0;

	free(arg);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		size_t b;
		size_t e;

		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		part_range(p->n, p->nthreads, ha.part, p->align, &b, &e);
		if (b < e)
			p->fn(p->arg, ha.part, b, e);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

unsigned pool_usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned)n : 1;
}

struct pool *pool_new(unsigned threads)
{
	struct pool *p = xcalloc(1, sizeof(*p));
	unsigned started = 0;

	if (threads == 0)
		threads = pool_usable_cpus();
	if (threads > POOL_MAX_THREADS)
		threads = POOL_MAX_THREADS;
	p->nthreads = threads;
	pthread_mutex_init(&p->run_mu, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	p->threads = xcalloc(threads, sizeof(pthread_t));
	for (unsigned i = 1; i < threads; i++) {
		struct helper_arg *ha = xmalloc(sizeof(*ha));

		ha->p = p;
		ha->part = i;
		if (pthread_create(&p->threads[i - 1], NULL, helper_main, ha) != 0) {
			free(ha);
			break;
		}
		started++;
	}
	/* fewer helpers than asked (thread limits) still make a working pool */
	p->nthreads = started + 1;
	return p;
}

void pool_free(struct pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 1; i < p->nthreads; i++)
		pthread_join(p->threads[i - 1], NULL);
	free(p->threads);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	pthread_mutex_destroy(&p->run_mu);
	free(p);
}

unsigned pool_threads(const struct pool *p)
{
	return p->nthreads;
}

void pool_parallel(struct pool *p, size_t n, size_t grain, size_t align, pool_fn fn, void *arg)
{
	size_t b;
	size_t e;

	if (n == 0)
		return;
	if (align == 0)
		align = 1;
	if (p->nthreads <= 1 || n < grain) {
		fn(arg, 0, 0, n);
		return;
	}
	pthread_mutex_lock(&p->run_mu);
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->n = n;
	p->align = align;
	p->pending = p->nthreads - 1;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	part_range(n, p->nthreads, 0, align, &b, &e);
	if (b < e)
		fn(arg, 0, b, e);
	pthread_mutex_lock(&p->mu);
	while (p->pending > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->run_mu);
}

