/*
 * machines: the price table of cloud machine shapes (what a whole VM costs an hour, on demand and Spot, per
 * region), embedded at build time from db/machines.csv, and the lookup by cloud, instance type and region.
 *
 * The table is parsed once, on first use, into static storage; every pointer handed out lives as long as the
 * process. Unknown figures are NAN: an empty cell is never read as 0. Each row names its source and the date
 * the figure was taken from it.
 */
#ifndef ACCELD_MACHINES_H
#define ACCELD_MACHINES_H

#include <stddef.h>

struct machine {
	const char *cloud;            /* "gce", "aws", "azure" */
	const char *instance_type;    /* as the metadata service names it: "n2d-standard-16", "m7i.large" */
	const char *region;           /* "us-central1", "us-east-1", "eastus" */
	double vcpus;                 /* NAN unknown */
	double memory_gib;
	unsigned accelerators;        /* accelerators the shape carries; 0 none */
	const char *accelerator_key;  /* their row in db/accelerators.csv ("nvidia-l4"); "" none */
	double usd_per_hour;          /* the whole VM, on demand; NAN unknown */
	double usd_per_hour_spot;     /* NAN unknown */
	const char *source;
	const char *as_of;            /* "2026-11-24" */
};

/* Every row of the table; *n receives the count. Never fails (a malformed row is left out). */
const struct machine *machines_table(size_t *n);

/*
 * The row for this cloud, instance type (compared without regard to case: Azure's answers vary) and region, or
 * NULL. There is no fallback to another region: a price from elsewhere would be a guess.
 */
const struct machine *machines_find(const char *cloud, const char *instance_type, const char *region);

/* Whether the table has the instance type in any region (to tell "unknown shape" from "unknown region"). */
int machines_knows_type(const char *cloud, const char *instance_type);

#endif
