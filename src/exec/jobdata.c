/* jobdata: generated inputs, output summaries and verification against a double-precision reference. */
#include "exec/jobdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

#define VERIFY_SAMPLES 1024
#define U32 (1.0 / 16777216.0)

/* SplitMix64's finaliser: the counter-based generator of inputs and of sampled indices */
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

struct verify_task {
	const struct backend_work *w;
	double tol_rel;
	double max_abs[POOL_MAX_THREADS];
	double worst[POOL_MAX_THREADS];
	size_t checked[POOL_MAX_THREADS];
};

static void verify_note(struct verify_task *t, unsigned part, double got, double ref, double scale)
{
	double err = fabs(got - ref);
	double tol = t->tol_rel * scale + 1e-30;
	double ratio = isnan(got) ? INFINITY : err / tol;

	if (err > t->max_abs[part] || isnan(got))
		t->max_abs[part] = isnan(got) ? INFINITY : err;
	if (ratio > t->worst[part])
		t->worst[part] = ratio;
	t->checked[part]++;
}

static void verify_vec_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct backend_work *w = t->w;

	for (size_t i = b; i < e; i++) {
		double p;
		double q;

		if (w->kernel == KERNEL_SAXPY) {
			p = (double)w->alpha * w->in[0][i];
			q = w->in[1][i];
		} else {
			p = w->in[0][i];
			q = (double)w->s * w->in[1][i];
		}
		verify_note(t, part, w->out[i], p + q, fabs(p) + fabs(q));
	}
}

/* One sampled (or every) entry of C: index in [0, m*n). */
static void verify_gemm_entry(struct verify_task *t, unsigned part, size_t idx)
{
	const struct backend_work *w = t->w;
	size_t i = idx / w->n;
	size_t j = idx % w->n;
	double ref = 0.0;
	double mag = 0.0;

	for (size_t p = 0; p < w->k; p++) {
		double term = (double)w->in[0][i * w->k + p] * w->in[1][p * w->n + j];

		ref += term;
		mag += fabs(term);
	}
	ref *= w->alpha;
	mag *= fabs((double)w->alpha);
	if (w->beta != 0.0f && w->in[2] != NULL) {
		ref += (double)w->beta * w->in[2][idx];
		mag += fabs((double)w->beta * w->in[2][idx]);
	}
	verify_note(t, part, w->out[idx], ref, mag);
}

static uint64_t sample_index(uint64_t i, uint64_t range)
{
	return mix(i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) % range;
}

static void verify_gemm_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct backend_work *w = t->w;
	size_t total = w->m * w->n;
	bool all = (double)total * (double)w->k <= 1.5e8;

	for (size_t s = b; s < e; s++)
		verify_gemm_entry(t, part, all ? s : sample_index(s, total));
}

static void verify_softmax_row(struct verify_task *t, unsigned part, size_t r)
{
	const struct backend_work *w = t->w;
	const float *x = w->in[0] + r * w->n;
	const float *o = w->out + r * w->n;
	double m = x[0];
	double sum = 0.0;

	for (size_t j = 1; j < w->n; j++)
		m = x[j] > m ? x[j] : m;
	for (size_t j = 0; j < w->n; j++)
		sum += exp((double)x[j] - m);
	for (size_t j = 0; j < w->n; j++) {
		double ref = exp((double)x[j] - m) / sum;

		verify_note(t, part, o[j], ref, ref);
	}
}

static void verify_softmax_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct backend_work *w = t->w;
	bool all = (double)w->m * (double)w->n <= 1.6e7;

	for (size_t s = b; s < e; s++)
		verify_softmax_row(t, part, all ? s : sample_index(s, w->m));
}

static double seq_tol(size_t k)
{
	return 2e-6 + (double)(k < 65536 ? k : 65536) * U32;
}

void jobdata_verify(struct pool *p, const struct backend_work *w, struct jobdata_verification *v)
{
	struct verify_task *t = xcalloc(1, sizeof(*t));
	size_t count;

	t->w = w;
	v->method[0] = '\0';
	switch (w->kernel) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
		t->tol_rel = 1e-6;
		pool_parallel(p, w->n, 1u << 16, 16, verify_vec_part, t);
		snprintf(v->method, sizeof(v->method), "double-precision loop over every element");
		break;
	case KERNEL_DOT: {
		double ref = 0.0;
		double mag = 0.0;

		for (size_t i = 0; i < w->n; i++) {
			double term = (double)w->in[0][i] * w->in[1][i];

			ref += term;
			mag += fabs(term);
		}
		t->tol_rel = seq_tol(w->n);
		verify_note(t, 0, w->dot, ref, mag);
		snprintf(v->method, sizeof(v->method), "double-precision sum of every product");
		break;
	}
	case KERNEL_SGEMM:
		/* products of inputs rounded to TF32 or bfloat16 err by up to twice their unit roundoff each */
		t->tol_rel = seq_tol(w->k) + (w->precision == KERNEL_PRECISION_HIGHEST
						      ? 0.0
						      : 2.0 * kernel_precision_unit(w->precision));
		count = (double)w->m * (double)w->n * (double)w->k <= 1.5e8 ? w->m * w->n : VERIFY_SAMPLES;
		pool_parallel(p, count, 64, 1, verify_gemm_part, t);
		snprintf(v->method, sizeof(v->method), "double-precision naive loop over %s",
			 count == w->m * w->n ? "every entry" : "1024 sampled entries");
		break;
	case KERNEL_SOFTMAX:
		t->tol_rel = seq_tol(w->n);
		count = (double)w->m * (double)w->n <= 1.6e7 ? w->m : 64;
		if (count > w->m)
			count = w->m;
		pool_parallel(p, count, 4, 1, verify_softmax_part, t);
		snprintf(v->method, sizeof(v->method), "double-precision softmax of %s",
			 count == w->m ? "every row" : "64 sampled rows");
		break;
	case KERNEL_COUNT:
		break;
	}
	v->max_abs_error = 0.0;
	v->worst_ratio = 0.0;
	v->checked = 0;
	for (int i = 0; i < POOL_MAX_THREADS; i++) {
		v->max_abs_error = t->max_abs[i] > v->max_abs_error ? t->max_abs[i] : v->max_abs_error;
		v->worst_ratio = t->worst[i] > v->worst_ratio ? t->worst[i] : v->worst_ratio;
		v->checked += t->checked[i];
	}
	v->verified = v->worst_ratio <= 1.0;
	free(t);
}
