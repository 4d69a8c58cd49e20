/*
 * cost: prices, accrued cost and estimates, in USD.
 *
 * A device's effective price is the most specific override that names it: by device id, then by accelerator type
 * (H100, TPU-V6E), then by device type (cpu|gpu|tpu); at the same specificity an override set with PUT
 * /cost/prices wins over the prices file (ACCELD_PRICES_FILE). Without an override, on a cloud VM whose host price
 * is known, the device's share of that price applies (hostprice.h: the machine table, or an override naming the
 * instance_type); else its price in the accelerator table (device.price). A CPU that nothing prices has no price
 * (null, with a source saying why), never 0. On a Spot host the Spot figure is applied where one is known, else
 * the on-demand one ("billing" says which). Every price names its source. Accrued cost applies the current price
 * to the whole window.
 *
 * Prices document (the prices file and the PUT /cost/prices body):
 *   {"currency": "USD",                                   optional; only "USD"
 *    "prices": [                                          at most 1024 entries
 *      {"device": "gpu:0", "usd_per_hour": 2.5},
 *      {"accelerator_type": "H100", "usd_per_hour": 9.8, "usd_per_hour_spot": 3.9, "unit": "gpu", "note": "..."},
 *      {"type": "cpu", "usd_per_hour": 0.04},
 *      {"instance_type": "n2d-standard-16", "usd_per_hour": 0.62, "usd_per_hour_spot": 0.13}]}
 * Each entry names exactly one of device, accelerator_type, type or instance_type (the whole host, split as
 * hostprice.h says), and a usd_per_hour from 0 to 1,000,000;
 * usd_per_hour_spot (or null), unit (at most 15 bytes) and note (at most 159 bytes) are optional. Unknown fields,
 * wrong types and duplicate selectors are refused, naming the JSON path.
 */
#ifndef ACCELD_COST_H
#define ACCELD_COST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "detect/cloud.h"
#include "detect/device.h"
#include "core/err.h"
#include "exec/kernel.h"
#include "store/store.h"

#define COST_MAX_PRICES 1024

struct cost;

/*
 * Creates the price book: reads the prices file when path is not NULL (a bad file is an error, described in err),
 * and the overrides stored in the database (again later if the database is not readable yet). store is borrowed
 * and may be NULL.
 */
enum acceld_err cost_new(struct store *store, const char *prices_file, struct cost **out, char *err, size_t errsz);

/* Frees the price book; NULL is allowed. */
/* Whether a prices file (NULL: none) can be read and parsed, as cost_new would; false with the file and its fault in
 * err. The service and the commands refuse to start on such a file rather than run without its prices. */
bool cost_file_check(const char *prices_file, char *err, size_t errsz);

void cost_free(struct cost *c);

/*
 * Validates a prices document (borrowed, not changed). On success *out is a malloc'ed array (free() it) of *n
 * entries. On failure returns ACCELD_EINVAL with why filled (release it): its reason REASON_UNKNOWN_FIELD,
 * REASON_MISSING_FIELD, REASON_CONFLICTING_FIELDS (two selectors), REASON_INVALID_TYPE or REASON_INVALID_VALUE, its
 * detail what is wrong, repeating a bad value ("-1 is not from 0 to 1000000"), and as members the JSON path
 * (`path`: "$.prices[2].usd_per_hour") and, when the field takes a set of names, `accepted` (["cpu", "gpu", "tpu"]).
 */
enum acceld_err cost_parse_prices(json_t *doc, struct store_price **out, size_t *n, struct refusal *why);

/* Replaces the overrides set through the API with v[0..n) (copied) and queues them for the database. */
void cost_set_overrides(struct cost *c, const struct store_price *v, size_t n);

/*
 * cost_set_overrides with the store's completion (store_prices_replace_notify): done(ctx, recorded) is called once
 * the overrides are committed, or known not durable now; possibly before this returns, without the book's lock.
 */
void cost_set_overrides_notify(struct cost *c, const struct store_price *v, size_t n, store_done_fn done, void *ctx);

struct cost_price {
	double usd_per_hour;        /* on demand; NAN when no price is known */
	double usd_per_hour_spot;   /* NAN unknown */
	double applied;             /* what the host is billed: Spot on a Spot host where known, else on demand */
	char billing[12];           /* "spot" or "on_demand" */
	char unit[16];
	char source[320];           /* e.g. "api override (accelerator_type H100)", "built-in table: GCP ..." */
	char as_of[16];             /* the date of a built-in figure ("2026-06-18"); "" an override or unknown */
};

/*
 * The effective price of a device given its id, type ("cpu"), accelerator type ("" unknown) and built-in price
 * (def may be NULL).
 */
void cost_price_lookup(struct cost *c, const char *id, const char *type, const char *accelerator_type,
		       const struct device_price *def, struct cost_price *out);

/* Tells the price book what the host is (cloud.h; copied): its price and Spot status price the devices. */
void cost_set_host(struct cost *c, const struct cloud_host *host);

/* The host's applied price for the metrics. */
struct cost_host_applied {
	struct cloud_host host;
	double usd_per_hour;        /* applied (see struct cost_price); NAN unknown */
	char billing[12];
};

/*
 * The applied price of each device into usd[0..n) (NAN unknown) and the host's into *host, from what is in memory:
 * the database is not read, so a scrape never waits on it.
 */
void cost_applied_prices(struct cost *c, const struct device *devs, size_t n, double *usd,
			 struct cost_host_applied *host);

/* The effective price of every device, as the GET /cost/prices answer (a new object). */
json_t *cost_prices_json(struct cost *c, const struct device *devs, size_t n);

/* GET /cost: accrued cost over [start_ms, end_ms) grouped in buckets of bucket_ms (UTC hours or days). */
struct cost_query {
	const char *device;         /* NULL: every device present now or seen in the window */
	int64_t start_ms, end_ms;
	int64_t bucket_ms;
};

/*
 * Builds the GET /cost answer into *out (a new object). devs are the devices present now. ACCELD_ENOTFOUND when
 * q->device is neither present nor in history, ACCELD_EUNAVAILABLE when the database cannot be read.
 */
enum acceld_err cost_report(struct cost *c, const struct device *devs, size_t n, const struct cost_query *q,
			    json_t **out);

/* GET /cost/estimate: either seconds > 0, or a kernel with its sizes (the work counted by kernel.h, as jobs count
 * theirs). */
struct cost_estimate_query {
	const char *device;         /* NULL: every device */
	double seconds;             /* > 0 for the seconds form */
	int kernel;                 /* enum kernel_id; -1 for the seconds form */
	struct kernel_shape shape;
};

/*
 * Expected seconds and dollars on each device, cheapest first (unknown prices or times last): measured throughput
 * of earlier jobs on the device when there are any, else its peak figures. ACCELD_ENOTFOUND for an unknown device.
 */
enum acceld_err cost_estimate(struct cost *c, const struct device *devs, size_t n,
			      const struct cost_estimate_query *q, json_t **out);

#endif
