/* jobdata: generated inputs and output summaries. */
#include "exec/jobdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

/* SplitMix64's finaliser: the counter-based generator of inputs */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

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
	uint64_t seed;
};

/* Values in [-1, 1) from a counter-based generator, so the result does not depend on the thread count. */
static void gen_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct gen_task *t = arg;

	(void)part;
	for (size_t i = b; i < e; i++) {
		uint64_t z = mix(t->seed + (uint64_t)i * 0x9e3779b97f4a7c15ull);

		t->p[i] = (float)(z >> 40) * (float)(1.0 / 8388608.0) - 1.0f;
	}
}

void jobdata_generate(struct pool *p, float *dst, size_t n, uint64_t seed, unsigned input)
{
	struct gen_task t = {.p = dst, .seed = seed * 0x2545f4914f6cdd1dull + input};

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
	s->nfirst = len < JOBDATA_FIRST ? len : JOBDATA_FIRST;
	memcpy(s->first, out, s->nfirst * sizeof(float));
	free(t);
}

void jobdata_summarise_value(double v, struct jobdata_summary *s)
{
	s->checksum = s->min = s->max = s->mean = v;
	s->first[0] = (float)v;
	s->nfirst = 1;
}
