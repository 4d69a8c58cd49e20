/*
 * Peer for bench/exec.sh: cblas_sgemm C = A*B, n x n row-major, through OpenBLAS as linked (run it with and
 * without OPENBLAS_CORETYPE=SkylakeX). Prints the best GFLOP/s of several runs after a warm-up.
 * Usage: exec_peer_sgemm N [RUNS]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 2048;
	int runs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5;
	size_t nn = (size_t)n * (size_t)n;
	float *a = malloc(nn * sizeof(float));
	float *b = malloc(nn * sizeof(float));
	float *c = malloc(nn * sizeof(float));
	double best = 0.0;

	for (size_t i = 0; i < nn; i++) {
		a[i] = (float)(i % 13) / 13.0f - 0.5f;
		b[i] = (float)(i % 7) / 7.0f - 0.5f;
		c[i] = 0.0f;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
	for (int r = 0; r < runs; r++) {
		double t0 = now();
		double g;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
		g = 2.0 * n * (double)n * n / (now() - t0) / 1e9;
		if (g > best)
			best = g;
	}
	printf("%.2f %s\n", best, openblas_get_corename());
	free(a);
	free(b);
	free(c);
	return 0;
}
