/*
 * device: one compute device as acceld describes it, whatever APIs saw it.
 *
 * Unknown stays unknown: numbers use DEVICE_UNKNOWN (NaN) or 0 where 0 cannot be a real value (memory, counts,
 * clocks), strings are empty, and device_to_json leaves such fields out. Never store a sentinel such as -1 or
 * 4294967295 that a driver returned for "not available".
 */
#ifndef ACCELD_DEVICE_H
#define ACCELD_DEVICE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define DEVICE_UNKNOWN NAN

/* Room for a device id and its NUL ("cpu:0", "gpu:12", "tpu:255"); every buffer holding an id has this size. */
#define DEVICE_ID_MAX 16

enum device_type { DEVICE_CPU, DEVICE_GPU, DEVICE_TPU };

/* Where detection saw a device (GET /devices: seen_by); a merged device carries several. What runs jobs on it is
 * the executor's backends' business (backend.h), not a source. */
enum device_source {
	SOURCE_OPENCL = 1u << 0,
	SOURCE_NVML = 1u << 1,
	SOURCE_SYSFS = 1u << 2,
	SOURCE_HWLOC = 1u << 3,
	SOURCE_PCI = 1u << 4,
	SOURCE_DEVNODE = 1u << 5,
	SOURCE_ENV = 1u << 6,
	SOURCE_METADATA = 1u << 7,
	SOURCE_CGROUP = 1u << 8,
};

struct device_peak {
	double fp32_tflops;
	double bf16_tflops;
	double int8_tops;
	double memory_gbytes_per_s;
	char source[512];           /* room for a health check's figures and the estimate they replace, whole */
};

struct device_telemetry {
	double utilization_ratio;   /* 0..1 */
	double temperature_celsius;
	double power_watts;
	double power_limit_watts;
	double energy_joules;       /* counter since driver load, where the device gives one */
	uint64_t memory_used_bytes; /* 0 unknown */
	int64_t sampled_at_ms;      /* 0 = never sampled */
	double clock_mhz;           /* the clock now: SM clock of a GPU, mean cpufreq clock of a CPU's usable CPUs */
	unsigned throttle_reasons;  /* DEVICE_THROTTLE_* bits active now (NVML's clock event reasons) */
	bool throttle_known;        /* throttle_reasons was read */
	double ecc_uncorrected;     /* uncorrectable ECC errors since the driver loaded (volatile count); NAN unknown */
	double ecc_corrected;       /* correctable ones; NAN unknown */
	int retired_pages_pending;  /* -1 unknown, 0 no, 1: pages retired (or rows remapped) wait for a GPU reset */
};

/* Why a device's clocks are held down (the bits of NVML's nvmlClocksEventReasons, so they are copied as read). */
enum device_throttle {
	DEVICE_THROTTLE_IDLE = 0x1,
	DEVICE_THROTTLE_APP_CLOCKS = 0x2,
	DEVICE_THROTTLE_SW_POWER_CAP = 0x4,
	DEVICE_THROTTLE_HW_SLOWDOWN = 0x8,
	DEVICE_THROTTLE_SYNC_BOOST = 0x10,
	DEVICE_THROTTLE_SW_THERMAL = 0x20,
	DEVICE_THROTTLE_HW_THERMAL = 0x40,
	DEVICE_THROTTLE_HW_POWER_BRAKE = 0x80,
	DEVICE_THROTTLE_DISPLAY_CLOCKS = 0x100,
};

/* The throttle reasons that say the device is slowed by heat or a hardware limit, not by a setting or idleness. */
#define DEVICE_THROTTLE_HARMFUL                                                                              \
	(DEVICE_THROTTLE_HW_SLOWDOWN | DEVICE_THROTTLE_SW_THERMAL | DEVICE_THROTTLE_HW_THERMAL |              \
	 DEVICE_THROTTLE_HW_POWER_BRAKE)

/* The names of the throttle bits set in bits, in a fixed order, as a new JSON array ("sw_power_cap", ...). */
json_t *device_throttle_json(unsigned bits);

/* "hw_slowdown, sw_thermal": the names of the bits, for messages. */
void device_throttle_text(unsigned bits, char *out, size_t outsz);

struct device_price {
	double usd_per_hour;       /* on demand; NAN unknown */
	double usd_per_hour_spot;  /* NAN unknown */
	char unit[16];             /* "chip", "gpu", "host" */
	char source[160];
	char as_of[16];            /* the date of the figure ("2026-06-18"), "" unknown */
};

struct device_cpu {
	unsigned packages;
	unsigned cores;
	unsigned pus;              /* hardware threads visible to the process (cpuset) */
	unsigned numa_nodes;
	double effective_cpus;     /* after the cgroup quota; NAN unknown */
	double quota_cpus;         /* cpu.max or cfs quota/period; NAN when unlimited */
	char cpuset[256];          /* "0-3,8" */
	uint64_t cache_bytes[4];   /* L1d, L2, L3, L4 per instance; 0 unknown */
	char isa[64];              /* "avx512f", "avx2", ... the widest vector extension found */
};

struct device_gpu {
	char driver_version[32];
	char cuda_version[16];
	char compute_capability[8]; /* "9.0" */
	int mig_mode;               /* -1 unknown, 0 off, 1 on */
	unsigned clock_max_mhz;
	unsigned memory_clock_mhz;
	unsigned pci_device_id;     /* 0 unknown */
	char driver[32];            /* kernel driver: "amdgpu", "i915", "xe", "nvidia" */
	unsigned slowdown_temperature_celsius; /* where the GPU starts to slow itself down; 0 unknown */
	int cuda_ordinal;           /* where CUDA counts an NVIDIA GPU in this process, in PCI order as acceld makes it
				       count: its place in CUDA_VISIBLE_DEVICES when that is set; -1 unknown */
	unsigned nvlink_domain;     /* GPUs NVLink joins it with, itself included (1: none); 0 unknown */
	unsigned nvlink_group;      /* which NVLink domain of the host it is in, from 1 in GPU order; 0 unknown */
};

struct device_tpu {
	char generation[16];        /* "v4", "v5e", "v5p", "v6e", "tpu7x" */
	char accelerator_type[32];  /* as GCP names the slice: "v6e-8" */
	char topology[32];          /* "2x4" */
	char name[64];              /* TPU_NAME: the TPU resource's name, where the environment gives it */
	int worker_id;              /* -1 unknown */
	unsigned chips;             /* chips on this host */
	unsigned cores_per_chip;
	unsigned chip_index;        /* this chip's index on the host */
	char device_node[64];       /* "/dev/accel0" or "/dev/vfio/12" */
};

struct device_opencl {
	bool present;
	char platform[64];
	char name[128];
	char version[160];
	char driver_version[64];
	uint64_t global_mem_bytes;
	uint64_t local_mem_bytes;
	uint64_t max_alloc_bytes;
	unsigned compute_units;
	unsigned clock_mhz;
	char extensions_summary[256]; /* the extensions acceld cares about, space-separated */
	unsigned platform_index;    /* indices for the executor to find the cl_device_id again */
	unsigned device_index;
};

/*
 * The PCIe link of a PCI device (NVML for NVIDIA GPUs, sysfs for any other): generation (1..6) and lane count now
 * and at most; 0 unknown. An idle link often drops its generation to save power (NVML's current generation is 1 on
 * many idle GPUs), so the rate a transfer can reach is device_pcie_gbytes_per_s's, not the current generation's.
 */
struct device_pcie {
	unsigned generation;
	unsigned width;
	unsigned max_generation;    /* what the device and its slot allow together, where the source says so */
	unsigned max_width;
};

/* The last health check of a device (devcheck.h), as GET /devices shows it. */
struct device_check {
	char state[16];             /* the last check's "succeeded", "failed" or "interrupted"; "" when none ended */
	char id[24];                /* the check's id */
	char level[8];              /* "quick", "long" */
	char verdict[8];            /* "pass", "warn", "fail"; "" while running or interrupted */
	double gflops;              /* its measured matrix GFLOP/s; NAN unknown */
	double gbytes_per_s;        /* its measured memory GB/s; NAN unknown */
	int64_t finished_ms;        /* 0 while running */
	char running_id[24];        /* a check running now ("" none), besides the last one */
};

struct device {
	char id[DEVICE_ID_MAX];     /* "cpu:0", "gpu:1", "tpu:3": stable, assigned by detect */
	enum device_type type;
	char vendor[32];            /* "NVIDIA", "AMD", "Intel", "Google", or the CPU vendor */
	char model[128];
	char accelerator_type[32];  /* normalised: "H100", "MI300X", "TPU-V6E"; "" unknown */
	char spec_key[32];          /* row of the accelerator table, "" when the model is not in it */
	char uuid[96];
	char pci_bus_id[32];        /* "0000:65:00.0", lower case */
	int numa_node;              /* -1 unknown */
	uint64_t memory_total_bytes;
	uint64_t memory_available_bytes;
	unsigned compute_units;
	unsigned clock_mhz;
	unsigned sources;           /* enum device_source bits */
	unsigned trust;             /* how far its view is trusted when views merge: its probe's (probe.h) */
	bool executable;            /* /run has a backend for it */
	struct device_peak peak;
	struct device_telemetry telemetry;
	struct device_price price;
	struct device_cpu cpu;      /* type == DEVICE_CPU */
	struct device_gpu gpu;      /* type == DEVICE_GPU */
	struct device_tpu tpu;      /* type == DEVICE_TPU */
	struct device_opencl opencl;
	struct device_pcie pcie;    /* all 0 for a device without a PCIe link (CPUs) or when unknown */
	struct device_check check;  /* the last health check (devcheck.h); state "" when there has been none */
};

/* Sets every field to unknown (NaN, 0, "", -1 where documented). */
void device_init(struct device *d, enum device_type type);

const char *device_type_name(enum device_type type); /* "cpu", "gpu", "tpu" */

/*
 * The place of a type in the automatic preference order TPU > GPU > CPU (0 for TPUs): the one order that selection,
 * placement and the NFD labels use. (The registry lists devices in enum order, CPUs first, for stable ids.)
 */
unsigned device_type_rank(enum device_type type);

/* Parses "cpu"|"gpu"|"tpu"; returns 0, or -1. */
int device_type_parse(const char *text, enum device_type *out);

/*
 * Whether text is a device id: a type (cpu, gpu, tpu), a colon and 1 to 6 digits ("gpu:12"). The one syntax of ids,
 * which every parser of an id asks; whether such a device exists is the registry's answer (detect_find).
 */
bool device_id_valid(const char *text);

/* "a device id (cpu:N, gpu:N or tpu:N)": what device_id_valid takes, for messages. */
#define DEVICE_ID_SYNTAX "a device id (cpu:N, gpu:N or tpu:N)"

/*
 * A PCIe link's theoretical rate in GB/s (10^9 bytes) per direction for a generation (1..6) and a lane count: the
 * one table of transfer rates per generation (2.5, 5, 8, 16, 32, 64 GT/s) and their encodings (8b/10b for 1-2,
 * 128b/130b for 3-5, FLIT for 6 at 242/256). NAN for an unknown generation or width.
 */
double device_pcie_lane_gbytes_per_s(unsigned generation, unsigned width);

/*
 * The rate a transfer over d's link can reach: the highest generation the link allows (max_generation, or the
 * current one when the maximum is unknown or lower) at the width it trained at (the current width, or the maximum
 * when that is unknown). NAN when the link is unknown.
 */
double device_pcie_gbytes_per_s(const struct device_pcie *p);

/* The link as the API shows it (GET /devices' pcie): a new object, empty when the link is unknown. */
json_t *device_pcie_json(const struct device_pcie *p);

/* The generation whose transfer rate is gts GT/s (sysfs' "16.0 GT/s PCIe"), 0 when none is. */
unsigned device_pcie_generation_of(double gts);

/* The names of the source bits, in a fixed order, as a new JSON array. */
json_t *device_sources_json(unsigned sources);

/* The device as the API shows it (/devices/{id}): a new object, unknown fields left out. */
json_t *device_to_json(const struct device *d);

/* Copies src into a fixed-size field, cutting at the field's size. */
#define DEVICE_SET(field, src) device_set_str((field), sizeof(field), (src))
void device_set_str(char *dst, size_t dstsz, const char *src);

/*
 * Copies a string read from hardware or a driver into a fixed-size field without its leading and trailing white
 * space, cutting at the field's size (and trimming again where the cut falls after a blank). CPUID brand strings,
 * OpenCL and NVML names and sysfs files come padded; every probe stores such strings through this. src may be the
 * field itself (trimming in place); NULL stores "".
 */
#define DEVICE_SET_TRIMMED(field, src) device_set_trimmed((field), sizeof(field), (src))
void device_set_trimmed(char *dst, size_t dstsz, const char *src);

/* A growable list of devices (owned). */
struct device_list {
	struct device *v;
	size_t n;
	size_t cap;
};

void device_list_init(struct device_list *l);
/* Appends a copy of d; returns the stored copy. */
struct device *device_list_add(struct device_list *l, const struct device *d);
void device_list_release(struct device_list *l);

#endif
