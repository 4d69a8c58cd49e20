/*
 * jobdoc: a job as the API shows it (POST /run, GET /run, GET /run/{id}), whether the executor still holds it or
 * it is read back from the history. Both fill a struct jobdoc and render it here, so the two agree on every member,
 * on the state names, and on what is null or left out: a figure that is not known (NAN, 0 time, NULL text) is left
 * out, never written as 0. A job shows what it took: params holds the scalars its kernel takes (kernel_params) and
 * the seed only when its inputs were generated. Its throughput is a fraction of the peak figures it was measured
 * against, which the history keeps with the job: a job read back later shows the fraction it had.
 */
#ifndef ACCELD_JOBDOC_H
#define ACCELD_JOBDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "exec/jobdata.h"
#include "exec/kernel.h"

struct jobdoc {
	const char *id;
	const char *state;              /* exec_state_name */
	enum kernel_id kernel;
	struct kernel_shape shape;
	const char *device;
	const char *backend;            /* NULL or "" unknown */
	const char *source;             /* NULL: the executor's own job; "history": read back from the store */
	const char *trigger;            /* who made it: "api", "cli", "check"; NULL or "" unknown */
	const char *check_id;           /* the health check that made it; NULL or "" none */
	/* the request, where known (jobs in memory) */
	bool has_request;
	float alpha, beta, scale;
	uint64_t seed;
	bool inline_inputs;
	bool full;
	uint64_t timeout_ms;
	enum kernel_precision precision_asked;
	int precision;                  /* enum kernel_precision that ran (a matrix product); -1 unknown */
	int cached;                     /* the backend's program came from its cache (1) or was built (0); -1 n/a */
	int kernel_clock;               /* kernel_ms from the device's clock (1) or the host's (0); -1 unknown */
	/* placement, where known */
	const char *placement;          /* NULL unknown */
	bool fell_back;
	const char *fallback_from;      /* NULL or "" none */
	const char *fallback_reason;
	/* times: wall clock ms (0 never) and durations ms (NAN unknown) */
	int64_t created_ms, started_ms, finished_ms;
	double queued_ms, prepare_ms, compile_ms, transfer_ms, kernel_ms, total_ms;
	double generate_ms, verify_ms;  /* making the inputs, verifying the result */
	double transfer_bytes;          /* bytes the transfers moved, both ways (NAN unknown) */
	double upload_ms, upload_bytes; /* of them host to device (NAN unknown) */
	double download_ms, download_bytes; /* and device to host */
	const char *transfer_memory;    /* the host memory they used: "pinned", "pageable"; NULL unknown */
	/* the work of the run, for throughput; the device's peak figures it was measured against (NAN unknown) */
	double flops, bytes;
	double peak_gflops, peak_gbps;
	/* results of a successful run (NULL: none kept) */
	const struct jobdata_summary *summary;
	double value;                   /* a scalar output's value */
	const float *output;            /* the whole output when kept */
	size_t output_len;
	bool listed;                    /* a summary in a list (GET /run): no output, whatever return asked */
	const struct kernel_verification *verification;
	double cost_usd;                /* NAN unknown */
	const char *error_reason;       /* NULL when there is no error */
	const char *error_detail;
};

/* Starts a document with every figure unknown. */
void jobdoc_init(struct jobdoc *d);

/* The sizes object of a kernel: {n}, {m, n} or {m, n, k} as the kernel takes them (a new object). */
json_t *jobdoc_sizes_json(enum kernel_id k, const struct kernel_shape *s);

/* The document as a new JSON object. */
json_t *jobdoc_json(const struct jobdoc *d);

#endif
