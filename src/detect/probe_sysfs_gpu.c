/*
 * probe_sysfs_gpu: AMD (amdgpu) and Intel (i915, xe) GPUs from <sysfs_root>/class/drm/cardN/device, with no
 * vendor library: identity from the PCI attributes, memory and load from amdgpu's files, temperature and power
 * from the device's hwmon folder. ROCR_VISIBLE_DEVICES and then HIP_VISIBLE_DEVICES restrict the AMD GPUs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hwfile.h"
#include "core/mem.h"
#include "detect/probe.h"
#include "detect/visible.h"

#define VENDOR_AMD 0x1002
#define VENDOR_INTEL 0x8086
#define SYSFS_MAX_GPUS 64

/* Names for PCI ids whose sysfs has no product_name (the accelerator table's rows). */
static const struct {
	unsigned vendor;
	unsigned device;
	const char *model;
} known_ids[] = {
	{VENDOR_AMD, 0x74a1, "AMD Instinct MI300X"},
};

/* A GPU this probe added: where its files are, for refresh(). */
struct sysfs_gpu {
	char pci_bus_id[32];
	char dir[HWFILE_PATH_MAX]; /* <sysfs_root>/class/drm/cardN/device */
};

struct sysfs_state {
	struct sysfs_gpu gpus[SYSFS_MAX_GPUS];
	size_t n;
};

struct candidate {
	struct device dev;
	char dir[HWFILE_PATH_MAX];
};

/* "card" followed by digits only: connectors (card0-DP-1) and render nodes (renderD128) are not GPUs. */
static bool is_card(const char *name)
{
	const char *p = name + 4;

	if (strncmp(name, "card", 4) != 0 || *p == '\0')
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* The first hwmonN folder under dir into out; false when there is none. */
static bool find_hwmon(const char *dir, char *out, size_t outsz)
{
	char path[HWFILE_PATH_MAX];
	DIR *d;
	struct dirent *e;
	bool found = false;
	char best[64] = "";

	snprintf(path, sizeof(path), "%s/hwmon", dir);
	d = opendir(path);
	if (d == NULL)
		return false;
	for (e = readdir(d); e != NULL; e = readdir(d)) {
		if (strncmp(e->d_name, "hwmon", 5) != 0 || strlen(e->d_name) >= sizeof(best))
			continue;
		/* the lowest name, so the choice does not depend on directory order */
		if (!found || strcmp(e->d_name, best) < 0)
			memcpy(best, e->d_name, strlen(e->d_name) + 1);
		found = true;
	}
	closedir(d);
	if (found && snprintf(out, outsz, "%s/%s", path, best) >= (int)outsz)
		found = false;
	return found;
}

/* Load, memory in use, temperature and power: what refresh() keeps current. */
static void read_telemetry(const char *dir, struct device *d)
{
	char hwmon[HWFILE_PATH_MAX];
	uint64_t v;

	if (hwfile_read_u64(&v, "%s/gpu_busy_percent", dir) == 0 && v <= 100)
		d->telemetry.utilization_ratio = (double)v / 100.0;
	if (hwfile_read_u64(&v, "%s/mem_info_vram_used", dir) == 0 && d->memory_total_bytes > 0 &&
	    v <= d->memory_total_bytes) {
		d->telemetry.memory_used_bytes = v;
		d->memory_available_bytes = d->memory_total_bytes - v;
	}
	if (find_hwmon(dir, hwmon, sizeof(hwmon))) {
		int64_t t;

		/* millidegrees Celsius; microwatts; microjoules */
		if (hwfile_read_i64(&t, "%s/temp1_input", hwmon) == 0 && t > -100000 && t < 200000)
			d->telemetry.temperature_celsius = (double)t / 1000.0;
		if ((hwfile_read_u64(&v, "%s/power1_average", hwmon) == 0 ||
		     hwfile_read_u64(&v, "%s/power1_input", hwmon) == 0) &&
		    v < 100000000000ull)
			d->telemetry.power_watts = (double)v / 1e6;
		if (hwfile_read_u64(&v, "%s/power1_cap", hwmon) == 0 && v > 0 && v < 100000000000ull)
			d->telemetry.power_limit_watts = (double)v / 1e6;
		if (hwfile_read_u64(&v, "%s/energy1_input", hwmon) == 0)
			d->telemetry.energy_joules = (double)v / 1e6;
	}
	d->telemetry.sampled_at_ms = clock_real_ms();
}

/* The PCI address of a card: the device link's name, or PCI_SLOT_NAME from uevent. */
static bool card_address(const char *root, const char *card, char *out, size_t outsz)
{
	char text[64];
	char path[HWFILE_PATH_MAX];
	FILE *f;

	if (hwfile_link_base(text, sizeof(text), "%s/class/drm/%s/device", root, card) == 0 &&
	    hwfile_pci_normalise(text, out, outsz) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/class/drm/%s/device/uevent", root, card);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	text[0] = '\0';
	while (fgets(path, sizeof(path), f) != NULL) {
		if (strncmp(path, "PCI_SLOT_NAME=", 14) == 0) {
			path[strcspn(path, "\n")] = '\0';
			device_set_trimmed(text, sizeof(text), path + 14);
			break;
		}
	}
	fclose(f);
	return text[0] != '\0' && hwfile_pci_normalise(text, out, outsz) == 0;
}

/* Fills c from the card's files; false when it is not an AMD or Intel GPU acceld handles. */
static bool read_card(const char *root, const char *card, struct candidate *c)
{
	struct device *d = &c->dev;
	char driver[32] = "";
	char text[128];
	uint64_t vendor, devid, v;
	int64_t numa;

	device_init(d, DEVICE_GPU);
	if (!card_address(root, card, d->pci_bus_id, sizeof(d->pci_bus_id)))
		return false;
	if (snprintf(c->dir, sizeof(c->dir), "%s/class/drm/%s/device", root, card) >= (int)sizeof(c->dir))
		return false;
	if (hwfile_read_u64(&vendor, "%s/vendor", c->dir) != 0 || hwfile_read_u64(&devid, "%s/device", c->dir) != 0)
		return false;
	hwfile_link_base(driver, sizeof(driver), "%s/driver", c->dir);
	if (vendor == VENDOR_AMD && strcmp(driver, "amdgpu") == 0)
		DEVICE_SET(d->vendor, "AMD");
	else if (vendor == VENDOR_INTEL && (strcmp(driver, "i915") == 0 || strcmp(driver, "xe") == 0))
		DEVICE_SET(d->vendor, "Intel");
	else
		return false;
	DEVICE_SET(d->gpu.driver, driver);
	d->gpu.pci_device_id = (unsigned)(devid & 0xffffu);
	d->sources = SOURCE_SYSFS;
	if (hwfile_read_line(text, sizeof(text), "%s/product_name", c->dir) == 0 && text[0] != '\0')
		DEVICE_SET_TRIMMED(d->model, text);
	for (size_t i = 0; d->model[0] == '\0' && i < sizeof(known_ids) / sizeof(known_ids[0]); i++)
		if (known_ids[i].vendor == vendor && known_ids[i].device == devid)
			DEVICE_SET(d->model, known_ids[i].model);
	if (hwfile_read_u64(&v, "%s/mem_info_vram_total", c->dir) == 0 && v > 0)
		d->memory_total_bytes = v;
	if (hwfile_read_i64(&numa, "%s/numa_node", c->dir) == 0 && numa >= 0 && numa < 4096)
		d->numa_node = (int)numa;
	/* ROCm names a GPU "GPU-" and the 64-bit unique id in hex */
	if (hwfile_read_line(text, sizeof(text), "%s/unique_id", c->dir) == 0 && text[0] != '\0' &&
	    strlen(text) <= 32)
		snprintf(d->uuid, sizeof(d->uuid), "GPU-%s", text);
	probe_pcie_sysfs(root, d);
	read_telemetry(c->dir, d);
	return true;
}

static int by_address(const void *a, const void *b)
{
	return strcmp(((const struct candidate *)a)->dev.pci_bus_id, ((const struct candidate *)b)->dev.pci_bus_id);
}

/*
 * Applies ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES over what ROCr left, to the AMD GPUs (ordinals count AMD
 * GPUs in PCI order); Intel GPUs stay. Marks the hidden ones in keep[].
 */
static void apply_visible(const struct candidate *c, size_t n, bool *keep, struct probe_result *res)
{
	static const char *const vars[] = {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
	size_t amd[SYSFS_MAX_GPUS];
	size_t namd = 0;

	for (size_t i = 0; i < n; i++) {
		keep[i] = true;
		if (strcmp(c[i].dev.vendor, "AMD") == 0)
			amd[namd++] = i;
	}
	for (size_t v = 0; v < 2; v++) {
		const char *value = getenv(vars[v]);
		const char *uuids[SYSFS_MAX_GPUS];
		size_t sel[SYSFS_MAX_GPUS];
		size_t next[SYSFS_MAX_GPUS];
		struct visible_set set = {.n = namd, .uuids = uuids};
		size_t nsel;
		int stopped;

		if (value == NULL)
			continue;
		for (size_t i = 0; i < namd; i++)
			uuids[i] = c[amd[i]].dev.uuid[0] ? c[amd[i]].dev.uuid : NULL;
		nsel = visible_select(value, &set, sel, SYSFS_MAX_GPUS, &stopped);
		if (stopped >= 0 && strlen(res->why) < sizeof(res->why) / 2)
			snprintf(res->why + strlen(res->why), sizeof(res->why) - strlen(res->why),
				 "%s%s entry %d is not a usable GPU; it and later entries are ignored",
				 res->why[0] ? "; " : "", vars[v], stopped);
		for (size_t i = 0; i < nsel; i++)
			next[i] = amd[sel[i]];
		for (size_t i = 0; i < namd; i++)
			keep[amd[i]] = false;
		for (size_t i = 0; i < nsel; i++)
			keep[next[i]] = true;
		memcpy(amd, next, nsel * sizeof(amd[0]));
		namd = nsel;
	}
}

static void sysfs_gpu_probe(void **state, const struct config *cfg, struct device_list *out,
			    struct probe_result *res)
{
	struct sysfs_state *st = *state;
	struct candidate *c = NULL;
	bool keep[SYSFS_MAX_GPUS];
	char path[HWFILE_PATH_MAX];
	DIR *dir = NULL;
	struct dirent *e;
	size_t n = 0;

	res->ok = true;
	res->available = false;
	res->why[0] = '\0';
	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		*state = st;
	}
	st->n = 0;
	snprintf(path, sizeof(path), "%s/class/drm", cfg->sysfs_root);
	dir = opendir(path);
	if (dir == NULL)
		goto out;
	res->available = true;
	c = xcalloc(SYSFS_MAX_GPUS, sizeof(*c));
	for (e = readdir(dir); e != NULL && n < SYSFS_MAX_GPUS; e = readdir(dir)) {
		bool dup = false;

		if (!is_card(e->d_name) || !read_card(cfg->sysfs_root, e->d_name, &c[n]))
			continue;
		/* one GPU may have several card nodes; keep the first */
		for (size_t i = 0; i < n; i++)
			dup = dup || strcmp(c[i].dev.pci_bus_id, c[n].dev.pci_bus_id) == 0;
		if (!dup)
			n++;
	}
	qsort(c, n, sizeof(*c), by_address);
	apply_visible(c, n, keep, res);
	for (size_t i = 0; i < n; i++) {
		if (!keep[i])
			continue;
		device_list_add(out, &c[i].dev);
		res->found++;
		DEVICE_SET(st->gpus[st->n].pci_bus_id, c[i].dev.pci_bus_id);
		memcpy(st->gpus[st->n].dir, c[i].dir, sizeof(c[i].dir));
		st->n++;
	}
out:
	if (dir != NULL)
		closedir(dir);
	free(c);
}

static void sysfs_gpu_refresh(void **state, const struct config *cfg, struct device_list *devs,
			      struct probe_result *res)
{
	const struct sysfs_state *st = *state;

	(void)cfg;
	res->ok = true;
	res->available = st != NULL;
	if (st == NULL)
		return;
	for (size_t i = 0; i < devs->n; i++) {
		struct device *d = &devs->v[i];

		if (d->type != DEVICE_GPU || !(d->sources & SOURCE_SYSFS))
			continue;
		for (size_t k = 0; k < st->n; k++) {
			if (strcmp(st->gpus[k].pci_bus_id, d->pci_bus_id) == 0) {
				read_telemetry(st->gpus[k].dir, d);
				res->found++;
				break;
			}
		}
	}
}

const struct probe_ops probe_sysfs_gpu_ops = {
	.name = "sysfs-gpu",
	.trust = 3,
	.probe = sysfs_gpu_probe,
	.refresh = sysfs_gpu_refresh,
	.release = free,
};
