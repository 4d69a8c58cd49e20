/*
 * Peer for bench/exec.sh: STREAM-style loops over n floats with OpenMP threads (built -O3 -march=native
 * -fopenmp): triad a = b + s*c and saxpy out = alpha*x + y. Counts 12 bytes per element (two reads, one write),
 * as acceld does, and prints the best GB/s of several runs: "TRIAD SAXPY".
 * Usage: exec_peer_stream N [RUNS]
 */
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
	printf("%.2f %.2f %.1f\n", best_triad, best_saxpy, (double)a[n / 2]);
	free(a);
	free(b);
	free(c);
	return 0;
}
