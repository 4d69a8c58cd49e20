/*
 * machines: the price tables of cloud machine shapes priced one row per shape and region (what a whole VM costs an
 * hour, on demand and Spot), embedded at build time from db/prices/ (tools/prices/build.sh rebuilds them from
 * public sources; tools/prices/README.md says which, and what they lack):
 *
 *   aws.csv         EC2 instance types, Linux on demand and Spot
 *   azure.csv       Azure sizes, Linux pay-as-you-go and Spot
 *   gce_shapes.csv  the GCE shapes not computed from rates (gcetype.h): shared-core e2, shapes bundling GPUs or
 *                   disks, TPU hosts
 *
 * The tables are parsed once, on first use, into storage that lives as long as the process; every pointer handed
 * out lives as long. Unknown figures are NAN: an empty cell is never read as 0. Each row names its source (an id
 * spelled out in db/prices/sources.csv, pricebook.h) and the date the figure was taken from it.
 */
#ifndef ACCELD_MACHINES_H
#define ACCELD_MACHINES_H

#include <stddef.h>

#include "cost/pricerec.h"
#include "detect/cloud.h"

struct machine {
	const char *cloud;            /* "gce", "aws", "azure" */
	const char *instance_type;    /* as the metadata service names it: "g2-standard-16", "m7i.large" */
	const char *region;           /* "us-central1", "us-east-1", "eastus" */
	double vcpus;                 /* NAN unknown */
	double memory_gib;
	unsigned accelerators;        /* accelerators the shape carries; 0 none */
	const char *accelerator_key;  /* their row in db/accelerators.csv ("nvidia-l4"); "" none */
	double usd_per_hour;          /* the whole VM, on demand; NAN unknown */
	double usd_per_hour_spot;     /* NAN unknown */
	const char *source;           /* an id of db/prices/sources.csv, which dates it */
};

/* Every row of the tables, cloud by cloud; *n receives the count. Never fails (a malformed row is left out). */
const struct machine *machines_table(size_t *n);

/*
 * The row for this cloud, instance type (compared without regard to case: Azure's answers vary) and region, or
 * NULL. There is no fallback to another region: a price from elsewhere would be a guess.
 */
const struct machine *machines_find(const char *cloud, const char *instance_type, const char *region);

/* Whether the tables have the instance type in any region (to tell "unknown shape" from "unknown region"). */
int machines_knows_type(const char *cloud, const char *instance_type);

/* Sets out whole (pricerec_init, then the row's prices, shape, accelerators, source and date, and words). */
void machines_price(const struct machine *m, struct pricerec *out);

/*
 * What the CPU and memory of a shape bundling accelerators (vcpus, memory_gib) cost without them in this cloud and
 * region: vcpus x a + memory_gib x b, with per-vCPU and per-GiB rates fitted to the sizes of the cloud's unbundled
 * compute, general-purpose and memory families of one generation in the region (EC2 c6i, m6i, r6i; Azure Fsv2,
 * Dsv5, Esv5: between them the nearest unbundled family of any GiB per vCPU), on demand and Spot (NAN where they
 * have no Spot price). Where the region lacks them, the rates of the cloud's reference region (us-east-1, eastus)
 * stand in. Returns the region whose rates were used, or NULL (both prices NAN: a cloud without such families).
 */
const char *machines_unbundled(const char *cloud, const char *region, double vcpus, double memory_gib,
			       double *usd_per_hour, double *usd_per_hour_spot);

#endif
