/*
 * specs: the accelerator table (peak figures, memory, default prices), embedded at build time from
 * db/accelerators.csv, and the rules that match a detected device to one of its rows.
 *
 * The table is parsed once, on first use, into static storage; every pointer handed out lives as long as the
 * process. Unknown numbers are NAN (figures, prices) or 0 (PCI ids, counts): the table leaves cells empty rather
 * than guess.
 */
#ifndef ACCELD_SPECS_H
#define ACCELD_SPECS_H

#include <stddef.h>

#include "detect/device.h"

struct spec {
	const char *key;             /* "tpu-v6e", "nvidia-h100-sxm" */
	enum device_type type;       /* from the kind column */
	const char *vendor;          /* "Google", "NVIDIA", "AMD" */
	const char *match;           /* alternatives separated by '|': "v6e|trillium" */
	unsigned pci_vendor;         /* 0 unknown */
	unsigned pci_device;
	unsigned pci_subsystem;
	double memory_gib;           /* per chip or GPU */
	double memory_gbytes_per_s;
	double fp32_tflops;
	double bf16_tflops;
	double int8_tops;
	unsigned cores_per_chip;
	unsigned chips_per_host;
	double tdp_watts;
	double usd_per_hour;
	double usd_per_hour_spot;
	const char *price_unit;      /* "chip", "gpu" */
	const char *price_note;
	const char *sources;
	char accelerator_type[32];   /* normalised: "H100", "MI300X", "TPU-V6E" */
};

/* Every row of the table; *n receives the count. Never fails (a malformed row is left out). */
const struct spec *specs_table(size_t *n);

/* The row with this key, or NULL. */
const struct spec *specs_find_key(const char *key);

/*
 * The row of the given type whose match alternatives appear in name as a whole word (case-insensitive; a word
 * boundary is any character that is not a letter or digit), preferring the longest alternative; vendor, when not
 * NULL or "", must equal the row's vendor case-insensitively. NULL when no row matches.
 */
const struct spec *specs_match_name(enum device_type type, const char *vendor, const char *name);

/* The row with this PCI vendor and device id (and subsystem id where the row names one), or NULL. */
const struct spec *specs_find_pci(unsigned vendor, unsigned device, unsigned subsystem);

/* The TPU row whose match alternatives include generation exactly ("v6e", "v5litepod", "tpu7x"), or NULL. */
const struct spec *specs_find_tpu_generation(const char *generation);

/* The spec row for a device: its spec_key if set, else by PCI ids, TPU generation, then model name. */
const struct spec *specs_for_device(const struct device *d);

/*
 * Fills what the row knows and the device does not: spec_key, accelerator_type, peak figures (with a source
 * naming the row), memory total for TPUs, cores per chip, and the default price. Detected values are kept.
 */
void specs_apply(const struct spec *s, struct device *d);

#endif
