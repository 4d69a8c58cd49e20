/*
 * jobdata: the data around a job's kernel run: inputs generated from a seed, the summary of an output, and the
 * verification of a result against a reference computed another way (in double precision, on the host). Work is
 * spread over a fork-join pool (pool.h); results do not depend on its thread count.
 *
 * Verification tolerances (u = 2^-24, the float32 unit roundoff; the reference is computed in double):
 *   saxpy, triad:  |got - ref| <= 1e-6 * (|first term| + |second term|)
 *   dot, sgemm:    |got - ref| <= (2e-6 + min(k, 65536) * u) * sum |terms|     (k = n for dot; the classic
 *                  worst-case bound of float summation, k * u, plus a little for the scaling); an sgemm whose
 *                  products ran at TF32 or bfloat16 adds twice that precision's unit roundoff (2^-11, 2^-8)
 *   softmax:       |got - ref| <= (2e-6 + min(cols, 65536) * u) * ref + 1e-30
 * sgemm checks every entry up to 1.5e8 multiply-adds in all and 1024 sampled entries beyond; softmax every row up
 * to 1.6e7 elements and 64 sampled rows beyond.
 */
#ifndef ACCELD_JOBDATA_H
#define ACCELD_JOBDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/backend.h"
#include "core/pool.h"

#define JOBDATA_FIRST 8 /* leading output values a summary keeps */

/* A 64-byte aligned array of n floats (at least one), or NULL when it cannot be allocated. Free with free(). */
float *jobdata_alloc(size_t n);

/*
 * Fills dst[0..n) with values in [-1, 1) from a counter-based generator: the same seed and input index give the
 * same values whatever the pool's size.
 */
void jobdata_generate(struct pool *p, float *dst, size_t n, uint64_t seed, unsigned input);

struct jobdata_summary {
	double checksum;            /* the sum of every value */
	double min, max, mean;
	float first[JOBDATA_FIRST];
	size_t nfirst;
};

/* Summarises out[0..len). */
void jobdata_summarise(struct pool *p, const float *out, size_t len, struct jobdata_summary *s);

/* The summary of dot's single value. */
void jobdata_summarise_value(double v, struct jobdata_summary *s);

struct jobdata_verification {
	bool verified;              /* every checked value within its tolerance */
	double max_abs_error;
	double worst_ratio;         /* the largest error / tolerance; <= 1 when verified */
	size_t checked;
	char method[96];            /* "double-precision naive loop over every entry" */
};

/* Checks the result in w (its output, or dot) against a double-precision reference of its inputs. */
void jobdata_verify(struct pool *p, const struct backend_work *w, struct jobdata_verification *v);

#endif
