/*
 * regions: where the clouds' regions are (db/prices/regions.csv, embedded at build time, kept by hand), so that a
 * host whose region the price tables lack can be told the nearest region they price its shape in: a hint, never
 * its price. A place is its city to a hundredth of a degree: enough to rank neighbours, not to route anything.
 *
 * The table is parsed once, on first use, into storage that lives as long as the process.
 */
#ifndef ACCELD_REGIONS_H
#define ACCELD_REGIONS_H

#include <stddef.h>

struct region {
	const char *cloud;            /* "gce", "aws", "azure" */
	const char *name;             /* "us-central1", "us-east-1", "eastus" */
	double latitude;              /* degrees; NAN unknown */
	double longitude;
	const char *place;            /* "Council Bluffs (Iowa)" */
};

/* Every row of the table; *n receives the count. Never fails (a malformed row is left out). */
const struct region *regions_table(size_t *n);

/* The row of this cloud's region, or NULL. */
const struct region *regions_find(const char *cloud, const char *name);

/*
 * How far region b is from region a of the same cloud, to rank candidates (lower is nearer): great-circle
 * kilometres where the table places both; otherwise 100,000 less 1,000 per leading character the names share (a
 * region the table does not know yet, "europe-west15", is most likely near its namesakes). 0 for the same name.
 */
double regions_distance(const char *cloud, const char *a, const char *b);

/* Whether regions_distance(cloud, a, b) is a distance in kilometres (the table places both). */
int regions_placed(const char *cloud, const char *a, const char *b);

#endif
