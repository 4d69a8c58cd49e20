/*
 * A fake libnvidia-ml for the NVML probe's tests, built as $(BUILD)/fakes/libnvml.so.
 *
 * Four GPUs are described; FAKE_NVML_COUNT (default 2) says how many exist: 0 "NVIDIA H100 80GB HBM3" (the memory
 * a real one reports: 85,520,809,984 bytes in all, 480 MiB of them reserved by the driver; tests/gpu/README.md,
 * "Runs"), 1 "NVIDIA L4" (24 GiB), 2 "NVIDIA A100-SXM4-40GB", 3 "Tesla T4". Switches, read on every call:
 *   FAKE_NVML_INIT_FAIL=1         nvmlInit fails with "Driver Not Loaded"
 *   FAKE_NVML_COUNT_FAIL=1        nvmlDeviceGetCount fails
 *   FAKE_NVML_FAIL=call[,call]    these calls fail with "Unknown Error" on GPU FAKE_NVML_FAIL_GPU (default 1);
 *                                 calls: handle name uuid pci memory utilization temperature power power_limit p2p
 *                                 energy clock cc mig numa
 *   FAKE_NVML_FAIL_AFTER=K        every per-GPU call after the K-th one fails with "GPU is lost"
 *   FAKE_NVML_LOST_FILE=PATH      while PATH exists, every per-GPU call fails with "GPU is lost" (a black-box test
 *                                 creates it to lose the GPUs under a running service)
 *   FAKE_NVML_UTIL=P              every GPU reports P% utilisation (default 50 and 10, ...)
 *   FAKE_NVML_MIG=1               GPU 0 is in MIG mode with two instances (MIG-aaaa..., MIG-bbbb...)
 *   FAKE_NVML_NOT_SUPPORTED=call  that call answers "Not Supported" on every GPU
 *   FAKE_NVML_PADDED=1            every string (names, UUIDs, the driver version) comes with blanks around it, as
 *                                 drivers pad fixed-size fields
 *   FAKE_NVML_THROTTLE=thermal    every GPU runs hot (5 degrees past its slowdown temperature) with its SM clock at
 *                                 60 % of the maximum, held down by sw_thermal and hw_thermal; =power: at 85 %,
 *                                 held down by its power cap (sw_power_cap) only. Otherwise the clock is the maximum
 *                                 and no reason is set.
 *   FAKE_NVML_ECC=N               every GPU counts N uncorrectable (and 2N correctable) ECC errors since the driver
 *                                 loaded (default 0)
 *   FAKE_NVML_RETIRED_PENDING=1   every GPU has retired pages waiting for a reset
 *   FAKE_NVML_HGX=N               the host holds N (1 to 8) H100s instead, as an HGX board does (UUIDs
 *                                 GPU-00000000-0000-0000-0000-00000000000N, buses 0x18, 0x2a, 0x3a, ...)
 *   FAKE_NVML_HGX_GPU=K           ... or N copies of GPU K of the four (1: a host of L4 cards, as a GCE g2 has)
 *   FAKE_NVML_NVLINK=all|pairs    nvmlDeviceGetP2PStatus says NVLink joins every GPU (an NVSwitch board) or
 *                                 GPUs 0-1, 2-3, ... (bridges); otherwise no pair (PCIe only)
 *   FAKE_NVML_PROCESSES=gpu:pid[:bytes][,...]  nvmlDeviceGetComputeRunningProcesses (v1, _v2, _v3) lists these
 *                                 processes on these GPUs (by index), each using its bytes (default 1 GiB); otherwise
 *                                 none
 *   FAKE_NVML_MEMORY_USED=bytes   every GPU has this much memory in use (at most all of it), as when another process
 *                                 holds it; otherwise a quarter of it
 * Calls for FAKE_NVML_FAIL and FAKE_NVML_NOT_SUPPORTED also include: processes clock_now throttle ecc retired remap threshold
 * pcie (the four PCIe link calls).
 * The PCIe links (now / at most): the H100 Gen1 x16 / Gen5 x16 and the L4 Gen1 x16 / Gen4 x16 (idle GPUs drop their
 * generation), the A100 Gen4 x16 / Gen4 x16, the T4 Gen3 x8 / Gen3 x16 (a card in an x8 slot).
 * fake_nvml_calls(name) tells a test how often an entry point was called (by its exported name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OK 0
#define ERR_UNINITIALIZED 1
#define ERR_INVALID_ARGUMENT 2
#define ERR_NOT_SUPPORTED 3
#define ERR_INSUFFICIENT_SIZE 7
#define ERR_DRIVER_NOT_LOADED 9
#define ERR_NOT_FOUND 6
#define ERR_GPU_IS_LOST 15
#define ERR_UNKNOWN 999

typedef int nvmlReturn_t;
typedef struct fake_gpu *nvmlDevice_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

struct fake_gpu {
	const char *name;
	const char *uuid;
	const char *bus_id;
	unsigned bus;
	unsigned device_id;
	unsigned long long memory;
	unsigned util;
	unsigned temp;
	unsigned power_mw;
	unsigned limit_mw;
	unsigned sm_max, mem_max;
	int cc_major, cc_minor;
	unsigned numa;
	int index;
	unsigned pcie_gen, pcie_width, pcie_max_gen, pcie_max_width; /* the link now and at most */
};

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)
#define H100_TOTAL 85520809984ull /* 81559 MiB, as nvidia-smi and NVML said of a real H100 80GB HBM3 */
#define H100_RESERVED (480 * MIB)

static struct fake_gpu gpus[] = {
	{"NVIDIA H100 80GB HBM3", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "00000000:65:00.0", 0x65, 0x2330,
	 H100_TOTAL, 50, 41, 312000, 700000, 1980, 2619, 9, 0, 0, 0, 1, 16, 5, 16},
	{"NVIDIA L4", "GPU-89a1c3e0-1111-2222-3333-444455556666", "00000000:CA:00.0", 0xca, 0x27b8, 24 * GIB, 10,
	 55, 27000, 72000, 2040, 6251, 8, 9, 1, 1, 1, 16, 4, 16},
	{"NVIDIA A100-SXM4-40GB", "GPU-5e3c0c9a-aaaa-bbbb-cccc-ddddeeeeffff", "00000000:07:00.0", 0x07, 0x20b0,
	 40 * GIB, 0, 30, 60000, 400000, 1410, 1215, 8, 0, 0, 2, 4, 16, 4, 16},
	{"Tesla T4", "GPU-5e3d0000-aaaa-bbbb-cccc-000000000004", "00000000:08:00.0", 0x08, 0x1eb8, 16 * GIB, 0, 30,
	 20000, 70000, 1590, 5001, 7, 5, 0, 3, 3, 8, 3, 16},
};

static struct fake_gpu migs[] = {
	{"MIG 1g.10gb", "MIG-aaaa1111-0000-0000-0000-000000000001", "", 0, 0, 10 * GIB, 0, 0, 0, 0, 0, 0, 9, 0, 0, 100,
	 0, 0, 0, 0},
	{"MIG 1g.10gb", "MIG-bbbb2222-0000-0000-0000-000000000002", "", 0, 0, 10 * GIB, 0, 0, 0, 0, 0, 0, 9, 0, 0, 101,
	 0, 0, 0, 0},
};

static int inits;
static long device_calls;

/* call counters by exported name, for fake_nvml_calls */
static const char *counted[] = {"nvmlInit", "nvmlInit_v2", "nvmlDeviceGetCount", "nvmlDeviceGetCount_v2",
				"nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByIndex_v2",
				"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetPciInfo_v3",
				"nvmlShutdown", "nvmlDeviceGetHandleByUUID"};
static long counts[sizeof(counted) / sizeof(counted[0])];

long fake_nvml_calls(const char *name);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t rc);
nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *n);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *h);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *h);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int *cur, unsigned int *pending);
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t h, unsigned int *node);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned int *n);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned int i, nvmlDevice_t *mig);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *reasons);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int error_type, int counter_type, unsigned long long *n);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t h, int *pending);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned int *corr, unsigned int *unc, unsigned int *pending,
				       unsigned int *failed);
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t h, int type, unsigned int *t);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned int *v);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned int *v);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned int *v);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned int *v);

static void count(const char *name)
{
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		if (strcmp(counted[i], name) == 0)
			counts[i]++;
}

long fake_nvml_calls(const char *name)
{
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		if (strcmp(counted[i], name) == 0)
			return counts[i];
	return -1;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return dflt;
	n = strtoul(v, &end, 10);
	return *end == '\0' ? (unsigned)n : dflt;
}

/* FAKE_NVML_HGX's board: N copies of one entry (the H100's unless FAKE_NVML_HGX_GPU) with their own names on the bus */
#define HGX_MAX 8
static struct fake_gpu hgx[HGX_MAX];
static char hgx_uuid[HGX_MAX][48];
static char hgx_bus[HGX_MAX][24];

static unsigned hgx_count(void)
{
	unsigned n = env_uint("FAKE_NVML_HGX", 0);

	return n > HGX_MAX ? HGX_MAX : n;
}

static unsigned gpu_count(void)
{
	unsigned n = env_uint("FAKE_NVML_COUNT", 2);

	if (hgx_count() > 0)
		return hgx_count();
	return n > 4 ? 4 : n;
}

/* The i-th GPU of the host as configured now. */
static struct fake_gpu *gpu_at(unsigned i)
{
	static const unsigned buses[HGX_MAX] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

	if (hgx_count() == 0)
		return &gpus[i];
	hgx[i] = gpus[env_uint("FAKE_NVML_HGX_GPU", 0) % 4];
	snprintf(hgx_uuid[i], sizeof(hgx_uuid[i]), "GPU-00000000-0000-0000-0000-%012u", i);
	snprintf(hgx_bus[i], sizeof(hgx_bus[i]), "00000000:%02X:00.0", buses[i]);
	hgx[i].uuid = hgx_uuid[i];
	hgx[i].bus_id = hgx_bus[i];
	hgx[i].bus = buses[i];
	hgx[i].index = (int)i;
	return &hgx[i];
}

/* Whether name is in the comma-separated list held by the variable. */
static int listed(const char *var, const char *name)
{
	const char *v = getenv(var);
	size_t len = strlen(name);

	while (v != NULL && *v != '\0') {
		const char *comma = strchr(v, ',');
		size_t n = comma ? (size_t)(comma - v) : strlen(v);

		if (n == len && strncmp(v, name, n) == 0)
			return 1;
		v = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int lost_file_exists(void)
{
	const char *path = getenv("FAKE_NVML_LOST_FILE");

	return path != NULL && *path != '\0' && access(path, F_OK) == 0;
}

/* The outcome of a per-GPU call before it does anything. */
static nvmlReturn_t gate(nvmlDevice_t h, const char *call)
{
	long after = (long)env_uint("FAKE_NVML_FAIL_AFTER", 0);

	if (inits == 0)
		return ERR_UNINITIALIZED;
	if (h == NULL)
		return ERR_INVALID_ARGUMENT;
	device_calls++;
	if (after > 0 && device_calls > after)
		return ERR_GPU_IS_LOST;
	if (lost_file_exists())
		return ERR_GPU_IS_LOST;
	if (listed("FAKE_NVML_NOT_SUPPORTED", call))
		return ERR_NOT_SUPPORTED;
	if (h->index == (int)env_uint("FAKE_NVML_FAIL_GPU", 1) && listed("FAKE_NVML_FAIL", call))
		return ERR_UNKNOWN;
	return OK;
}

static nvmlReturn_t copy_text(char *buf, unsigned int len, const char *text)
{
	static const char lead[] = " \t ";
	static const char trail[] = "   \t \n";
	size_t n = strlen(text);

	if (env_uint("FAKE_NVML_PADDED", 0)) {
		if (sizeof(lead) - 1 + n + sizeof(trail) > len)
			return ERR_INSUFFICIENT_SIZE;
		memcpy(buf, lead, sizeof(lead) - 1);
		memcpy(buf + sizeof(lead) - 1, text, n);
		memcpy(buf + sizeof(lead) - 1 + n, trail, sizeof(trail));
		return OK;
	}
	if (n + 1 > len)
		return ERR_INSUFFICIENT_SIZE;
	memcpy(buf, text, n + 1);
	return OK;
}

nvmlReturn_t nvmlInit(void)
{
	count("nvmlInit");
	if (env_uint("FAKE_NVML_INIT_FAIL", 0))
		return ERR_DRIVER_NOT_LOADED;
	inits++;
	return OK;
}

nvmlReturn_t nvmlInit_v2(void)
{
	count("nvmlInit_v2");
	if (env_uint("FAKE_NVML_INIT_FAIL", 0))
		return ERR_DRIVER_NOT_LOADED;
	inits++;
	return OK;
}

nvmlReturn_t nvmlShutdown(void)
{
	count("nvmlShutdown");
	if (inits == 0)
		return ERR_UNINITIALIZED;
	inits--;
	return OK;
}

const char *nvmlErrorString(nvmlReturn_t rc)
{
	switch (rc) {
	case OK:
		return "Success";
	case ERR_UNINITIALIZED:
		return "Uninitialized";
	case ERR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case ERR_NOT_SUPPORTED:
		return "Not Supported";
	case ERR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case ERR_GPU_IS_LOST:
		return "GPU is lost";
	default:
		return "Unknown Error";
	}
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	return inits ? copy_text(buf, len, "550.54.15") : ERR_UNINITIALIZED;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	*v = 12040;
	return OK;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	*v = 12040;
	return OK;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
	count("nvmlDeviceGetCount");
	if (inits == 0)
		return ERR_UNINITIALIZED;
	*n = gpu_count();
	return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	count("nvmlDeviceGetCount_v2");
	if (inits == 0)
		return ERR_UNINITIALIZED;
	if (env_uint("FAKE_NVML_COUNT_FAIL", 0))
		return ERR_UNKNOWN;
	*n = gpu_count();
	return OK;
}

static nvmlReturn_t handle_by_index(unsigned int i, nvmlDevice_t *h)
{
	nvmlReturn_t rc;

	if (inits == 0)
		return ERR_UNINITIALIZED;
	if (i >= gpu_count())
		return ERR_INVALID_ARGUMENT;
	rc = gate(gpu_at(i), "handle");
	if (rc == OK)
		*h = gpu_at(i);
	return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *h)
{
	count("nvmlDeviceGetHandleByIndex");
	return handle_by_index(i, h);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
	count("nvmlDeviceGetHandleByIndex_v2");
	return handle_by_index(i, h);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *h)
{
	count("nvmlDeviceGetHandleByUUID");
	for (unsigned i = 0; i < gpu_count(); i++) {
		struct fake_gpu *g = gpu_at(i);

		if (strcmp(g->uuid, uuid) == 0) {
			nvmlReturn_t rc = gate(g, "handle");

			if (rc == OK)
				*h = g;
			return rc;
		}
	}
	return ERR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status);

/* FAKE_NVML_NVLINK: every pair (NVSwitch), pairs 0-1, 2-3, ... (bridges), or none; other capabilities: PCIe */
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status)
{
	const char *mode = getenv("FAKE_NVML_NVLINK");
	nvmlReturn_t rc = gate(a, "p2p");
	int joined;

	if (rc != OK)
		return rc;
	if (b == NULL)
		return ERR_INVALID_ARGUMENT;
	joined = mode != NULL && (strcmp(mode, "all") == 0 || (strcmp(mode, "pairs") == 0 && a->index / 2 == b->index / 2));
	*status = index == 2 && !joined ? 5 /* NVML_P2P_STATUS_NOT_SUPPORTED */ : 0;
	return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len)
{
	nvmlReturn_t rc = gate(h, "name");

	return rc == OK ? copy_text(buf, len, h->name) : rc;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len)
{
	nvmlReturn_t rc = gate(h, "uuid");

	return rc == OK ? copy_text(buf, len, h->uuid) : rc;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *p)
{
	nvmlReturn_t rc = gate(h, "pci");

	count("nvmlDeviceGetPciInfo_v3");
	if (rc != OK)
		return rc;
	memset(p, 0, sizeof(*p));
	memcpy(p->busIdLegacy, h->bus_id + 4, strlen(h->bus_id + 4) + 1);
	memcpy(p->busId, h->bus_id, strlen(h->bus_id) + 1);
	p->bus = h->bus;
	p->pciDeviceId = h->device_id << 16 | 0x10de;
	return OK;
}

/* FAKE_NVML_MEMORY_USED (at most what is left beside reserved), else a quarter of the memory */
static unsigned long long memory_used(nvmlDevice_t h, unsigned long long reserved)
{
	const char *v = getenv("FAKE_NVML_MEMORY_USED");
	unsigned long long used;

	if (v == NULL || *v == '\0')
		return h->memory / 4;
	used = strtoull(v, NULL, 10);
	return used < h->memory - reserved ? used : h->memory - reserved;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	nvmlReturn_t rc = gate(h, "memory");

	count("nvmlDeviceGetMemoryInfo");
	if (rc != OK)
		return rc;
	m->total = h->memory;
	m->used = memory_used(h, 0);
	m->free = h->memory - m->used;
	return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
	nvmlReturn_t rc = gate(h, "memory");

	count("nvmlDeviceGetMemoryInfo_v2");
	if (rc != OK)
		return rc;
	if (m->version != (unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
		return ERR_INVALID_ARGUMENT;
	m->total = h->memory;
	m->reserved = h->memory == H100_TOTAL ? H100_RESERVED : 0;
	m->used = memory_used(h, m->reserved);
	m->free = h->memory - m->used - m->reserved;
	return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
	nvmlReturn_t rc = gate(h, "utilization");

	if (rc != OK)
		return rc;
	u->gpu = env_uint("FAKE_NVML_UTIL", h->util);
	u->memory = u->gpu / 2;
	return OK;
}

/* FAKE_NVML_THROTTLE: 't' thermal, 'p' power, 0 none */
static char throttle_mode(void)
{
	const char *v = getenv("FAKE_NVML_THROTTLE");

	if (v != NULL && strcmp(v, "thermal") == 0)
		return 't';
	if (v != NULL && strcmp(v, "power") == 0)
		return 'p';
	return 0;
}

#define SLOWDOWN_C 87u

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t)
{
	nvmlReturn_t rc = gate(h, "temperature");

	if (rc != OK)
		return rc;
	if (sensor != 0)
		return ERR_INVALID_ARGUMENT;
	*t = throttle_mode() == 't' ? SLOWDOWN_C + 5 : h->temp;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t h, int type, unsigned int *t)
{
	nvmlReturn_t rc = gate(h, "threshold");

	if (rc != OK)
		return rc;
	if (type != 1) /* NVML_TEMPERATURE_THRESHOLD_SLOWDOWN */
		return ERR_NOT_SUPPORTED;
	*t = SLOWDOWN_C;
	return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *mhz)
{
	nvmlReturn_t rc = gate(h, "clock_now");
	unsigned max;

	if (rc != OK)
		return rc;
	if (type != 1 && type != 2)
		return ERR_INVALID_ARGUMENT;
	max = type == 1 ? h->sm_max : h->mem_max;
	*mhz = throttle_mode() == 't' ? max * 60 / 100 : throttle_mode() == 'p' ? max * 85 / 100 : max;
	return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *reasons)
{
	nvmlReturn_t rc = gate(h, "throttle");

	if (rc != OK)
		return rc;
	/* nvmlClocksEventReasonSwThermalSlowdown | HwThermalSlowdown, or SwPowerCap */
	*reasons = throttle_mode() == 't' ? 0x20ull | 0x40ull : throttle_mode() == 'p' ? 0x4ull : 0ull;
	return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int error_type, int counter_type, unsigned long long *n)
{
	nvmlReturn_t rc = gate(h, "ecc");
	unsigned errors = env_uint("FAKE_NVML_ECC", 0);

	if (rc != OK)
		return rc;
	if ((error_type != 0 && error_type != 1) || (counter_type != 0 && counter_type != 1))
		return ERR_INVALID_ARGUMENT;
	*n = error_type == 1 ? errors : 2ull * errors;
	return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t h, int *pending)
{
	nvmlReturn_t rc = gate(h, "retired");

	if (rc == OK)
		*pending = env_uint("FAKE_NVML_RETIRED_PENDING", 0) ? 1 : 0;
	return rc;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned int *corr, unsigned int *unc, unsigned int *pending,
				       unsigned int *failed)
{
	nvmlReturn_t rc = gate(h, "remap");

	if (rc != OK)
		return rc;
	*corr = 0;
	*unc = 0;
	*pending = 0;
	*failed = 0;
	return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw)
{
	nvmlReturn_t rc = gate(h, "power");

	if (rc == OK)
		*mw = h->power_mw;
	return rc;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw)
{
	nvmlReturn_t rc = gate(h, "power_limit");

	if (rc == OK)
		*mw = h->limit_mw;
	return rc;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj)
{
	nvmlReturn_t rc = gate(h, "energy");

	if (rc == OK)
		*mj = 123456789ull + (unsigned long long)h->index;
	return rc;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned int *mhz)
{
	nvmlReturn_t rc = gate(h, "clock");

	if (rc != OK)
		return rc;
	if (type == 1)
		*mhz = h->sm_max;
	else if (type == 2)
		*mhz = h->mem_max;
	else
		return ERR_INVALID_ARGUMENT;
	return OK;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor)
{
	nvmlReturn_t rc = gate(h, "cc");

	if (rc == OK) {
		*major = h->cc_major;
		*minor = h->cc_minor;
	}
	return rc;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int *cur, unsigned int *pending)
{
	nvmlReturn_t rc = gate(h, "mig");

	if (rc != OK)
		return rc;
	*cur = h->index == 0 && env_uint("FAKE_NVML_MIG", 0) ? 1 : 0;
	*pending = *cur;
	return OK;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t h, unsigned int *node)
{
	nvmlReturn_t rc = gate(h, "numa");

	if (rc == OK)
		*node = h->numa;
	return rc;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned int *n)
{
	nvmlReturn_t rc = gate(h, "mig");

	if (rc == OK)
		*n = h->index == 0 && env_uint("FAKE_NVML_MIG", 0) ? 7 : 0;
	return rc;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned int i, nvmlDevice_t *mig)
{
	nvmlReturn_t rc = gate(h, "mig");

	if (rc != OK)
		return rc;
	if (h->index != 0 || !env_uint("FAKE_NVML_MIG", 0) || i >= 2)
		return ERR_NOT_FOUND;
	*mig = &migs[i];
	return OK;
}

/* A running process as NVML lists it: v1 (16 bytes) and v2/v3 (24: with the MIG instance ids). */
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v1_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_t *infos);

/* FAKE_NVML_PROCESSES for the GPU: its pids and their bytes into pids and bytes (at most max); the number listed
 * for it. */
static unsigned listed_processes(const struct fake_gpu *g, unsigned *pids, unsigned long long *bytes, unsigned max)
{
	const char *v = getenv("FAKE_NVML_PROCESSES");
	unsigned n = 0;

	while (v != NULL && *v != '\0') {
		char *end;
		long gpu = strtol(v, &end, 10);
		long pid = *end == ':' ? strtol(end + 1, &end, 10) : -1;
		unsigned long long used = *end == ':' ? strtoull(end + 1, &end, 10) : GIB;

		if (gpu == g->index && pid > 0) {
			if (n < max) {
				pids[n] = (unsigned)pid;
				bytes[n] = used;
			}
			n++;
		}
		v = strchr(end, ',');
		v = v != NULL ? v + 1 : NULL;
	}
	return n;
}

/* NVML's protocol: *count in is the room, out the number there is; INSUFFICIENT_SIZE when the room is short. */
static nvmlReturn_t running(nvmlDevice_t h, unsigned int *count, void *infos, int v1)
{
	unsigned pids[16];
	unsigned long long bytes[16];
	unsigned n;
	nvmlReturn_t rc = gate(h, "processes");

	if (rc != OK)
		return rc;
	if (count == NULL)
		return ERR_INVALID_ARGUMENT;
	n = listed_processes(h, pids, bytes, 16);
	if (n > *count || (n > 0 && infos == NULL)) {
		*count = n;
		return ERR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n && i < 16; i++) {
		if (v1)
			((nvmlProcessInfo_v1_t *)infos)[i] = (nvmlProcessInfo_v1_t){pids[i], bytes[i]};
		else
			((nvmlProcessInfo_t *)infos)[i] = (nvmlProcessInfo_t){pids[i], bytes[i], 0xffffffffu, 0xffffffffu};
	}
	*count = n;
	return OK;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
	return running(h, count, infos, 1);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_t *infos)
{
	return running(h, count, infos, 0);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_t *infos)
{
	return running(h, count, infos, 0);
}

/* The PCIe link calls, one value of the GPU's each. */
static nvmlReturn_t pcie_value(nvmlDevice_t h, unsigned int value, unsigned int *v)
{
	nvmlReturn_t rc = gate(h, "pcie");

	if (rc == OK)
		*v = value;
	return rc;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t h, unsigned int *v)
{
	return pcie_value(h, h ? h->pcie_gen : 0, v);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t h, unsigned int *v)
{
	return pcie_value(h, h ? h->pcie_width : 0, v);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t h, unsigned int *v)
{
	return pcie_value(h, h ? h->pcie_max_gen : 0, v);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t h, unsigned int *v)
{
	return pcie_value(h, h ? h->pcie_max_width : 0, v);
}
