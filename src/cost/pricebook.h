/*
 * pricebook: the cloud price tables that are not one row per machine shape, embedded at build time from
 * db/prices/ (tools/prices/build.sh rebuilds them from public sources; tools/prices/README.md says which):
 *
 *   gce_rates.csv   GCE per machine family and region: USD per vCPU-hour and per GiB-hour, on demand and Spot.
 *                   A predefined or custom shape costs vcpus x the vCPU rate + GiB x the GiB rate (gcetype.h).
 *   gce_gpus.csv    GCE GPUs per GPU-hour and region: those attached to n1 (T4, V100, P100, P4) and the GPU part of
 *                   the shapes that bundle them (L4, A100, H100, H200, B200).
 *   tpu_chips.csv   TPU VMs per chip-hour by generation and region.
 *   sources.csv     each source the rows name, spelled out (what, where, version, date), and the short key the
 *                   rows name it by (a row says "cy", the answers "cyclenerd-gce@fd66b26f").
 *
 * The per-shape tables (gce_shapes.csv, aws.csv, azure.csv) are machines.h's. Each table is parsed once, on first
 * use, into storage that lives as long as the process. Unknown figures are NAN: an empty cell is never read as 0.
 * Every row names its source and the date the figure was taken from it.
 */
#ifndef ACCELD_PRICEBOOK_H
#define ACCELD_PRICEBOOK_H

#include <stddef.h>

/* A GCE machine family's rates in one region (gce_rates.csv). */
struct pricebook_rate {
	const char *family;           /* "n2" */
	const char *region;           /* "us-central1" */
	double usd_per_vcpu_hour;     /* NAN unknown */
	double usd_per_gib_hour;      /* 0 where the family's memory is folded into its vCPU rate ("vcpu-only") */
	double usd_per_vcpu_hour_spot;
	double usd_per_gib_hour_spot;
	const char *fit;              /* "vcpu+gib" or "vcpu-only" */
	const char *source;           /* an id of sources.csv, which dates it */
};

/* One accelerator's price in one region: a GCE GPU (gce_gpus.csv) or a TPU chip (tpu_chips.csv). */
struct pricebook_unit {
	const char *key;              /* its row in db/accelerators.csv: "nvidia-t4", "tpu-v6e" */
	const char *region;
	double usd_per_hour;          /* one GPU or chip, on demand; NAN unknown */
	double usd_per_hour_spot;     /* NAN unknown */
	const char *source;           /* an id of sources.csv, which dates it */
};

/* A price source (sources.csv). */
struct pricebook_source {
	const char *id;               /* "cocalc-gcp@1.17.0" */
	const char *description;
	const char *url;              /* "" where the figures are computed, not read */
	const char *version;
	const char *as_of;
	const char *key;              /* what the tables' rows name it by: "cy" */
};

/* Every row of each table; *n receives the count. Never fails (a malformed row is left out). */
const struct pricebook_rate *pricebook_gce_rates(size_t *n);
const struct pricebook_unit *pricebook_gce_gpus(size_t *n);
const struct pricebook_unit *pricebook_tpu_chips(size_t *n);
const struct pricebook_source *pricebook_sources(size_t *n);

/* The rates of this family in this region, or NULL. No other region stands in: a price from elsewhere is a guess. */
const struct pricebook_rate *pricebook_gce_rate(const char *family, const char *region);

/* The price of one GCE GPU (accelerator key) in this region, or NULL. */
const struct pricebook_unit *pricebook_gce_gpu(const char *key, const char *region);

/* The price of one TPU chip of this generation (accelerator key, "tpu-v5e") in this region, or NULL. */
const struct pricebook_unit *pricebook_tpu_chip(const char *key, const char *region);

/* The source with this id, or NULL. */
const struct pricebook_source *pricebook_source(const char *id);

/* The id of the source the tables' rows name by key ("cy" -> "cyclenerd-gce@fd66b26f"); key itself when no source
 * has that key. */
const char *pricebook_source_id(const char *key);

/* The date of the figures of the source with this id ("2026-11-24"), "" for an id sources.csv lacks: a row's date
 * is its source's, said once there. */
const char *pricebook_as_of(const char *id);

/* A price older than this many days is flagged where it is used (GET /cost). */
#define PRICEBOOK_STALE_DAYS 180

#endif
