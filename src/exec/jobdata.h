/*
 * jobdata: the data around a job's kernel run: inputs generated from a seed and the summary of an output (the
 * verification of a result is the kernel's, kernel_verify). Work is spread over a fork-join pool (pool.h); results do
 * not depend on its thread count.
 */
#ifndef ACCELD_JOBDATA_H
#define ACCELD_JOBDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/pool.h"

#define JOBDATA_FIRST 8 /* leading output values a summary keeps */

/* A 64-byte aligned array of n floats (at least one), or NULL when it cannot be allocated. Free with free(). */
float *jobdata_alloc(size_t n);

/*
 * Fills dst[0..n) with input `input` of a run with this seed: the kernel table's generator (kernel_gen_value), the
 * same values a backend makes on its device, whatever the pool's size.
 */
void jobdata_generate(struct pool *p, float *dst, size_t n, uint64_t seed, unsigned input);

struct jobdata_summary {
	double checksum;            /* the sum of every value summarised */
	size_t count;               /* how many: the whole output, or its sample when the output stayed on the device */
	bool sampled;               /* the values summarised are the sample (struct kernel_sample) */
	double min, max, mean;
	float first[JOBDATA_FIRST];
	size_t nfirst;
};

/* Summarises out[0..len). */
void jobdata_summarise(struct pool *p, const float *out, size_t len, struct jobdata_summary *s);

/* The summary of a scalar output's value. */
void jobdata_summarise_value(double v, struct jobdata_summary *s);

#endif
