/* plan_devices: the devices a plan is made for (see plan_devices.h). */
#include "plan/plan_devices.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detect/probe_tpu.h"
#include "detect/specs.h"

#define GIB (1024ull * 1024 * 1024)

/*
 * GPUs a board joins with fast links, by spec row: SXM and OAM modules sit on boards of 8 joined by NVLink
 * (NVSwitch on HGX H100/H200/B200 and A100) or AMD Infinity Fabric (MI250X, MI300X); PCIe cards (T4, L4, A10G,
 * H100 PCIe) have none a plan can count on (an NVLink bridge joins two at most, and only where fitted). A model
 * not listed is taken as PCIe.
 */
static const struct {
	const char *key;
	unsigned gpus;
} boards[] = {
	{"nvidia-a100-40gb", 8}, {"nvidia-a100-80gb", 8}, {"nvidia-h100-sxm", 8}, {"nvidia-h200", 8},
	{"nvidia-b200", 8},      {"amd-mi250x", 8},       {"amd-mi300x", 8},
};

static unsigned board_gpus(const struct spec *s)
{
	for (size_t i = 0; s != NULL && i < sizeof(boards) / sizeof(boards[0]); i++)
		if (strcmp(boards[i].key, s->key) == 0)
			return boards[i].gpus;
	return 1;
}

/*
 * A slice's usual ICI topology by chip count (cloud.google.com/tpu/docs: v4 and v5p slices are 3D tori, v5e and
 * v6e 2D); {0} when the count is not a standard slice.
 */
static const struct slice_shape {
	unsigned chips;
	unsigned t[3];
} three[] = {{4, {2, 2, 1}},	 {8, {2, 2, 2}},      {16, {2, 2, 4}},	    {32, {2, 4, 4}},
	     {64, {4, 4, 4}},	 {128, {4, 4, 8}},    {256, {4, 8, 8}},	    {512, {8, 8, 8}},
	     {1024, {8, 8, 16}}, {2048, {8, 16, 16}}, {4096, {16, 16, 16}}, {8960, {16, 20, 28}}},
  two[] = {{1, {1, 1, 0}},  {4, {2, 2, 0}},  {8, {2, 4, 0}},    {16, {4, 4, 0}},
	   {32, {4, 8, 0}}, {64, {8, 8, 0}}, {128, {8, 16, 0}}, {256, {16, 16, 0}}};

static bool flat_generation(const char *generation)
{
	return strcmp(generation, "v5e") == 0 || strcmp(generation, "v6e") == 0;
}

static void usual_torus(const char *generation, unsigned chips, unsigned torus[3])
{
	const struct slice_shape *t = flat_generation(generation) ? two : three;
	size_t n = flat_generation(generation) ? sizeof(two) / sizeof(two[0]) : sizeof(three) / sizeof(three[0]);

	memset(torus, 0, 3 * sizeof(torus[0]));
	for (size_t i = 0; i < n; i++)
		if (t[i].chips == chips)
			memcpy(torus, t[i].t, sizeof(t[i].t));
}

/* The slices GCP offers of type's generation, named as type is ("v6e-1, v6e-4, ..."), into out. */
static void real_sizes(const char *type, const char *generation, unsigned chips, char *out, size_t outsz)
{
	const struct slice_shape *t = flat_generation(generation) ? two : three;
	size_t n = flat_generation(generation) ? sizeof(two) / sizeof(two[0]) : sizeof(three) / sizeof(three[0]);
	const char *dash = strrchr(type, '-');
	unsigned long named = dash ? strtoul(dash + 1, NULL, 10) : chips;
	unsigned per_chip = chips && named >= chips ? (unsigned)(named / chips) : 1;
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && k + 1 < outsz; i++) {
		int w = snprintf(out + k, outsz - k, "%s%.*s-%u", i ? ", " : "", (int)(dash ? dash - type : 0), type,
				 t[i].chips * per_chip);

		if (w < 0 || (size_t)w >= outsz - k)
			break;
		k += (size_t)w;
	}
}

/* text without case, blanks, '-' and '_' into out: "H100 PCIe" and "h100-pcie" read alike. */
static void squash(const char *text, size_t len, char *out, size_t outsz)
{
	size_t k = 0;

	for (size_t i = 0; i < len && text[i] != '\0' && k + 1 < outsz; i++)
		if (!strchr(" -_", text[i]))
			out[k++] = (char)tolower((unsigned char)text[i]);
	out[k] = '\0';
}

/*
 * The spec row of a GPU model as a person names it: its normalised type ("H100", "MI300X"), its key without the
 * vendor ("h100-pcie", "a100-80gb") or one of the names the table matches ("H100 SXM"); the first row in the table
 * wins, so "H100" is the SXM part of the HGX boards.
 */
static const struct spec *gpu_spec(const char *model)
{
	size_t n;
	const struct spec *t = specs_table(&n);
	char want[PLAN_DEVICES_TEXT_MAX], have[PLAN_DEVICES_TEXT_MAX];

	squash(model, strlen(model), want, sizeof(want));
	for (size_t i = 0; i < n; i++) {
		const char *key = strchr(t[i].key, '-');
		const char *alt = t[i].match;

		if (t[i].type != DEVICE_GPU)
			continue;
		squash(t[i].accelerator_type, sizeof(t[i].accelerator_type), have, sizeof(have));
		if (strcmp(want, have) == 0)
			return &t[i];
		squash(key ? key + 1 : t[i].key, strlen(key ? key + 1 : t[i].key), have, sizeof(have));
		if (strcmp(want, have) == 0)
			return &t[i];
		while (*alt != '\0') {
			size_t len = strcspn(alt, "|");

			squash(alt, len, have, sizeof(have));
			if (strcmp(want, have) == 0)
				return &t[i];
			alt += len + (alt[len] == '|');
		}
	}
	return NULL;
}

/* A TPU slice named as GCP names it ("v5p-128"), with memory and hosts from the spec table. */
static enum acceld_err tpu_slice(const char *type, const char *topology, unsigned this_host,
				 struct plan_devices *out, struct plan_devices_origin *origin, char *err, size_t errsz)
{
	char generation[16];
	unsigned chips;
	const struct spec *s;

	if (probe_tpu_type_parse(type, generation, sizeof(generation), &chips) != 0 || chips == 0) {
		snprintf(err, errsz, "'%.40s' is not a TPU type as GCP names slices (v5p-128, v6e-8, v5litepod-16, "
			 "tpu7x-16)", type);
		return ACCELD_EINVAL;
	}
	s = specs_find_tpu_generation(generation);
	memset(out, 0, sizeof(*out));
	out->kind = PLAN_TPU;
	out->count = chips;
	out->memory_bytes = s != NULL && s->memory_gib > 0 ? (uint64_t)(s->memory_gib * (double)GIB) : 0;
	if (topology == NULL || topology[0] == '\0' || plan_torus_parse(topology, out->torus) != 0)
		usual_torus(generation, chips, out->torus);
	if (out->torus[0] == 0 && this_host == 0) {
		/* a slice named by the caller that GCP does not offer (a host's own slice keeps its unknown torus) */
		char sizes[320];

		real_sizes(type, generation, chips, sizes, sizeof(sizes));
		snprintf(err, errsz, "%.40s is no slice GCP offers; %s slices: %s", type, generation, sizes);
		return ACCELD_EUNSUPPORTED;
	}
	out->per_host = this_host ? this_host
				  : plan_torus_per_host(out->torus, chips,
							s != NULL && s->chips_per_host ? s->chips_per_host : chips);
	if (out->per_host > chips)
		out->per_host = chips;
	snprintf(origin->model, sizeof(origin->model), "TPU %s", generation);
	snprintf(origin->text, sizeof(origin->text), "a %s slice: %u chips, %u a host", type, chips, out->per_host);
	if (out->memory_bytes == 0) {
		snprintf(err, errsz, "the spec table gives no memory for TPU %s", generation);
		return ACCELD_EINVAL;
	}
	return ACCELD_OK;
}

/* "H100x8", "8xH100", "8 x H100": the model and the count; false when the text has no count. */
static bool model_and_count(const char *text, char *model, size_t modelsz, unsigned *count)
{
	const char *x;
	char *end;
	unsigned long n;

	/* the count first */
	n = strtoul(text, &end, 10);
	if (end != text && n > 0) {
		while (*end == ' ')
			end++;
		if (*end == 'x' || *end == 'X') {
			end++;
			while (*end == ' ')
				end++;
			snprintf(model, modelsz, "%s", end);
			*count = n > PLAN_MAX_DEVICES ? PLAN_MAX_DEVICES + 1 : (unsigned)n;
			return *model != '\0';
		}
	}
	/* the count last: the model's own name may hold an x (a100x?), so the last x before digits */
	x = strrchr(text, 'x');
	if (x == NULL)
		x = strrchr(text, 'X');
	if (x == NULL || x == text)
		return false;
	if (!isdigit((unsigned char)x[1]))
		return false;
	n = strtoul(x + 1, &end, 10);
	if (*end != '\0' || n == 0)
		return false;
	snprintf(model, modelsz, "%.*s", (int)(x - text), text);
	while (*model != '\0' && model[strlen(model) - 1] == ' ')
		model[strlen(model) - 1] = '\0';
	*count = n > PLAN_MAX_DEVICES ? PLAN_MAX_DEVICES + 1 : (unsigned)n;
	return *model != '\0';
}

enum acceld_err plan_devices_parse(const char *text, struct plan_devices *out, struct plan_devices_origin *origin,
				   char *err, size_t errsz)
{
	char model[PLAN_DEVICES_TEXT_MAX];
	char trimmed[PLAN_DEVICES_TEXT_MAX + 1];
	unsigned count = 0;
	const struct spec *s = NULL;
	const char *kind = NULL;
	size_t len;

	memset(origin, 0, sizeof(*origin));
	/* blanks around the shape and after its kind ("tpu: v5p-128") are the way people write it */
	while (text != NULL && (*text == ' ' || *text == '\t'))
		text++;
	len = text != NULL ? strlen(text) : 0;
	while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (len == 0 || len > PLAN_DEVICES_TEXT_MAX) {
		snprintf(err, errsz, "a shape of at most %d characters, such as H100x8 or tpu:v5p-128",
			 PLAN_DEVICES_TEXT_MAX);
		return ACCELD_EINVAL;
	}
	memcpy(trimmed, text, len);
	trimmed[len] = '\0';
	text = trimmed;
	if (strncasecmp(text, "gpu:", 4) == 0 || strncasecmp(text, "tpu:", 4) == 0) {
		kind = text;
		text += 4 + strspn(text + 4, " \t");
	}
	if (strcasecmp(text, "cpu") == 0 && kind == NULL) {
		snprintf(err, errsz, "cpu is this host's: name it by its id (cpu:0)");
		return ACCELD_EINVAL;
	}
	if ((kind == NULL || tolower((unsigned char)kind[0]) == 't') && strchr(text, '-') != NULL &&
	    !model_and_count(text, model, sizeof(model), &count))
		return tpu_slice(text, NULL, 0, out, origin, err, errsz);
	if (!model_and_count(text, model, sizeof(model), &count)) {
		snprintf(err, errsz, "'%s' is not a shape: GPUs as MODELxCOUNT (H100x8, L4x4), a TPU slice as "
			 "GCP names it (v5p-128, v6e-8), or device ids (gpu:0,gpu:1)", text);
		return ACCELD_EINVAL;
	}
	if (count > PLAN_MAX_DEVICES) {
		snprintf(err, errsz, "at most %u devices", PLAN_MAX_DEVICES);
		return ACCELD_EINVAL;
	}
	s = gpu_spec(model);
	if (s == NULL || s->memory_gib <= 0) {
		snprintf(err, errsz, "the spec table has no GPU '%s' (db/accelerators.csv: T4, L4, A10G, "
			 "A100 40GB, A100 80GB, H100, H100 PCIe, H200, B200, MI250X, MI300X)", model);
		return ACCELD_EINVAL;
	}
	memset(out, 0, sizeof(*out));
	out->kind = PLAN_GPU;
	out->count = count;
	out->memory_bytes = (uint64_t)(s->memory_gib * (double)GIB);
	out->fast_domain = board_gpus(s) < count ? board_gpus(s) : count;
	/* hosts of a board's worth of GPUs (8), or one host for fewer */
	out->per_host = board_gpus(s) > 1 ? out->fast_domain : count < 8 ? count : 8;
	snprintf(origin->model, sizeof(origin->model), "%s", s->accelerator_type);
	snprintf(origin->text, sizeof(origin->text), "%u x %s (%s), %u a host, %s", count, s->accelerator_type, s->key,
		 out->per_host, board_gpus(s) > 1 ? "joined by NVLink or Infinity Fabric on their board"
						  : "PCIe cards without fast links");
	return ACCELD_OK;
}

const char *plan_devices_link_words(const struct plan_devices *d)
{
	if (d->count <= 1)
		return "";
	return d->fast_domain > 1 ? ", joined by NVLink" : ", without NVLink between them";
}

enum acceld_err plan_devices_from_registry(const struct device *devs, size_t n, const enum device_type *want,
					   struct plan_devices *out, struct plan_devices_origin *origin, char *why,
					   size_t whysz)
{
	enum device_type type = DEVICE_CPU;
	const struct device *first = NULL;
	unsigned count = 0, best = 0, domain = 0;
	uint64_t memory = 0;
	const char *model = NULL;

	memset(out, 0, sizeof(*out));
	memset(origin, 0, sizeof(*origin));
	if (want != NULL) {
		type = *want;
	} else {
		/* the automatic order: the most preferred type the host has */
		for (size_t i = 0; i < n; i++)
			if (first == NULL || device_type_rank(devs[i].type) < device_type_rank(first->type))
				first = &devs[i];
		type = first != NULL ? first->type : DEVICE_CPU;
	}
	/* of GPUs, the most numerous model */
	for (size_t i = 0; i < n; i++) {
		unsigned same = 0;

		if (devs[i].type != type)
			continue;
		for (size_t j = 0; j < n; j++)
			same += devs[j].type == type && strcmp(devs[j].model, devs[i].model) == 0;
		if (same > best) {
			best = same;
			model = devs[i].model;
			first = &devs[i];
		}
	}
	if (model == NULL) {
		snprintf(why, whysz, "this host has no %s; name the devices to plan for (devices: H100x8, tpu:v5p-128)",
			 device_type_name(type));
		return ACCELD_ENOTFOUND;
	}
	if (type == DEVICE_TPU && first->tpu.accelerator_type[0] != '\0')
		return tpu_slice(first->tpu.accelerator_type, first->tpu.topology, first->tpu.chips, out, origin, why,
				 whysz);
	for (size_t i = 0; i < n; i++) {
		const struct device *d = &devs[i];
		uint64_t m = d->memory_total_bytes;

		if (d->type != type || strcmp(d->model, model) != 0)
			continue;
		count++;
		if (m != 0 && (memory == 0 || m < memory))
			memory = m;
		if (type == DEVICE_GPU) {
			unsigned dom = d->gpu.nvlink_domain ? d->gpu.nvlink_domain : 1;

			domain = domain == 0 || dom < domain ? dom : domain;
		}
	}
	out->kind = type == DEVICE_GPU ? PLAN_GPU : type == DEVICE_TPU ? PLAN_TPU : PLAN_CPU;
	out->count = count;
	out->per_host = count;
	out->memory_bytes = memory;
	out->fast_domain = domain ? domain : 1;
	snprintf(origin->model, sizeof(origin->model), "%s", model);
	if (type == DEVICE_GPU)
		snprintf(origin->text, sizeof(origin->text), "%u x %s on this host%s", count, model,
			 plan_devices_link_words(out));
	else
		snprintf(origin->text, sizeof(origin->text), "%u x %s on this host", count, model);
	if (memory == 0) {
		snprintf(why, whysz, "the memory of %s is unknown; name the devices to plan for", first->id);
		return ACCELD_ENOTFOUND;
	}
	return ACCELD_OK;
}
