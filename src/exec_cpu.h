/*
 * exec_cpu: the native CPU backend: a small fork-join thread pool, vectorised kernels for the memory-bound
 * kernels (built for AVX-512, AVX2 and a baseline, chosen at load time), and sgemm through OpenBLAS.
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

#include "err.h"

struct exec_cpu;

/* A pool of threads (the caller's thread counts as one; threads 0 = the CPUs this process may use). */
enum acceld_err exec_cpu_new(unsigned threads, struct exec_cpu **out);
void exec_cpu_free(struct exec_cpu *cpu); /* NULL allowed */
unsigned exec_cpu_threads(const struct exec_cpu *cpu);

/* The CPUs this process may use (its affinity mask), at least 1. */
unsigned exec_cpu_usable(void);

/*
 * Runs fn(arg, part, begin, end) over [0, n) split into one contiguous part per thread (begin aligned to align
 * elements), and returns when every part is done. Small n (below grain) runs on the caller's thread alone, without
 * taking the pool's lock, so it never waits for another caller. Larger tasks from several threads are serialised.
 */
typedef void (*exec_cpu_fn)(void *arg, unsigned part, size_t begin, size_t end);
void exec_cpu_parallel(struct exec_cpu *cpu, size_t n, size_t grain, size_t align, exec_cpu_fn fn, void *arg);

/* The kernels (see struct exec_work in exec.h for their definitions). Pointers must not alias the output. */
void exec_cpu_saxpy(struct exec_cpu *cpu, size_t n, float alpha, const float *x, const float *y, float *out);
void exec_cpu_triad(struct exec_cpu *cpu, size_t n, float s, const float *b, const float *c, float *out);
double exec_cpu_dot(struct exec_cpu *cpu, size_t n, const float *x, const float *y);
void exec_cpu_sgemm(struct exec_cpu *cpu, size_t m, size_t n, size_t k, float alpha, const float *a, const float *b,
		    float beta, const float *c, float *out);
void exec_cpu_softmax(struct exec_cpu *cpu, size_t rows, size_t cols, const float *x, float *out);

/* Writes v into p[0..n) in parallel (also faults the pages in before a kernel is timed). */
void exec_cpu_fill(struct exec_cpu *cpu, float *p, size_t n, float v);

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
