/* jobdata: generated inputs and output summaries. */
#include "exec/jobdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "exec/kernel.h"

float *jobdata_alloc(size_t n)
{
	void *p = NULL;

	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / sizeof(float) || posix_memalign(&p, 64, n * sizeof(float)) != 0)
		return NULL;
	return p;
}

struct gen_task {
	float *p;
	uint32_t key;
};

/* The kernel table's generator (kernel_gen_value): the result does not depend on the thread count. */
static void gen_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct gen_task *t = arg;

	(void)part;
	for (size_t i = b; i < e; i++)
		t->p[i] = kernel_gen_value(t->key, i);
}

void jobdata_generate(struct pool *p, float *dst, size_t n, uint64_t seed, unsigned input)
{
	struct gen_task t = {.p = dst, .key = kernel_gen_key(seed, input)};

	pool_parallel(p, n, 1u << 16, 1024, gen_part, &t);
}

struct stats_task {
	const float *p;
	double sum[POOL_MAX_THREADS], mn[POOL_MAX_THREADS], mx[POOL_MAX_THREADS];
};

static void stats_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct stats_task *t = arg;
	double sum = 0.0;
	float mn = t->p[b];
	float mx = t->p[b];

	for (size_t i = b; i < e; i++) {
		sum += t->p[i];
		mn = t->p[i] < mn ? t->p[i] : mn;
		mx = t->p[i] > mx ? t->p[i] : mx;
	}
	t->sum[part] = sum;
	t->mn[part] = mn;
	t->mx[part] = mx;
}

void jobdata_summarise(struct pool *p, const float *out, size_t len, struct jobdata_summary *s)
{
	struct stats_task *t = xcalloc(1, sizeof(*t));

	for (int i = 0; i < POOL_MAX_THREADS; i++) {
		t->mn[i] = INFINITY;
		t->mx[i] = -INFINITY;
	}
	t->p = out;
	pool_parallel(p, len, 1u << 16, 16, stats_part, t);
	s->checksum = 0.0;
	s->min = INFINITY;
	s->max = -INFINITY;
	for (int i = 0; i < POOL_MAX_THREADS; i++) {
		s->checksum += t->sum[i];
		s->min = t->mn[i] < s->min ? t->mn[i] : s->min;
		s->max = t->mx[i] > s->max ? t->mx[i] : s->max;
	}
	s->mean = len ? s->checksum / (double)len : 0.0;
	s->count = len;
	s->sampled = false;
	s->nfirst = len < JOBDATA_FIRST ? len : JOBDATA_FIRST;
	memcpy(s->first, out, s->nfirst * sizeof(float));
	free(t);
}

void jobdata_summarise_value(double v, struct jobdata_summary *s)
{
	s->checksum = s->min = s->max = s->mean = v;
	s->first[0] = (float)v;
	s->nfirst = 1;
	s->count = 1;
	s->sampled = false;
}
