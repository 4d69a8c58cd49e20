/*
 * exec_cpu: the native CPU backend (backend_native in backend.h): vectorised kernels for the memory-bound kernels
 * (built for AVX-512, AVX2 and a baseline, chosen at load time) on a fork-join pool (pool.h), and sgemm through
 * OpenBLAS.
 *
 * OpenBLAS is loaded with dlopen, never linked: OpenBLAS 0.3.21 does not recognise some AVX-512 CPUs (AMD Zen 4)
 * and falls back to Haswell kernels at half the speed, and it reads OPENBLAS_CORETYPE only while it initialises.
 * exec_cpu_blas_prepare sets OPENBLAS_CORETYPE=SkylakeX (when the user has not set it and the CPU has the
 * AVX-512 subsets those kernels use), loads the library, and checks a few sgemm results against a reference;
 * when the library is missing or the check fails, sgemm uses the built-in blocked kernel instead.
 */
#ifndef ACCELD_EXEC_CPU_H
#define ACCELD_EXEC_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "exec/backend.h"
#include "core/pool.h"

/* The kernels (see kernel.h for their definitions) on the pool. Pointers must not alias the output. */
void exec_cpu_saxpy(struct pool *cpu, size_t n, float alpha, const float *x, const float *y, float *out);
void exec_cpu_triad(struct pool *cpu, size_t n, float scale, const float *b, const float *c, float *out);
double exec_cpu_dot(struct pool *cpu, size_t n, const float *x, const float *y);
void exec_cpu_sgemm(struct pool *cpu, size_t m, size_t n, size_t k, float alpha, const float *a, const float *b,
		    float beta, const float *c, float *out);
void exec_cpu_softmax(struct pool *cpu, size_t rows, size_t cols, const float *x, float *out);

/* Writes v into p[0..n) in parallel (also faults the pages in before a kernel is timed). */
void exec_cpu_fill(struct pool *cpu, float *p, size_t n, float v);

/*
 * Loads OpenBLAS once per process (later calls return at once). Call it before other threads start: it may set
 * OPENBLAS_CORETYPE in the environment for the duration of the load.
 */
void exec_cpu_blas_prepare(void);

/* The loaded library's configuration text ("OpenBLAS 0.3.21 DYNAMIC_ARCH ..."), or NULL when none is in use. */
const char *exec_cpu_blas_config(void);

/* The OpenBLAS core in use ("SkylakeX"), or NULL; and a note on what was decided and why (never NULL). */
const char *exec_cpu_blas_core(void);
const char *exec_cpu_blas_note(void);

#endif
