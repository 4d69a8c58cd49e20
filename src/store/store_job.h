/*
 * store_job: a job as the history keeps it, the one row type that the store's queue, its journal and its reads
 * share. A type only, so the journal (below the store) and the store's interface (above it) both include it.
 */
#ifndef ACCELD_STORE_JOB_H
#define ACCELD_STORE_JOB_H

#include <stdint.h>

#include "detect/device.h"

/* A job as the jobs table keeps it. Unknown numbers are NAN (doubles) or 0 (times, sizes). */
struct store_job {
	char id[64];
	char device[DEVICE_ID_MAX];
	char kernel[16];
	char backend[16];
	char state[16];             /* exec_state_name: queued | running | succeeded | failed | timed_out | cancelled |
				       interrupted */
	int64_t submitted_ms;
	int64_t started_ms;
	int64_t finished_ms;
	uint64_t n, m, k;
	double flops;               /* floating-point operations performed */
	double bytes;               /* bytes moved */
	double queued_ms;           /* NAN unknown, as the durations below */
	double transfer_ms;
	double setup_ms;            /* the program's build or cache load */
	double generate_ms;         /* making the generated inputs */
	double verify_ms;
	double transfer_bytes;      /* what the transfers moved, both ways */
	double upload_ms;           /* of them host to device */
	double upload_bytes;
	double download_ms;         /* and device to host */
	double download_bytes;
	char transfer_memory[12];   /* "pinned", "pageable"; "" unknown */
	double kernel_ms;
	double total_ms;
	double cost_usd;
	char reason[48];            /* UPPER_SNAKE reason of an error; "" none */
	char error[160];
	char trigger[16];           /* who made it: "api", "cli", "check"; "" unknown (rows of earlier versions) */
	char check_id[24];          /* the health check that made it; "" none */
	double peak_gflops;         /* the device's peak figures its throughput was a fraction of; NAN unknown */
	double peak_gbytes_per_s;
};

#endif
