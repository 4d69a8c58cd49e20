/*
 * hostprice: what the whole host costs an hour, and how that price is split over the devices acceld lists.
 *
 * The host price of a cloud VM comes from the built-in price tables (db/prices/, refreshed by
 * tools/prices/build.sh) by cloud, instance type and region: an EC2 or Azure row (machines.h), or a GCE machine
 * type priced the way Google bills it (gcetype.h: a row of its own, TPU chips, or the family's vCPU and GiB rates,
 * plus the GPUs attached to an n1). Or from an override naming the instance type (cost.c), which wins over all.
 * Every figure names its sources (ids spelled out in db/prices/sources.csv) and their date. Where the tables lack
 * the shape or its region the price is unknown, and says so; when they price the shape in another region, the
 * nearest such region (regions.h) and its price are named as a hint, never taken as the price.
 *
 * The split:
 *   1. Each accelerator weighs the cloud's own price of one accelerator of the shape where the tables give it
 *      apart (GCE: the GPU's price in the region, a TPU chip's), else its on-demand price in the accelerator table
 *      (db/accelerators.csv). When a listed accelerator has neither there is no stated weight: no device gets a
 *      share (the host price still shows), and each keeps its own table price, if any.
 *   2. The shape's accelerator part P is what its accelerators cost at those prices: the count and kind the tables
 *      name (8 x H100 for a3-highgpu-8g, the GPUs attached to an n1), or, where they name none, the listed ones.
 *   3. The CPU and memory C, split by resources: where the cloud prices the parts (GCE's VM part plus each GPU or
 *      chip) C = H - the shape's accelerators at the cloud's price of one; on EC2 and Azure, the shape's vCPUs and
 *      GiB at the unbundled families' rates in the region (pricerec.h's cpu_usd_per_hour, machines.h). When
 *      0 < C < H the accelerators share the rest, f = (H - C) / P; else (nothing prices the CPU apart, or a TPU VM
 *      billed per chip only) f = H / P when P exceeds H, otherwise 1.
 *   4. Each listed accelerator gets f x its weight; the CPU (cpu:0) gets the rest, H - f x P, never below 0.
 *      Accelerators of the shape that acceld does not list (hidden by CUDA_VISIBLE_DEVICES, or not granted to
 *      the container) keep their part, f x (P - listed weights), off every device: it is reported as
 *      "unlisted". When acceld lists every accelerator of the shape, the shares add up to H exactly.
 *   5. Spot: split the same way on the Spot price with the Spot parts where C's Spot figure is known, else by the
 *      on-demand fractions (share / H); either way the Spot shares add up to the Spot host price, and a device on
 *      a Spot host is charged its Spot share.
 *
 * All prices are USD per hour; unknown is NAN, never 0.
 */
#ifndef ACCELD_HOSTPRICE_H
#define ACCELD_HOSTPRICE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cost/pricerec.h"
#include "detect/cloud.h"
#include "detect/detect.h"
#include "detect/device.h"

/* How a host price was split. */
struct hostprice_split {
	bool split;                   /* shares were given (rule 1 did not stop it) */
	double scale;                 /* f */
	double cpu_usd_per_hour;      /* the CPU's share; NAN when not split */
	double accelerators_usd_per_hour; /* the listed accelerators' shares together */
	double unlisted_usd_per_hour; /* the part of the shape's accelerators acceld does not list */
	double devices_usd_per_hour;  /* every listed device's share together */
	char rule[280];               /* the rule in words, or why there is no split */
};

/*
 * The built-in price of the host from the price tables (see above), into out (set whole). Without a known host
 * (not a cloud, metadata failed) or a price for its shape in its region, the prices stay NAN and source says why,
 * with the nearest region's price as a hint (hint_*) where the tables price the shape elsewhere.
 */
void hostprice_from_table(const struct cloud_host *host, struct pricerec *out);

/*
 * Splits h over devs[0..n) (see above) into shares[0..n): the share of each device, with unit "host share" and
 * a source naming the host. A device without a share (no split, or no host price) gets NAN prices and an empty
 * source. info (may be NULL) receives the totals and the rule.
 */
void hostprice_split(const struct cloud_host *host, const struct pricerec *h, const struct device *devs, size_t n,
		     struct device_price *shares, struct hostprice_split *info);

/*
 * The price a host of this kind is billed at: the Spot figure on a Spot host where one is known, else the
 * on-demand one. *billing receives "spot" or "on_demand".
 */
double hostprice_applied(int spot, double usd_per_hour, double usd_per_hour_spot, const char **billing);

/*
 * The host object of the API (a new object): cloud_host_json's members, "billing", "price" and "split" (the rule
 * and totals; null members where unknown). "price": usd_per_hour, usd_per_hour_spot, applied_usd_per_hour, source
 * (in words), and where known: as_of, sources (each id spelled out: description, url, version, as_of), vcpus and
 * memory_gib of the shape, accelerators and accelerator (their key) with accelerator_usd_per_hour(_spot),
 * lower_bound (true: a GCE custom shape), hint (region, usd_per_hour, usd_per_hour_spot: not this host's price).
 */
json_t *hostprice_json(const struct cloud_host *host, const struct pricerec *h, const struct hostprice_split *s);

/*
 * Applies the built-in split to devs in place: every device with a share gets it as its price (the others keep
 * their table price). Fills info (may be NULL) and h (may be NULL) with what was used.
 */
void hostprice_apply_builtin(const struct cloud_host *host, struct device *devs, size_t n, struct pricerec *h,
			     struct hostprice_split *info);

/*
 * The registry's host pricing (a detect_price_fn, detect.h): hostprice_apply_builtin, what the snapshot keeps of it
 * into price, then the "host" document.
 */
json_t *hostprice_for_registry(void *ctx, const struct cloud_host *host, struct device *devs, size_t n,
			       struct detect_host_price *price);

#endif
