/*
 * gcetype: GCE machine types, what their names say and what they cost in a region, the way Google bills them.
 *
 * A name: "n2-standard-8" is family n2, class standard, 8 vCPUs with the class's GiB per vCPU (the table in
 * gcetype.c is the one place those ratios live: n1-standard 3.75, n2-standard 4, highmem 8, n1-highcpu 0.9 ...);
 * "n2-custom-4-16384" and "custom-4-16384" (n1) name vCPUs and MiB, with "-ext" for extended memory;
 * "ct6e-standard-4t" is a TPU host of 4 chips; the few shapes that break their class's rule (m1, m2, m3,
 * n2-highmem-128, c3 metal) are listed whole.
 *
 * The price in a region, the first of these that applies:
 *   1. the shape's own row (gce_shapes.csv, machines.h), whole: shared-core e2-micro/small/medium (billed as 0.25,
 *      0.5 and 1 vCPU), shapes that bundle GPUs (a2, a3, g2: VM part + GPUs) or disks (z3, h3), TPU hosts (ct*);
 *   2. a TPU host without a row: chips x its generation's price per chip there (tpu_chips.csv);
 *   3. a predefined or custom shape of a family with rates: vCPUs x the family's vCPU rate + GiB x its GiB rate in
 *      the region (gce_rates.csv), on demand and Spot alike. Google bills custom shapes on "Custom" SKUs priced
 *      above the predefined ones (extended memory higher still), which the tables do not hold: a custom figure is
 *      a lower bound, and says so;
 *   4. plus, on a family GPUs attach to (n1), the GPUs on the PCI bus (cloud.h; T4, V100, P100, P4), each at its
 *      price per GPU in the region (gce_gpus.csv).
 * A part the tables lack in the region leaves the whole price unknown (NAN): no other region stands in.
 */
#ifndef ACCELD_GCETYPE_H
#define ACCELD_GCETYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "cost/pricerec.h"
#include "detect/cloud.h"

struct gcetype {
	char family[16];              /* "n2"; "n1" for "custom-4-16384" */
	double vcpus;                 /* NAN where the name does not say (shapes priced per shape: their row does) */
	double memory_gib;
	bool custom;                  /* a custom shape: priced at predefined rates, a lower bound */
	bool extended;                /* custom with extended memory ("-ext") */
	bool attach_gpus;             /* GPUs attached to it are billed apart (n1) */
	bool per_shape;               /* priced per shape only (gce_shapes.csv): bundled GPUs or disks, TPU hosts */
	unsigned tpu_chips;           /* a TPU host's chips; 0 none */
	const char *tpu_key;          /* their accelerator key, "tpu-v6e"; NULL none */
};

/* What the name says (see above) into out. -1 when it is no machine type the table knows (out is then cleared). */
int gcetype_parse(const char *name, struct gcetype *out);

enum gcetype_found {
	GCETYPE_PRICED,               /* out holds the price */
	GCETYPE_NOT_HERE,             /* the tables price the shape, but not (or not all of it) in this region */
	GCETYPE_UNKNOWN,              /* no region would do: a name they cannot price, a GPU of a kind they lack */
};

/*
 * The price of machine type name in region with gpus[0..ngpus) on its PCI bus (cloud.h), into out (set whole:
 * prices, shape, accelerators and their price each, sources, date, and source in words). Unless GCETYPE_PRICED,
 * the prices are NAN and out->source says what the tables lack.
 */
enum gcetype_found gcetype_price(const char *name, const char *region, const struct cloud_gpus *gpus, size_t ngpus,
				 struct pricerec *out);

#endif
