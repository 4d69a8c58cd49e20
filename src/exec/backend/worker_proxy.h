/*
 * worker_proxy: the backends that run in a worker process, as the daemon sees them. A proxy is an ops struct
 * (backend.h) named as the real backend it wraps; its open, run, close and inspect go to a worker process of
 * acceld's own binary (`acceld worker BACKEND`, worker_main.c), its other ops (serves, admit, describe, reference,
 * ...) run in the daemon on what the worker taught it (the real backend's learn). One worker per backend kind serves
 * every device of that kind, one channel (a socketpair) per open device, so devices run concurrently.
 *
 * What runs where: PJRT (TPUs, NVIDIA GPUs) always in a worker (the daemon never maps a plugin); OpenCL on a device
 * that is not a CPU in a worker (a GPU vendor's driver keeps a context and memory), on PoCL's CPU device in the
 * daemon (a tiny job pays no hop), unless ACCELD_OPENCL_WORKER=all (for tests: CI has no GPU) sends it to a worker
 * too; one backend "opencl" as users see it, whose open picks the process per device. The native backend runs in
 * the daemon. A further backend is one row of the kinds table in worker_proxy.c and its proxy ops.
 *
 * A worker exits after --pjrt-idle (ACCELD_PJRT_IDLE) without runs (0: after every run), is ended (SIGTERM, SIGKILL
 * after a grace) when a run passes its job's deadline, and fails its runs in flight with ACCELD_ECRASHED
 * (BACKEND_CRASHED) when it dies, naming the signal or exit status and its last lines on stderr (which the daemon
 * logs). Crashes in a row back off the next start (exponential, capped).
 *
 * The worker is /proc/self/exe, or ACCELD_WORKER_EXE where set: for unit tests, whose own binary is not acceld.
 */
#ifndef ACCELD_WORKER_PROXY_H
#define ACCELD_WORKER_PROXY_H

#include <stdint.h>

#include "exec/backend.h"

extern const struct backend_ops backend_pjrt_proxy;   /* "pjrt", in a worker */
extern const struct backend_ops backend_opencl_proxy; /* "opencl": in a worker on devices that are not CPUs */

/* Why a worker ended, for acceld_worker_exits_total{cause}. */
enum worker_cause {
	WORKER_CAUSE_IDLE,     /* --pjrt-idle passed without runs */
	WORKER_CAUSE_DEADLINE, /* a run passed its job's deadline */
	WORKER_CAUSE_CRASH,    /* it died of a signal or exited on its own */
	WORKER_CAUSE_START,    /* it could not start, or its handshake was refused */
	WORKER_CAUSE_COUNT
};

/* "idle", "deadline", "crash", "start". */
const char *worker_cause_name(enum worker_cause c);

/* What a backend's workers did since acceld started. */
struct worker_counts {
	const char *backend;                  /* "pjrt" */
	uint64_t starts;
	uint64_t exits[WORKER_CAUSE_COUNT];
};

/* The counts of each proxied backend kind, up to max; returns how many. */
size_t worker_proxy_counts(struct worker_counts *out, size_t max);

/* Whether PoCL's CPU device runs OpenCL in a worker too (ACCELD_OPENCL_WORKER=all: for tests). */
bool worker_proxy_opencl_all(void);

/* The real backend a worker runs for name ("pjrt", "opencl"); NULL when none. */
const struct backend_ops *worker_proxy_real(const char *name);

#endif
