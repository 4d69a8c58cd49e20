/*
 * Unit tests of the native CPU backend (exec_cpu.c): every kernel against a double-precision reference, at odd
 * sizes (1, primes, sizes that are not multiples of the vector width or the thread split) and alpha/beta edge
 * values (0, 1, -1), on pools of 1, 2 and 3 threads.
 *
 * Tolerances (u = 2^-24, float32 unit roundoff), the same as exec.c's verification:
 *   saxpy, triad: |got - ref| <= 1e-6 * (|first term| + |second term|) + 1e-30
 *   dot, sgemm:   |got - ref| <= (2e-6 + k * u) * sum |terms| + 1e-30
 *   softmax:      |got - ref| <= (2e-6 + cols * u) * ref + 1e-30, and every row sums to 1 within the same bound
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "exec/exec.h"
#include "exec/backend/exec_cpu.h"

#define U (1.0 / 16777216.0)

static const size_t odd_sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 127, 1009, 65537, 100003};

static float *randv(size_t n, unsigned seed)
{
	float *v = malloc((n ? n : 1) * sizeof(float));
	unsigned s = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
	return v;
}

static void check_close(double got, double ref, double tol, const char *what, size_t i)
{
	ck_assert_msg(fabs(got - ref) <= tol + 1e-30, "%s[%zu]: got %.9g, expected %.9g (tolerance %.3g)", what, i,
		      got, ref, tol);
}

static struct pool *pool(unsigned threads)
{
	struct pool *cpu = pool_new(threads);

	ck_assert_uint_ge(pool_threads(cpu), 1);
	return cpu;
}

START_TEST(saxpy_and_triad_match_reference)
{
	static const float alphas[] = {0.0f, 1.0f, -1.0f, 2.5f};
	struct pool *cpu = pool((unsigned)_i + 1);

	for (size_t si = 0; si < sizeof(odd_sizes) / sizeof(odd_sizes[0]); si++) {
		size_t n = odd_sizes[si];
		float *x = randv(n, 1);
		float *y = randv(n, 2);
		float *out = malloc(n * sizeof(float));

		for (size_t ai = 0; ai < 4; ai++) {
			float a = alphas[ai];

			exec_cpu_saxpy(cpu, n, a, x, y, out);
			for (size_t i = 0; i < n; i++)
				check_close(out[i], (double)a * x[i] + y[i], 1e-6 * (fabs((double)a * x[i]) + fabs(y[i])),
					    "saxpy", i);
			exec_cpu_triad(cpu, n, a, x, y, out);
			for (size_t i = 0; i < n; i++)
				check_close(out[i], x[i] + (double)a * y[i], 1e-6 * (fabs(x[i]) + fabs((double)a * y[i])),
					    "triad", i);
		}
		free(x);
		free(y);
		free(out);
	}
	pool_free(cpu);
}
END_TEST

/*
 * Outputs of 8 MiB and more are written with non-temporal stores: at every misalignment of the output and on 1-3
 * threads the results equal the plain float expression exactly (same operations, same order), fill included.
 */
START_TEST(large_outputs_stream_the_same_values)
{
	const size_t n = (8u << 20) / sizeof(float) + 1237;
	struct pool *cpu = pool((unsigned)_i + 1);
	float *x = randv(n + 16, 3);
	float *y = randv(n + 16, 4);
	float *buf = malloc((n + 16) * sizeof(float));
	const float a = -1.75f;

	/* mismatches are found with plain loops: a check per element would cost a pipe write each under CK_FORK */
	for (size_t off = 0; off < 16; off += 5) {
		float *out = buf + off;
		size_t bad = n;

		exec_cpu_saxpy(cpu, n, a, x + off, y, out);
		for (size_t i = 0; i < n && bad == n; i++)
			if (out[i] != a * x[off + i] + y[i])
				bad = i;
		ck_assert_msg(bad == n, "saxpy[%zu] at offset %zu", bad, off);
		exec_cpu_triad(cpu, n, a, x, y + off, out);
		for (size_t i = 0; i < n && bad == n; i++)
			if (out[i] != x[i] + a * y[off + i])
				bad = i;
		ck_assert_msg(bad == n, "triad[%zu] at offset %zu", bad, off);
		exec_cpu_fill(cpu, out, n, 0.5f);
		for (size_t i = 0; i < n && bad == n; i++)
			if (out[i] != 0.5f)
				bad = i;
		ck_assert_msg(bad == n, "fill[%zu] at offset %zu", bad, off);
	}
	free(x);
	free(y);
	free(buf);
	pool_free(cpu);
}
END_TEST

START_TEST(dot_matches_reference)
{
	struct pool *cpu = pool((unsigned)_i + 1);

	for (size_t si = 0; si < sizeof(odd_sizes) / sizeof(odd_sizes[0]); si++) {
		size_t n = odd_sizes[si];
		float *x = randv(n, 3);
		float *y = randv(n, 4);
		double ref = 0.0;
		double mag = 0.0;

		for (size_t i = 0; i < n; i++) {
			ref += (double)x[i] * y[i];
			mag += fabs((double)x[i] * y[i]);
		}
		check_close(exec_cpu_dot(cpu, n, x, y), ref, (2e-6 + (double)n * U) * mag, "dot", n);
		free(x);
		free(y);
	}
	pool_free(cpu);
}
END_TEST

static void gemm_case(struct pool *cpu, size_t m, size_t n, size_t k, float alpha, float beta, bool with_c)
{
	float *a = randv(m * k, 5);
	float *b = randv(k * n, 6);
	float *c = with_c ? randv(m * n, 7) : NULL;
	float *out = malloc(m * n * sizeof(float));

	exec_cpu_sgemm(cpu, m, n, k, alpha, a, b, beta, c, out);
	for (size_t i = 0; i < m; i++) {
		for (size_t j = 0; j < n; j++) {
			double ref = 0.0;
			double mag = 0.0;

			for (size_t p = 0; p < k; p++) {
				ref += (double)a[i * k + p] * b[p * n + j];
				mag += fabs((double)a[i * k + p] * b[p * n + j]);
			}
			ref *= alpha;
			mag *= fabs(alpha);
			if (c && beta != 0.0f) {
				ref += (double)beta * c[i * n + j];
				mag += fabs((double)beta * c[i * n + j]);
			}
			check_close(out[i * n + j], ref, (2e-6 + (double)k * U) * mag, "sgemm", i * n + j);
		}
	}
	free(a);
	free(b);
	free(c);
	free(out);
}

START_TEST(sgemm_matches_reference)
{
	static const size_t shapes[][3] = {{1, 1, 1}, {1, 7, 3}, {7, 1, 5}, {3, 5, 1}, {17, 31, 13}, {64, 64, 64},
					   {67, 131, 97}, {128, 3, 257}};
	static const float ab[][2] = {{1.0f, 0.0f}, {0.0f, 1.0f}, {-1.0f, -1.0f}, {1.5f, 0.5f}, {0.0f, 0.0f}};
	struct pool *cpu = pool((unsigned)_i + 1);

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (size_t e = 0; e < sizeof(ab) / sizeof(ab[0]); e++)
			gemm_case(cpu, shapes[s][0], shapes[s][1], shapes[s][2], ab[e][0], ab[e][1], e % 2 == 0);
	pool_free(cpu);
}
END_TEST

START_TEST(sgemm_beta_zero_ignores_c)
{
	struct pool *cpu = pool(2);
	float a[4] = {1, 2, 3, 4};
	float b[4] = {1, 0, 0, 1};
	float c[4] = {NAN, INFINITY, NAN, -INFINITY};
	float out[4];

	exec_cpu_sgemm(cpu, 2, 2, 2, 1.0f, a, b, 0.0f, c, out);
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(out[i], a[i]);
	pool_free(cpu);
}
END_TEST

START_TEST(softmax_matches_reference)
{
	static const size_t shapes[][2] = {{1, 1}, {1, 7}, {3, 17}, {13, 1009}, {257, 33}};
	struct pool *cpu = pool((unsigned)_i + 1);

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		size_t rows = shapes[s][0];
		size_t cols = shapes[s][1];
		float *x = randv(rows * cols, 8);
		float *out = malloc(rows * cols * sizeof(float));

		for (size_t i = 0; i < rows * cols; i++)
			x[i] *= 30.0f; /* large values: the maximum must be subtracted to stay finite */
		exec_cpu_softmax(cpu, rows, cols, x, out);
		for (size_t r = 0; r < rows; r++) {
			double m = x[r * cols];
			double sum = 0.0;
			double total = 0.0;
			double tol = 2e-6 + (double)cols * U;

			for (size_t j = 0; j < cols; j++)
				m = fmax(m, x[r * cols + j]);
			for (size_t j = 0; j < cols; j++)
				sum += exp((double)x[r * cols + j] - m);
			for (size_t j = 0; j < cols; j++) {
				double ref = exp((double)x[r * cols + j] - m) / sum;

				check_close(out[r * cols + j], ref, tol * ref, "softmax", r * cols + j);
				total += out[r * cols + j];
			}
			check_close(total, 1.0, tol, "softmax row sum", r);
		}
		free(x);
		free(out);
	}
	pool_free(cpu);
}
END_TEST

START_TEST(blas_is_loaded_and_checked)
{
	const char *before = getenv("OPENBLAS_CORETYPE");
	char *given = before ? strdup(before) : NULL;

	/* OpenBLAS is a build dependency, so the run-time load must find it and its self-check must pass */
	exec_cpu_blas_prepare();
	ck_assert_ptr_nonnull(exec_cpu_blas_config());
	ck_assert_ptr_nonnull(exec_cpu_blas_core());
	ck_assert_msg(strstr(exec_cpu_blas_note(), "OpenBLAS core") != NULL, "%s", exec_cpu_blas_note());
	/* the process environment is left as it was, whatever the caller's shell had set */
	if (given == NULL)
		ck_assert_ptr_null(getenv("OPENBLAS_CORETYPE"));
	else
		ck_assert_str_eq(getenv("OPENBLAS_CORETYPE"), given);
	free(given);
}
END_TEST

START_TEST(native_backend_runs_work)
{
	void *state = NULL;
	char err[256];
	struct device dev;
	float x[5] = {1, 2, 3, 4, 5};
	float y[5] = {1, 1, 1, 1, 1};
	float out[5];
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 5, .alpha = 2.0f, .in = {x, y, NULL}, .out = out};
	struct backend_timing t;

	device_init(&dev, DEVICE_CPU);
	ck_assert_int_eq(backend_native.open(&dev, 2, &state, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(backend_native.run(state, &w, &t, err, sizeof(err)), ACCELD_OK);
	for (int i = 0; i < 5; i++)
		ck_assert_float_eq(out[i], 2.0f * x[i] + 1.0f);
	ck_assert(t.kernel_ms >= 0.0);
	ck_assert(t.transfer_ms == 0.0);
	w.kernel = KERNEL_DOT;
	ck_assert_int_eq(backend_native.run(state, &w, &t, err, sizeof(err)), ACCELD_OK);
	ck_assert(fabs(w.value - 15.0) < 1e-9);
	backend_native.close(state);
	/* it serves CPUs only, and is preferred there */
	ck_assert(backend_native.serves(&dev));
	ck_assert(backend_default(backend_builtin, &dev) == &backend_native);
	device_init(&dev, DEVICE_GPU);
	ck_assert(!backend_native.serves(&dev));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_cpu");
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, saxpy_and_triad_match_reference, 0, 3);
	tcase_add_loop_test(tc, large_outputs_stream_the_same_values, 0, 3);
	tcase_add_loop_test(tc, dot_matches_reference, 0, 3);
	tcase_add_loop_test(tc, sgemm_matches_reference, 0, 3);
	tcase_add_test(tc, sgemm_beta_zero_ignores_c);
	tcase_add_loop_test(tc, softmax_matches_reference, 0, 3);
	tcase_add_test(tc, blas_is_loaded_and_checked);
	tcase_add_test(tc, native_backend_runs_work);
	suite_add_tcase(s, tc);
	return s;
}
