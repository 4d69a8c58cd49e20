/*
 * detect: the device registry. It runs every probe, merges the views of one device into one entry, names devices
 * (cpu:0, gpu:N by PCI bus id, tpu:N by PCI address), fills peak figures and prices from the spec table, and keeps
 * an immutable, reference-counted snapshot that readers take without waiting for a refresh.
 */
#ifndef ACCELD_DETECT_H
#define ACCELD_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detect/cloud.h"
#include "core/config.h"
#include "detect/device.h"
#include "core/err.h"
#include "detect/probe.h"

struct detect;

/* What one probe said in the refresh that built a snapshot. */
struct detect_probe_status {
	const char *name;
	struct probe_result result;
};

/* An immutable view of the devices. Take it with detect_acquire, give it back with detect_release. */
/* What a snapshot carries of the host's price (cost's hostprice.h works it out; detection only keeps it). */
struct detect_host_price {
	double usd_per_hour;          /* the whole host on demand; NAN unknown */
	double usd_per_hour_spot;     /* NAN unknown */
	char source[320];             /* where the price came from, or why it is unknown, in words */
	char split_rule[280];         /* how it was split over the devices, or why not */
};

struct detect_snapshot {
	const struct device *devices; /* ordered: cpu:0, gpu:0.., tpu:0.. */
	size_t n;
	uint64_t generation;          /* grows with every refresh */
	int64_t taken_at_ms;          /* wall clock */
	const char *json;             /* the GET /devices body, pre-serialised */
	size_t json_len;
	char etag[40];                /* quoted, e.g. "\"3-9f2c...\"" */
	const struct detect_probe_status *probes;
	size_t nprobes;
	double refresh_ms;            /* how long the refresh that built this snapshot took */
	bool full;                    /* built by a full probe (true) or a telemetry refresh (false) */
	const struct cloud_host *host; /* what the host is (detect_set_host); NULL until it is known */
	struct detect_host_price host_price; /* the host's built-in price and its split, when host is not NULL */
};

/*
 * Creates the registry with the given probes (NULL and 0 for the built-in set) and runs a first full probe, so a
 * snapshot exists when it returns (a probe that fails is reported in the snapshot, not here). The config is
 * borrowed and must outlive the registry. Free it with detect_free.
 */
struct detect *detect_new(const struct config *cfg, const struct probe_ops *const *probes, size_t nprobes);

/*
 * Who says whether a device runs jobs (device.executable): fn(ctx, dev) for every device of every snapshot from
 * now on: the executor once it runs (app.c asks it), or before, whether a backend serves the device (backend.h's
 * backend_serves_any); without one, no device runs jobs. Publishes a snapshot with the new answers before it
 * returns. fn must not call into detect.
 */
typedef bool (*detect_executable_fn)(void *ctx, const struct device *dev);
void detect_set_executable(struct detect *det, detect_executable_fn fn, void *ctx);

/*
 * Prices the host for a snapshot: fills price (what detection carries of it), gives each device of devs its share (device.price), and
 * returns the "host" document of GET /devices (new reference). How is cost's (hostprice.h); detection only calls it.
 */
typedef json_t *(*detect_price_fn)(void *ctx, const struct cloud_host *host, struct device *devs, size_t n,
				   struct detect_host_price *price);

/*
 * Tells the registry what the host is (cloud.h; copied) and how to price it (price may be NULL: unpriced): every
 * snapshot from now on carries it ("host" in GET /devices, a "cloud" entry among the probes, whose note says why a
 * metadata service failed) and gives each device its share of the host's price where there is one. Publishes such
 * a snapshot before it returns.
 */
void detect_set_host(struct detect *det, const struct cloud_host *host, detect_price_fn price, void *ctx);

/*
 * Something that adds to each device of every snapshot from now on: fn(ctx, dev) on the snapshot's own copy, after
 * executable is set (the health checks' last results and measured figures, devcheck.h); NULL removes it. Publishes a
 * snapshot with it before it returns. fn must not call into detect.
 */
typedef void (*detect_decorate_fn)(void *ctx, struct device *dev);
void detect_set_decorate(struct detect *det, detect_decorate_fn fn, void *ctx);

/*
 * Something that adds to each device's document (GET /devices) in every snapshot from now on: fn(ctx, dev, doc),
 * after decorate; the executor's backends say there which of them run jobs on it and what each knows of it
 * (backend.h). NULL removes it. Publishes a snapshot with it before it returns. fn must not call into detect.
 */
typedef void (*detect_describe_fn)(void *ctx, const struct device *dev, json_t *doc);
void detect_set_describe(struct detect *det, detect_describe_fn fn, void *ctx);

/* Stops the refresher thread if running and frees the registry; snapshots still held stay valid until released. */
void detect_free(struct detect *det);

/* Re-probes now: topology (every probe's probe()) when full is true, otherwise telemetry only (refresh()). */
void detect_refresh(struct detect *det, bool full);

/* Starts a thread that refreshes telemetry every cfg->telemetry_interval_ms and topology every
 * cfg->topology_interval_ms. */
enum acceld_err detect_start(struct detect *det);

/* The current snapshot (never NULL once detect_new succeeded); release it with detect_release. */
const struct detect_snapshot *detect_acquire(struct detect *det);
void detect_release(const struct detect_snapshot *snap);

/* The device with this id in the snapshot, or NULL. */
const struct device *detect_find(const struct detect_snapshot *snap, const char *id);

/* The pre-serialised /devices/{id} body of a device in the snapshot, or NULL. */
const char *detect_device_json(const struct detect_snapshot *snap, const char *id, size_t *len);

/* The device's document as GET /devices/{id} shows it (a new object): the snapshot's, with what the executor's
 * backends add; device_to_json's when snap is NULL or does not hold it. */
json_t *detect_device_doc(const struct detect_snapshot *snap, const struct device *dev);

/* The quoted ETag of one device's body in the snapshot (it changes only when that body changes), or NULL. */
const char *detect_device_etag(const struct detect_snapshot *snap, const char *id);

/*
 * Whether two devices under one id can be the same hardware: their PCI addresses, and their UUIDs, do not differ
 * where both have one.
 */
bool detect_same_hardware(const struct device *a, const struct device *b);


#endif
