/* specs: the embedded accelerator table and the rules matching detected devices to its rows. */
#include "detect/specs.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accelerators_csv.h"
#include "core/csv.h"

#define SPECS_MAX 128
#define SPECS_COLS 20

enum col {
	C_KEY, C_KIND, C_VENDOR, C_MATCH, C_PCI_VENDOR, C_PCI_DEVICE, C_PCI_SUBSYSTEM, C_MEMORY_GIB, C_BANDWIDTH,
	C_FP32, C_BF16, C_INT8, C_CORES_PER_CHIP, C_CHIPS_PER_HOST, C_TDP, C_USD, C_USD_SPOT, C_PRICE_UNIT,
	C_PRICE_NOTE, C_SOURCES
};

/* Parsed once; the strings point into text, a writable copy of the embedded CSV. */
static char text[sizeof(accelerators_csv)];
static struct spec rows[SPECS_MAX];
static size_t nrows;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* "nvidia-h100-sxm" -> "H100", "amd-mi300x" -> "MI300X", "tpu-v6e" -> "TPU-V6E". */
static void normalise_type(struct spec *s)
{
	const char *k = s->key;
	size_t len;
	size_t i;

	if (s->type == DEVICE_TPU) {
		len = strlen(k);
	} else {
		const char *dash = strchr(k, '-');

		k = dash ? dash + 1 : k;
		len = strcspn(k, "-");
	}
	if (len >= sizeof(s->accelerator_type))
		len = sizeof(s->accelerator_type) - 1;
	for (i = 0; i < len; i++)
		s->accelerator_type[i] = (char)toupper((unsigned char)k[i]);
	s->accelerator_type[i] = '\0';
}

static void parse_table(void)
{
	char *p = text;
	char *cols[SPECS_COLS];
	size_t n;
	bool header = true;

	memcpy(text, accelerators_csv, sizeof(text));
	while (*p && nrows < SPECS_MAX) {
		struct spec *s = &rows[nrows];
		enum device_type type;

		p = csv_split_record(p, cols, SPECS_COLS, &n);
		if (header) {
			header = false;
			continue;
		}
		if (n != SPECS_COLS || cols[C_KEY][0] == '\0' || device_type_parse(cols[C_KIND], &type) != 0)
			continue;
		memset(s, 0, sizeof(*s));
		s->key = cols[C_KEY];
		s->type = type;
		s->vendor = cols[C_VENDOR];
		s->match = cols[C_MATCH];
		s->pci_vendor = csv_uint(cols[C_PCI_VENDOR], 16, 0xffff);
		s->pci_device = csv_uint(cols[C_PCI_DEVICE], 16, 0xffff);
		s->pci_subsystem = csv_uint(cols[C_PCI_SUBSYSTEM], 16, 0xffff);
		s->memory_gib = csv_number(cols[C_MEMORY_GIB]);
		s->memory_gbytes_per_s = csv_number(cols[C_BANDWIDTH]);
		s->fp32_tflops = csv_number(cols[C_FP32]);
		s->bf16_tflops = csv_number(cols[C_BF16]);
		s->int8_tops = csv_number(cols[C_INT8]);
		s->cores_per_chip = csv_uint(cols[C_CORES_PER_CHIP], 10, 1000000);
		s->chips_per_host = csv_uint(cols[C_CHIPS_PER_HOST], 10, 1000000);
		s->tdp_watts = csv_number(cols[C_TDP]);
		s->usd_per_hour = csv_number(cols[C_USD]);
		s->usd_per_hour_spot = csv_number(cols[C_USD_SPOT]);
		s->price_unit = cols[C_PRICE_UNIT];
		s->price_note = cols[C_PRICE_NOTE];
		s->sources = cols[C_SOURCES];
		normalise_type(s);
		nrows++;
	}
}

const struct spec *specs_table(size_t *n)
{
	pthread_once(&once, parse_table);
	*n = nrows;
	return rows;
}

const struct spec *specs_find_key(const char *key)
{
	size_t n;
	const struct spec *t = specs_table(&n);

	if (key == NULL || *key == '\0')
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].key, key) == 0)
			return &t[i];
	return NULL;
}

/* True when needle (len bytes) occurs in hay as a whole word, case-insensitively. */
static bool has_word(const char *hay, const char *needle, size_t len)
{
	size_t hlen = strlen(hay);

	if (len == 0 || len > hlen)
		return false;
	for (size_t i = 0; i + len <= hlen; i++) {
		if (strncasecmp(hay + i, needle, len) != 0)
			continue;
		if (i > 0 && isalnum((unsigned char)hay[i - 1]))
			continue;
		if (isalnum((unsigned char)hay[i + len]))
			continue;
		return true;
	}
	return false;
}

const struct spec *specs_match_name(enum device_type type, const char *vendor, const char *name)
{
	size_t n;
	const struct spec *t = specs_table(&n);
	const struct spec *best = NULL;
	size_t best_len = 0;

	if (name == NULL || *name == '\0')
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *alt = t[i].match;

		if (t[i].type != type)
			continue;
		if (vendor != NULL && *vendor != '\0' && strcasecmp(vendor, t[i].vendor) != 0)
			continue;
		while (*alt) {
			size_t len = strcspn(alt, "|");

			if (len > best_len && has_word(name, alt, len)) {
				best = &t[i];
				best_len = len;
			}
			alt += len;
			if (*alt == '|')
				alt++;
		}
	}
	return best;
}

const struct spec *specs_find_pci(unsigned vendor, unsigned device, unsigned subsystem)
{
	size_t n;
	const struct spec *t = specs_table(&n);

	if (vendor == 0 || device == 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (t[i].pci_vendor != vendor || t[i].pci_device != device)
			continue;
		if (t[i].pci_subsystem != 0 && t[i].pci_subsystem != subsystem)
			continue;
		return &t[i];
	}
	return NULL;
}

const struct spec *specs_find_tpu_generation(const char *generation)
{
	size_t n;
	const struct spec *t = specs_table(&n);

	if (generation == NULL || *generation == '\0')
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *alt = t[i].match;

		if (t[i].type != DEVICE_TPU)
			continue;
		while (*alt) {
			size_t len = strcspn(alt, "|");

			if (len == strlen(generation) && strncasecmp(alt, generation, len) == 0)
				return &t[i];
			alt += len;
			if (*alt == '|')
				alt++;
		}
	}
	return NULL;
}

/* PCI vendor of a GPU from its vendor name, for rows that give a device id. */
static unsigned vendor_pci_id(const char *vendor)
{
	if (strcasecmp(vendor, "NVIDIA") == 0)
		return 0x10de;
	if (strcasecmp(vendor, "AMD") == 0)
		return 0x1002;
	if (strcasecmp(vendor, "Intel") == 0)
		return 0x8086;
	if (strcasecmp(vendor, "Google") == 0)
		return 0x1ae0;
	return 0;
}

const struct spec *specs_for_device(const struct device *d)
{
	const struct spec *s = specs_find_key(d->spec_key);

	if (s != NULL)
		return s;
	if (d->type == DEVICE_CPU)
		return NULL;
	if (d->gpu.pci_device_id != 0) {
		s = specs_find_pci(vendor_pci_id(d->vendor), d->gpu.pci_device_id, 0);
		if (s != NULL && s->type == d->type)
			return s;
	}
	if (d->type == DEVICE_TPU) {
		s = specs_find_tpu_generation(d->tpu.generation);
		if (s != NULL)
			return s;
	}
	s = specs_match_name(d->type, d->vendor, d->model);
	if (s == NULL && d->type == DEVICE_GPU && d->opencl.present)
		s = specs_match_name(d->type, d->vendor, d->opencl.name);
	return s;
}

static void fill_nan(double *dst, double v)
{
	if (isnan(*dst))
		*dst = v;
}

void specs_apply(const struct spec *s, struct device *d)
{
	char src[160];

	if (s == NULL)
		return;
	DEVICE_SET(d->spec_key, s->key);
	if (d->accelerator_type[0] == '\0')
		DEVICE_SET(d->accelerator_type, s->accelerator_type);
	if (d->peak.source[0] == '\0' || (isnan(d->peak.fp32_tflops) && isnan(d->peak.bf16_tflops))) {
		snprintf(src, sizeof(src), "table %s: %s", s->key, s->sources);
		DEVICE_SET(d->peak.source, src);
	}
	fill_nan(&d->peak.fp32_tflops, s->fp32_tflops);
	fill_nan(&d->peak.bf16_tflops, s->bf16_tflops);
	fill_nan(&d->peak.int8_tops, s->int8_tops);
	fill_nan(&d->peak.memory_gbytes_per_s, s->memory_gbytes_per_s);
	if (d->memory_total_bytes == 0 && !isnan(s->memory_gib))
		d->memory_total_bytes = (uint64_t)(s->memory_gib * 1073741824.0);
	if (d->type == DEVICE_TPU && d->tpu.cores_per_chip == 0)
		d->tpu.cores_per_chip = s->cores_per_chip;
	if (!isnan(s->usd_per_hour) || !isnan(s->usd_per_hour_spot)) {
		fill_nan(&d->price.usd_per_hour, s->usd_per_hour);
		fill_nan(&d->price.usd_per_hour_spot, s->usd_per_hour_spot);
		if (d->price.unit[0] == '\0')
			DEVICE_SET(d->price.unit, s->price_unit);
		if (d->price.source[0] == '\0') {
			snprintf(src, sizeof(src), "table %s: %s", s->key, s->price_note);
			DEVICE_SET(d->price.source, src);
		}
	}
}
