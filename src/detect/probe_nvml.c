/*
 * probe_nvml: NVIDIA GPUs through NVML, loaded at run time with dlopen so acceld runs (and builds) on hosts without
 * the driver. The few NVML types used are declared here; `_v2`/`_v3` entry points are preferred when the library
 * has them and every symbol past the core four is optional. A call that fails is noted in probe_result.why and the
 * GPU keeps what the other calls returned. CUDA_VISIBLE_DEVICES is honoured (visible.h).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hwfile.h"
#include "core/mem.h"
#include "detect/probe.h"
#include "detect/visible.h"

/* --- the slice of the NVML API acceld uses (nvml.h is not needed to build) --- */

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_THRESHOLD_SLOWDOWN 1
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_NAME_SIZE 96
#define NVML_UUID_SIZE 96
#define NVML_DRIVER_SIZE 80

struct nvml_memory {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
};

struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total;
	unsigned long long reserved;
	unsigned long long free;
	unsigned long long used;
};

#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(struct nvml_memory_v2) | (2u << 24)))

struct nvml_utilization {
	unsigned int gpu;
	unsigned int memory;
};

/* The v2/v3 layout; the v1 call writes a shorter struct with the same first fields, so this buffer fits both. */
struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pci_device_id;
	unsigned int pci_subsystem_id;
	char bus_id[32];
};

typedef nvml_ret (*nvml_void_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvml_ret);
typedef nvml_ret (*nvml_text_fn)(char *, unsigned int);
typedef nvml_ret (*nvml_int_fn)(int *);
typedef nvml_ret (*nvml_count_fn)(unsigned int *);
typedef nvml_ret (*nvml_handle_by_index_fn)(unsigned int, nvml_device *);
typedef nvml_ret (*nvml_handle_by_text_fn)(const char *, nvml_device *);
typedef nvml_ret (*nvml_dev_text_fn)(nvml_device, char *, unsigned int);
typedef nvml_ret (*nvml_dev_pci_fn)(nvml_device, struct nvml_pci_info *);
typedef nvml_ret (*nvml_dev_memory_fn)(nvml_device, struct nvml_memory *);
typedef nvml_ret (*nvml_dev_memory_v2_fn)(nvml_device, struct nvml_memory_v2 *);
typedef nvml_ret (*nvml_dev_util_fn)(nvml_device, struct nvml_utilization *);
typedef nvml_ret (*nvml_dev_sensor_fn)(nvml_device, int, unsigned int *);
typedef nvml_ret (*nvml_dev_uint_fn)(nvml_device, unsigned int *);
typedef nvml_ret (*nvml_dev_u64_fn)(nvml_device, unsigned long long *);
typedef nvml_ret (*nvml_dev_two_int_fn)(nvml_device, int *, int *);
typedef nvml_ret (*nvml_dev_two_uint_fn)(nvml_device, unsigned int *, unsigned int *);
typedef nvml_ret (*nvml_dev_child_fn)(nvml_device, unsigned int, nvml_device *);
typedef nvml_ret (*nvml_dev_ecc_fn)(nvml_device, int, int, unsigned long long *);
typedef nvml_ret (*nvml_dev_int_fn)(nvml_device, int *);
typedef nvml_ret (*nvml_dev_remap_fn)(nvml_device, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
typedef nvml_ret (*nvml_p2p_fn)(nvml_device, nvml_device, int, int *);

/* nvmlDeviceGetP2PStatus's capability index for NVLink and its OK status (nvml.h: NVML_P2P_CAPS_INDEX_NVLINK,
 * NVML_P2P_STATUS_OK), as vLLM and others ask it */
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

struct nvml_api {
	nvml_void_fn init;
	nvml_void_fn shutdown;
	nvml_count_fn device_count;
	nvml_handle_by_index_fn handle_by_index;
	/* optional from here on */
	nvml_error_string_fn error_string;
	nvml_text_fn driver_version;
	nvml_int_fn cuda_version;
	nvml_handle_by_text_fn handle_by_uuid;
	nvml_dev_text_fn name;
	nvml_dev_text_fn uuid;
	nvml_dev_pci_fn pci_info;
	bool pci_info_v1;                       /* the resolved call writes only the legacy bus id */
	nvml_dev_memory_fn memory;
	nvml_dev_memory_v2_fn memory_v2;
	nvml_dev_util_fn utilization;
	nvml_dev_sensor_fn temperature;
	nvml_dev_uint_fn power_usage;
	nvml_dev_uint_fn power_limit;
	nvml_dev_u64_fn energy;
	nvml_dev_sensor_fn max_clock;
	nvml_dev_two_int_fn compute_capability;
	nvml_dev_two_uint_fn mig_mode;
	nvml_dev_uint_fn numa_node;
	nvml_dev_uint_fn max_mig_count;
	nvml_dev_child_fn mig_handle;
	nvml_dev_sensor_fn clock;               /* the clock now */
	nvml_dev_u64_fn throttle_reasons;
	nvml_dev_ecc_fn ecc_errors;
	nvml_dev_int_fn retired_pending;
	nvml_dev_remap_fn remapped_rows;
	nvml_dev_sensor_fn temperature_threshold;
	nvml_p2p_fn p2p_status;
	nvml_dev_uint_fn pcie_generation;       /* the link now (an idle GPU drops its generation) */
	nvml_dev_uint_fn pcie_width;
	nvml_dev_uint_fn pcie_max_generation;   /* what the GPU and its slot allow together */
	nvml_dev_uint_fn pcie_max_width;
};

#define NVML_MAX_GPUS 64
#define NVML_MAX_MIG 7

/* What the probe remembers of a GPU it added, so refresh() finds it again. */
struct nvml_gpu {
	unsigned index;
	char uuid[NVML_UUID_SIZE];
	char pci_bus_id[32];
};

struct nvml_state {
	void *lib;
	struct nvml_api api;
	bool inited;
	struct nvml_gpu gpus[NVML_MAX_GPUS];
	size_t ngpus;
};

/* One GPU while probing: its device entry, handle and whether the handle could be had at all. */
struct nvml_entry {
	bool valid;
	nvml_device handle;
	struct device dev;
};


/* Resolves the first of the NULL-terminated names the library exports into slot; false when none is there. */
static bool resolve(void *lib, void *slot, size_t slotsz, ...)
{
	const char *name;
	void *sym = NULL;
	va_list ap;

	va_start(ap, slotsz);
	for (name = va_arg(ap, const char *); sym == NULL && name != NULL; name = va_arg(ap, const char *))
		sym = dlsym(lib, name);
	va_end(ap);
	/* ISO C has no object-to-function pointer cast; POSIX guarantees the representations agree */
	if (sym != NULL)
		memcpy(slot, &sym, slotsz);
	return sym != NULL;
}

#define RESOLVE(lib, field, ...) resolve((lib), &(field), sizeof(field), __VA_ARGS__, (const char *)NULL)

static bool load_api(void *lib, struct nvml_api *a)
{
	bool core = RESOLVE(lib, a->init, "nvmlInit_v2", "nvmlInit") && RESOLVE(lib, a->shutdown, "nvmlShutdown") &&
		    RESOLVE(lib, a->device_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount") &&
		    RESOLVE(lib, a->handle_by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");

	if (!core)
		return false;
	RESOLVE(lib, a->error_string, "nvmlErrorString");
	RESOLVE(lib, a->driver_version, "nvmlSystemGetDriverVersion");
	RESOLVE(lib, a->cuda_version, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
	RESOLVE(lib, a->handle_by_uuid, "nvmlDeviceGetHandleByUUID");
	RESOLVE(lib, a->name, "nvmlDeviceGetName");
	RESOLVE(lib, a->uuid, "nvmlDeviceGetUUID");
	if (!RESOLVE(lib, a->pci_info, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"))
		a->pci_info_v1 = RESOLVE(lib, a->pci_info, "nvmlDeviceGetPciInfo");
	RESOLVE(lib, a->memory_v2, "nvmlDeviceGetMemoryInfo_v2");
	RESOLVE(lib, a->memory, "nvmlDeviceGetMemoryInfo");
	RESOLVE(lib, a->utilization, "nvmlDeviceGetUtilizationRates");
	RESOLVE(lib, a->temperature, "nvmlDeviceGetTemperature");
	RESOLVE(lib, a->power_usage, "nvmlDeviceGetPowerUsage");
	RESOLVE(lib, a->power_limit, "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit");
	RESOLVE(lib, a->energy, "nvmlDeviceGetTotalEnergyConsumption");
	RESOLVE(lib, a->max_clock, "nvmlDeviceGetMaxClockInfo");
	RESOLVE(lib, a->compute_capability, "nvmlDeviceGetCudaComputeCapability");
	RESOLVE(lib, a->mig_mode, "nvmlDeviceGetMigMode");
	RESOLVE(lib, a->numa_node, "nvmlDeviceGetNumaNodeId");
	RESOLVE(lib, a->max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
	RESOLVE(lib, a->mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
	RESOLVE(lib, a->clock, "nvmlDeviceGetClockInfo");
	/* renamed in CUDA 12.2's NVML; the old name stays exported */
	RESOLVE(lib, a->throttle_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetCurrentClocksThrottleReasons");
	RESOLVE(lib, a->ecc_errors, "nvmlDeviceGetTotalEccErrors");
	RESOLVE(lib, a->retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
	RESOLVE(lib, a->remapped_rows, "nvmlDeviceGetRemappedRows");
	RESOLVE(lib, a->temperature_threshold, "nvmlDeviceGetTemperatureThreshold");
	RESOLVE(lib, a->p2p_status, "nvmlDeviceGetP2PStatus");
	RESOLVE(lib, a->pcie_generation, "nvmlDeviceGetCurrPcieLinkGeneration");
	RESOLVE(lib, a->pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
	RESOLVE(lib, a->pcie_max_generation, "nvmlDeviceGetMaxPcieLinkGeneration");
	RESOLVE(lib, a->pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
	return true;
}

static const char *err_text(const struct nvml_state *st, nvml_ret rc)
{
	static _Thread_local char fallback[32];
	const char *s = st->api.error_string ? st->api.error_string(rc) : NULL;

	if (s == NULL || *s == '\0') {
		snprintf(fallback, sizeof(fallback), "NVML error %d", rc);
		s = fallback;
	}
	return s;
}

/* True on success; other outcomes but "not supported" are noted against the GPU. */
static bool call_ok(const struct nvml_state *st, nvml_ret rc, unsigned gpu, const char *what,
		    struct probe_result *res)
{
	if (rc == NVML_SUCCESS)
		return true;
	if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_FUNCTION_NOT_FOUND)
		probe_note(res, "gpu %u %s: %s", gpu, what, err_text(st, rc));
	return false;
}

static void state_release(void *p)
{
	struct nvml_state *st = p;

	if (st == NULL)
		return;
	if (st->inited)
		st->api.shutdown();
	if (st->lib != NULL)
		dlclose(st->lib);
	free(st);
}

/* Opens the library named by the configuration; the stock name falls back to the unversioned link. */
static void *open_library(const struct config *cfg, struct probe_result *res)
{
	static const char stock[] = "libnvidia-ml.so.1";
	const char *name = cfg->nvml_library && *cfg->nvml_library ? cfg->nvml_library : stock;
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (lib == NULL && strcmp(name, stock) == 0)
		lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();

		probe_note(res, "NVML not loaded: %s", e ? e : name);
	}
	return lib;
}

/*
 * What a health check reads besides load: the SM clock now, why the clocks are held down, the ECC error counts since
 * the driver loaded, and whether retired pages or remapped rows wait for a reset. Each is optional (consumer GPUs
 * have no ECC, older drivers no row remapping); an answer of "not supported" leaves the value unknown.
 */
static void read_health(const struct nvml_state *st, nvml_device h, unsigned gi, struct device *d,
			struct probe_result *res)
{
	const struct nvml_api *a = &st->api;
	unsigned v;
	unsigned long long bits;
	unsigned long long count;
	int pending;
	unsigned corr, unc, remap_pending, failed;

	if (a->clock && call_ok(st, a->clock(h, NVML_CLOCK_SM, &v), gi, "sm clock", res) && v > 0 && v < 100000)
		d->telemetry.clock_mhz = v;
	if (a->throttle_reasons && call_ok(st, a->throttle_reasons(h, &bits), gi, "clock event reasons", res)) {
		d->telemetry.throttle_known = true;
		d->telemetry.throttle_reasons = (unsigned)(bits & 0xffffu);
	}
	if (a->ecc_errors && call_ok(st, a->ecc_errors(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &count),
				     gi, "ecc errors", res) && count < (1ull << 53))
		d->telemetry.ecc_uncorrected = (double)count;
	if (a->ecc_errors && call_ok(st, a->ecc_errors(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &count),
				     gi, "ecc errors", res) && count < (1ull << 53))
		d->telemetry.ecc_corrected = (double)count;
	if (a->retired_pending && call_ok(st, a->retired_pending(h, &pending), gi, "retired pages", res))
		d->telemetry.retired_pages_pending = pending != 0;
	/* GPUs since the A100 remap rows instead of retiring pages */
	if (a->remapped_rows && call_ok(st, a->remapped_rows(h, &corr, &unc, &remap_pending, &failed), gi,
					"remapped rows", res))
		d->telemetry.retired_pages_pending = d->telemetry.retired_pages_pending == 1 || remap_pending != 0 ||
						     failed != 0;
}

/* Memory, utilization, temperature, power and energy: the values refresh() keeps current. */
static void read_telemetry(const struct nvml_state *st, nvml_device h, unsigned gi, struct device *d,
			   struct probe_result *res)
{
	const struct nvml_api *a = &st->api;
	unsigned long long total = 0, free_b = 0, used = 0;
	bool have_mem = false;
	struct nvml_utilization u;
	unsigned v;
	unsigned long long mj;

	if (a->memory_v2) {
		struct nvml_memory_v2 m = {.version = NVML_MEMORY_V2_VERSION};

		have_mem = call_ok(st, a->memory_v2(h, &m), gi, "memory", res);
		total = m.total;
		free_b = m.free;
		used = m.used;
	} else if (a->memory) {
		struct nvml_memory m = {0, 0, 0};

		have_mem = call_ok(st, a->memory(h, &m), gi, "memory", res);
		total = m.total;
		free_b = m.free;
		used = m.used;
	}
	if (have_mem && total > 0) {
		d->memory_total_bytes = total;
		d->memory_available_bytes = free_b;
		d->telemetry.memory_used_bytes = used;
	}
	if (a->utilization && call_ok(st, a->utilization(h, &u), gi, "utilization", res) && u.gpu <= 100)
		d->telemetry.utilization_ratio = u.gpu / 100.0;
	if (a->temperature && call_ok(st, a->temperature(h, NVML_TEMPERATURE_GPU, &v), gi, "temperature", res) &&
	    v < 200)
		d->telemetry.temperature_celsius = v;
	/* milliwatts; anything past 100 kW is a driver's "unknown" */
	if (a->power_usage && call_ok(st, a->power_usage(h, &v), gi, "power", res) && v < 100000000u)
		d->telemetry.power_watts = v / 1000.0;
	if (a->power_limit && call_ok(st, a->power_limit(h, &v), gi, "power limit", res) && v > 0 &&
	    v < 100000000u)
		d->telemetry.power_limit_watts = v / 1000.0;
	/* millijoules since the driver loaded */
	if (a->energy && call_ok(st, a->energy(h, &mj), gi, "energy", res))
		d->telemetry.energy_joules = (double)mj / 1000.0;
	read_health(st, h, gi, d, res);
	d->telemetry.sampled_at_ms = clock_real_ms();
}

static void read_pci(const struct nvml_state *st, nvml_device h, unsigned gi, struct device *d,
		     struct probe_result *res)
{
	struct nvml_pci_info p;
	char text[40];
	size_t len;

	if (st->api.pci_info == NULL)
		return;
	memset(&p, 0, sizeof(p));
	if (!call_ok(st, st->api.pci_info(h, &p), gi, "pci info", res))
		return;
	len = st->api.pci_info_v1 ? sizeof(p.bus_id_legacy) : sizeof(p.bus_id);
	memcpy(text, st->api.pci_info_v1 ? p.bus_id_legacy : p.bus_id, len);
	text[len] = '\0';
	DEVICE_SET_TRIMMED(text, text);
	if (hwfile_pci_normalise(text, d->pci_bus_id, sizeof(d->pci_bus_id)) != 0)
		snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%04x:%02x:%02x.0", p.domain & 0xffffu,
			 p.bus & 0xffu, p.device & 0x1fu);
	/* NVML packs the PCI device id above the vendor id */
	if ((p.pci_device_id & 0xffffu) == 0x10de)
		d->gpu.pci_device_id = p.pci_device_id >> 16;
}

/* One link figure: a generation (1..6) or a width (1..32) NVML gave, or 0. */
static unsigned pcie_value(const struct nvml_state *st, nvml_dev_uint_fn fn, nvml_device h, unsigned gi,
			   const char *what, unsigned max, struct probe_result *res)
{
	unsigned v = 0;

	if (fn == NULL || !call_ok(st, fn(h, &v), gi, what, res) || v < 1 || v > max)
		return 0;
	return v;
}

/*
 * The PCIe link from NVML; what NVML cannot say comes from sysfs (probe_pcie_sysfs), as for any PCI device. The
 * current generation is read again on every probe, but a check judges transfers against the maximum.
 */
static void read_pcie(const struct nvml_state *st, const struct config *cfg, nvml_device h, unsigned gi,
		      struct device *d, struct probe_result *res)
{
	const struct nvml_api *a = &st->api;

	d->pcie.generation = pcie_value(st, a->pcie_generation, h, gi, "pcie generation", 6, res);
	d->pcie.width = pcie_value(st, a->pcie_width, h, gi, "pcie width", 32, res);
	d->pcie.max_generation = pcie_value(st, a->pcie_max_generation, h, gi, "pcie max generation", 6, res);
	d->pcie.max_width = pcie_value(st, a->pcie_max_width, h, gi, "pcie max width", 32, res);
	probe_pcie_sysfs(cfg->sysfs_root, d);
}

/* The facts that do not change while the driver is loaded. */
static void read_static(const struct nvml_state *st, const struct config *cfg, nvml_device h, unsigned gi,
			struct device *d, struct probe_result *res)
{
	const struct nvml_api *a = &st->api;
	char text[NVML_NAME_SIZE];
	unsigned v, pending;
	int major, minor;
	int64_t numa;

	if (a->name && call_ok(st, a->name(h, text, sizeof(text)), gi, "name", res)) {
		text[sizeof(text) - 1] = '\0';
		DEVICE_SET_TRIMMED(d->model, text);
	}
	if (a->uuid && call_ok(st, a->uuid(h, d->uuid, sizeof(d->uuid)), gi, "uuid", res)) {
		d->uuid[sizeof(d->uuid) - 1] = '\0';
		DEVICE_SET_TRIMMED(d->uuid, d->uuid);
	} else {
		d->uuid[0] = '\0';
	}
	read_pci(st, h, gi, d, res);
	read_pcie(st, cfg, h, gi, d, res);
	if (a->max_clock && call_ok(st, a->max_clock(h, NVML_CLOCK_SM, &v), gi, "max sm clock", res) && v > 0 &&
	    v < 100000) {
		d->gpu.clock_max_mhz = v;
		d->clock_mhz = v;
	}
	if (a->max_clock && call_ok(st, a->max_clock(h, NVML_CLOCK_MEM, &v), gi, "max memory clock", res) &&
	    v > 0 && v < 100000)
		d->gpu.memory_clock_mhz = v;
	if (a->temperature_threshold &&
	    call_ok(st, a->temperature_threshold(h, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v), gi, "slowdown temperature",
		    res) && v > 0 && v < 200)
		d->gpu.slowdown_temperature_celsius = v;
	if (a->compute_capability &&
	    call_ok(st, a->compute_capability(h, &major, &minor), gi, "compute capability", res) && major > 0 &&
	    major < 100 && minor >= 0 && minor < 100)
		snprintf(d->gpu.compute_capability, sizeof(d->gpu.compute_capability), "%d.%d", major, minor);
	if (a->mig_mode && call_ok(st, a->mig_mode(h, &v, &pending), gi, "mig mode", res) && v <= 1)
		d->gpu.mig_mode = (int)v;
	if (a->numa_node && call_ok(st, a->numa_node(h, &v), gi, "numa node", res) && v < 4096)
		d->numa_node = (int)v;
	else if (d->pci_bus_id[0] != '\0' &&
		 hwfile_read_i64(&numa, "%s/bus/pci/devices/%s/numa_node", cfg->sysfs_root, d->pci_bus_id) == 0 &&
		 numa >= 0 && numa < 4096)
		d->numa_node = (int)numa;
}

/* The system-wide driver and CUDA versions, shared by every GPU. */
static void read_versions(const struct nvml_state *st, char *driver, size_t driversz, char *cuda, size_t cudasz,
			  struct probe_result *res)
{
	char text[NVML_DRIVER_SIZE];
	int v;

	driver[0] = '\0';
	cuda[0] = '\0';
	if (st->api.driver_version && call_ok(st, st->api.driver_version(text, sizeof(text)), 0, "driver version",
					      res)) {
		text[sizeof(text) - 1] = '\0';
		device_set_trimmed(driver, driversz, text);
	}
	/* 12040 is CUDA 12.4 */
	if (st->api.cuda_version && call_ok(st, st->api.cuda_version(&v), 0, "cuda version", res) && v > 0 &&
	    v < 1000000)
		snprintf(cuda, cudasz, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* MIG instance UUIDs of the GPUs in MIG mode, for CUDA_VISIBLE_DEVICES=MIG-... */
static size_t list_mig(const struct nvml_state *st, const struct nvml_entry *e, size_t n, char (*uuids)[NVML_UUID_SIZE],
		       size_t *parent, size_t cap)
{
	const struct nvml_api *a = &st->api;
	size_t count = 0;

	if (!a->max_mig_count || !a->mig_handle || !a->uuid)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned max = 0;

		if (!e[i].valid || e[i].dev.gpu.mig_mode != 1 || a->max_mig_count(e[i].handle, &max) != NVML_SUCCESS)
			continue;
		for (unsigned j = 0; j < max && j < NVML_MAX_MIG && count < cap; j++) {
			nvml_device mh;

			if (a->mig_handle(e[i].handle, j, &mh) != NVML_SUCCESS ||
			    a->uuid(mh, uuids[count], NVML_UUID_SIZE) != NVML_SUCCESS)
				continue;
			uuids[count][NVML_UUID_SIZE - 1] = '\0';
			device_set_trimmed(uuids[count], NVML_UUID_SIZE, uuids[count]);
			parent[count++] = i;
		}
	}
	return count;
}

/*
 * Applies CUDA_VISIBLE_DEVICES to the entries; writes the chosen indices into sel, and where CUDA counts each one
 * into ordinal (its place in the list: CUDA numbers the devices it is shown in the list's order, counting a GPU
 * whose NVML handle failed too), and returns how many.
 */
static size_t select_visible(const struct nvml_state *st, const struct nvml_entry *e, size_t n, size_t *sel,
			     unsigned *ordinal, struct probe_result *res)
{
	const char *uuids[NVML_MAX_GPUS];
	char (*mig)[NVML_UUID_SIZE] = xcalloc(NVML_MAX_GPUS * NVML_MAX_MIG, NVML_UUID_SIZE);
	const char *migp[NVML_MAX_GPUS * NVML_MAX_MIG];
	size_t parent[NVML_MAX_GPUS * NVML_MAX_MIG];
	const char *value = getenv("CUDA_VISIBLE_DEVICES");
	struct visible_set set;
	size_t count, nsel = 0;
	int stopped;

	for (size_t i = 0; i < n; i++)
		uuids[i] = e[i].valid && e[i].dev.uuid[0] ? e[i].dev.uuid : NULL;
	set.n = n;
	set.uuids = uuids;
	set.nmig = value ? list_mig(st, e, n, mig, parent, NVML_MAX_GPUS * NVML_MAX_MIG) : 0;
	for (size_t i = 0; i < set.nmig; i++)
		migp[i] = mig[i];
	set.mig_uuids = migp;
	set.mig_parent = parent;
	count = visible_select(value, &set, sel, NVML_MAX_GPUS, &stopped);
	if (stopped >= 0)
		probe_note(res, "CUDA_VISIBLE_DEVICES entry %d is not a usable GPU; it and later entries are ignored",
		     stopped);
	/* a GPU whose handle failed cannot be shown even when listed */
	for (size_t i = 0; i < count; i++) {
		if (e[sel[i]].valid) {
			ordinal[nsel] = (unsigned)i;
			sel[nsel++] = sel[i];
		}
	}
	free(mig);
	return nsel;
}

/* The root of i's set (path halving). */
static size_t nvlink_root(size_t *parent, size_t i)
{
	while (parent[i] != i) {
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/*
 * Which of the chosen GPUs NVLink joins (GET /devices: gpu.nvlink; a plan keeps tensor parallelism inside one
 * domain): two GPUs are in one domain when NVML says NVLink P2P works between them, directly or through others (an
 * NVSwitch board joins all eight). Each GPU gets the size of its domain and a number for it, the rank of its first
 * GPU; without the call, or when a pair cannot be asked, the domains stay unknown.
 */
static void nvlink_domains(const struct nvml_state *st, struct nvml_entry *e, const size_t *sel, size_t nsel)
{
	size_t parent[NVML_MAX_GPUS];
	unsigned size[NVML_MAX_GPUS] = {0};

	if (st->api.p2p_status == NULL)
		return;
	for (size_t i = 0; i < nsel; i++)
		parent[i] = i;
	for (size_t i = 0; i < nsel; i++) {
		for (size_t j = i + 1; j < nsel; j++) {
			int status = -1;

			if (st->api.p2p_status(e[sel[i]].handle, e[sel[j]].handle, NVML_P2P_CAPS_INDEX_NVLINK, &status) !=
			    NVML_SUCCESS)
				return;
			if (status == NVML_P2P_STATUS_OK)
				parent[nvlink_root(parent, j)] = nvlink_root(parent, i);
		}
	}
	for (size_t i = 0; i < nsel; i++)
		size[nvlink_root(parent, i)]++;
	for (size_t i = 0; i < nsel; i++) {
		size_t root = nvlink_root(parent, i);
		unsigned group = 1;

		for (size_t k = 0; k < root; k++)
			group += nvlink_root(parent, k) == k; /* roots before it: domains numbered in GPU order */
		e[sel[i]].dev.gpu.nvlink_domain = size[root];
		e[sel[i]].dev.gpu.nvlink_group = group;
	}
}

static void nvml_probe(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res)
{
	struct nvml_state *st = *state;
	struct nvml_entry *e = NULL;
	char driver[32], cuda[16];
	size_t sel[NVML_MAX_GPUS];
	unsigned ordinal[NVML_MAX_GPUS];
	unsigned n = 0;
	size_t nsel;
	nvml_ret rc;

	res->ok = true;
	res->available = false;
	res->why[0] = '\0';
	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		*state = st;
	}
	if (st->lib == NULL) {
		st->lib = open_library(cfg, res);
		if (st->lib == NULL)
			goto out;
		if (!load_api(st->lib, &st->api)) {
			probe_note(res, "the NVML library lacks nvmlInit, nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex");
			dlclose(st->lib);
			st->lib = NULL;
			memset(&st->api, 0, sizeof(st->api));
			res->ok = false;
			goto out;
		}
	}
	res->available = true;
	if (!st->inited) {
		rc = st->api.init();
		if (rc != NVML_SUCCESS) {
			probe_note(res, "nvmlInit: %s", err_text(st, rc));
			res->ok = false;
			goto out;
		}
		st->inited = true;
	}
	st->ngpus = 0;
	rc = st->api.device_count(&n);
	if (rc != NVML_SUCCESS) {
		probe_note(res, "nvmlDeviceGetCount: %s", err_text(st, rc));
		res->ok = false;
		goto out;
	}
	if (n > NVML_MAX_GPUS) {
		probe_note(res, "%u GPUs, only the first %d are shown", n, NVML_MAX_GPUS);
		n = NVML_MAX_GPUS;
	}
	read_versions(st, driver, sizeof(driver), cuda, sizeof(cuda), res);
	e = xcalloc(n ? n : 1, sizeof(*e));
	for (unsigned i = 0; i < n; i++) {
		struct device *d = &e[i].dev;

		if (!call_ok(st, st->api.handle_by_index(i, &e[i].handle), i, "handle", res))
			continue;
		e[i].valid = true;
		device_init(d, DEVICE_GPU);
		DEVICE_SET(d->vendor, "NVIDIA");
		DEVICE_SET(d->gpu.driver, "nvidia");
		DEVICE_SET(d->gpu.driver_version, driver);
		DEVICE_SET(d->gpu.cuda_version, cuda);
		d->sources = SOURCE_NVML;
		read_static(st, cfg, e[i].handle, i, d, res);
		read_telemetry(st, e[i].handle, i, d, res);
	}
	{
		unsigned reachable = 0;

		for (unsigned i = 0; i < n; i++)
			reachable += e[i].valid;
		if (n > 0 && reachable == 0)
			res->ok = false; /* the driver counts GPUs and reaches none: fallen off the bus, driver in trouble */
	}
	nsel = select_visible(st, e, n, sel, ordinal, res);
	nvlink_domains(st, e, sel, nsel);
	for (size_t k = 0; k < nsel; k++) {
		struct nvml_entry *g = &e[sel[k]];
		struct nvml_gpu *mem = &st->gpus[st->ngpus++];

		g->dev.gpu.cuda_ordinal = (int)ordinal[k];
		device_list_add(out, &g->dev);
		res->found++;
		mem->index = (unsigned)sel[k];
		DEVICE_SET(mem->uuid, g->dev.uuid);
		DEVICE_SET(mem->pci_bus_id, g->dev.pci_bus_id);
	}
out:
	free(e);
}

/* The remembered GPU a device in the registry came from, or NULL. */
static const struct nvml_gpu *find_gpu(const struct nvml_state *st, const struct device *d)
{
	for (size_t i = 0; i < st->ngpus; i++) {
		const struct nvml_gpu *g = &st->gpus[i];

		if ((g->pci_bus_id[0] && strcmp(g->pci_bus_id, d->pci_bus_id) == 0) ||
		    (g->uuid[0] && strcmp(g->uuid, d->uuid) == 0))
			return g;
	}
	return NULL;
}

static void nvml_refresh(void **state, const struct config *cfg, struct device_list *devs, struct probe_result *res)
{
	struct nvml_state *st = *state;

	(void)cfg;
	res->ok = true;
	res->why[0] = '\0';
	res->available = st != NULL && st->lib != NULL;
	if (st == NULL || !st->inited)
		return;
	for (size_t i = 0; i < devs->n; i++) {
		struct device *d = &devs->v[i];
		const struct nvml_gpu *g;
		nvml_device h;
		nvml_ret rc;

		if (!(d->sources & SOURCE_NVML))
			continue;
		g = find_gpu(st, d);
		if (g == NULL)
			continue;
		rc = st->api.handle_by_uuid && g->uuid[0] ? st->api.handle_by_uuid(g->uuid, &h)
							   : st->api.handle_by_index(g->index, &h);
		if (!call_ok(st, rc, g->index, "handle", res)) {
			res->ok = false;
			continue;
		}
		read_telemetry(st, h, g->index, d, res);
		res->found++;
	}
	if (res->why[0] != '\0')
		res->ok = false;
}

const struct probe_ops probe_nvml_ops = {
	.name = "nvml",
	.trust = 4,
	.probe = nvml_probe,
	.refresh = nvml_refresh,
	.release = state_release,
};
