/*
 * Peer for bench/exec.sh: STREAM-style loops over n floats with OpenMP threads (built -O3 -march=native
 * -fopenmp): triad a = b + s*c and saxpy out = alpha*x + y, the plain loops the compiler makes of them (ordinary
 * stores, so the hardware also reads each output line before writing it: 16 bytes move per element), and the same
 * loops with non-temporal stores where the CPU has AVX-512 (12 bytes move). Counts 12 bytes per element (two reads,
 * one write; STREAM's convention, as acceld does) and prints the best GB/s of several runs:
 * "TRIAD SAXPY CHECK TRIAD_NT SAXPY_NT" (the last two 0 without AVX-512).
 * Usage: exec_peer_stream N [RUNS]
 */
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000000;
	int runs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5;
	float *a = malloc(n * sizeof(float));
	float *b = malloc(n * sizeof(float));
	float *c = malloc(n * sizeof(float));
	double best_triad = 0.0;
	double best_saxpy = 0.0;
	const float s = 3.0f;

#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = 0.0f;
		b[i] = 1.0f;
		c[i] = 2.0f;
	}
	for (int r = 0; r < runs; r++) {
		double t0 = omp_get_wtime();
		double t;

#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
		t = omp_get_wtime() - t0;
		if (12.0 * (double)n / t / 1e9 > best_triad)
			best_triad = 12.0 * (double)n / t / 1e9;
		t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
		for (size_t i = 0; i < n; i++)
			a[i] = s * b[i] + c[i];
		t = omp_get_wtime() - t0;
		if (12.0 * (double)n / t / 1e9 > best_saxpy)
			best_saxpy = 12.0 * (double)n / t / 1e9;
	}
	{
		double best_triad_nt = 0.0;
		double best_saxpy_nt = 0.0;

#ifdef __AVX512F__
		for (int r = 0; r < runs; r++) {
			double t0 = omp_get_wtime();
			double t;

#pragma omp parallel
			{
				/* contiguous 64-byte-aligned parts, as schedule(static) splits the plain loops */
				size_t nt = (size_t)omp_get_num_threads();
				size_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
				size_t lo = chunk * (size_t)omp_get_thread_num();
				size_t hi = lo + chunk < n ? lo + chunk : n;
				size_t i = lo;

				for (; i < hi && ((size_t)(a + i) & 63) != 0; i++)
					a[i] = b[i] + s * c[i];
				for (; i + 16 <= hi; i += 16)
					_mm512_stream_ps(a + i, _mm512_add_ps(_mm512_loadu_ps(b + i),
									      _mm512_mul_ps(_mm512_set1_ps(s),
											    _mm512_loadu_ps(c + i))));
				for (; i < hi; i++)
					a[i] = b[i] + s * c[i];
				_mm_sfence();
			}
			t = omp_get_wtime() - t0;
			if (12.0 * (double)n / t / 1e9 > best_triad_nt)
				best_triad_nt = 12.0 * (double)n / t / 1e9;
			t0 = omp_get_wtime();
#pragma omp parallel
			{
				size_t nt = (size_t)omp_get_num_threads();
				size_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
				size_t lo = chunk * (size_t)omp_get_thread_num();
				size_t hi = lo + chunk < n ? lo + chunk : n;
				size_t i = lo;

				for (; i < hi && ((size_t)(a + i) & 63) != 0; i++)
					a[i] = s * b[i] + c[i];
				for (; i + 16 <= hi; i += 16)
					_mm512_stream_ps(a + i, _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(s),
											    _mm512_loadu_ps(b + i)),
									      _mm512_loadu_ps(c + i)));
				for (; i < hi; i++)
					a[i] = s * b[i] + c[i];
				_mm_sfence();
			}
			t = omp_get_wtime() - t0;
			if (12.0 * (double)n / t / 1e9 > best_saxpy_nt)
				best_saxpy_nt = 12.0 * (double)n / t / 1e9;
		}
#endif
		printf("%.2f %.2f %.1f %.2f %.2f\n", best_triad, best_saxpy, (double)a[n / 2], best_triad_nt,
		       best_saxpy_nt);
	}
	free(a);
	free(b);
	free(c);
	return 0;
}
