/*
 * kernel: the table of kernels, the arithmetic of their sizes and work, and the host references that verification
 * compares a result with.
 *
 *   saxpy:   out[n] = alpha * x[n] + y[n]
 *   triad:   out[n] = b[n] + scale * c[n]                      (STREAM's a = b + s*c; the request calls scale "s")
 *   dot:     out    = sum x[n] * y[n]                          (one value)
 *   sgemm:   out[m x n] = alpha * a[m x k] * b[k x n] + beta * c[m x n]   (c optional: zeros)
 *   softmax: out[m x n] = row-wise softmax of x[m x n]
 *
 * Verification tolerances (u = 2^-24, the float32 unit roundoff; the reference is computed in double):
 *   saxpy, triad:  |got - ref| <= 1e-6 * (|first term| + |second term|)
 *   dot, sgemm:    |got - ref| <= (2e-6 + min(k, 65536) * u) * sum |terms|     (k = n for dot; the classic
 *                  worst-case bound of float summation, k * u, plus a little for the scaling); an sgemm whose
 *                  products ran at TF32 or bfloat16 adds twice that precision's unit roundoff (2^-11, 2^-8)
 *   softmax:       |got - ref| <= (2e-6 + min(cols, 65536) * u) * ref + 1e-30
 * sgemm checks every entry up to 1.5e8 multiply-adds in all and 1024 sampled entries beyond; softmax every row up
 * to 1.6e7 elements and 64 sampled rows beyond. Sampled verification (kernel_verify_sample) uses the same
 * tolerances on the elements of the run's sample (struct kernel_sample), each computed from the inputs alone.
 */
#include "exec/kernel.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "core/names.h"
#include "core/pool.h"

#define VERIFY_SAMPLES 1024
#define U32 (1.0 / 16777216.0)

struct verify_task;

/* The reference of one kernel: fills t's tolerance and notes, and v->method. */
typedef void kernel_reference_fn(struct pool *p, struct verify_task *t, struct kernel_verification *v);

static kernel_reference_fn ref_saxpy, ref_triad, ref_dot, ref_sgemm, ref_softmax;

static const char *const xy[] = {"x", "y", NULL};
static const char *const bc[] = {"b", "c", NULL};
static const char *const abc[] = {"a", "b", "c", NULL};
static const char *const x_only[] = {"x", NULL};

/* One kernel. Sizes are written as letters: "mk" is m x k, "n" a vector of n, "" a scalar. */
static const struct kernel_row {
	const char *name;
	const char *const *inputs;
	const char *dims[KERNEL_MAX_INPUTS]; /* each input's dimensions */
	const char *out_dims;                /* the output's */
	unsigned optional;                   /* bit per input that may be left out (zeros) */
	unsigned weight;                     /* the enum kernel_param that multiplies the optional inputs */
	unsigned params;                     /* enum kernel_param */
	double flops_each;                   /* floating-point operations per element of flops_over */
	const char *flops_over;              /* the sizes whose product counts the elements */
	bool compute_bound;
	const char *sizes;                   /* what its sizes mean: n is always the kernel's own n */
	kernel_reference_fn *reference;
	const char *help_flags, *help_text, *help_example;
} table[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = {"saxpy", xy, {"n", "n"}, "n", 0, 0, KERNEL_PARAM_ALPHA, 2.0, "n", false,
			  "n, the vector length", ref_saxpy, "--n N", "vectors of N elements", "--n 1048576"},
	[KERNEL_TRIAD] = {"triad", bc, {"n", "n"}, "n", 0, 0, KERNEL_PARAM_SCALE, 2.0, "n", false,
			  "n, the vector length", ref_triad, "--n N", "vectors of N elements", NULL},
	[KERNEL_DOT] = {"dot", xy, {"n", "n"}, "", 0, 0, 0, 2.0, "n", false, "n, the vector length", ref_dot, "--n N",
			"vectors of N elements", NULL},
	[KERNEL_SGEMM] = {"sgemm", abc, {"mk", "kn", "mn"}, "mn", 1u << 2, KERNEL_PARAM_BETA,
			  KERNEL_PARAM_ALPHA | KERNEL_PARAM_BETA | KERNEL_PARAM_M | KERNEL_PARAM_K |
				  KERNEL_PARAM_PRECISION,
			  2.0, "mnk", true, "m, n and k: C[m x n] = A[m x k] x B[k x n]", ref_sgemm, "--m M --n N --k K",
			  "an M x K matrix times a K x N one (M x N out)", "--m 512 --n 512 --k 512"},
	/* max, subtract and exp, sum, scale */
	[KERNEL_SOFTMAX] = {"softmax", x_only, {"mn"}, "mn", 0, 0, KERNEL_PARAM_M, 4.0, "mn", false,
			    "m and n: m rows of n (n is the row length)", ref_softmax, "--m M --n N",
			    "M rows of N, each row normalized", NULL},
};

/* The kernels that stand for a device's figures. */
static const enum kernel_id figures[] = {
	[KERNEL_FIGURE_MATRIX] = KERNEL_SGEMM,
	[KERNEL_FIGURE_MEMORY] = KERNEL_TRIAD,
	[KERNEL_FIGURE_TRANSFER] = KERNEL_SOFTMAX,
};

/* The request fields of the enum kernel_param bits, in bit order. */
static const char *const param_names[] = {"alpha", "beta", "s", "m", "k", "precision"};

static const char *const precision_names[] = {"highest", "tf32", "bf16"};

const char *kernel_precision_name(enum kernel_precision p)
{
	return names_at(precision_names, sizeof(precision_names) / sizeof(precision_names[0]), p);
}

bool kernel_precision_parse(const char *name, enum kernel_precision *out)
{
	int i = names_find(precision_names, sizeof(precision_names) / sizeof(precision_names[0]), name);

	if (i < 0)
		return false;
	*out = (enum kernel_precision)i;
	return true;
}

double kernel_precision_unit(enum kernel_precision p)
{
	switch (p) {
	case KERNEL_PRECISION_TF32:
		return 1.0 / 2048.0;
	case KERNEL_PRECISION_BF16:
		return 1.0 / 256.0;
	case KERNEL_PRECISION_HIGHEST:
		break;
	}
	return 1.0 / 16777216.0;
}

static bool valid(enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT;
}

const char *kernel_name(enum kernel_id k)
{
	return valid(k) ? table[k].name : "?";
}

bool kernel_parse(const char *name, enum kernel_id *out)
{
	for (unsigned i = 0; i < KERNEL_COUNT && name != NULL; i++) {
		if (strcmp(name, table[i].name) == 0) {
			*out = (enum kernel_id)i;
			return true;
		}
	}
	return false;
}

const char *kernel_sizes_text(enum kernel_id k)
{
	return valid(k) ? table[k].sizes : "?";
}

/* Appends text to out (NUL-terminated, truncating at outsz). */
static void append(char *out, size_t outsz, const char *text)
{
	size_t len = strlen(out);

	if (len < outsz)
		snprintf(out + len, outsz - len, "%s", text);
}

char *kernel_names_join(unsigned params, const char *sep, char *out, size_t outsz)
{
	bool first = true;

	out[0] = '\0';
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		if ((table[i].params & params) != params)
			continue;
		if (!first)
			append(out, outsz, sep);
		append(out, outsz, table[i].name);
		first = false;
	}
	return out;
}

static char names_text[128];

static void names_text_make(void)
{
	kernel_names_join(0, ", ", names_text, sizeof(names_text));
}

const char *kernel_names_text(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, names_text_make);
	return names_text;
}

const char *const *kernel_inputs(enum kernel_id k)
{
	return valid(k) ? table[k].inputs : x_only;
}

bool kernel_input_optional(enum kernel_id k, unsigned i)
{
	return valid(k) && i < KERNEL_MAX_INPUTS && (table[k].optional & (1u << i)) != 0;
}

const char *kernel_input_dims(enum kernel_id k, unsigned i)
{
	return valid(k) && i < KERNEL_MAX_INPUTS && table[k].dims[i] != NULL ? table[k].dims[i] : "";
}

uint64_t *kernel_size_of(struct kernel_shape *s, char letter)
{
	switch (letter) {
	case 'm':
		return &s->m;
	case 'n':
		return &s->n;
	case 'k':
		return &s->k;
	default:
		return NULL;
	}
}

unsigned kernel_params(enum kernel_id k)
{
	return valid(k) ? table[k].params : 0;
}

const char *kernel_param_name(unsigned param)
{
	for (unsigned b = 0; b < sizeof(param_names) / sizeof(param_names[0]); b++)
		if (param == 1u << b)
			return param_names[b];
	return "?";
}

char *kernel_param_owners(unsigned params, char *out, size_t outsz)
{
	out[0] = '\0';
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		unsigned has = table[i].params & params;
		bool first = true;

		if (has == 0)
			continue;
		if (out[0] != '\0')
			append(out, outsz, "; ");
		append(out, outsz, table[i].name);
		append(out, outsz, "'s ");
		for (unsigned b = 0; b < sizeof(param_names) / sizeof(param_names[0]); b++) {
			if (!(has & (1u << b)))
				continue;
			has &= ~(1u << b);
			if (!first)
				append(out, outsz, has != 0 ? ", " : " and ");
			append(out, outsz, param_names[b]);
			first = false;
		}
	}
	return out;
}

bool kernel_compute_bound(enum kernel_id k)
{
	return valid(k) && table[k].compute_bound;
}

enum kernel_id kernel_for_figure(enum kernel_figure f)
{
	return figures[f];
}

const char *kernel_help_flags(enum kernel_id k)
{
	return valid(k) ? table[k].help_flags : "?";
}

const char *kernel_help_text(enum kernel_id k)
{
	return valid(k) ? table[k].help_text : "?";
}

const char *kernel_help_example(enum kernel_id k)
{
	return valid(k) ? table[k].help_example : NULL;
}

/* The sizes kernel i takes as "m, n, k". */
static void sizes_list(unsigned i, char *out, size_t outsz)
{
	unsigned p = table[i].params;

	snprintf(out, outsz, "%sn%s", p & KERNEL_PARAM_M ? "m, " : "", p & KERNEL_PARAM_K ? ", k" : "");
}

char *kernel_sizes_brief(char *out, size_t outsz)
{
	bool done[KERNEL_COUNT] = {false};

	out[0] = '\0';
	for (unsigned i = 0; i < KERNEL_COUNT; i++) {
		char sizes[16];
		bool first = true;

		if (done[i])
			continue;
		sizes_list(i, sizes, sizeof(sizes));
		if (out[0] != '\0')
			append(out, outsz, "; ");
		append(out, outsz, sizes);
		for (unsigned j = i; j < KERNEL_COUNT; j++) {
			char other[16];

			sizes_list(j, other, sizeof(other));
			if (strcmp(other, sizes) != 0)
				continue;
			done[j] = true;
			/* the kernels of n alone are the plain case: their sizes stand without names */
			if (strcmp(sizes, "n") == 0)
				continue;
			append(out, outsz, first ? " for " : ", ");
			append(out, outsz, table[j].name);
			first = false;
		}
	}
	return out;
}

bool kernel_shape_complete(enum kernel_id k, const struct kernel_shape *s)
{
	unsigned p = kernel_params(k);

	return valid(k) && s->n > 0 && (!(p & KERNEL_PARAM_M) || s->m > 0) && (!(p & KERNEL_PARAM_K) || s->k > 0);
}

/* a * b, saturating at UINT64_MAX so oversized requests fail the limit checks instead of wrapping */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The product of the sizes dims names (1 for none), saturating. */
static uint64_t dims_len(const char *dims, const struct kernel_shape *s)
{
	struct kernel_shape c = *s;
	uint64_t len = 1;

	for (const char *d = dims; *d != '\0'; d++)
		len = mul_sat(len, *kernel_size_of(&c, *d));
	return len;
}

uint64_t kernel_input_len(enum kernel_id k, const struct kernel_shape *s, unsigned i)
{
	if (!valid(k) || i >= KERNEL_MAX_INPUTS || table[k].dims[i] == NULL)
		return 0;
	return dims_len(table[k].dims[i], s);
}

uint64_t kernel_output_len(enum kernel_id k, const struct kernel_shape *s)
{
	return valid(k) ? dims_len(table[k].out_dims, s) : 0;
}

unsigned kernel_output_rank(enum kernel_id k)
{
	return valid(k) ? (unsigned)strlen(table[k].out_dims) : 1;
}

uint64_t kernel_total_len(enum kernel_id k, const struct kernel_shape *s)
{
	uint64_t total = kernel_output_len(k, s);

	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		total = add_sat(total, kernel_input_len(k, s, i));
	return total;
}

double kernel_flops(enum kernel_id k, const struct kernel_shape *s)
{
	struct kernel_shape c = *s;
	double total;

	if (!valid(k))
		return 0.0;
	total = table[k].flops_each;
	for (const char *d = table[k].flops_over; *d != '\0'; d++)
		total *= (double)*kernel_size_of(&c, *d);
	return total;
}

double kernel_bytes(enum kernel_id k, const struct kernel_shape *s)
{
	double total = 0.0;

	/* every input read once and the output written once: the least traffic a run can have */
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		total += 4.0 * (double)kernel_input_len(k, s, i);
	if (kernel_output_rank(k) > 0)
		total += 4.0 * (double)kernel_output_len(k, s);
	return total;
}

/* The value of one of w's float fields (an enum kernel_param bit); 1 for another. */
static float param_value(const struct kernel_work *w, unsigned param)
{
	switch (param) {
	case KERNEL_PARAM_ALPHA:
		return w->alpha;
	case KERNEL_PARAM_BETA:
		return w->beta;
	case KERNEL_PARAM_SCALE:
		return w->scale;
	default:
		return 1.0f;
	}
}

bool kernel_input_generated(const struct kernel_work *w, unsigned i)
{
	if (kernel_input_len(w->kernel, &(struct kernel_shape){w->m, w->n, w->k}, i) == 0)
		return false;
	return !kernel_input_optional(w->kernel, i) || param_value(w, table[w->kernel].weight) != 0.0f;
}

/* --- verification: each kernel's reference in double precision --- */

/* SplitMix64's finaliser: sampled indices */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct verify_task {
	const struct kernel_work *w;
	double tol_rel;
	double wx, wy; /* an elementwise kernel's weights of its two inputs */
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

static uint64_t sample_index(uint64_t i, uint64_t range)
{
	return mix(i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull) % range;
}

static double seq_tol(size_t k)
{
	return 2e-6 + (double)(k < 65536 ? k : 65536) * U32;
}

/* Elementwise out = wx * in[0] + wy * in[1]. */
static void verify_vec_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct kernel_work *w = t->w;

	for (size_t i = b; i < e; i++) {
		double p = t->wx * w->in[0][i];
		double q = t->wy * w->in[1][i];

		verify_note(t, part, w->out[i], p + q, fabs(p) + fabs(q));
	}
}

static void ref_vector(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	t->tol_rel = 1e-6;
	pool_parallel(p, t->w->n, 1u << 16, 16, verify_vec_part, t);
	snprintf(v->method, sizeof(v->method), "double-precision loop over every element");
}

static void ref_saxpy(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	t->wx = t->w->alpha;
	t->wy = 1.0;
	ref_vector(p, t, v);
}

static void ref_triad(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	t->wx = 1.0;
	t->wy = t->w->scale;
	ref_vector(p, t, v);
}

static void ref_dot(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	const struct kernel_work *w = t->w;
	double ref = 0.0;
	double mag = 0.0;

	(void)p;
	for (size_t i = 0; i < w->n; i++) {
		double term = (double)w->in[0][i] * w->in[1][i];

		ref += term;
		mag += fabs(term);
	}
	t->tol_rel = seq_tol(w->n);
	verify_note(t, 0, w->value, ref, mag);
	snprintf(v->method, sizeof(v->method), "double-precision sum of every product");
}

/* One sampled (or every) entry of C: index in [0, m*n). */
static void verify_gemm_entry(struct verify_task *t, unsigned part, size_t idx)
{
	const struct kernel_work *w = t->w;
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

static void verify_gemm_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct verify_task *t = arg;
	const struct kernel_work *w = t->w;
	size_t total = w->m * w->n;
	bool all = (double)total * (double)w->k <= 1.5e8;

	for (size_t s = b; s < e; s++)
		verify_gemm_entry(t, part, all ? s : sample_index(s, total));
}

static void ref_sgemm(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	const struct kernel_work *w = t->w;
	size_t count = (double)w->m * (double)w->n * (double)w->k <= 1.5e8 ? w->m * w->n : VERIFY_SAMPLES;

	/* products of inputs rounded to TF32 or bfloat16 err by up to twice their unit roundoff each */
	t->tol_rel = seq_tol(w->k) +
		     (w->precision == KERNEL_PRECISION_HIGHEST ? 0.0 : 2.0 * kernel_precision_unit(w->precision));
	pool_parallel(p, count, 64, 1, verify_gemm_part, t);
	snprintf(v->method, sizeof(v->method), "double-precision naive loop over %s",
		 count == w->m * w->n ? "every entry" : "1024 sampled entries");
}

static void verify_softmax_row(struct verify_task *t, unsigned part, size_t r)
{
	const struct kernel_work *w = t->w;
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
	const struct kernel_work *w = t->w;
	bool all = (double)w->m * (double)w->n <= 1.6e7;

	for (size_t s = b; s < e; s++)
		verify_softmax_row(t, part, all ? s : sample_index(s, w->m));
}

static void ref_softmax(struct pool *p, struct verify_task *t, struct kernel_verification *v)
{
	const struct kernel_work *w = t->w;
	size_t count = (double)w->m * (double)w->n <= 1.6e7 ? w->m : 64;

	t->tol_rel = seq_tol(w->n);
	if (count > w->m)
		count = w->m;
	pool_parallel(p, count, 4, 1, verify_softmax_part, t);
	snprintf(v->method, sizeof(v->method), "double-precision softmax of %s",
		 count == w->m ? "every row" : "64 sampled rows");
}

/* The parts' worst errors and counts, folded into v. */
static void fold(const struct verify_task *t, struct kernel_verification *v)
{
	v->max_abs_error = 0.0;
	v->worst_ratio = 0.0;
	v->checked = 0;
	for (int i = 0; i < POOL_MAX_THREADS; i++) {
		v->max_abs_error = t->max_abs[i] > v->max_abs_error ? t->max_abs[i] : v->max_abs_error;
		v->worst_ratio = t->worst[i] > v->worst_ratio ? t->worst[i] : v->worst_ratio;
		v->checked += t->checked[i];
	}
}

void kernel_verify(struct pool *p, const struct kernel_work *w, struct kernel_verification *v)
{
	struct verify_task *t = xcalloc(1, sizeof(*t));

	t->w = w;
	v->method[0] = '\0';
	if (valid(w->kernel))
		table[w->kernel].reference(p, t, v);
	fold(t, v);
	v->verified = v->worst_ratio <= 1.0;
	v->sampled = false;
	free(t);
}

/* --- the sample and its verification --- */

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* A start in [0, len) and a step prime to len, from two draws of the seed. */
static void sample_draw(uint64_t len, uint64_t a, uint64_t b, uint64_t *first, uint64_t *step)
{
	*first = mix(a) % len;
	*step = mix(b) % len;
	if (*step == 0)
		*step = 1;
	while (gcd(*step, len) != 1)
		*step = *step + 1 < len ? *step + 1 : 1;
}

void kernel_sample_plan(uint64_t rows, uint64_t cols, uint64_t seed, struct kernel_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->rows = rows;
	s->cols = cols;
	s->rs = s->cs = 1;
	kernel_sample_grid(rows, cols, &s->nrows, &s->ncols);
	s->count = s->nrows * s->ncols;
	if (s->count == 0) {
		s->ncols = 1; /* no element: the index functions still divide by it */
		return;
	}
	if (s->nrows == rows && s->ncols == cols)
		return; /* the whole output, in order */
	/* a vector's columns are drawn as its elements always were */
	sample_draw(cols, seed ^ 0x5a3c9e1f0b7d2468ull, seed + 0x2545f4914f6cdd1dull, &s->c0, &s->cs);
	sample_draw(rows, seed ^ 0x3c6ef372fe94f82bull, seed + 0xa54ff53a5f1d36f1ull, &s->r0, &s->rs);
}

void kernel_sample_of(enum kernel_id k, const struct kernel_shape *sh, uint64_t seed, struct kernel_sample *s)
{
	bool matrix = kernel_output_rank(k) == 2;

	kernel_sample_plan(matrix ? sh->m : 1, matrix ? sh->n : kernel_output_len(k, sh), seed, s);
}

struct sample_task {
	struct verify_task *t;
	uint32_t key[KERNEL_MAX_INPUTS];
	bool gen[KERNEL_MAX_INPUTS];
	/* sgemm: the sampled rows and columns, a chunk [q0, q0 + nq) of k at a time (at most kc): a holds the rows'
	 * chunk of A (R x kc), b the columns' chunk of B (kc x C, row-major), acc and mag the R x C sums so far */
	uint64_t *row, *col;
	size_t kc, q0, nq;
	float *a, *b;
	double *acc, *mag;
	/* softmax: each sampled row's largest input and sum of exponentials */
	double *rmax, *rsum;
};

/* Element e of input i of the run: given, generated, or zeros. */
static double input_at(const struct sample_task *s, unsigned i, uint64_t e)
{
	const struct kernel_work *w = s->t->w;

	if (w->in[i] != NULL)
		return w->in[i][e];
	return s->gen[i] ? kernel_gen_value(s->key[i], e) : 0.0;
}

/* saxpy, triad: each sampled element from its two inputs. */
static void sample_vec_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;

	for (size_t j = b; j < e; j++) {
		uint64_t x = kernel_sample_index(&w->grid, j);
		double p = (w->kernel == KERNEL_SAXPY ? w->alpha : 1.0) * input_at(s, 0, x);
		double q = (w->kernel == KERNEL_SAXPY ? 1.0 : w->scale) * input_at(s, 1, x);

		verify_note(s->t, part, w->sample[j], p + q, fabs(p) + fabs(q));
	}
}

#define GEMM_ROWS 4              /* sampled rows a block of the sums takes together */
#define GEMM_COLS 4              /* sampled columns a block of the sums takes together: one panel of B */
#define GEMM_CHUNK (1u << 22)    /* floats of A's rows and B's columns held at once */

/* sgemm: the chunk of the sampled rows of A, element i of R x nq, row r at a + r * kc */
static void gemm_fill_a(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;

	(void)part;
	for (size_t i = b; i < e; i++) {
		size_t r = i / s->nq, q = i % s->nq;

		s->a[r * s->kc + q] = (float)input_at(s, 0, s->row[r] * w->k + s->q0 + q);
	}
}

/* sgemm: the chunk of the sampled columns of B, element i of nq x C, in panels of GEMM_COLS columns: column c's
 * element q at b + (c / GEMM_COLS * kc + q) * GEMM_COLS + c % GEMM_COLS */
static void gemm_fill_b(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;
	size_t ncols = w->grid.ncols;

	(void)part;
	for (size_t i = b; i < e; i++) {
		size_t q = i / ncols, c = i % ncols;

		s->b[(c / GEMM_COLS * s->kc + q) * GEMM_COLS + c % GEMM_COLS] =
			(float)input_at(s, 1, (s->q0 + q) * w->n + s->col[c]);
	}
}

/* The block's arithmetic on 4 doubles at a time (GCC's vector extension), cloned for the host's widest vectors. */
typedef double gemm_v4d __attribute__((vector_size(32)));
typedef float gemm_v4f __attribute__((vector_size(16)));
typedef long long gemm_v4i __attribute__((vector_size(32)));

#if defined(__x86_64__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define GEMM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef GEMM_CLONES
#define GEMM_CLONES
#endif

/*
 * sgemm: adds the chunk's products to the sums of blocks [b, e), each GEMM_ROWS rows by one panel of GEMM_COLS
 * columns held in registers over the chunk, in the order of k for every element (the rows and panels are padded
 * with zeros). Elementwise vector arithmetic rounds as the scalar loop would.
 */
GEMM_CLONES static void gemm_block(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	size_t ncols = s->t->w->grid.ncols;
	size_t panels = (ncols + GEMM_COLS - 1) / GEMM_COLS;
	const gemm_v4i nosign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};

	(void)part;
	for (size_t u = b; u < e; u++) {
		size_t r0 = u / panels * GEMM_ROWS, p = u % panels;
		const float *bp = s->b + p * s->kc * GEMM_COLS;
		const float *ap[GEMM_ROWS];
		gemm_v4d acc[GEMM_ROWS], mag[GEMM_ROWS];

		for (size_t i = 0; i < GEMM_ROWS; i++) {
			ap[i] = s->a + (r0 + i) * s->kc;
			memcpy(&acc[i], s->acc + ((r0 + i) * panels + p) * GEMM_COLS, sizeof(acc[i]));
			memcpy(&mag[i], s->mag + ((r0 + i) * panels + p) * GEMM_COLS, sizeof(mag[i]));
		}
		for (size_t q = 0; q < s->nq; q++) {
			gemm_v4f bf;
			gemm_v4d bv;

			memcpy(&bf, bp + q * GEMM_COLS, sizeof(bf));
			bv = __builtin_convertvector(bf, gemm_v4d);
			for (size_t i = 0; i < GEMM_ROWS; i++) {
				gemm_v4d term = (double)ap[i][q] * bv;

				acc[i] += term;
				mag[i] += (gemm_v4d)((gemm_v4i)term & nosign);
			}
		}
		for (size_t i = 0; i < GEMM_ROWS; i++) {
			memcpy(s->acc + ((r0 + i) * panels + p) * GEMM_COLS, &acc[i], sizeof(acc[i]));
			memcpy(s->mag + ((r0 + i) * panels + p) * GEMM_COLS, &mag[i], sizeof(mag[i]));
		}
	}
}

/* sgemm: each sampled element from its sums, and beta times C's element */
static void gemm_note(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;

	size_t ncols = w->grid.ncols, pitch = (ncols + GEMM_COLS - 1) / GEMM_COLS * GEMM_COLS;

	for (size_t j = b; j < e; j++) {
		size_t x = j / ncols * pitch + j % ncols;
		double r = s->acc[x] * w->alpha, m = s->mag[x] * fabs((double)w->alpha);

		if (w->beta != 0.0f) {
			double c = (double)w->beta * input_at(s, 2, kernel_sample_index(&w->grid, j));

			r += c;
			m += fabs(c);
		}
		verify_note(s->t, part, w->sample[j], r, m);
	}
}

/*
 * The sgemm sample's references: the R sampled rows of A and C sampled columns of B are made (or read) once, a
 * chunk of k at a time, and their R x C dot products summed in double over the pool.
 */
static void sample_gemm(struct pool *p, struct sample_task *s)
{
	const struct kernel_work *w = s->t->w;
	size_t nrows = w->grid.nrows, ncols = w->grid.ncols;
	size_t prows = (nrows + GEMM_ROWS - 1) / GEMM_ROWS * GEMM_ROWS;
	size_t pcols = (ncols + GEMM_COLS - 1) / GEMM_COLS * GEMM_COLS;

	s->kc = GEMM_CHUNK / (prows + pcols);
	s->kc = s->kc == 0 ? 1 : s->kc < w->k ? s->kc : w->k;
	s->row = xcalloc(nrows, sizeof(*s->row));
	s->col = xcalloc(ncols, sizeof(*s->col));
	s->a = xcalloc(prows * s->kc, sizeof(*s->a)); /* the padding stays zero */
	s->b = xcalloc(s->kc * pcols, sizeof(*s->b));
	s->acc = xcalloc(prows * pcols, sizeof(*s->acc));
	s->mag = xcalloc(prows * pcols, sizeof(*s->mag));
	for (size_t r = 0; r < nrows; r++)
		s->row[r] = kernel_sample_row(&w->grid, r * ncols);
	for (size_t c = 0; c < ncols; c++)
		s->col[c] = kernel_sample_col(&w->grid, c);
	for (s->q0 = 0; s->q0 < w->k; s->q0 += s->nq) {
		s->nq = w->k - s->q0 < s->kc ? w->k - s->q0 : s->kc;
		pool_parallel(p, nrows * s->nq, 4096, 1, gemm_fill_a, s);
		pool_parallel(p, s->nq * ncols, 4096, 1, gemm_fill_b, s);
		pool_parallel(p, prows / GEMM_ROWS * (pcols / GEMM_COLS), 16, 1, gemm_block, s);
	}
	pool_parallel(p, w->nsample, 1024, 1, gemm_note, s);
	free(s->row);
	free(s->col);
	free(s->a);
	free(s->b);
	free(s->acc);
	free(s->mag);
}

/* softmax: the largest input and the sum of exponentials of sampled rows [b, e) */
static void softmax_rows(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;

	(void)part;
	for (size_t r = b; r < e; r++) {
		uint64_t row = kernel_sample_row(&w->grid, r * w->grid.ncols) * w->n;
		double mx = input_at(s, 0, row), sum = 0.0;

		for (uint64_t j = 1; j < w->n; j++)
			mx = fmax(mx, input_at(s, 0, row + j));
		for (uint64_t j = 0; j < w->n; j++)
			sum += exp(input_at(s, 0, row + j) - mx);
		s->rmax[r] = mx;
		s->rsum[r] = sum;
	}
}

static void softmax_note(void *arg, unsigned part, size_t b, size_t e)
{
	struct sample_task *s = arg;
	const struct kernel_work *w = s->t->w;

	for (size_t j = b; j < e; j++) {
		size_t r = j / w->grid.ncols;
		double ref = exp(input_at(s, 0, kernel_sample_index(&w->grid, j)) - s->rmax[r]) / s->rsum[r];

		verify_note(s->t, part, w->sample[j], ref, ref);
	}
}

/* The softmax sample's references: each sampled row's maximum and sum once, then its sampled elements. */
static void sample_softmax(struct pool *p, struct sample_task *s)
{
	const struct kernel_work *w = s->t->w;

	s->rmax = xcalloc(w->grid.nrows, sizeof(*s->rmax));
	s->rsum = xcalloc(w->grid.nrows, sizeof(*s->rsum));
	pool_parallel(p, w->grid.nrows, 2, 1, softmax_rows, s);
	pool_parallel(p, w->nsample, 1024, 1, softmax_note, s);
	free(s->rmax);
	free(s->rsum);
}

void kernel_verify_sample(struct pool *p, const struct kernel_work *w, struct kernel_verification *v)
{
	struct verify_task *t = xcalloc(1, sizeof(*t));
	struct sample_task s = {.t = t};

	t->w = w;
	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
		s.key[i] = kernel_gen_key(w->seed, i);
		s.gen[i] = w->generate && kernel_input_generated(w, i);
	}
	switch (w->kernel) {
	case KERNEL_DOT: {
		double ref = 0.0, mag = 0.0;

		for (uint64_t i = 0; i < w->n; i++) {
			double term = input_at(&s, 0, i) * input_at(&s, 1, i);

			ref += term;
			mag += fabs(term);
		}
		t->tol_rel = seq_tol(w->n);
		verify_note(t, 0, w->value, ref, mag);
		snprintf(v->method, sizeof(v->method), "double-precision sum of every product");
		break;
	}
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
		t->tol_rel = 1e-6;
		break;
	case KERNEL_SGEMM:
		t->tol_rel = seq_tol(w->k) +
			     (w->precision == KERNEL_PRECISION_HIGHEST ? 0.0 : 2.0 * kernel_precision_unit(w->precision));
		break;
	case KERNEL_SOFTMAX:
		t->tol_rel = seq_tol(w->n);
		break;
	case KERNEL_COUNT:
		break;
	}
	if (w->kernel != KERNEL_DOT && w->sample != NULL && w->nsample == w->grid.count) {
		if (w->kernel == KERNEL_SGEMM)
			sample_gemm(p, &s);
		else if (w->kernel == KERNEL_SOFTMAX)
			sample_softmax(p, &s);
		else
			pool_parallel(p, w->nsample, 1024, 1, sample_vec_part, &s);
		if (w->grid.nrows > 1)
			snprintf(v->method, sizeof(v->method),
				 "double-precision reference of %zu sampled elements (%zu rows x %zu columns)", w->nsample,
				 w->grid.nrows, w->grid.ncols);
		else
			snprintf(v->method, sizeof(v->method), "double-precision reference of %zu sampled elements",
				 w->nsample);
	}
	fold(t, v);
	v->verified = v->worst_ratio <= 1.0 && (w->kernel == KERNEL_DOT || v->checked == w->nsample);
	v->sampled = true;
	free(t);
}
