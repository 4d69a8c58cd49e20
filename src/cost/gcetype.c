/* gcetype: GCE machine type names and their prices from the rate tables (rules in gcetype.h). */
#include "cost/gcetype.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cost/machines.h"
#include "cost/pricebook.h"
#include "cost/pricerec.h"
#include "detect/specs.h"

#define MAX_TOKENS 6
#define TOKEN_MAX 24
#define VCPUS_MAX 1024               /* past every shape Google sells (416) */
#define CUSTOM_MIB_MAX (12u << 20)   /* 12 TiB */

enum { FAM_CUSTOM = 1, FAM_GPUS = 2, FAM_SHAPE = 4 };

/* The families the tables price: custom shapes offered, GPUs attached apart, priced per shape only. */
static const struct family {
	const char *name;
	unsigned flags;
	const char *tpu_key;         /* TPU hosts: their chips' accelerator key */
} families[] = {
	{"n1", FAM_CUSTOM | FAM_GPUS, NULL}, {"n2", FAM_CUSTOM, NULL},  {"n2d", FAM_CUSTOM, NULL},
	{"n4", FAM_CUSTOM, NULL},            {"e2", FAM_CUSTOM, NULL},  {"c2", 0, NULL},
	{"c2d", 0, NULL},                    {"c3", 0, NULL},           {"c3d", 0, NULL},
	{"c4", 0, NULL},                     {"c4a", 0, NULL},          {"c4d", 0, NULL},
	{"n4d", 0, NULL},                    {"t2a", 0, NULL},          {"t2d", 0, NULL},
	{"m1", 0, NULL},                     {"m2", 0, NULL},           {"m3", 0, NULL},
	{"a2", FAM_SHAPE, NULL},             {"a3", FAM_SHAPE, NULL},   {"a4", FAM_SHAPE, NULL},
	{"g2", FAM_SHAPE, NULL},             {"g4", FAM_SHAPE, NULL},   {"z3", FAM_SHAPE, NULL},
	{"h3", FAM_SHAPE, NULL},             {"x4", FAM_SHAPE, NULL},
	{"ct3", FAM_SHAPE, "tpu-v3"},        {"ct3p", FAM_SHAPE, "tpu-v3"}, {"ct4p", FAM_SHAPE, "tpu-v4"},
	{"ct5lp", FAM_SHAPE, "tpu-v5e"},     {"ct5p", FAM_SHAPE, "tpu-v5p"}, {"ct6e", FAM_SHAPE, "tpu-v6e"},
};

/*
 * GiB per vCPU of each class of the families priced by rates, as Google defines the predefined shapes: the one
 * place these live. c4 and c4d round memory down to whole GiB (c4-standard-2 has 7 GiB, not 7.5; c4d-standard-2 7, not
 * 7.75).
 */
static const struct class_rule {
	const char *family;
	const char *kind;
	double gib_per_vcpu;
	bool whole_gib;
} classes[] = {
	{"n1", "standard", 3.75, false},  {"n1", "highmem", 6.5, false},  {"n1", "highcpu", 0.9, false},
	{"n2", "standard", 4, false},     {"n2", "highmem", 8, false},    {"n2", "highcpu", 1, false},
	{"n2d", "standard", 4, false},    {"n2d", "highmem", 8, false},   {"n2d", "highcpu", 1, false},
	{"n4", "standard", 4, false},     {"n4", "highmem", 8, false},    {"n4", "highcpu", 2, false},
	{"e2", "standard", 4, false},     {"e2", "highmem", 8, false},    {"e2", "highcpu", 1, false},
	{"c2", "standard", 4, false},     {"c2d", "standard", 4, false},  {"c2d", "highmem", 8, false},
	{"c2d", "highcpu", 2, false},     {"c3", "standard", 4, false},   {"c3", "highmem", 8, false},
	{"c3", "highcpu", 2, false},      {"c3d", "standard", 4, false},  {"c3d", "highmem", 8, false},
	{"c3d", "highcpu", 2, false},     {"c4", "standard", 3.75, true}, {"c4", "highmem", 7.75, true},
	{"c4", "highcpu", 2, false},      {"c4a", "standard", 4, false},  {"c4a", "highmem", 8, false},
	{"c4a", "highcpu", 2, false},     {"c4d", "standard", 3.875, true}, {"c4d", "highmem", 7.875, true},
	{"c4d", "highcpu", 1.875, true},  {"n4d", "standard", 4, false},  {"n4d", "highmem", 8, false},
	{"n4d", "highcpu", 2, false},     {"t2a", "standard", 4, false},  {"t2d", "standard", 4, false},
};

/* Shapes no class rule gives: the memory-optimised families, and the few that break their class's rule. */
static const struct whole_shape {
	const char *name;
	double vcpus;
	double memory_gib;
} wholes[] = {
	{"m1-megamem-96", 96, 1433.6},     {"m1-ultramem-40", 40, 961},       {"m1-ultramem-80", 80, 1922},
	{"m1-ultramem-160", 160, 3844},    {"m2-megamem-416", 416, 5888},     {"m2-ultramem-208", 208, 5888},
	{"m2-ultramem-416", 416, 11776},   {"m2-hypermem-416", 416, 8832},    {"m3-megamem-64", 64, 976},
	{"m3-megamem-128", 128, 1952},     {"m3-ultramem-32", 32, 976},       {"m3-ultramem-64", 64, 1952},
	{"m3-ultramem-128", 128, 3904},    {"n2-highmem-128", 128, 864},      {"c3-standard-192-metal", 192, 768},
	{"c3-highmem-192-metal", 192, 1536}, {"c3-highcpu-192-metal", 192, 512},
	/* c3d-highcpu past 16 vCPUs: 59 GiB per 30, not 2 per vCPU */
	{"c3d-highcpu-30", 30, 59},        {"c3d-highcpu-60", 60, 118},       {"c3d-highcpu-90", 90, 177},
	{"c3d-highcpu-180", 180, 354},     {"c3d-highcpu-360", 360, 708},
};

static const struct family *family_of(const char *name)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (strcmp(families[i].name, name) == 0)
			return &families[i];
	return NULL;
}

/* A decimal count filling the whole token, 1..max; 0 otherwise. */
static unsigned count_of(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0' && v >= 1 && v <= max ? (unsigned)v : 0;
}

/* Splits a lower-cased copy of name at '-' into tok; the count, or 0 when a token is empty or too long. */
static size_t tokens_of(const char *name, char tok[MAX_TOKENS][TOKEN_MAX])
{
	size_t n = 0, len = 0;

	for (const char *p = name;; p++) {
		if (*p != '-' && *p != '\0') {
			if (n == MAX_TOKENS || len + 1 == TOKEN_MAX)
				return 0;
			tok[n][len++] = (char)tolower((unsigned char)*p);
			continue;
		}
		if (len == 0)
			return 0;
		tok[n++][len] = '\0';
		len = 0;
		if (*p == '\0')
			return n;
	}
}

/* "<vcpus>-<mib>[-ext]" of a custom shape at tok[first..n). */
static int parse_custom(char tok[MAX_TOKENS][TOKEN_MAX], size_t first, size_t n, struct gcetype *out)
{
	unsigned vcpus, mib;

	if (n - first < 2 || n - first > 3 || (n - first == 3 && strcmp(tok[first + 2], "ext") != 0))
		return -1;
	vcpus = count_of(tok[first], VCPUS_MAX);
	mib = count_of(tok[first + 1], CUSTOM_MIB_MAX);
	if (vcpus == 0 || mib == 0)
		return -1;
	out->vcpus = vcpus;
	out->memory_gib = mib / 1024.0;
	out->custom = true;
	out->extended = n - first == 3;
	return 0;
}

/* The TPU chips a host's last token names ("4t"); 0 when it names none. */
static unsigned chips_of(const char *last)
{
	char digits[TOKEN_MAX];
	size_t len = strlen(last);

	if (len < 2 || len >= sizeof(digits) || last[len - 1] != 't')
		return 0;
	memcpy(digits, last, len - 1);
	digits[len - 1] = '\0';
	return count_of(digits, 256);
}

int gcetype_parse(const char *name, struct gcetype *out)
{
	char tok[MAX_TOKENS][TOKEN_MAX];
	size_t n = name != NULL ? tokens_of(name, tok) : 0;
	const struct family *f;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->vcpus = NAN;
	out->memory_gib = NAN;
	if (n < 2)
		goto out;
	/* n1's custom shapes carry no family: "custom-4-16384" */
	f = family_of(strcmp(tok[0], "custom") == 0 ? "n1" : tok[0]);
	if (f == NULL)
		goto out;
	snprintf(out->family, sizeof(out->family), "%s", f->name);
	out->attach_gpus = (f->flags & FAM_GPUS) != 0;
	out->per_shape = (f->flags & FAM_SHAPE) != 0;
	if (strcmp(tok[0], "custom") == 0 || strcmp(tok[1], "custom") == 0) {
		if ((f->flags & FAM_CUSTOM) != 0)
			rc = parse_custom(tok, strcmp(tok[0], "custom") == 0 ? 1 : 2, n, out);
		goto out;
	}
	for (size_t i = 0; i < sizeof(wholes) / sizeof(wholes[0]); i++) {
		if (strcasecmp(wholes[i].name, name) == 0) {
			out->vcpus = wholes[i].vcpus;
			out->memory_gib = wholes[i].memory_gib;
			rc = 0;
			goto out;
		}
	}
	if (out->per_shape) {
		/* the row says the rest; a TPU host's name says its chips */
		out->tpu_key = f->tpu_key;
		out->tpu_chips = f->tpu_key != NULL ? chips_of(tok[n - 1]) : 0;
		rc = f->tpu_key == NULL || out->tpu_chips > 0 ? 0 : -1;
		goto out;
	}
	if (n != 3)
		goto out;
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		const struct class_rule *c = &classes[i];
		unsigned vcpus;

		if (strcmp(c->family, f->name) != 0 || strcmp(c->kind, tok[1]) != 0)
			continue;
		vcpus = count_of(tok[2], VCPUS_MAX);
		if (vcpus == 0)
			break;
		out->vcpus = vcpus;
		out->memory_gib = c->whole_gib ? floor(c->gib_per_vcpu * vcpus) : c->gib_per_vcpu * vcpus;
		rc = 0;
		break;
	}
out:
	if (rc != 0) {
		memset(out, 0, sizeof(*out));
		out->vcpus = NAN;
		out->memory_gib = NAN;
	}
	return rc;
}

/* Appends printf text to buf at *used, never past its end. */
static void __attribute__((format(printf, 4, 5))) append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*used >= size)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (w > 0)
		*used = *used + (size_t)w < size ? *used + (size_t)w : size;
}

/* A price unknown here: NAN prices, and why in out->source ("no gce <name> in <region>" and the detail). */
static enum gcetype_found lacking(enum gcetype_found found, const char *name, const char *region,
				  struct pricerec *out, const char *detail)
{
	pricerec_init(out);
	if (found == GCETYPE_UNKNOWN)
		snprintf(out->source, sizeof(out->source), "none: the price tables have no gce %.60s (in any region), "
			 "region %.60s: %.120s", name, region, detail);
	else
		snprintf(out->source, sizeof(out->source), "none: the price tables have no gce %.60s in %.60s: %.120s",
			 name, region, detail);
	return found;
}

/* A shape priced per shape without a row here: known elsewhere or not at all. */
static enum gcetype_found no_row(const char *name, const char *region, struct pricerec *out)
{
	if (machines_knows_type("gce", name))
		return lacking(GCETYPE_NOT_HERE, name, region, out, "priced per shape, with no row in this region");
	return lacking(GCETYPE_UNKNOWN, name, region, out, "not a machine type the tables price");
}

/* A shape's row: whole, with its accelerators' own price here where the tables give one. */
static enum gcetype_found from_row(const struct machine *m, const struct gcetype *t, struct pricerec *out)
{
	const struct pricebook_unit *u = NULL;

	machines_price(m, out);
	if (!isfinite(out->vcpus))
		out->vcpus = t->vcpus;
	if (!isfinite(out->memory_gib))
		out->memory_gib = t->memory_gib;
	if (m->accelerators > 0 && strncmp(m->accelerator_key, "tpu-", 4) == 0)
		u = pricebook_tpu_chip(m->accelerator_key, m->region);
	else if (m->accelerators > 0)
		u = pricebook_gce_gpu(m->accelerator_key, m->region);
	if (u != NULL) {
		out->accelerator_usd_per_hour = u->usd_per_hour;
		out->accelerator_usd_per_hour_spot = u->usd_per_hour_spot;
	}
	return GCETYPE_PRICED;
}

/* A TPU host without a row: its chips at their price here. */
static enum gcetype_found from_chips(const char *name, const char *region, const struct gcetype *t,
				     struct pricerec *out)
{
	const struct pricebook_unit *u = pricebook_tpu_chip(t->tpu_key, region);
	char detail[80];

	if (u == NULL || !isfinite(u->usd_per_hour)) {
		snprintf(detail, sizeof(detail), "no %s chip price there", t->tpu_key);
		return lacking(GCETYPE_NOT_HERE, name, region, out, detail);
	}
	pricerec_init(out);
	out->usd_per_hour = t->tpu_chips * u->usd_per_hour;
	out->usd_per_hour_spot = t->tpu_chips * u->usd_per_hour_spot;
	out->accelerators = t->tpu_chips;
	snprintf(out->accelerator_key, sizeof(out->accelerator_key), "%s", t->tpu_key);
	out->accelerator_usd_per_hour = u->usd_per_hour;
	out->accelerator_usd_per_hour_spot = u->usd_per_hour_spot;
	pricerec_add_source(out, u->source);
	snprintf(out->source, sizeof(out->source), "built-in rates: gce %.60s %.60s = %u chips x %g USD/h (%s: %.60s, "
		 "as of %.12s)", name, region, t->tpu_chips, u->usd_per_hour, t->tpu_key, u->source,
		 pricebook_as_of(u->source));
	return GCETYPE_PRICED;
}

/* The GPUs attached to an n1, each at its price here, added to out; GCETYPE_PRICED or why not into detail. */
static enum gcetype_found attach(const char *region, const struct cloud_gpus *gpus, size_t ngpus,
				 struct pricerec *out, char *words, size_t wordsz, size_t *used, char *detail,
				 size_t detailsz)
{
	for (size_t k = 0; k < ngpus; k++) {
		const struct spec *s = specs_find_pci(gpus[k].vendor, gpus[k].device, 0);
		const struct pricebook_unit *u = s != NULL ? pricebook_gce_gpu(s->key, region) : NULL;

		if (s == NULL) {
			snprintf(detail, detailsz, "a GPU on the PCI bus (%04x:%04x) of a kind the tables lack",
				 gpus[k].vendor, gpus[k].device);
			return GCETYPE_UNKNOWN;
		}
		if (u == NULL || !isfinite(u->usd_per_hour)) {
			snprintf(detail, detailsz, "no %s price there for the %u GPUs attached", s->key, gpus[k].count);
			return GCETYPE_NOT_HERE;
		}
		out->usd_per_hour += gpus[k].count * u->usd_per_hour;
		out->usd_per_hour_spot += gpus[k].count * u->usd_per_hour_spot;
		if (out->accelerators == 0) {
			snprintf(out->accelerator_key, sizeof(out->accelerator_key), "%s", s->key);
			out->accelerator_usd_per_hour = u->usd_per_hour;
			out->accelerator_usd_per_hour_spot = u->usd_per_hour_spot;
		} else if (strcmp(out->accelerator_key, s->key) != 0) {
			/* kinds mixed (GCE attaches one): no one price per accelerator to weigh them by */
			out->accelerator_key[0] = '\0';
			out->accelerator_usd_per_hour = out->accelerator_usd_per_hour_spot = NAN;
		}
		out->accelerators += gpus[k].count;
		pricerec_add_source(out, u->source);
		append(words, wordsz, used, " + %u x %s x %g USD/h (%.40s, as of %.12s)", gpus[k].count, s->key,
		       u->usd_per_hour, u->source, pricebook_as_of(u->source));
	}
	return GCETYPE_PRICED;
}

enum gcetype_found gcetype_price(const char *name, const char *region, const struct cloud_gpus *gpus, size_t ngpus,
				 struct pricerec *out)
{
	struct gcetype t;
	const struct machine *m = machines_find("gce", name, region);
	const struct pricebook_rate *r;
	char words[sizeof(out->source)], detail[120];
	size_t used = 0;
	int parsed = gcetype_parse(name, &t);
	enum gcetype_found found;

	if (m != NULL)
		return from_row(m, &t, out);
	if (parsed == 0 && t.tpu_key != NULL)
		return from_chips(name, region, &t, out);
	if (parsed != 0 || t.per_shape)
		return no_row(name, region, out);
	r = pricebook_gce_rate(t.family, region);
	if (r == NULL || !isfinite(r->usd_per_vcpu_hour) || !isfinite(r->usd_per_gib_hour)) {
		snprintf(detail, sizeof(detail), "no %s rates there", t.family);
		return lacking(GCETYPE_NOT_HERE, name, region, out, detail);
	}
	pricerec_init(out);
	out->vcpus = t.vcpus;
	out->memory_gib = t.memory_gib;
	out->lower_bound = t.custom;
	out->usd_per_hour = t.vcpus * r->usd_per_vcpu_hour + t.memory_gib * r->usd_per_gib_hour;
	out->usd_per_hour_spot = t.vcpus * r->usd_per_vcpu_hour_spot + t.memory_gib * r->usd_per_gib_hour_spot;
	pricerec_add_source(out, r->source);
	append(words, sizeof(words), &used, "built-in rates%s: gce %.60s %.60s = %g vCPU x %g", t.custom ?
	       ", a lower bound" : "", name, region, t.vcpus, r->usd_per_vcpu_hour);
	if (strcmp(r->fit, "vcpu-only") == 0)
		append(words, sizeof(words), &used, " USD/h, memory included");
	else
		append(words, sizeof(words), &used, " + %g GiB x %g USD/h", t.memory_gib, r->usd_per_gib_hour);
	append(words, sizeof(words), &used, " (%s rates: %.40s, as of %.12s)", t.family, r->source,
	       pricebook_as_of(r->source));
	if (t.attach_gpus) {
		found = attach(region, gpus, ngpus, out, words, sizeof(words), &used, detail, sizeof(detail));
		if (found != GCETYPE_PRICED)
			return lacking(found, name, region, out, detail);
	}
	if (t.custom)
		append(words, sizeof(words), &used,
		       "; custom shape at predefined rates: Google bills custom SKUs higher");
	snprintf(out->source, sizeof(out->source), "%s", words);
	return GCETYPE_PRICED;
}
