/* device: initialisation, names and the JSON form of a device; the growable device list of probe.h. */
#include "detect/device.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/mem.h"

void device_init(struct device *d, enum device_type type)
{
	memset(d, 0, sizeof(*d));
	d->type = type;
	d->numa_node = -1;
	d->peak.fp32_tflops = DEVICE_UNKNOWN;
	d->peak.bf16_tflops = DEVICE_UNKNOWN;
	d->peak.int8_tops = DEVICE_UNKNOWN;
	d->peak.memory_gbytes_per_s = DEVICE_UNKNOWN;
	d->telemetry.utilization_ratio = DEVICE_UNKNOWN;
	d->telemetry.temperature_celsius = DEVICE_UNKNOWN;
	d->telemetry.power_watts = DEVICE_UNKNOWN;
	d->telemetry.power_limit_watts = DEVICE_UNKNOWN;
	d->telemetry.energy_joules = DEVICE_UNKNOWN;
	d->telemetry.clock_mhz = DEVICE_UNKNOWN;
	d->telemetry.ecc_uncorrected = DEVICE_UNKNOWN;
	d->telemetry.ecc_corrected = DEVICE_UNKNOWN;
	d->telemetry.retired_pages_pending = -1;
	d->check.gflops = DEVICE_UNKNOWN;
	d->check.gbytes_per_s = DEVICE_UNKNOWN;
	d->price.usd_per_hour = DEVICE_UNKNOWN;
	d->price.usd_per_hour_spot = DEVICE_UNKNOWN;
	d->cpu.effective_cpus = DEVICE_UNKNOWN;
	d->cpu.quota_cpus = DEVICE_UNKNOWN;
	d->gpu.mig_mode = -1;
	d->gpu.cuda_ordinal = -1;
	d->tpu.worker_id = -1;
}

const char *device_type_name(enum device_type type)
{
	switch (type) {
	case DEVICE_CPU:
		return "cpu";
	case DEVICE_GPU:
		return "gpu";
	case DEVICE_TPU:
		return "tpu";
	}
	return "unknown";
}

unsigned device_type_rank(enum device_type type)
{
	switch (type) {
	case DEVICE_TPU:
		return 0;
	case DEVICE_GPU:
		return 1;
	case DEVICE_CPU:
		break;
	}
	return 2;
}

int device_type_parse(const char *text, enum device_type *out)
{
	static const enum device_type all[] = {DEVICE_CPU, DEVICE_GPU, DEVICE_TPU};

	if (text == NULL)
		return -1;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcmp(text, device_type_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return -1;
}

bool device_id_valid(const char *text)
{
	const char *colon = text != NULL ? strchr(text, ':') : NULL;
	char type[4];
	enum device_type t;
	size_t num;

	if (colon == NULL || (size_t)(colon - text) >= sizeof(type))
		return false;
	memcpy(type, text, (size_t)(colon - text));
	type[colon - text] = '\0';
	num = strspn(colon + 1, "0123456789");
	return device_type_parse(type, &t) == 0 && num > 0 && num <= 6 && colon[1 + num] == '\0';
}

/* A flag word's bits and their names, listed in /devices in this order. */
struct bit_name {
	unsigned bit;
	const char *name;
};

#define NBITS(t) (sizeof(t) / sizeof((t)[0]))

static const struct bit_name source_names[] = {
	{SOURCE_OPENCL, "opencl"}, {SOURCE_NVML, "nvml"}, {SOURCE_SYSFS, "sysfs"},	 {SOURCE_HWLOC, "hwloc"},
	{SOURCE_PCI, "pci"},	   {SOURCE_DEVNODE, "devnode"}, {SOURCE_ENV, "env"},	 {SOURCE_METADATA, "metadata"},
	{SOURCE_CGROUP, "cgroup"},
};

static const struct bit_name throttle_names[] = {
	{DEVICE_THROTTLE_IDLE, "idle"},
	{DEVICE_THROTTLE_APP_CLOCKS, "applications_clocks"},
	{DEVICE_THROTTLE_SW_POWER_CAP, "sw_power_cap"},
	{DEVICE_THROTTLE_HW_SLOWDOWN, "hw_slowdown"},
	{DEVICE_THROTTLE_SYNC_BOOST, "sync_boost"},
	{DEVICE_THROTTLE_SW_THERMAL, "sw_thermal"},
	{DEVICE_THROTTLE_HW_THERMAL, "hw_thermal"},
	{DEVICE_THROTTLE_HW_POWER_BRAKE, "hw_power_brake"},
	{DEVICE_THROTTLE_DISPLAY_CLOCKS, "display_clocks"},
};

/* The names of the bits set in bits, as a JSON array in the table's order. */
static json_t *bits_json(const struct bit_name *t, size_t n, unsigned bits)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		if (bits & t[i].bit)
			json_array_append_new(a, json_string(t[i].name));
	return a;
}

json_t *device_throttle_json(unsigned bits)
{
	return bits_json(throttle_names, NBITS(throttle_names), bits);
}

void device_throttle_text(unsigned bits, char *out, size_t outsz)
{
	size_t len = 0;

	if (outsz == 0)
		return;
	out[0] = '\0';
	for (size_t i = 0; i < NBITS(throttle_names); i++)
		if ((bits & throttle_names[i].bit) && len < outsz)
			len += (size_t)snprintf(out + len, outsz - len, "%s%s", len ? ", " : "", throttle_names[i].name);
}

json_t *device_sources_json(unsigned sources)
{
	return bits_json(source_names, NBITS(source_names), sources);
}

void device_set_str(char *dst, size_t dstsz, const char *src)
{
	size_t n;

	if (dstsz == 0)
		return;
	if (src == NULL)
		src = "";
	n = strnlen(src, dstsz - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void device_set_trimmed(char *dst, size_t dstsz, const char *src)
{
	size_t n;

	if (dstsz == 0)
		return;
	if (src == NULL)
		src = "";
	while (isspace((unsigned char)*src))
		src++;
	n = strnlen(src, dstsz - 1);
	while (n > 0 && isspace((unsigned char)src[n - 1]))
		n--;
	memmove(dst, src, n);
	dst[n] = '\0';
}

/* Members are added only when known, so every helper below skips the unknown value of its kind. */
static void put_str(json_t *o, const char *key, const char *v)
{
	if (v[0] != '\0')
		json_object_set_new(o, key, json_string(v));
}

static void put_u64(json_t *o, const char *key, uint64_t v)
{
	if (v != 0)
		json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* Adds o to parent under key when it has members; frees it otherwise. */
static void put_obj(json_t *parent, const char *key, json_t *o)
{
	if (json_object_size(o) > 0)
		json_object_set_new(parent, key, o);
	else
		json_decref(o);
}

static json_t *peak_json(const struct device_peak *p)
{
	json_t *o = json_object();

	/* one unit per quantity, named as the measured figures are: GFLOP/s (GOP/s for int8) and GB/s, the table's
	 * TFLOPS to the 9 significant digits its figures never pass */
	jsonval_set_num(o, "fp32_gflops", jsonval_round(p->fp32_tflops * 1000.0, 9));
	jsonval_set_num(o, "bf16_gflops", jsonval_round(p->bf16_tflops * 1000.0, 9));
	jsonval_set_num(o, "int8_gops", jsonval_round(p->int8_tops * 1000.0, 9));
	jsonval_set_num(o, "memory_gbytes_per_s", p->memory_gbytes_per_s);
	if (json_object_size(o) > 0)
		put_str(o, "source", p->source);
	return o;
}

static json_t *telemetry_json(const struct device_telemetry *t)
{
	json_t *o = json_object();
	char when[CLOCK_RFC3339_LEN];

	jsonval_set_num(o, "utilization_ratio", t->utilization_ratio);
	jsonval_set_num(o, "temperature_celsius", t->temperature_celsius);
	jsonval_set_num(o, "power_watts", t->power_watts);
	jsonval_set_num(o, "power_limit_watts", t->power_limit_watts);
	jsonval_set_num(o, "energy_joules", t->energy_joules);
	put_u64(o, "memory_used_bytes", t->memory_used_bytes);
	jsonval_set_num(o, "clock_mhz", t->clock_mhz);
	if (t->throttle_known)
		json_object_set_new(o, "throttle_reasons", device_throttle_json(t->throttle_reasons));
	if (!isnan(t->ecc_uncorrected) || !isnan(t->ecc_corrected)) {
		json_t *ecc = json_object();

		jsonval_set_num(ecc, "uncorrected", t->ecc_uncorrected);
		jsonval_set_num(ecc, "corrected", t->ecc_corrected);
		json_object_set_new(o, "ecc_errors", ecc);
	}
	if (t->retired_pages_pending == 0 || t->retired_pages_pending == 1)
		json_object_set_new(o, "retired_pages_pending", json_boolean(t->retired_pages_pending == 1));
	if (json_object_size(o) > 0 && t->sampled_at_ms > 0) {
		clock_rfc3339(t->sampled_at_ms, when);
		json_object_set_new(o, "sampled_at", json_string(when));
	}
	return o;
}

static json_t *cpu_json(const struct device_cpu *c)
{
	static const char *const cache_keys[4] = {"l1d_bytes", "l2_bytes", "l3_bytes", "l4_bytes"};
	json_t *o = json_object();
	json_t *caches = json_object();

	put_u64(o, "packages", c->packages);
	put_u64(o, "cores", c->cores);
	put_u64(o, "pus", c->pus);
	put_u64(o, "numa_nodes", c->numa_nodes);
	put_str(o, "cpuset", c->cpuset);
	jsonval_set_num(o, "effective_cpus", c->effective_cpus);
	jsonval_set_num(o, "quota_cpus", c->quota_cpus);
	for (size_t i = 0; i < 4; i++)
		put_u64(caches, cache_keys[i], c->cache_bytes[i]);
	put_obj(o, "caches", caches);
	put_str(o, "isa", c->isa);
	return o;
}

static json_t *gpu_json(const struct device_gpu *g)
{
	json_t *o = json_object();
	char id[8];

	put_str(o, "driver", g->driver);
	put_str(o, "driver_version", g->driver_version);
	put_str(o, "cuda_version", g->cuda_version);
	put_str(o, "compute_capability", g->compute_capability);
	if (g->mig_mode == 0 || g->mig_mode == 1)
		json_object_set_new(o, "mig_enabled", json_boolean(g->mig_mode == 1));
	put_u64(o, "clock_max_mhz", g->clock_max_mhz);
	put_u64(o, "memory_clock_mhz", g->memory_clock_mhz);
	put_u64(o, "slowdown_temperature_celsius", g->slowdown_temperature_celsius);
	if (g->pci_device_id != 0 && g->pci_device_id <= 0xffff) {
		snprintf(id, sizeof(id), "0x%04x", g->pci_device_id);
		json_object_set_new(o, "pci_device_id", json_string(id));
	}
	if (g->nvlink_domain != 0)
		json_object_set_new(o, "nvlink", json_pack("{s:I, s:I}", "domain", (json_int_t)g->nvlink_group, "gpus",
							   (json_int_t)g->nvlink_domain));
	return o;
}

static json_t *tpu_json(const struct device_tpu *t)
{
	json_t *o = json_object();

	put_str(o, "generation", t->generation);
	put_str(o, "accelerator_type", t->accelerator_type);
	put_str(o, "topology", t->topology);
	put_str(o, "name", t->name);
	if (t->worker_id >= 0)
		json_object_set_new(o, "worker_id", json_integer(t->worker_id));
	put_u64(o, "chips", t->chips);
	put_u64(o, "cores_per_chip", t->cores_per_chip);
	json_object_set_new(o, "chip_index", json_integer(t->chip_index));
	put_str(o, "device_node", t->device_node);
	return o;
}

static json_t *opencl_json(const struct device_opencl *c)
{
	json_t *o = json_object();
	json_t *ext = json_array();
	const char *p = c->extensions_summary;

	put_str(o, "platform", c->platform);
	put_str(o, "name", c->name);
	put_str(o, "version", c->version);
	put_str(o, "driver_version", c->driver_version);
	put_u64(o, "global_mem_bytes", c->global_mem_bytes);
	put_u64(o, "local_mem_bytes", c->local_mem_bytes);
	put_u64(o, "max_alloc_bytes", c->max_alloc_bytes);
	put_u64(o, "compute_units", c->compute_units);
	put_u64(o, "clock_mhz", c->clock_mhz);
	while (*p) {
		size_t n = strcspn(p, " ");

		if (n > 0)
			json_array_append_new(ext, json_stringn(p, n));
		p += n;
		while (*p == ' ')
			p++;
	}
	json_object_set_new(o, "extensions", ext);
	json_object_set_new(o, "platform_index", json_integer(c->platform_index));
	json_object_set_new(o, "device_index", json_integer(c->device_index));
	return o;
}

/* --- the PCIe link --- */

/* Transfer rate per lane in GT/s and the share of it that carries data, by generation (index 0: generation 1). */
static const struct {
	double gts;
	double encoding;
} pcie_generations[] = {
	{2.5, 8.0 / 10.0},
	{5.0, 8.0 / 10.0},
	{8.0, 128.0 / 130.0},
	{16.0, 128.0 / 130.0},
	{32.0, 128.0 / 130.0},
	{64.0, 242.0 / 256.0}, /* FLIT mode: 242 of each 256-byte flit carry data */
};

#define PCIE_GENERATIONS (sizeof(pcie_generations) / sizeof(pcie_generations[0]))

double device_pcie_lane_gbytes_per_s(unsigned generation, unsigned width)
{
	if (generation < 1 || generation > PCIE_GENERATIONS || width < 1 || width > 32)
		return NAN;
	/* a transfer moves one bit per lane per transfer: GT/s x share x lanes / 8 bits */
	return pcie_generations[generation - 1].gts * pcie_generations[generation - 1].encoding * width / 8.0;
}

double device_pcie_gbytes_per_s(const struct device_pcie *p)
{
	unsigned gen = p->max_generation > p->generation ? p->max_generation : p->generation;
	unsigned width = p->width ? p->width : p->max_width;

	return device_pcie_lane_gbytes_per_s(gen, width);
}

unsigned device_pcie_generation_of(double gts)
{
	for (size_t i = 0; i < PCIE_GENERATIONS; i++)
		if (fabs(gts - pcie_generations[i].gts) < 0.05)
			return (unsigned)(i + 1);
	return 0;
}

json_t *device_pcie_json(const struct device_pcie *p)
{
	json_t *o = json_object();

	put_u64(o, "generation", p->generation);
	put_u64(o, "width", p->width);
	put_u64(o, "max_generation", p->max_generation);
	put_u64(o, "max_width", p->max_width);
	if (json_object_size(o) > 0)
		jsonval_set_num(o, "gbytes_per_s", jsonval_round(device_pcie_gbytes_per_s(p), 4));
	return o;
}

/* The last health check and the one running now; empty (left out) when the device was never checked. */
static json_t *check_json(const struct device_check *c)
{
	json_t *o = json_object();

	if (c->state[0] != '\0') {
		put_str(o, "id", c->id);
		put_str(o, "level", c->level);
		put_str(o, "state", c->state);
		put_str(o, "verdict", c->verdict);
		jsonval_set_num(o, "gflops", c->gflops);
		jsonval_set_num(o, "gbytes_per_s", c->gbytes_per_s);
		jsonval_set_time(o, "finished_at", c->finished_ms);
	}
	put_str(o, "running", c->running_id);
	return o;
}

static json_t *price_json(const struct device_price *p)
{
	json_t *o = json_object();

	jsonval_set_num(o, "usd_per_hour", p->usd_per_hour);
	jsonval_set_num(o, "usd_per_hour_spot", p->usd_per_hour_spot);
	if (json_object_size(o) > 0) {
		put_str(o, "unit", p->unit);
		put_str(o, "source", p->source);
		jsonval_set_as_of(o, p->as_of, clock_real_ms());
	}
	return o;
}

json_t *device_to_json(const struct device *d)
{
	json_t *o = json_object();
	json_t *mem = json_object();

	put_str(o, "id", d->id);
	json_object_set_new(o, "type", json_string(device_type_name(d->type)));
	put_str(o, "vendor", d->vendor);
	put_str(o, "model", d->model);
	put_str(o, "accelerator_type", d->accelerator_type);
	put_str(o, "uuid", d->uuid);
	put_str(o, "pci_bus_id", d->pci_bus_id);
	if (d->numa_node >= 0)
		json_object_set_new(o, "numa_node", json_integer(d->numa_node));
	put_u64(mem, "total_bytes", d->memory_total_bytes);
	put_u64(mem, "available_bytes", d->memory_available_bytes);
	put_obj(o, "memory", mem);
	put_u64(o, "compute_units", d->compute_units);
	put_u64(o, "clock_mhz", d->clock_mhz);
	put_obj(o, "peak", peak_json(&d->peak));
	put_obj(o, "telemetry", telemetry_json(&d->telemetry));
	json_object_set_new(o, "seen_by", device_sources_json(d->sources));
	if (d->type == DEVICE_CPU)
		put_obj(o, "cpu", cpu_json(&d->cpu));
	if (d->type == DEVICE_GPU)
		put_obj(o, "gpu", gpu_json(&d->gpu));
	if (d->type == DEVICE_TPU)
		put_obj(o, "tpu", tpu_json(&d->tpu));
	if (d->opencl.present)
		json_object_set_new(o, "opencl", opencl_json(&d->opencl));
	put_obj(o, "pcie", device_pcie_json(&d->pcie));
	put_obj(o, "price", price_json(&d->price));
	json_object_set_new(o, "executable", json_boolean(d->executable));
	put_obj(o, "check", check_json(&d->check));
	return o;
}

/* --- device_list (probe.h) --- */

void device_list_init(struct device_list *l)
{
	l->v = NULL;
	l->n = 0;
	l->cap = 0;
}

struct device *device_list_add(struct device_list *l, const struct device *d)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n] = *d;
	return &l->v[l->n++];
}

void device_list_release(struct device_list *l)
{
	free(l->v);
	device_list_init(l);
}
