/*
 * sampler: every sample interval (ACCELD_SAMPLE_INTERVAL, default 10 s) one utilization sample per device goes to
 * the store.
 *
 * The CPU's utilization comes from /proc/stat deltas (under cfg->proc_root), or, when the process runs in a cgroup
 * limited by a CPU quota or a smaller cpuset, from the cgroup's CPU time (v2 cpu.stat usage_usec, v1
 * cpuacct.usage; cgroup.h) over the CPUs it may use; its memory from the cgroup's usage (v2 memory.current, v1
 * memory.usage_in_bytes) in that case, else MemTotal - MemAvailable. GPUs and TPUs report the
 * telemetry of the registry's snapshot (detect refreshes it); a device without telemetry reports the executor's
 * busy fraction when a callback gives one, or only its presence (so allocated cost still accrues). Every sample
 * names its source. A tick reads two small files and copies the snapshot: well under 1% of a core at 10 s.
 */
#ifndef ACCELD_SAMPLER_H
#define ACCELD_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "detect/device.h"
#include "core/err.h"
#include "store/store.h"

struct sampler;

/* Where the devices come from: acquire returns an array valid until release(ctx, token). */
struct sampler_devices {
	const struct device *(*acquire)(void *ctx, size_t *n, void **token);
	void (*release)(void *ctx, void *token);
	void *ctx;
};

/* The executor's busy fraction (0..1) of device over the last window_ms, or NAN when it cannot tell. */
typedef double (*sampler_busy_fn)(void *ctx, const char *device_id, uint64_t window_ms);

struct sampler_opts {
	const struct config *cfg;       /* proc_root, sysfs_root, sample_interval_ms; borrowed, outlives the sampler */
	struct store *store;            /* borrowed; NULL drops the samples (tests read them with sampler_last) */
	struct sampler_devices devices;
	sampler_busy_fn busy;           /* may be NULL */
	void *busy_ctx;
};

/*
 * Creates the sampler and takes the first CPU reading (so the first tick has a delta). Options are copied;
 * opts->cfg and opts->devices.acquire and .release must be set. Free it with sampler_free.
 */
struct sampler *sampler_new(const struct sampler_opts *opts);

/* Starts the thread that ticks every cfg->sample_interval_ms. */
enum acceld_err sampler_start(struct sampler *s);

/* Takes one sample of every device now (the thread calls it; tests call it directly). now_ms is the wall clock. */
void sampler_tick(struct sampler *s, int64_t now_ms);

/* The samples of the last tick; *n receives the count. Valid until the next tick; for tests and diagnostics. */
const struct store_sample *sampler_last(const struct sampler *s, size_t *n);

/* Stops the thread (if started) and frees the sampler; NULL is allowed. */
void sampler_free(struct sampler *s);

/* Cumulative CPU time of the whole host from /proc/stat's "cpu" line, in USER_HZ ticks. */
struct sampler_cpu_times {
	uint64_t busy;  /* user + nice + system + irq + softirq + steal */
	uint64_t total; /* busy + idle + iowait */
};

/* Reads proc_root/stat. Returns 0, or -1 when the file is missing or malformed. */
int sampler_read_proc_stat(const char *proc_root, struct sampler_cpu_times *out);

/* Reads MemTotal - MemAvailable from proc_root/meminfo. Returns 0, or -1. */
int sampler_read_meminfo(const char *proc_root, uint64_t *used_bytes);

#endif
