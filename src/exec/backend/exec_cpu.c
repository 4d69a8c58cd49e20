/*
 * exec_cpu: native kernels on a fork-join pool, and OpenBLAS loaded at run time for sgemm.
 *
 * The memory-bound loops are written so GCC vectorises them at -O3 (the Makefile builds this file with -O3) and
 * carry target_clones, so one binary runs AVX-512 code where the CPU has it and stays portable elsewhere.
 */
#include "exec/backend/exec_cpu.h"

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>
#define EXEC_STREAM_X86 1
#endif

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"

#if defined(__x86_64__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define EXEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef EXEC_CLONES
#define EXEC_CLONES
#endif

#define SERIAL_GRAIN 65536 /* elements below which waking the pool costs more than it saves */
/*
 * Outputs at least this large (bytes) are written with non-temporal stores: they would not stay in the caches
 * anyway, and a streaming store skips the read that a normal store does first (write-allocate), so the memory
 * moves 12 bytes per element of saxpy or triad instead of 16.
 */
#define STREAM_MIN_BYTES (8u << 20)

/* --- memory-bound kernels --- */

EXEC_CLONES static void saxpy_loop(size_t n, float alpha, const float *restrict x, const float *restrict y,
				   float *restrict out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = alpha * x[i] + y[i];
}

EXEC_CLONES static void triad_loop(size_t n, float scale, const float *restrict b, const float *restrict c,
				   float *restrict out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = b[i] + scale * c[i];
}

EXEC_CLONES static void fill_loop(size_t n, float v, float *restrict p)
{
	for (size_t i = 0; i < n; i++)
		p[i] = v;
}

#define DOT_LANES 16
#define DOT_BLOCK 4096 /* elements summed in float lanes before the block's sum moves to double */

/* 16 independent float lanes vectorise without reassociation flags; blocks end in double to keep accuracy */
EXEC_CLONES static double dot_loop(size_t n, const float *restrict x, const float *restrict y)
{
	double total = 0.0;
	size_t i = 0;

	while (i + DOT_LANES <= n) {
		float acc[DOT_LANES] = {0};
		size_t end = i + DOT_BLOCK <= n ? i + DOT_BLOCK : n - (n - i) % DOT_LANES;
		double block = 0.0;

		for (; i < end; i += DOT_LANES)
			for (size_t j = 0; j < DOT_LANES; j++)
				acc[j] += x[i + j] * y[i + j];
		for (size_t j = 0; j < DOT_LANES; j++)
			block += acc[j];
		total += block;
	}
	for (; i < n; i++)
		total += (double)x[i] * y[i];
	return total;
}

/*
 * The same loops with non-temporal stores (same operations in the same order, so the same results): a scalar head
 * up to the output's 64-byte boundary, full vectors streamed, a scalar tail, and a store fence so the output is
 * visible to the threads that read it next.
 */
enum vec_op { VEC_SAXPY, VEC_TRIAD, VEC_FILL };

#ifdef EXEC_STREAM_X86
static float vec_one(enum vec_op op, float a, const float *x, const float *y, size_t i)
{
	switch (op) {
	case VEC_SAXPY:
		return a * x[i] + y[i];
	case VEC_TRIAD:
		return x[i] + a * y[i];
	case VEC_FILL:
		break;
	}
	return a;
}

__attribute__((target("avx512f"))) static void stream_avx512(enum vec_op op, size_t n, float a, const float *x,
							      const float *y, float *out)
{
	const __m512 va = _mm512_set1_ps(a);
	size_t i = 0;

	for (; i < n && ((uintptr_t)(out + i) & 63) != 0; i++)
		out[i] = vec_one(op, a, x, y, i);
	for (; i + 16 <= n; i += 16) {
		__m512 v;

		if (op == VEC_SAXPY)
			v = _mm512_add_ps(_mm512_mul_ps(va, _mm512_loadu_ps(x + i)), _mm512_loadu_ps(y + i));
		else if (op == VEC_TRIAD)
			v = _mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_mul_ps(va, _mm512_loadu_ps(y + i)));
		else
			v = va;
		_mm512_stream_ps(out + i, v);
	}
	for (; i < n; i++)
		out[i] = vec_one(op, a, x, y, i);
	_mm_sfence();
}

__attribute__((target("avx"))) static void stream_avx(enum vec_op op, size_t n, float a, const float *x,
						     const float *y, float *out)
{
	const __m256 va = _mm256_set1_ps(a);
	size_t i = 0;

	for (; i < n && ((uintptr_t)(out + i) & 31) != 0; i++)
		out[i] = vec_one(op, a, x, y, i);
	for (; i + 8 <= n; i += 8) {
		__m256 v;

		if (op == VEC_SAXPY)
			v = _mm256_add_ps(_mm256_mul_ps(va, _mm256_loadu_ps(x + i)), _mm256_loadu_ps(y + i));
		else if (op == VEC_TRIAD)
			v = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
		else
			v = va;
		_mm256_stream_ps(out + i, v);
	}
	for (; i < n; i++)
		out[i] = vec_one(op, a, x, y, i);
	_mm_sfence();
}

/* Streams the part when the CPU has the instructions; false leaves it to the ordinary loop. */
static bool stream_part(enum vec_op op, size_t n, float a, const float *x, const float *y, float *out)
{
	static atomic_int known = -1; /* 2 avx512f, 1 avx, 0 neither; every thread computes the same */
	int isa = atomic_load_explicit(&known, memory_order_relaxed);

	if (isa < 0) {
		__builtin_cpu_init();
		isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx") ? 1 : 0;
		atomic_store_explicit(&known, isa, memory_order_relaxed);
	}
	if (isa == 2)
		stream_avx512(op, n, a, x, y, out);
	else if (isa == 1)
		stream_avx(op, n, a, x, y, out);
	return isa > 0;
}
#else
static bool stream_part(enum vec_op op, size_t n, float a, const float *x, const float *y, float *out)
{
	(void)op;
	(void)n;
	(void)a;
	(void)x;
	(void)y;
	(void)out;
	return false;
}
#endif

struct vec_task {
	bool stream;                 /* the output is large: non-temporal stores */
	float alpha;
	const float *x;
	const float *y;
	float *out;
	double partial[POOL_MAX_THREADS];
};

static void saxpy_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct vec_task *t = arg;

	(void)part;
	if (!t->stream || !stream_part(VEC_SAXPY, e - b, t->alpha, t->x + b, t->y + b, t->out + b))
		saxpy_loop(e - b, t->alpha, t->x + b, t->y + b, t->out + b);
}

static void triad_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct vec_task *t = arg;

	(void)part;
	if (!t->stream || !stream_part(VEC_TRIAD, e - b, t->alpha, t->x + b, t->y + b, t->out + b))
		triad_loop(e - b, t->alpha, t->x + b, t->y + b, t->out + b);
}

static void dot_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct vec_task *t = arg;

	t->partial[part] = dot_loop(e - b, t->x + b, t->y + b);
}

static void fill_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct vec_task *t = arg;

	(void)part;
	if (!t->stream || !stream_part(VEC_FILL, e - b, t->alpha, NULL, NULL, t->out + b))
		fill_loop(e - b, t->alpha, t->out + b);
}

void exec_cpu_saxpy(struct pool *cpu, size_t n, float alpha, const float *x, const float *y, float *out)
{
	struct vec_task t = {.alpha = alpha, .x = x, .y = y, .out = out,
			      .stream = n * sizeof(float) >= STREAM_MIN_BYTES};

	pool_parallel(cpu, n, SERIAL_GRAIN, 16, saxpy_part, &t);
}

void exec_cpu_triad(struct pool *cpu, size_t n, float scale, const float *b, const float *c, float *out)
{
	struct vec_task t = {.alpha = scale, .x = b, .y = c, .out = out,
			      .stream = n * sizeof(float) >= STREAM_MIN_BYTES};

	pool_parallel(cpu, n, SERIAL_GRAIN, 16, triad_part, &t);
}

double exec_cpu_dot(struct pool *cpu, size_t n, const float *x, const float *y)
{
	struct vec_task t = {.x = x, .y = y};
	double sum = 0.0;

	pool_parallel(cpu, n, SERIAL_GRAIN, 16, dot_part, &t);
	for (unsigned i = 0; i < pool_threads(cpu) && n > 0; i++)
		sum += t.partial[i];
	return sum;
}

void exec_cpu_fill(struct pool *cpu, float *p, size_t n, float v)
{
	struct vec_task t = {.alpha = v, .out = p,
			      .stream = n * sizeof(float) >= STREAM_MIN_BYTES};

	pool_parallel(cpu, n, SERIAL_GRAIN, 1024, fill_part, &t);
}

/* --- softmax --- */

struct softmax_task {
	size_t cols;
	const float *x;
	float *out;
};

EXEC_CLONES static float row_max(size_t n, const float *restrict x)
{
	float m = x[0];

	for (size_t i = 1; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return m;
}

EXEC_CLONES static void row_scale(size_t n, float f, float *restrict p)
{
	for (size_t i = 0; i < n; i++)
		p[i] *= f;
}

static void softmax_part(void *arg, unsigned part, size_t b, size_t e)
{
	struct softmax_task *t = arg;

	(void)part;
	for (size_t r = b; r < e; r++) {
		const float *x = t->x + r * t->cols;
		float *o = t->out + r * t->cols;
		float m = row_max(t->cols, x); /* subtracting the maximum keeps expf finite */
		double sum = 0.0;

		for (size_t i = 0; i < t->cols; i++) {
			o[i] = expf(x[i] - m);
			sum += o[i];
		}
		row_scale(t->cols, (float)(1.0 / sum), o);
	}
}

void exec_cpu_softmax(struct pool *cpu, size_t rows, size_t cols, const float *x, float *out)
{
	struct softmax_task t = {.cols = cols, .x = x, .out = out};

	if (cols == 0)
		return;
	pool_parallel(cpu, rows, rows * cols < SERIAL_GRAIN ? rows + 1 : 1, 1, softmax_part, &t);
}

/* --- sgemm --- */

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
			 const float *b, int ldb, float beta, float *c, int ldc);

static struct {
	pthread_once_t once;
	void *handle;
	sgemm_fn sgemm;
	void (*set_threads)(int);
	char config[160];
	char core[32];
	char note[256];
	bool usable;
} blas = {.once = PTHREAD_ONCE_INIT};

#define CBLAS_ROW_MAJOR 101
#define CBLAS_NO_TRANS 111
#define GEMM_MC 4   /* rows of the built-in kernel's block */
#define GEMM_KC 128
#define GEMM_NC 512

struct gemm_task {
	size_t m, n, k;
	float alpha, beta;
	const float *a, *b, *c;
	float *out;
};

EXEC_CLONES static void axpy_row(size_t n, float a, const float *restrict b, float *restrict o)
{
	for (size_t j = 0; j < n; j++)
		o[j] += a * b[j];
}

/* The built-in kernel: rows of C split over threads, blocked so a panel of B stays in L2. */
static void gemm_part(void *arg, unsigned part, size_t rb, size_t re)
{
	struct gemm_task *t = arg;

	(void)part;
	for (size_t i = rb; i < re; i++) {
		float *o = t->out + i * t->n;

		for (size_t j = 0; j < t->n; j++)
			o[j] = (t->beta == 0.0f || t->c == NULL) ? 0.0f : t->beta * t->c[i * t->n + j];
	}
	for (size_t ib = rb; ib < re; ib += GEMM_MC) {
		size_t ie = ib + GEMM_MC < re ? ib + GEMM_MC : re;

		for (size_t jb = 0; jb < t->n; jb += GEMM_NC) {
			size_t nj = jb + GEMM_NC < t->n ? GEMM_NC : t->n - jb;

			for (size_t pb = 0; pb < t->k; pb += GEMM_KC) {
				size_t pe = pb + GEMM_KC < t->k ? pb + GEMM_KC : t->k;

				for (size_t i = ib; i < ie; i++)
					for (size_t p = pb; p < pe; p++)
						axpy_row(nj, t->alpha * t->a[i * t->k + p], t->b + p * t->n + jb,
							 t->out + i * t->n + jb);
			}
		}
	}
}

static void sgemm_builtin(struct pool *cpu, const struct gemm_task *t)
{
	pool_parallel(cpu, t->m, t->m * t->n * t->k < 1000000 ? t->m + 1 : 1, GEMM_MC, gemm_part,
			  (void *)(uintptr_t)t);
}

void exec_cpu_sgemm(struct pool *cpu, size_t m, size_t n, size_t k, float alpha, const float *a, const float *b,
		    float beta, const float *c, float *out)
{
	struct gemm_task t = {.m = m, .n = n, .k = k, .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c, .out = out};

	if (m == 0 || n == 0)
		return;
	exec_cpu_blas_prepare();
	if (!blas.usable || m > INT_MAX || n > INT_MAX || k > INT_MAX || k == 0) {
		sgemm_builtin(cpu, &t);
		return;
	}
	if (beta != 0.0f && c != NULL)
		memcpy(out, c, m * n * sizeof(float));
	else
		beta = 0.0f; /* BLAS ignores C when beta is 0, so out need not be cleared */
	blas.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)m, (int)n, (int)k, alpha, a, (int)k, b, (int)n,
		   beta, out, (int)n);
}

static void *blas_sym(const char *name)
{
	return dlsym(blas.handle, name);
}

/* Compares the library's sgemm with a double reference on shapes that take its small and its blocked paths. */
static bool blas_self_check(void)
{
	static const size_t shapes[][3] = {{33, 45, 67}, {191, 257, 130}};
	bool ok = true;

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]) && ok; s++) {
		size_t m = shapes[s][0];
		size_t n = shapes[s][1];
		size_t k = shapes[s][2];
		float *a = xmalloc(m * k * sizeof(float));
		float *b = xmalloc(k * n * sizeof(float));
		float *c = xmalloc(m * n * sizeof(float));

		for (size_t i = 0; i < m * k; i++)
			a[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
		for (size_t i = 0; i < k * n; i++)
			b[i] = (float)((int)(i * 5 % 11) - 5) / 4.0f;
		for (size_t i = 0; i < m * n; i++)
			c[i] = (float)(i % 3);
		blas.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)m, (int)n, (int)k, 1.5f, a, (int)k, b,
			   (int)n, -0.5f, c, (int)n);
		for (size_t i = 0; i < m && ok; i++) {
			for (size_t j = 0; j < n && ok; j++) {
				double ref = -0.5 * (double)((i * n + j) % 3);
				double mag = fabs(ref);

				for (size_t p = 0; p < k; p++) {
					ref += 1.5 * (double)a[i * k + p] * b[p * n + j];
					mag += fabs(1.5 * (double)a[i * k + p] * b[p * n + j]);
				}
				if (!(fabs(c[i * n + j] - ref) <= 1e-5 * mag + 1e-6))
					ok = false;
			}
		}
		free(a);
		free(b);
		free(c);
	}
	return ok;
}

static bool cpu_has_skylakex_isa(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512cd");
#else
	return false;
#endif
}

static void blas_load(void)
{
	static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
	const char *user = getenv("OPENBLAS_CORETYPE");
	bool force = user == NULL && cpu_has_skylakex_isa();
	char *(*get_config)(void) = NULL;
	char *(*get_core)(void) = NULL;
	void *p;

	if (force)
		setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && blas.handle == NULL; i++)
		blas.handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (force)
		unsetenv("OPENBLAS_CORETYPE"); /* read only while the library initialised; children stay unaffected */
	if (blas.handle == NULL) {
		snprintf(blas.note, sizeof(blas.note), "OpenBLAS not found (%s); sgemm uses the built-in kernel",
			 dlerror());
		return;
	}
	p = blas_sym("cblas_sgemm");
	memcpy(&blas.sgemm, &p, sizeof(p));
	p = blas_sym("openblas_set_num_threads");
	memcpy(&blas.set_threads, &p, sizeof(p));
	p = blas_sym("openblas_get_config");
	memcpy(&get_config, &p, sizeof(p));
	p = blas_sym("openblas_get_corename");
	memcpy(&get_core, &p, sizeof(p));
	if (blas.sgemm == NULL) {
		snprintf(blas.note, sizeof(blas.note), "the BLAS library has no cblas_sgemm; using the built-in kernel");
		return;
	}
	if (get_config)
		snprintf(blas.config, sizeof(blas.config), "%s", get_config());
	if (get_core)
		snprintf(blas.core, sizeof(blas.core), "%s", get_core());
	blas.usable = blas_self_check();
	if (!blas.usable)
		snprintf(blas.note, sizeof(blas.note),
			 "OpenBLAS core %s gave wrong sgemm results in the self-check; using the built-in kernel",
			 blas.core[0] ? blas.core : "?");
	else if (force)
		snprintf(blas.note, sizeof(blas.note), "OpenBLAS core %s (OPENBLAS_CORETYPE=SkylakeX set for AVX-512)",
			 blas.core);
	else
		snprintf(blas.note, sizeof(blas.note), "OpenBLAS core %s%s", blas.core,
			 user ? " (OPENBLAS_CORETYPE from the environment)" : "");
}

void exec_cpu_blas_prepare(void)
{
	pthread_once(&blas.once, blas_load);
}

const char *exec_cpu_blas_config(void)
{
	exec_cpu_blas_prepare();
	return blas.config[0] ? blas.config : NULL;
}

const char *exec_cpu_blas_core(void)
{
	exec_cpu_blas_prepare();
	return blas.usable && blas.core[0] ? blas.core : NULL;
}

const char *exec_cpu_blas_note(void)
{
	exec_cpu_blas_prepare();
	return blas.note;
}

/* --- the backend --- */

static bool native_serves(const struct device *dev)
{
	return dev->type == DEVICE_CPU;
}

static void native_prepare(const struct config *cfg)
{
	(void)cfg;
	exec_cpu_blas_prepare();
}

static enum acceld_err native_open(const struct device *dev, unsigned threads, void **state, char *err,
				   size_t errsz)
{
	struct pool *cpu;

	(void)dev;
	(void)err;
	(void)errsz;
	exec_cpu_blas_prepare();
	cpu = pool_new(threads);
	if (blas.usable && blas.set_threads)
		blas.set_threads((int)pool_threads(cpu));
	*state = cpu;
	return ACCELD_OK;
}

/* The native function of each kernel. */
typedef void native_kernel_fn(struct pool *cpu, struct kernel_work *w);

static void native_saxpy(struct pool *cpu, struct kernel_work *w)
{
	exec_cpu_saxpy(cpu, w->n, w->alpha, w->in[0], w->in[1], w->out);
}

static void native_triad(struct pool *cpu, struct kernel_work *w)
{
	exec_cpu_triad(cpu, w->n, w->scale, w->in[0], w->in[1], w->out);
}

static void native_dot(struct pool *cpu, struct kernel_work *w)
{
	w->value = exec_cpu_dot(cpu, w->n, w->in[0], w->in[1]);
}

static void native_sgemm(struct pool *cpu, struct kernel_work *w)
{
	exec_cpu_sgemm(cpu, w->m, w->n, w->k, w->alpha, w->in[0], w->in[1], w->beta, w->in[2], w->out);
}

static void native_softmax(struct pool *cpu, struct kernel_work *w)
{
	exec_cpu_softmax(cpu, w->m, w->n, w->in[0], w->out);
}

static native_kernel_fn *const native_kernels[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = native_saxpy, [KERNEL_TRIAD] = native_triad,	  [KERNEL_DOT] = native_dot,
	[KERNEL_SGEMM] = native_sgemm, [KERNEL_SOFTMAX] = native_softmax,
};

static bool native_runs(enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT && native_kernels[k] != NULL;
}

static enum acceld_err native_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				  size_t errsz)
{
	struct pool *cpu = state;
	struct kernel_shape shape = {.m = w->m, .n = w->n, .k = w->k};
	uint64_t t0;

	if (!native_runs(w->kernel)) {
		snprintf(err, errsz, "the native backend has no %s", kernel_name(w->kernel));
		return ACCELD_EDEVICE;
	}
	w->precision = KERNEL_PRECISION_HIGHEST; /* float32 throughout */
	/* fault the output's pages in first so the timed kernel sees warm memory, as a STREAM loop does */
	if (w->out != NULL)
		exec_cpu_fill(cpu, w->out, (size_t)kernel_output_len(w->kernel, &shape), 0.0f);
	t0 = clock_mono_ns();
	native_kernels[w->kernel](cpu, w);
	t->kernel_ms = (double)(clock_mono_ns() - t0) / 1e6;
	t->transfer_ms = 0.0;
	return ACCELD_OK;
}

static void native_close(void *state)
{
	pool_free(state);
}

/* GET /version's "openblas": "0.3.21" of "OpenBLAS 0.3.21 DYNAMIC_ARCH ...", "unknown" when none is loaded. */
static void native_libraries(json_t *out)
{
	const char *cfg = exec_cpu_blas_config(); /* OpenBLAS is loaded at run time, not linked */
	const char *v = cfg != NULL && strncmp(cfg, "OpenBLAS ", 9) == 0 ? cfg + 9 : cfg;

	json_object_set_new(out, "openblas", v != NULL ? json_stringn(v, strcspn(v, " ")) : json_string("unknown"));
}

const struct backend_ops backend_native = {
	.name = "native",
	.serves_what = "CPUs",
	.rank = 0,
	.serves = native_serves,
	.prepare = native_prepare,
	.open = native_open,
	.run = native_run,
	.close = native_close,
	.inline_tiny = true, /* tiny jobs stay below every parallel grain: no pool, no lock, no wait */
	.runs = native_runs,
	.libraries = native_libraries,
};
