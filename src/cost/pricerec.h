/*
 * pricerec: the record of a host's price as the price tables give it (what the whole VM costs, its shape and
 * accelerators, the sources and their date, words), filled by the lookups (machines.h, gcetype.h) and read by the
 * host's price and split (hostprice.h) and the answers.
 *
 * All prices are USD per hour; unknown is NAN, never 0.
 */
#ifndef ACCELD_PRICEREC_H
#define ACCELD_PRICEREC_H

#include <stdbool.h>

#include "detect/cloud.h"

#define PRICEREC_SOURCES 2 /* price sources one host price may combine: a VM part and its GPUs */

struct pricerec {
	double usd_per_hour;          /* the whole host on demand; NAN unknown */
	double usd_per_hour_spot;     /* NAN unknown */
	unsigned accelerators;        /* accelerators of the shape, or attached to it (GCE n1); 0 none or unknown */
	char accelerator_key[32];     /* their accelerator table row, "" unknown */
	double accelerator_usd_per_hour;      /* the cloud's own price of one of them where the price tables give it
					       * apart (GCE GPUs, TPU chips); NAN elsewhere */
	double accelerator_usd_per_hour_spot; /* NAN unknown */
	double cpu_usd_per_hour;      /* a shape bundling accelerators that the cloud does not price apart (EC2, Azure):
				       * its CPU and memory at the nearest unbundled family's rate (machines.h); NAN
				       * elsewhere */
	double cpu_usd_per_hour_spot; /* NAN unknown */
	char cpu_like[64];            /* the unbundled families and region those rates are from, "" none */
	double vcpus;                 /* the shape's vCPUs and memory (from its name or row); NAN unknown */
	double memory_gib;
	bool lower_bound;             /* a GCE custom shape priced at predefined rates: Google bills it higher */
	char sources[PRICEREC_SOURCES][48]; /* ids of the price sources used (db/prices/sources.csv); "" none */
	char as_of[16];               /* the oldest date of the figures used, "2026-02-24"; "" none */
	char hint_region[CLOUD_NAME_MAX];   /* price unknown here: the nearest region the tables price the shape in */
	double hint_usd_per_hour;     /* the shape's prices there: a hint, never this host's price; NAN none */
	double hint_usd_per_hour_spot;
	char source[320];             /* "built-in table: ...", "built-in rates: ...", "api override (...)" */
};

/* Sets r to "nothing known": prices, figures and hint NAN, no accelerators, no sources, empty words. */
void pricerec_init(struct pricerec *r);

/* Adds a source id to r->sources (once each; past PRICEREC_SOURCES left out), keeping the oldest of their dates
 * (sources.csv) in r->as_of. */
void pricerec_add_source(struct pricerec *r, const char *id);

#endif
