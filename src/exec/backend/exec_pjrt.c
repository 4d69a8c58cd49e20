/*
 * exec_pjrt: the PJRT backend (backend_pjrt): jobs on TPUs through libtpu and on NVIDIA GPUs through JAX's CUDA
 * plugin, driven through the PJRT C API (pjrt_abi.h; plugins found and loaded by pjrt_plugin.c), running the
 * StableHLO programs stablehlo.c writes. No Python at run time.
 *
 * Where it runs: never in the daemon. The daemon's "pjrt" is backend_pjrt_proxy (worker_proxy.c), which sends open,
 * run, close and inspect to a worker process (`acceld worker pjrt`, worker_main.c) where this code runs; what loading
 * a plugin said reaches the daemon through facts/learn (pjrt_plugin_facts). Closing a client frees neither libtpu's
 * process lock (lockf on /tmp/libtpu_lockfile, held until the process exits) nor XLA's LocalClient (one per platform
 * for the process's life, with a CUDA context on every GPU it took): only the end of the process does. So the daemon
 * ends the whole worker after ACCELD_PJRT_IDLE without jobs (0: after every job), and when a run passes its job's
 * deadline; within a worker the client's own idle close is set far out (the worker passes --pjrt-idle 24h).
 *
 * One host per plugin: the client every device of that plugin shares (libtpu allows one per process, and the CUDA
 * plugin builds every client of a process on the GPUs its first one took: XLA's ClientLibrary keeps one LocalClient
 * per platform), opened only when a job needs it, without preallocation (the CUDA plugin would otherwise take 75 %
 * of each GPU). The CUDA client is given the GPUs acceld runs jobs on (visible_devices); as XLA does, the plugin
 * leaves out a GPU it cannot open (another process holds it in exclusive-process mode), warning on stderr, and fails
 * only when none is left ("no supported devices found for platform CUDA"); the GPUs it took are fixed for the
 * process, that is until the worker ends. Whether another process holds a device is decided from facts (holders.h:
 * NVML's running compute processes, the owner of libtpu's lock file): then the job answers ACCELD_EHELD (409
 * DEVICE_BUSY) naming the holder, and falls back when it may; otherwise a GPU left out is a device error. Programs
 * are compiled once per (device, kernel, shape, precision) and kept in a bounded cache per client, for the worker's
 * life, in front of the compile cache on disk (pjrt_cache.h), which later workers load from instead of compiling. A
 * program still running at its job's deadline is abandoned here too (the worker's thread is freed, an idle thread
 * destroys what the program held, then the client), though in a worker the daemon ends the process first. A
 * generated job's inputs are made on the device by the generator program (only each input's key goes up), the
 * output's sample is gathered there (stablehlo.h), and the output comes back only when the job asks for it.
 *
 * Locking: host->mu guards the client, the cache, the leftovers and the counters; compiles and client creation
 * happen under it (they are rare), uploads, executions and downloads outside it (PJRT clients are thread-safe).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/backend.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/hwfile.h"
#include "core/log.h"
#include "core/mem.h"
#include "detect/holders.h"
#include "exec/backend/pjrt_abi.h"
#include "exec/backend/pjrt_cache.h"
#include "exec/backend/pjrt_event.h"
#include "exec/backend/pjrt_plugin.h"
#include "exec/backend/pjrt_resident.h"
#include "exec/backend/stablehlo.h"

#define CACHE_MAX 32          /* compiled programs kept per client */
#define OPERANDS_MAX 5
#define IDLE_DEFAULT_NS (30ull * 1000000000ull)
#define POLL_NS (50ull * 1000000ull) /* how often leftovers are looked at */
/*
 * Operands of at most this many bytes (scalars, generator keys, the gather's offsets, tiny inputs) are copied during
 * the call (kImmutableOnlyDuringCall) and never waited for: the program that reads them waits for their copy on the
 * device. Each wait is a round trip of about 0.1-0.3 ms to a GPU, which a tiny job felt eleven times.
 */
#define SMALL_COPY_BYTES 65536
/*
 * A run registers the host's memory for DMA only when it moves at least this much of it: registering took longer
 * than the copies of a tiny job on an H200 (saxpy of 1,024 end to end: 1.03 ms without, 1.38 ms with).
 */
#define DMA_MIN_BYTES (1u << 20)
#define ORDINALS_MAX 16       /* GPUs one CUDA client serves */
/* The programs besides the kernels, cached as kernels are: shape {rows, cols, sample count} */
#define PJ_GENERATE ((enum kernel_id)(KERNEL_COUNT + 1)) /* stablehlo_generator */
#define PJ_GATHER ((enum kernel_id)(KERNEL_COUNT + 2))   /* stablehlo_gather */

/* A compiled program, and how many runs use it now (a busy one is never evicted). */
struct program {
	PJRT_LoadedExecutable *exe;
	enum kernel_id kernel;
	struct kernel_shape shape;
	bool with_c;
	enum stablehlo_dot dot;
	int device_id;
	unsigned busy;
	uint64_t last_use;
};

/* What an abandoned run holds until its program ends. */
struct leftover {
	struct leftover *next;
	PJRT_Event *done;
	PJRT_Buffer *buffers[OPERANDS_MAX + 1];
	unsigned nbuffers;
	struct program *program;
};

struct host {
	struct host *next;
	char path[PJRT_PATH_MAX];
	const PJRT_Api *api;
	int minor;                    /* the plugin's PJRT minor version */
	enum pjrt_kind kind;
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* on CLOCK_MONOTONIC: runs end, the idler's wake-ups */
	unsigned users;               /* device states open on it */
	PJRT_Client *client;
	uint64_t generation;          /* of the client: device handles are valid for one generation */
	char platform[32];
	char platform_version[96];
	/* CUDA: the ordinals of the GPUs the devices using this host are, and those the plugin took at the process's
	 * first client (fixed for the process: later clients get the same ones, whatever they ask) */
	unsigned ordinals[ORDINALS_MAX];
	unsigned nordinals;
	bool taken_known;
	bool taken[ORDINALS_MAX];
	unsigned inflight;            /* runs between taking the client and giving it back */
	uint64_t last_used_ns;
	bool retiring;                /* a program was abandoned: no new work until the client is closed */
	struct leftover *leftovers;
	struct program cache[CACHE_MAX];
	struct resident_set resident; /* generated inputs kept on the devices between runs (pjrt_resident.h) */
	uint64_t tick;
	pthread_t idler;
	bool idler_started;
	bool stop;
	_Atomic bool dma_refused;     /* PJRT_Client_DmaMap failed once (said in the log): not asked again */
};

/* One device's state. */
struct pj {
	struct host *host;
	char id[DEVICE_ID_MAX];
	enum device_type type;
	unsigned ordinal;
	char compute_capability[8];   /* NVML's, "" unknown: a PJRT device that says otherwise is another GPU */
	uint64_t memory_total;        /* NVML's, 0 unknown */
	PJRT_Device *device;          /* on the client of generation gen */
	uint64_t stats_refused_gen;   /* the client generation whose MemoryStats refusal was said */
	int device_id;                /* its PJRT id, which the compile options name */
	char kind[64];                /* its PJRT device kind, part of the compile cache's key */
	char uuid[96];                /* a GPU's UUID (NVML's), to ask NVML who else runs on it */
	uint64_t gen;
};

static pthread_mutex_t hosts_mu = PTHREAD_MUTEX_INITIALIZER;
static struct host *hosts;

/* The CUDA ordinals of the GPUs each plugin serves, as attach learns them before any client opens (hosts_mu). */
#define ATTACHED_MAX 4
static struct attached {
	char path[PJRT_PATH_MAX];
	unsigned ordinals[ORDINALS_MAX];
	unsigned n;
} attached[ATTACHED_MAX];
static size_t nattached;
static _Atomic uint64_t idle_ns = IDLE_DEFAULT_NS;
static const struct config *pj_cfg; /* kept by prepare: where NVML, procfs and libtpu's lock file are */

/* --- small PJRT helpers --- */

/* The executor's error for a PJRT failure: another process holding the devices, memory, or a device failure. */
static enum acceld_err classify(int code, const char *msg)
{
	static const char *const held[] = {"already in use", "busy"};

	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		if (strcasestr(msg, held[i]) != NULL)
			return ACCELD_EHELD;
	if (code == PJRT_Error_Code_RESOURCE_EXHAUSTED)
		return ACCELD_EDEVMEM;
	return ACCELD_EDEVICE;
}

/* The named attribute of a device description, or NULL (stepped by the plugin's entry size: pjrt_abi.h). */
static const PJRT_NamedValue *attribute(const PJRT_NamedValue *v, size_t n, const char *name)
{
	return pjrt_attribute(v, n, name);
}

static bool attribute_is(const PJRT_NamedValue *v, const char *text)
{
	return v != NULL && v->type == PJRT_NamedValue_kString && v->value_size == strlen(text) &&
	       strncasecmp(v->string_value, text, v->value_size) == 0;
}

/* --- the client --- */

static void cache_clear(struct host *h)
{
	for (unsigned i = 0; i < CACHE_MAX; i++) {
		struct program *p = &h->cache[i];
		PJRT_LoadedExecutable_Destroy_Args a = {.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
							.executable = p->exe};

		if (p->exe != NULL)
			pjrt_error_take(h->api, h->api->PJRT_LoadedExecutable_Destroy(&a), NULL, 0);
		memset(p, 0, sizeof(*p));
	}
}

/* How the resident set destroys a buffer of h's client. */
static void resident_destroy(void *ctx, void *buf)
{
	struct host *h = ctx;

	pjrt_destroy_buffer(h->api, buf);
}

/* Closes the client (nothing in flight, no leftovers); h->mu held. */
static void client_close(struct host *h, const char *why)
{
	PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = h->client};
	char err[512] = "";

	if (h->client == NULL)
		return;
	resident_clear(&h->resident);
	cache_clear(h);
	pjrt_take(h->api, h->api->PJRT_Client_Destroy(&a), "PJRT_Client_Destroy", err, sizeof(err));
	h->client = NULL;
	log_fields(err[0] ? LOGL_WARN : LOGL_INFO, "pjrt", "client closed",
		   (struct log_field[]){LOG_S("plugin", h->path), LOG_S("why", why), LOG_S("error", err[0] ? err : NULL)},
		   3);
}

/* A string a plugin returns (not NUL-terminated) into out. */
static void copy_text(char *out, size_t outsz, const char *s, size_t n)
{
	snprintf(out, outsz, "%.*s", s ? (int)(n < outsz ? n : outsz - 1) : 0, s ? s : "");
}

/* The CUDA create options: no preallocation, and the GPUs of the set (ordinals, n of them). */
static void cuda_options(PJRT_NamedValue opts[2], const int64_t *set, size_t n)
{
	opts[0] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "preallocate",
				    .name_size = 11, .type = PJRT_NamedValue_kBool, .bool_value = false, .value_size = 1};
	opts[1] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "visible_devices",
				    .name_size = 15, .type = PJRT_NamedValue_kInt64List, .int64_array_value = set,
				    .value_size = n};
}

/*
 * PJRT_Client_Create for h: libtpu without options; the CUDA plugin without preallocation and with the GPUs acceld
 * runs jobs on. Returns the PJRT code, the message in err.
 */
static int create(struct host *h, char *err, size_t errsz)
{
	PJRT_Client_Create_Args c = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
	PJRT_NamedValue opts[2];
	int64_t set[ORDINALS_MAX];
	size_t n = 0;
	int code;

	if (h->kind == PJRT_KIND_CUDA) {
		for (unsigned i = 0; i < h->nordinals; i++)
			if (!h->taken_known || h->taken[i])
				set[n++] = h->ordinals[i];
		cuda_options(opts, set, n);
		c.create_options = opts;
		c.num_options = 2;
	}
	code = pjrt_take(h->api, h->api->PJRT_Client_Create(&c), "cannot open a PJRT client", err, errsz);
	if (code == PJRT_Error_Code_OK)
		h->client = c.client;
	return code;
}

/*
 * Which GPUs the CUDA client took: those among its addressable devices (by local hardware id, the CUDA ordinal). XLA
 * skips a GPU it cannot open (another process holds it in exclusive-process mode, say) with a warning on stderr, and
 * the process's client keeps that set for its life. h->mu held.
 */
static void note_taken(struct host *h)
{
	PJRT_Client_AddressableDevices_Args d = {.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE,
						 .client = h->client};

	if (h->kind != PJRT_KIND_CUDA || h->taken_known ||
	    pjrt_take(h->api, h->api->PJRT_Client_AddressableDevices(&d), "PJRT_Client_AddressableDevices", NULL, 0) !=
		    PJRT_Error_Code_OK)
		return;
	for (unsigned i = 0; i < h->nordinals; i++) {
		h->taken[i] = false;
		for (size_t j = 0; j < d.num_addressable_devices && !h->taken[i]; j++) {
			PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE,
							       .device = d.addressable_devices[j], .local_hardware_id = -1};

			pjrt_take(h->api, h->api->PJRT_Device_LocalHardwareId(&hw), "local hardware id", NULL, 0);
			h->taken[i] = hw.local_hardware_id >= 0 && (unsigned)hw.local_hardware_id == h->ordinals[i];
		}
		if (!h->taken[i])
			log_fields(LOGL_WARN, "pjrt", "the CUDA plugin left a GPU out of its client (it logs \"unable to "
				   "create StreamExecutor\" on stderr); it runs no PJRT jobs in this process",
				   (struct log_field[]){LOG_S("plugin", h->path), LOG_I("cuda_ordinal", h->ordinals[i])}, 2);
	}
	h->taken_known = true;
}

/* Opens the client when there is none; h->mu held. */
static enum acceld_err client_open(struct host *h, char *err, size_t errsz)
{
	PJRT_Client_PlatformName_Args pn = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE};
	PJRT_Client_PlatformVersion_Args pv = {.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE};
	char version[96] = "";
	int code;

	if (h->retiring) {
		snprintf(err, errsz, "the device is still finishing a program abandoned at its job's deadline; a new "
			 "PJRT client opens when it ends");
		return ACCELD_EHELD;
	}
	if (h->client != NULL)
		return ACCELD_OK;
	code = create(h, err, errsz);
	if (code != PJRT_Error_Code_OK)
		return classify(code, err);
	note_taken(h);
	h->generation++;
	pn.client = pv.client = h->client;
	if (pjrt_take(h->api, h->api->PJRT_Client_PlatformName(&pn), "PJRT_Client_PlatformName", NULL, 0) ==
	    PJRT_Error_Code_OK)
		copy_text(h->platform, sizeof(h->platform), pn.platform_name, pn.platform_name_size);
	if (pjrt_take(h->api, h->api->PJRT_Client_PlatformVersion(&pv), "PJRT_Client_PlatformVersion", NULL, 0) ==
	    PJRT_Error_Code_OK)
		copy_text(version, sizeof(version), pv.platform_version, pv.platform_version_size);
	snprintf(h->platform_version, sizeof(h->platform_version), "%s", version);
	pjrt_plugin_note_platform(h->path, h->platform, version);
	log_fields(LOGL_INFO, "pjrt", "client opened",
		   (struct log_field[]){LOG_S("plugin", h->path), LOG_S("platform", h->platform),
					LOG_S("version", version)},
		   3);
	return ACCELD_OK;
}

/* Whether the client took the GPU at this ordinal (see client_open); true for TPUs. h->mu held. */
static bool taken(const struct host *h, unsigned ordinal)
{
	if (h->kind != PJRT_KIND_CUDA || !h->taken_known)
		return true;
	for (unsigned i = 0; i < h->nordinals; i++)
		if (h->ordinals[i] == ordinal)
			return h->taken[i];
	return false;
}

/* One addressable device as matching reads it. */
struct seen {
	PJRT_Device *device;
	int id;
	int hw;                        /* local hardware id, -1 unknown */
	int64_t core;                  /* core_on_chip, 0 when not said */
	const PJRT_NamedValue *cc;     /* compute_capability, or NULL */
	const PJRT_NamedValue *memory; /* device_memory_bytes_limit, or NULL */
};

/* Reads the i-th addressable device; false when the plugin would not describe it. */
static bool read_device(const struct host *h, PJRT_Device *dev, struct seen *s)
{
	PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE, .device = dev};
	PJRT_DeviceDescription_Attributes_Args at = {.struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE};
	PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE};
	PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE,
					       .device = dev, .local_hardware_id = -1};
	const PJRT_NamedValue *core;

	if (pjrt_take(h->api, h->api->PJRT_Device_GetDescription(&g), "PJRT_Device_GetDescription", NULL, 0) !=
	    PJRT_Error_Code_OK)
		return false;
	at.device_description = id.device_description = g.device_description;
	if (pjrt_take(h->api, h->api->PJRT_DeviceDescription_Attributes(&at), "attributes", NULL, 0) != PJRT_Error_Code_OK ||
	    pjrt_take(h->api, h->api->PJRT_DeviceDescription_Id(&id), "id", NULL, 0) != PJRT_Error_Code_OK)
		return false;
	pjrt_take(h->api, h->api->PJRT_Device_LocalHardwareId(&hw), "local hardware id", NULL, 0);
	core = attribute(at.attributes, at.num_attributes, "core_on_chip");
	s->device = dev;
	s->id = id.id;
	s->hw = hw.local_hardware_id;
	s->core = core != NULL && core->type == PJRT_NamedValue_kInt64 ? core->int64_value : 0;
	s->cc = attribute(at.attributes, at.num_attributes, "compute_capability");
	s->memory = attribute(at.attributes, at.num_attributes, "device_memory_bytes_limit");
	return true;
}

/* The device's kind ("NVIDIA H100 80GB HBM3", "TPU v6 lite"), "" when the plugin does not say. */
static void device_kind(const struct host *h, PJRT_Device *dev, char *out, size_t outsz)
{
	PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE, .device = dev};
	PJRT_DeviceDescription_Kind_Args k = {.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE};

	out[0] = '\0';
	if (pjrt_take(h->api, h->api->PJRT_Device_GetDescription(&g), "PJRT_Device_GetDescription", NULL, 0) !=
	    PJRT_Error_Code_OK)
		return;
	k.device_description = g.device_description;
	if (pjrt_take(h->api, h->api->PJRT_DeviceDescription_Kind(&k), "PJRT_DeviceDescription_Kind", NULL, 0) ==
	    PJRT_Error_Code_OK)
		copy_text(out, outsz, k.device_kind, k.device_kind_size);
}

/*
 * Why a CUDA device the ordinal found is not p's GPU after all, or "" when what it says agrees with NVML: its compute
 * capability, and its memory (the CUDA plugin's device_memory_bytes_limit is CUDA's total, a little below NVML's,
 * which counts what the driver reserves: 85,017,493,504 against 85,520,809,984 bytes on an H100 80GB HBM3).
 */
static void disagreement(const struct pj *p, const struct seen *s, char *why, size_t whysz)
{
	why[0] = '\0';
	if (s->cc != NULL && s->cc->type == PJRT_NamedValue_kString && p->compute_capability[0] != '\0' &&
	    !attribute_is(s->cc, p->compute_capability)) {
		snprintf(why, whysz, "compute capability %.*s, NVML says %s", (int)(s->cc->value_size < 16 ?
			 s->cc->value_size : 16), s->cc->string_value, p->compute_capability);
		return;
	}
	if (s->memory != NULL && s->memory->type == PJRT_NamedValue_kInt64 && p->memory_total > 0 &&
	    (s->memory->int64_value <= 0 || (uint64_t)s->memory->int64_value > p->memory_total ||
	     (uint64_t)s->memory->int64_value < p->memory_total / 10 * 9))
		snprintf(why, whysz, "%" PRId64 " bytes of memory, NVML says %" PRIu64 " (a MIG instance?)",
			 s->memory->int64_value, p->memory_total);
}

/*
 * Whether another process holds p's device, by the facts (holders.h): NVML's running compute processes for a GPU,
 * the owner of libtpu's lock file for a TPU. When one does, err (what the plugin said) is prefixed with who.
 */
static bool held(const struct pj *p, char *err, size_t errsz)
{
	struct holder who[HOLDERS_MAX];
	char names[256], why[128], was[512];
	size_t n = 0;

	if (pj_cfg == NULL)
		return false;
	if (p->host->kind == PJRT_KIND_CUDA)
		n = holders_gpu(pj_cfg, p->uuid, who, HOLDERS_MAX, why, sizeof(why));
	else if (pj_cfg->pjrt_tpu_lockfile != NULL)
		n = holders_lock_file(pj_cfg, pj_cfg->pjrt_tpu_lockfile, &who[0]) ? 1 : 0;
	if (n == 0)
		return false;
	holders_text(who, n, names, sizeof(names));
	snprintf(was, sizeof(was), "%s", err);
	if (p->host->kind == PJRT_KIND_CUDA)
		snprintf(err, errsz, "%s is held by %s (NVML's running compute processes): %s", p->id, names, was);
	else
		snprintf(err, errsz, "%s is held by %s, which holds libtpu's lock file %s: %s", p->id, names,
			 pj_cfg->pjrt_tpu_lockfile, was);
	return true;
}

/*
 * Finds the device's PJRT device on the current client; h->mu held. No real plugin names a PCI address or a UUID
 * (docs/pjrt.md), so a GPU is the device whose local hardware id is its CUDA ordinal, checked against what NVML
 * says of it; a TPU chip is the chip_index-th device with core_on_chip 0 in local-hardware-id order, which holds
 * whether the plugin counts chips or TensorCores.
 */
static enum acceld_err match(struct pj *p, char *err, size_t errsz)
{
	struct host *h = p->host;
	PJRT_Client_AddressableDevices_Args d = {.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE,
						 .client = h->client};
	struct seen best = {.device = NULL};
	unsigned rank = 0;
	char why[192] = "";

	if (p->gen == h->generation && p->device != NULL)
		return ACCELD_OK;
	p->device = NULL;
	if (!taken(h, p->ordinal)) {
		snprintf(err, errsz, "the CUDA plugin left %s (CUDA ordinal %u) out when this process's PJRT client opened "
			 "(\"unable to create StreamExecutor for CUDA:%u\" on stderr), and keeps that set of GPUs for the "
			 "process's life", p->id, p->ordinal, p->ordinal);
		return held(p, err, errsz) ? ACCELD_EHELD : ACCELD_EDEVICE;
	}
	if (pjrt_take(h->api, h->api->PJRT_Client_AddressableDevices(&d), "PJRT_Client_AddressableDevices", err, errsz) !=
	    PJRT_Error_Code_OK)
		return ACCELD_EDEVICE;
	if (h->kind == PJRT_KIND_TPU) {
		/* the chip's rank among the first cores of the chips */
		for (size_t i = 0; i < d.num_addressable_devices; i++) {
			struct seen s;

			if (!read_device(h, d.addressable_devices[i], &s) || s.core != 0 || s.hw < 0)
				continue;
			rank = 0;
			for (size_t j = 0; j < d.num_addressable_devices; j++) {
				struct seen o;

				if (j != i && read_device(h, d.addressable_devices[j], &o) && o.core == 0 && o.hw >= 0 &&
				    o.hw < s.hw)
					rank++;
			}
			if (rank == p->ordinal) {
				best = s;
				break;
			}
		}
	} else {
		for (size_t i = 0; i < d.num_addressable_devices && best.device == NULL; i++) {
			struct seen s;

			if (read_device(h, d.addressable_devices[i], &s) && s.hw >= 0 && (unsigned)s.hw == p->ordinal) {
				disagreement(p, &s, why, sizeof(why));
				if (why[0] == '\0')
					best = s;
			}
		}
	}
	if (best.device == NULL) {
		if (why[0] != '\0')
			snprintf(err, errsz, "the PJRT device at CUDA ordinal %u is not %s: it has %s", p->ordinal, p->id,
				 why);
		else
			snprintf(err, errsz, "none of the %zu devices of the PJRT client (%s) is %s (%s %u)",
				 d.num_addressable_devices, h->platform, p->id,
				 h->kind == PJRT_KIND_TPU ? "chip" : "CUDA ordinal", p->ordinal);
		return ACCELD_EUNSUPPORTED;
	}
	p->device = best.device;
	p->device_id = best.id;
	p->gen = h->generation;
	device_kind(h, best.device, p->kind, sizeof(p->kind));
	return ACCELD_OK;
}

/*
 * The bytes the device's runtime still lets a run take (its allocator's limit less what is in use; 0 unknown), as
 * PJRT_Device_MemoryStats says where the plugin offers it; the figures are kept for GET /devices, and a refusal is
 * said once per client (in the log and with the device), never passed over.
 */
static uint64_t memory_left(struct pj *p)
{
	const PJRT_Api *api = p->host->api;
	PJRT_Device_MemoryStats_Args m = {.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE, .device = p->device};
	char msg[320] = "";
	int code;

	if (!pjrt_api_has(api, PJRT_Device_MemoryStats))
		return 0;
	code = pjrt_error_take(api, api->PJRT_Device_MemoryStats(&m), msg, sizeof(msg));
	if (code != PJRT_Error_Code_OK) {
		if (p->stats_refused_gen != p->host->generation) {
			char note[384];

			p->stats_refused_gen = p->host->generation;
			snprintf(note, sizeof(note), "PJRT_Device_MemoryStats refused (%s): %.300s",
				 pjrt_error_code_name(code), msg);
			pjrt_plugin_note_problem(p->host->path, p->ordinal, note);
			log_fields(LOGL_WARN, "pjrt", "the plugin gives no memory figures; jobs are sized by the device's "
				   "memory alone",
				   (struct log_field[]){LOG_S("device", p->id), LOG_S("error", note)}, 2);
		}
		return 0;
	}
	if (!m.bytes_limit_is_set || m.bytes_limit <= 0)
		return 0;
	pjrt_plugin_note_memory(p->host->path, p->ordinal, (uint64_t)m.bytes_limit,
				m.bytes_in_use > 0 ? (uint64_t)m.bytes_in_use : 0);
	return m.bytes_limit > m.bytes_in_use ? (uint64_t)(m.bytes_limit - m.bytes_in_use) : 1;
}

/* How sgemm's products run on this platform for the precision asked; sets *precision to the one that will run. */
static enum stablehlo_dot dot_for(const struct host *h, enum kernel_precision *precision)
{
	bool cuda = strcmp(h->platform, "cuda") == 0 || strcmp(h->platform, "gpu") == 0;
	bool tpu = strcmp(h->platform, "tpu") == 0;

	if (*precision == KERNEL_PRECISION_BF16 && (cuda || tpu))
		return STABLEHLO_DOT_BF16;
	if (*precision == KERNEL_PRECISION_TF32 && cuda)
		return STABLEHLO_DOT_DEFAULT; /* XLA computes DEFAULT float32 products as TF32 on Ampere and later */
	*precision = KERNEL_PRECISION_HIGHEST;
	return STABLEHLO_DOT_HIGHEST;
}

/* --- the compile cache on disk (pjrt_cache.c) --- */

/*
 * The program's key: its slot is the plugin file, the device kind, the compile options and the program text; what
 * must match besides is the plugin's version (its API version, its file's size and time) and the platform's.
 */
static void disk_key(const struct pj *p, const PJRT_Program *prog, const PJRT_Client_Compile_Args *c,
		     struct pjrt_cache_key *k)
{
	const struct host *h = p->host;
	struct stat st;
	char v[96];

	pjrt_cache_key_add(k, "plugin", h->path, strlen(h->path));
	pjrt_cache_key_add(k, "device_kind", p->kind, strlen(p->kind));
	pjrt_cache_key_add(k, "compile_options", c->compile_options, c->compile_options_size);
	pjrt_cache_key_add(k, "program", prog->code, prog->code_size);
	pjrt_cache_key_seal(k);
	snprintf(v, sizeof(v), "%d.%d", PJRT_API_MAJOR, h->minor);
	pjrt_cache_key_add(k, "api_version", v, strlen(v));
	if (stat(h->path, &st) == 0) {
		snprintf(v, sizeof(v), "%lld %lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			 (long)st.st_mtim.tv_nsec);
		pjrt_cache_key_add(k, "plugin_file", v, strlen(v));
	}
	pjrt_cache_key_add(k, "platform", h->platform, strlen(h->platform));
	pjrt_cache_key_add(k, "platform_version", h->platform_version, strlen(h->platform_version));
}

/* The key's program loaded from disk, or NULL (none, not trusted, or refused by the plugin: then dropped). */
static PJRT_LoadedExecutable *disk_load(struct host *h, const struct pjrt_cache_key *k)
{
	PJRT_Executable_DeserializeAndLoad_Args d = {.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
						     .client = h->client};
	char why[512] = "", path[4200];
	void *bytes = NULL;
	size_t n = 0;
	enum pjrt_cache_result r;

	if (!pjrt_cache_on() || !pjrt_api_has(h->api, PJRT_Executable_DeserializeAndLoad))
		return NULL;
	r = pjrt_cache_load(k, &bytes, &n, why, sizeof(why));
	if (r == PJRT_CACHE_HIT) {
		d.serialized_executable = bytes;
		d.serialized_executable_size = n;
		if (pjrt_take(h->api, h->api->PJRT_Executable_DeserializeAndLoad(&d), "PJRT_Executable_DeserializeAndLoad", why,
			 sizeof(why)) != PJRT_Error_Code_OK) {
			pjrt_cache_drop(k);
			d.loaded_executable = NULL;
			r = PJRT_CACHE_DROPPED;
		}
	}
	free(bytes);
	if (r == PJRT_CACHE_DROPPED) {
		pjrt_cache_path(k, path, sizeof(path));
		log_fields(LOGL_WARN, "pjrt", "a cached program was not trusted; it is compiled again",
			   (struct log_field[]){LOG_S("file", path), LOG_S("why", why)}, 2);
	}
	return r == PJRT_CACHE_HIT ? d.loaded_executable : NULL;
}

/* Serializes a program just compiled into the cache; a failure costs only a later compile, and is logged. */
static void disk_save(struct host *h, const struct pjrt_cache_key *k, PJRT_LoadedExecutable *exe)
{
	PJRT_LoadedExecutable_GetExecutable_Args g = {.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
						      .loaded_executable = exe};
	PJRT_Executable_Serialize_Args sa = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE};
	PJRT_Executable_Destroy_Args x = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE};
	char why[512] = "";

	if (!pjrt_cache_on() || !pjrt_api_has(h->api, PJRT_Executable_Serialize) ||
	    !pjrt_api_has(h->api, PJRT_Executable_DeserializeAndLoad))
		return;
	if (pjrt_take(h->api, h->api->PJRT_LoadedExecutable_GetExecutable(&g), "PJRT_LoadedExecutable_GetExecutable", why,
		 sizeof(why)) != PJRT_Error_Code_OK)
		goto out;
	sa.executable = g.executable;
	if (pjrt_take(h->api, h->api->PJRT_Executable_Serialize(&sa), "PJRT_Executable_Serialize", why, sizeof(why)) ==
	    PJRT_Error_Code_OK) {
		pjrt_cache_store(k, sa.serialized_bytes, sa.serialized_bytes_size, why, sizeof(why));
		if (sa.serialized_executable_deleter != NULL)
			sa.serialized_executable_deleter(sa.serialized_executable);
	}
	x.executable = g.executable;
	pjrt_error_take(h->api, h->api->PJRT_Executable_Destroy(&x), NULL, 0);
out:
	if (why[0] != '\0')
		log_fields(LOGL_WARN, "pjrt", "a compiled program could not be kept on disk",
			   (struct log_field[]){LOG_S("plugin", h->path), LOG_S("why", why)}, 2);
}

/* The text of a kernel's program, or of the generator's or the gather's. */
static char *program_text(enum kernel_id k, const struct kernel_shape *s, bool with_c, enum stablehlo_dot dot,
			  size_t *len)
{
	if (k == PJ_GENERATE)
		return stablehlo_generator(s->m, s->n, len);
	if (k == PJ_GATHER)
		return stablehlo_gather(s->m, s->n, (size_t)s->k, len);
	return stablehlo_program(k, s, with_c, dot, len);
}

/*
 * The compiled program for the run (from the cache, or compiled now and kept, evicting the least recently used
 * idle one); marks it busy. h->mu held.
 */
static enum acceld_err program_for(struct pj *p, const struct kernel_work *w, bool with_c, enum stablehlo_dot dot,
				   struct program **out, struct backend_timing *t, char *err, size_t errsz)
{
	struct host *h = p->host;
	struct kernel_shape s = {.m = w->m, .n = w->n, .k = w->k};
	struct program *slot = NULL;
	PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .format = "mlir", .format_size = 4};
	PJRT_Client_Compile_Args c = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = h->client,
				      .program = &prog};
	unsigned char options[STABLEHLO_OPTIONS_MAX];
	struct pjrt_cache_key key = {.text = NULL};
	uint64_t t0;
	size_t len;
	char *text;
	int code;

	for (unsigned i = 0; i < CACHE_MAX; i++) {
		struct program *q = &h->cache[i];

		if (q->exe != NULL && q->kernel == w->kernel && q->shape.m == s.m && q->shape.n == s.n &&
		    q->shape.k == s.k && q->with_c == with_c && q->dot == dot && q->device_id == p->device_id) {
			q->busy++;
			q->last_use = ++h->tick;
			t->compile_ms = 0.0;
			t->cached = 1;
			*out = q;
			return ACCELD_OK;
		}
		if (q->exe == NULL && slot == NULL)
			slot = q;
	}
	for (unsigned i = 0; i < CACHE_MAX && slot == NULL; i++) /* full: the least recently used idle one goes */
		if (h->cache[i].busy == 0 && (slot == NULL || h->cache[i].last_use < slot->last_use))
			slot = &h->cache[i];
	if (slot == NULL) {
		snprintf(err, errsz, "every one of the %d cached programs is running", CACHE_MAX);
		return ACCELD_EHELD;
	}
	if (slot->exe != NULL) {
		PJRT_LoadedExecutable_Destroy_Args d = {.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
							.executable = slot->exe};

		pjrt_error_take(h->api, h->api->PJRT_LoadedExecutable_Destroy(&d), NULL, 0);
		memset(slot, 0, sizeof(*slot));
	}
	text = program_text(w->kernel, &s, with_c, dot, &len);
	prog.code = text;
	prog.code_size = len;
	c.compile_options = (const char *)options;
	c.compile_options_size = stablehlo_compile_options(p->device_id, options);
	disk_key(p, &prog, &c, &key);
	t0 = clock_mono_ns();
	c.executable = disk_load(h, &key);
	t->cached = c.executable != NULL;
	code = c.executable != NULL ? PJRT_Error_Code_OK :
	       pjrt_take(h->api, h->api->PJRT_Client_Compile(&c), "cannot compile the program", err, errsz);
	t->compile_ms = (double)(clock_mono_ns() - t0) / 1e6;
	free(text);
	if (code == PJRT_Error_Code_OK && !t->cached)
		disk_save(h, &key, c.executable);
	pjrt_cache_key_release(&key);
	if (code != PJRT_Error_Code_OK)
		return classify(code, err);
	*slot = (struct program){.exe = c.executable, .kernel = w->kernel, .shape = s, .with_c = with_c, .dot = dot,
				 .device_id = p->device_id, .busy = 1, .last_use = ++h->tick};
	*out = slot;
	return ACCELD_OK;
}

/* --- a run --- */

struct operand {
	const void *data;
	int64_t dims[2];
	size_t ndims;
	PJRT_Buffer_Type type; /* 0: F32 */
	int input;             /* the kernel's input it is; -1 a scalar */
};

/* The program's operands in stablehlo.h's order. */
static unsigned operands(const struct kernel_work *w, bool with_c, struct operand *o)
{
	int64_t m = (int64_t)w->m, n = (int64_t)w->n, k = (int64_t)w->k;
	unsigned c = 0;

	switch (w->kernel) {
	case KERNEL_SAXPY:
	case KERNEL_TRIAD:
		o[c++] = (struct operand){.data = w->kernel == KERNEL_SAXPY ? &w->alpha : &w->scale, .input = -1};
		o[c++] = (struct operand){.data = w->in[0], .dims = {n}, .ndims = 1, .input = 0};
		o[c++] = (struct operand){.data = w->in[1], .dims = {n}, .ndims = 1, .input = 1};
		break;
	case KERNEL_DOT:
		o[c++] = (struct operand){.data = w->in[0], .dims = {n}, .ndims = 1, .input = 0};
		o[c++] = (struct operand){.data = w->in[1], .dims = {n}, .ndims = 1, .input = 1};
		break;
	case KERNEL_SGEMM:
		o[c++] = (struct operand){.data = &w->alpha, .input = -1};
		if (with_c)
			o[c++] = (struct operand){.data = &w->beta, .input = -1};
		o[c++] = (struct operand){.data = w->in[0], .dims = {m, k}, .ndims = 2, .input = 0};
		o[c++] = (struct operand){.data = w->in[1], .dims = {k, n}, .ndims = 2, .input = 1};
		if (with_c)
			o[c++] = (struct operand){.data = w->in[2], .dims = {m, n}, .ndims = 2, .input = 2};
		break;
	case KERNEL_SOFTMAX:
	case KERNEL_COUNT:
		o[c++] = (struct operand){.data = w->in[0], .dims = {m, n}, .ndims = 2, .input = 0};
		break;
	}
	return c;
}

/* The bytes of operand o. */
static uint64_t operand_bytes(const struct operand *o)
{
	uint64_t n = o->type == PJRT_Buffer_Type_U64 ? 8 : 4;

	for (size_t i = 0; i < o->ndims; i++)
		n *= (uint64_t)o->dims[i];
	return n;
}

/*
 * Uploads one operand. A small one is copied during the call and not waited for (SMALL_COPY_BYTES); a larger one
 * is waited for until it is on the device, so that its time is the transfer's, not the kernel's.
 */
static enum acceld_err upload(struct pj *p, const struct operand *o, PJRT_Buffer **out, char *err, size_t errsz)
{
	const PJRT_Api *api = p->host->api;
	bool small = operand_bytes(o) <= SMALL_COPY_BYTES;
	PJRT_Client_BufferFromHostBuffer_Args b = {
		.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
		.client = p->host->client,
		.data = o->data,
		.type = o->type != 0 ? o->type : PJRT_Buffer_Type_F32,
		.dims = o->dims,
		.num_dims = o->ndims,
		.host_buffer_semantics = small ? PJRT_HostBufferSemantics_kImmutableOnlyDuringCall
					       : PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
		.device = p->device,
	};
	PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE};
	int code = pjrt_take(api, api->PJRT_Client_BufferFromHostBuffer(&b), "cannot copy an input to the device", err,
			errsz);

	if (code != PJRT_Error_Code_OK)
		return classify(code, err);
	*out = b.buffer;
	if (small) { /* the host's copy is free once the call returns */
		pjrt_destroy_event(api, b.done_with_host_buffer);
		return ACCELD_OK;
	}
	code = pjrt_await(api, b.done_with_host_buffer, "copy to the device", err, errsz);
	if (code == PJRT_Error_Code_OK) {
		r.buffer = b.buffer;
		code = pjrt_take(api, api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent", err, errsz);
		if (code == PJRT_Error_Code_OK)
			code = pjrt_await(api, r.event, "copy to the device", err, errsz);
	}
	return code == PJRT_Error_Code_OK ? ACCELD_OK : classify(code, err);
}

/* The error of an Execute that failed with code (its message in err): a plugin newer than acceld is said so. */
static enum acceld_err execute_failed(const struct host *h, int code, char *err, size_t errsz)
{
	size_t len = strlen(err);

	if (code != PJRT_Error_Code_INVALID_ARGUMENT || h->minor <= PJRT_NEWEST_CHECKED_MINOR || strstr(err, "size") == NULL)
		return classify(code, err);
	snprintf(err + len, errsz - len, " (the plugin speaks PJRT %d.%d; acceld knows argument structs up to %d.%d: a "
		 "newer acceld is needed)", PJRT_API_MAJOR, h->minor, PJRT_API_MAJOR, PJRT_NEWEST_CHECKED_MINOR);
	return ACCELD_EUNSUPPORTED;
}

/*
 * Runs an auxiliary program (the generator, the gather) of shape s on args: its one output in *out. With wait, it
 * waits for the program; without, its output's readiness orders what uses it (the generator's output is the
 * kernel's operand, so the kernel's completion covers both).
 * Its compile time, if it was not cached, is added to t's.
 */
static enum acceld_err run_aux(struct pj *p, enum kernel_id what, struct kernel_shape s, PJRT_Buffer **args,
			       unsigned nargs, PJRT_Buffer **out, bool wait, struct backend_timing *t, char *err,
			       size_t errsz)
{
	struct host *h = p->host;
	const PJRT_Api *api = h->api;
	struct kernel_work aux = {.kernel = what, .m = s.m, .n = s.n, .k = s.k};
	struct backend_timing at = {0};
	struct program *prog = NULL;
	PJRT_Buffer *const *lists[1] = {args};
	PJRT_Buffer **outs[1] = {out};
	PJRT_Event *complete[1] = {NULL};
	PJRT_ExecuteOptions opts = {.struct_size = pjrt_execute_options_size(h->minor)};
	PJRT_LoadedExecutable_Execute_Args x = {.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
						.options = &opts, .argument_lists = lists, .num_devices = 1,
						.num_args = nargs, .output_lists = outs,
						.device_complete_events = wait ? complete : NULL};
	enum acceld_err rc;
	int code;

	pthread_mutex_lock(&h->mu);
	rc = program_for(p, &aux, false, STABLEHLO_DOT_HIGHEST, &prog, &at, err, errsz);
	pthread_mutex_unlock(&h->mu);
	if (rc != ACCELD_OK)
		return rc;
	if (at.cached == 0)
		t->compile_ms = (isnan(t->compile_ms) ? 0.0 : t->compile_ms) + at.compile_ms;
	x.executable = prog->exe;
	code = pjrt_take(api, api->PJRT_LoadedExecutable_Execute(&x), "cannot run the program", err, errsz);
	if (code != PJRT_Error_Code_OK)
		rc = execute_failed(h, code, err, errsz);
	else if (wait && (code = pjrt_await(api, complete[0], "the program failed", err, errsz)) != PJRT_Error_Code_OK)
		rc = classify(code, err);
	pthread_mutex_lock(&h->mu);
	prog->busy--;
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/*
 * Makes operand o (input o->input of the run) on the device by the generator: only its key goes up (into *key,
 * which the caller destroys once the run is over). The program is not waited for: the kernel that reads its output
 * runs after it.
 */
static enum acceld_err generate_input(struct pj *p, const struct kernel_work *w, const struct operand *o,
				      PJRT_Buffer **out, PJRT_Buffer **key, struct backend_timing *t, char *err,
				      size_t errsz)
{
	uint32_t k = kernel_gen_key(w->seed, (unsigned)o->input);
	struct operand ko = {.data = &k, .type = PJRT_Buffer_Type_U32, .input = -1};
	struct kernel_shape s = {.m = o->ndims == 2 ? (uint64_t)o->dims[0] : 0, .n = (uint64_t)o->dims[o->ndims - 1]};
	enum acceld_err rc = upload(p, &ko, key, err, errsz);

	if (rc == ACCELD_OK)
		rc = run_aux(p, PJ_GENERATE, s, key, 1, out, false, t, err, errsz);
	return rc;
}

/* Reads count floats of buf (of rank dims, row-major) into dst and waits for them. */
static enum acceld_err download(struct pj *p, PJRT_Buffer *buf, unsigned rank, void *dst, size_t count, char *err,
				size_t errsz)
{
	const PJRT_Api *api = p->host->api;
	static const int64_t minor_to_major[2] = {1, 0};
	PJRT_Buffer_MemoryLayout row_major = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
					      .type = PJRT_Buffer_MemoryLayout_Type_Tiled,
					      .tiled = {.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE}};
	PJRT_Buffer_ToHostBuffer_Args d = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE, .src = buf,
					   .host_layout = &row_major, .dst = dst, .dst_size = count * sizeof(float)};
	int code;

	row_major.tiled.minor_to_major = minor_to_major + (2 - rank);
	row_major.tiled.minor_to_major_size = rank;
	code = pjrt_take(api, api->PJRT_Buffer_ToHostBuffer(&d), "cannot copy the output back", err, errsz);
	if (code == PJRT_Error_Code_OK)
		code = pjrt_await(api, d.event, "copy from the device", err, errsz);
	return code == PJRT_Error_Code_OK ? ACCELD_OK : classify(code, err);
}

/* Whether the run's sample is its whole output, in order (an output of KERNEL_SAMPLE_MAX elements or fewer). */
static bool sample_is_output(const struct kernel_work *w)
{
	return w->nsample == (size_t)kernel_output_len(w->kernel, &(struct kernel_shape){w->m, w->n, w->k}) &&
	       kernel_sample_whole(&w->grid);
}

/*
 * Starts gathering the sample of the output in out on the device (w->nsample elements): its four offsets go up and
 * the gather is launched behind the kernel without waiting, so that nothing but the sample's copy follows the
 * kernel. *sample gets the gather's output; scalars[0..4) the offsets' buffers (the caller destroys all five).
 */
static enum acceld_err gather_start(struct pj *p, struct kernel_work *w, PJRT_Buffer *out, PJRT_Buffer **sample,
				    PJRT_Buffer *scalars[4], struct backend_timing *t, char *err, size_t errsz)
{
	bool matrix = kernel_output_rank(w->kernel) == 2;
	struct kernel_shape s = {.m = matrix ? w->m : 0, .n = w->n, .k = w->nsample};
	uint64_t *scalar[4] = {&w->grid.r0, &w->grid.rs, &w->grid.c0, &w->grid.cs};
	PJRT_Buffer *args[5] = {out, NULL, NULL, NULL, NULL};
	enum acceld_err rc = ACCELD_OK;

	for (unsigned i = 0; i < 4 && rc == ACCELD_OK; i++) {
		struct operand o = {.data = scalar[i], .type = PJRT_Buffer_Type_U64, .input = -1};

		rc = upload(p, &o, &args[1 + i], err, errsz);
	}
	if (rc == ACCELD_OK)
		rc = run_aux(p, PJ_GATHER, s, args, 5, sample, false, t, err, errsz);
	memcpy(scalars, args + 1, 4 * sizeof(args[0]));
	return rc;
}

/* Whether operand o is made on the device by the generator (only its key goes up). */
static bool made_on_device(const struct kernel_work *w, const struct operand *o)
{
	return o->input >= 0 && w->generate && w->in[o->input] == NULL && kernel_input_generated(w, (unsigned)o->input);
}

/*
 * Registers the memory the run's buffers lie in (a worker's shared memory: w->host_mem, page-aligned) with the
 * client for DMA (PJRT_Client_DmaMap), so that the copies of the inputs the host gave and of the output it asked for
 * go straight between it and the device instead of through the plugin's own pinned staging. A plugin without the
 * call (an older table) or one that refuses it (said once, then not asked again) leaves the copies pageable. True
 * when registered: the caller unmaps it (dma_unmap) before the memory goes.
 */
static bool dma_map(struct pj *p, const struct kernel_work *w)
{
	struct host *h = p->host;
	const PJRT_Api *api = h->api;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	PJRT_Client_DmaMap_Args a = {.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE, .client = h->client,
				     .data = w->host_mem, .size = (w->host_mem_size + page - 1) / page * page};
	char err[512];

	/* the slots as read at 0.90; an older table's tail was laid out otherwise (0.57 rearranged it) */
	if (w->host_mem == NULL || w->host_mem_size == 0 || atomic_load(&h->dma_refused) || h->minor < 90 ||
	    !pjrt_api_has(api, PJRT_Client_DmaMap) || !pjrt_api_has(api, PJRT_Client_DmaUnmap))
		return false;
	if (pjrt_take(api, api->PJRT_Client_DmaMap(&a), "PJRT_Client_DmaMap", err, sizeof(err)) == PJRT_Error_Code_OK)
		return true;
	if (!atomic_exchange(&h->dma_refused, true))
		log_fields(LOGL_WARN, "pjrt", "the plugin would not register a job's memory for DMA; transfers stay "
			   "pageable", (struct log_field[]){LOG_S("plugin", h->path), LOG_S("error", err)}, 2);
	return false;
}

static void dma_unmap(struct pj *p, const struct kernel_work *w)
{
	const PJRT_Api *api = p->host->api;
	PJRT_Client_DmaUnmap_Args a = {.struct_size = PJRT_Client_DmaUnmap_Args_STRUCT_SIZE, .client = p->host->client,
				       .data = w->host_mem};
	char err[512];

	if (pjrt_take(api, api->PJRT_Client_DmaUnmap(&a), "PJRT_Client_DmaUnmap", err, sizeof(err)) != PJRT_Error_Code_OK)
		log_fields(LOGL_WARN, "pjrt", "the plugin would not take back a job's memory from DMA",
			   (struct log_field[]){LOG_S("plugin", p->host->path), LOG_S("error", err)}, 2);
}

/* Hands what an abandoned run holds to the idler, which destroys it once its program ends; h->mu held. */
static void abandon(struct host *h, PJRT_Event *done, PJRT_Buffer **bufs, unsigned n, struct program *prog)
{
	struct leftover *l = xcalloc(1, sizeof(*l));

	l->done = done;
	memcpy(l->buffers, bufs, n * sizeof(bufs[0]));
	l->nbuffers = n;
	l->program = prog;
	l->next = h->leftovers;
	h->leftovers = l;
	h->retiring = true;
	pthread_cond_broadcast(&h->cv);
}

/*
 * Uploads, executes and downloads one run of prog; fills w's results and t. Generated inputs come from the
 * resident ones when an earlier run left them, else from the generator, and stay when they fit budget bytes.
 */
static enum acceld_err execute(struct pj *p, struct program *prog, struct kernel_work *w, bool with_c,
			       uint64_t budget, struct backend_timing *t, char *err, size_t errsz)
{
	struct host *h = p->host;
	const PJRT_Api *api = h->api;
	struct operand o[OPERANDS_MAX];
	unsigned n = operands(w, with_c, o);
	PJRT_Buffer *bufs[OPERANDS_MAX + 1] = {NULL};
	PJRT_Buffer *out[1] = {NULL};
	PJRT_Buffer *const *lists[1] = {bufs};
	PJRT_Buffer **outs[1] = {out};
	PJRT_Event *complete[1] = {NULL};
	PJRT_ExecuteOptions opts = {.struct_size = pjrt_execute_options_size(h->minor)};
	PJRT_LoadedExecutable_Execute_Args x = {.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
						.executable = prog->exe, .options = &opts, .argument_lists = lists,
						.num_devices = 1, .num_args = n, .output_lists = outs,
						.device_complete_events = complete};
	struct kernel_shape s = {.m = w->m, .n = w->n, .k = w->k};
	float value = 0.0f;
	PJRT_Buffer *keys[OPERANDS_MAX] = {NULL};
	PJRT_Buffer *sample[1] = {NULL}, *scalars[4] = {NULL};
	bool gathering = false;
	struct resident *res[OPERANDS_MAX] = {NULL};
	bool made[OPERANDS_MAX] = {false};
	uint64_t t0 = clock_mono_ns(), t1, t2, t3, gen_ns = 0;
	uint64_t up = 0, down = 0; /* bytes each way */
	enum acceld_err rc = ACCELD_OK;
	int code = PJRT_Error_Code_OK;
	bool host_data = w->out != NULL; /* data of the host's crosses: an input it gave, the output it asked for */
	uint64_t host_bytes = 0;
	bool pinned;
	enum backend_memory mem;

	for (unsigned i = 0; i < n; i++) {
		bool given = o[i].input >= 0 && o[i].data != NULL && !made_on_device(w, &o[i]);

		host_data = host_data || given;
		host_bytes += given ? operand_bytes(&o[i]) : 0;
	}
	if (w->out != NULL)
		host_bytes += sizeof(float) * kernel_output_len(w->kernel, &s);
	pinned = host_data && host_bytes >= DMA_MIN_BYTES && dma_map(p, w);
	mem = !host_data ? BACKEND_MEMORY_UNKNOWN : pinned ? BACKEND_MEMORY_PINNED : BACKEND_MEMORY_PAGEABLE;
	for (unsigned i = 0; i < n && rc == ACCELD_OK; i++) {
		if (made_on_device(w, &o[i])) {
			uint32_t key = kernel_gen_key(w->seed, (unsigned)o[i].input);
			uint64_t g0;

			pthread_mutex_lock(&h->mu);
			res[i] = resident_take(&h->resident, p->device_id, key, o[i].dims, o[i].ndims);
			pthread_mutex_unlock(&h->mu);
			if (res[i] != NULL) {
				bufs[i] = res[i]->buf;
				continue;
			}
			g0 = clock_mono_ns(); /* made on the device: only its key goes up */
			rc = generate_input(p, w, &o[i], &bufs[i], &keys[i], t, err, errsz);
			made[i] = rc == ACCELD_OK;
			gen_ns += clock_mono_ns() - g0;
			up += sizeof(uint32_t);
			continue;
		}
		rc = upload(p, &o[i], &bufs[i], err, errsz);
		up += operand_bytes(&o[i]);
	}
	if (rc != ACCELD_OK)
		goto out;
	t1 = clock_mono_ns();
	code = pjrt_take(api, api->PJRT_LoadedExecutable_Execute(&x), "cannot run the program", err, errsz);
	if (code != PJRT_Error_Code_OK) {
		rc = execute_failed(h, code, err, errsz);
		goto out;
	}
	/* the sample is gathered on the device behind the kernel; a small output is its own sample */
	gathering = w->nsample > 0 && w->sample != NULL && kernel_output_rank(w->kernel) > 0 && !sample_is_output(w);
	if (gathering && (rc = gather_start(p, w, out[0], &sample[0], scalars, t, err, errsz)) != ACCELD_OK) {
		pjrt_await(api, complete[0], "the program", NULL, 0);
		goto out;
	}
	if (!pjrt_await_until(api, complete[0], w->deadline_ns, &code, err, errsz)) {
		/* the job is answered as timed out already: give the worker back, leave the rest to the idler */
		bufs[n] = out[0];
		pthread_mutex_lock(&h->mu);
		for (unsigned i = 0; i < n; i++) /* a resident input the program reads goes with the rest */
			if (res[i] != NULL)
				resident_forget(&h->resident, res[i]);
		abandon(h, complete[0], bufs, n + 1, prog);
		pthread_mutex_unlock(&h->mu);
		/* the abandoned program reads only device buffers: the host's memory can go */
		if (pinned)
			dma_unmap(p, w);
		/* a deleted buffer's memory is freed once the programs that read it are done (the client's close waits
		 * for the gather, as XLA's waits for all its streams' work) */
		for (unsigned i = 0; i < n; i++)
			pjrt_destroy_buffer(api, keys[i]);
		for (unsigned i = 0; i < 4; i++)
			pjrt_destroy_buffer(api, scalars[i]);
		pjrt_destroy_buffer(api, sample[0]);
		snprintf(err, errsz, "the program was still running at the job's deadline and was abandoned; the PJRT "
			 "client closes when it ends");
		return ACCELD_ETIMEOUT;
	}
	if (code != PJRT_Error_Code_OK) {
		rc = classify(code, err);
		goto out;
	}
	t2 = clock_mono_ns();
	/* the sample comes back; the output only when the host asked for it */
	if (w->nsample > 0 && w->sample != NULL && kernel_output_rank(w->kernel) > 0) {
		rc = download(p, gathering ? sample[0] : out[0], gathering ? 1 : kernel_output_rank(w->kernel), w->sample,
			      w->nsample, err, errsz);
		up += gathering ? 4 * sizeof(uint64_t) : 0; /* the sample's grid: its first row and step, column and step */
		down += w->nsample * sizeof(float);
	}
	if (rc == ACCELD_OK && (w->kernel == KERNEL_DOT || w->out != NULL)) {
		size_t count = (size_t)kernel_output_len(w->kernel, &s);

		rc = download(p, out[0], kernel_output_rank(w->kernel), w->kernel == KERNEL_DOT ? (void *)&value : w->out,
			      count, err, errsz);
		down += count * sizeof(float);
	}
	if (rc != ACCELD_OK)
		goto out;
	if (w->kernel == KERNEL_DOT)
		w->value = value;
	t->kernel_ms = (double)(t2 - t1) / 1e6;
	t->generate_ms = (double)gen_ns / 1e6;
	if (pinned)
		dma_unmap(p, w);
	pinned = false;
	t3 = clock_mono_ns();
	/* before the kernel the uploads (and registering the host's memory), after it the gather, the read-back and
	 * taking the memory back */
	t->upload_ms = (double)(t1 - t0 - gen_ns) / 1e6;
	t->download_ms = (double)(t3 - t2) / 1e6;
	t->transfer_ms = t->upload_ms + t->download_ms;
	t->upload_bytes = up;
	t->download_bytes = down;
	t->transfer_bytes = up + down;
	t->transfer_memory = mem;
out:
	if (pinned)
		dma_unmap(p, w);
	pthread_mutex_lock(&h->mu);
	for (unsigned i = 0; i < n; i++) {
		if (res[i] != NULL)
			resident_give_back(res[i]);
		else if (!(rc == ACCELD_OK && made[i] &&
			   resident_keep(&h->resident, p->device_id, kernel_gen_key(w->seed, (unsigned)o[i].input),
					 o[i].dims, o[i].ndims, operand_bytes(&o[i]), bufs[i], budget)))
			pjrt_destroy_buffer(api, bufs[i]);
		pjrt_destroy_buffer(api, keys[i]);
	}
	pthread_mutex_unlock(&h->mu);
	pjrt_destroy_buffer(api, out[0]);
	for (unsigned i = 0; i < 4; i++)
		pjrt_destroy_buffer(api, scalars[i]);
	pjrt_destroy_buffer(api, sample[0]);
	return rc;
}

static enum acceld_err pj_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err, size_t errsz)
{
	struct pj *p = state;
	struct host *h = p->host;
	bool with_c = w->kernel == KERNEL_SGEMM && w->beta != 0.0f &&
		      (w->in[2] != NULL || (w->generate && kernel_input_generated(w, 2)));
	struct kernel_shape s = {.m = w->m, .n = w->n, .k = w->k};
	uint64_t need = 4 * (kernel_total_len(w->kernel, &s) + 2);
	struct program *prog = NULL;
	enum stablehlo_dot dot = STABLEHLO_DOT_HIGHEST;
	enum acceld_err rc;
	uint64_t left = 0, budget = 0;

	pthread_mutex_lock(&h->mu);
	rc = client_open(h, err, errsz);
	/* the plugin's own words do not say who (a lone busy GPU is "no supported devices found"): the facts do */
	if (((rc == ACCELD_EHELD && !h->retiring) ||
	     (rc == ACCELD_EDEVICE && h->kind == PJRT_KIND_CUDA && strstr(err, "no supported devices found") != NULL)) &&
	    held(p, err, errsz))
		rc = ACCELD_EHELD;
	if (rc == ACCELD_OK)
		rc = match(p, err, errsz);
	if (rc == ACCELD_OK && (left = memory_left(p)) != 0 && need > left && h->resident.bytes > 0) {
		resident_clear(&h->resident); /* the inputs earlier runs left make room */
		left = memory_left(p);
	}
	if (rc == ACCELD_OK && left != 0 && need > left) {
		snprintf(err, errsz, "the job needs %" PRIu64 " bytes on %s; its runtime lets it have %" PRIu64
			 " (PJRT_Device_MemoryStats: limit less what is in use)", need, p->id, left);
		rc = ACCELD_EDEVMEM;
	}
	/* resident inputs may take a quarter of what is free besides themselves (0 when the runtime does not say) */
	budget = left != 0 ? (left + h->resident.bytes) / 4 : 0;
	if (rc == ACCELD_OK) {
		if (w->kernel == KERNEL_SGEMM)
			dot = dot_for(h, &w->precision);
		else
			w->precision = KERNEL_PRECISION_HIGHEST;
		rc = program_for(p, w, with_c, dot, &prog, t, err, errsz);
	}
	if (rc == ACCELD_OK)
		h->inflight++;
	pthread_mutex_unlock(&h->mu);
	if (rc != ACCELD_OK)
		return rc;
	rc = execute(p, prog, w, with_c, budget, t, err, errsz);
	pthread_mutex_lock(&h->mu);
	h->inflight--;
	/* an abandoned run keeps its program busy until the idler reaps it */
	if (rc != ACCELD_ETIMEOUT)
		prog->busy--;
	h->last_used_ns = clock_mono_ns();
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* --- the idler: closes idle clients, reaps abandoned runs, retires their client --- */

/* Destroys the leftovers whose program has ended; h->mu held. */
static void reap(struct host *h, bool wait)
{
	struct leftover **lp = &h->leftovers;

	while (*lp != NULL) {
		struct leftover *l = *lp;

		if (!wait && !pjrt_event_ready(h->api, l->done)) {
			lp = &l->next;
			continue;
		}
		pjrt_await(h->api, l->done, "abandoned program", NULL, 0);
		for (unsigned i = 0; i < l->nbuffers; i++)
			pjrt_destroy_buffer(h->api, l->buffers[i]);
		l->program->busy--;
		*lp = l->next;
		free(l);
	}
}

static void *idler_main(void *arg)
{
	struct host *h = arg;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		uint64_t now = clock_mono_ns();
		uint64_t wait = 1000000000ull;
		uint64_t idle = atomic_load(&idle_ns);
		struct timespec ts;

		reap(h, false);
		if (h->retiring && h->leftovers == NULL && h->inflight == 0) {
			client_close(h, "a program abandoned at its job's deadline ended");
			h->retiring = false;
		}
		if (h->client != NULL && h->inflight == 0 && !h->retiring) {
			if (now - h->last_used_ns >= idle)
				client_close(h, "idle (ACCELD_PJRT_IDLE)");
			else if (h->last_used_ns + idle - now < wait)
				wait = h->last_used_ns + idle - now;
		}
		if (h->leftovers != NULL && wait > POLL_NS)
			wait = POLL_NS;
		ts = clock_deadline(CLOCK_MONOTONIC, wait);
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* --- hosts, per plugin --- */

static struct host *host_get(const struct pjrt_plugin *plugin, enum pjrt_kind kind)
{
	struct host *h;
	pthread_condattr_t ca;

	pthread_mutex_lock(&hosts_mu);
	for (h = hosts; h != NULL && strcmp(h->path, plugin->path) != 0; h = h->next)
		;
	if (h == NULL) {
		h = xcalloc(1, sizeof(*h));
		snprintf(h->path, sizeof(h->path), "%s", plugin->path);
		h->api = plugin->api;
		h->minor = plugin->minor;
		h->kind = kind;
		h->resident.destroy = resident_destroy;
		h->resident.ctx = h;
		for (size_t i = 0; i < nattached; i++) {
			if (strcmp(attached[i].path, plugin->path) == 0) {
				memcpy(h->ordinals, attached[i].ordinals, sizeof(h->ordinals));
				h->nordinals = attached[i].n;
			}
		}
		pthread_mutex_init(&h->mu, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&h->cv, &ca);
		pthread_condattr_destroy(&ca);
		h->idler_started = pthread_create(&h->idler, NULL, idler_main, h) == 0;
		if (!h->idler_started)
			log_fields(LOGL_WARN, "pjrt", "cannot start the thread that closes idle clients",
				   (struct log_field[]){LOG_S("plugin", h->path)}, 1);
		h->next = hosts;
		hosts = h;
	}
	h->users++;
	pthread_mutex_unlock(&hosts_mu);
	return h;
}

static void host_put(struct host *h)
{
	struct host **hp;

	pthread_mutex_lock(&hosts_mu);
	if (--h->users > 0) {
		pthread_mutex_unlock(&hosts_mu);
		return;
	}
	for (hp = &hosts; *hp != h; hp = &(*hp)->next)
		;
	*hp = h->next;
	pthread_mutex_unlock(&hosts_mu);
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (h->idler_started)
		pthread_join(h->idler, NULL);
	pthread_mutex_lock(&h->mu);
	reap(h, true); /* the programs end on their own: wait for them, then nothing is left behind */
	client_close(h, "acceld stops");
	pthread_mutex_unlock(&h->mu);
	pthread_cond_destroy(&h->cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* --- the backend --- */

static bool pj_serves(const struct device *dev)
{
	struct pjrt_view v;

	return pjrt_plugin_view(dev, &v) && v.found && v.usable;
}

/* Notes a GPU's CUDA ordinal under its plugin, in order and once: the CUDA client is opened with all of them. */
static void pj_attach(const struct device *dev)
{
	enum pjrt_kind kind;
	struct attached *a = NULL;
	struct pjrt_view v;
	unsigned i;

	if (!pjrt_kind_of(dev, &kind) || kind != PJRT_KIND_CUDA || !pjrt_plugin_view(dev, &v) || !v.usable)
		return;
	pthread_mutex_lock(&hosts_mu);
	for (size_t k = 0; k < nattached && a == NULL; k++)
		if (strcmp(attached[k].path, v.plugin) == 0)
			a = &attached[k];
	if (a == NULL && nattached < ATTACHED_MAX) {
		a = &attached[nattached++];
		snprintf(a->path, sizeof(a->path), "%s", v.plugin);
	}
	for (i = 0; a != NULL && i < a->n && a->ordinals[i] != v.ordinal; i++)
		;
	if (a != NULL && i == a->n && a->n < ORDINALS_MAX) {
		for (i = a->n++; i > 0 && a->ordinals[i - 1] > v.ordinal; i--)
			a->ordinals[i] = a->ordinals[i - 1];
		a->ordinals[i] = v.ordinal;
	}
	pthread_mutex_unlock(&hosts_mu);
}

/* The device's "pjrt" in GET /devices: its plugin, what loading it said, or why none serves it. */
static json_t *pj_describe(const struct device *dev)
{
	struct pjrt_view v;

	return pjrt_plugin_view(dev, &v) ? pjrt_view_json(&v) : NULL;
}

/* As pj_describe, with the plugin loaded first (when one is found and not refused): its API version or refusal. */
static json_t *pj_inspect(const struct device *dev)
{
	struct pjrt_view v;

	if (!pjrt_plugin_view(dev, &v))
		return NULL;
	if (v.found && v.usable) {
		pjrt_plugin_load(v.plugin);
		pjrt_plugin_status(&v);
	}
	return pjrt_view_json(&v);
}

static void pj_prepare(const struct config *cfg)
{
	char dir[4096];

	pjrt_plugin_configure(cfg);
	pj_cfg = cfg;
	atomic_store(&idle_ns, cfg->pjrt_idle_ms * 1000000ull);
	pjrt_cache_dir_for(cfg, dir, sizeof(dir));
	pjrt_cache_configure(dir, cfg->pjrt_cache_bytes);
	/*
	 * CUDA then counts GPUs in PCI order, as acceld's ids do: the ordinal is how a GPU is found (match). Set even
	 * over the caller's value: any other order (FASTEST_FIRST, CUDA's default) would match jobs to the wrong GPU.
	 */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
}

/* the device's memory as detection knows it: a job larger than that cannot run (the runtime's own figure, less
 * what it has in use, is checked when the job runs) */
static enum acceld_err pj_admit(const struct device *dev, enum kernel_id k, const struct kernel_shape *s,
				enum reason *reason, char *detail, size_t detailsz)
{
	uint64_t total = kernel_total_len(k, s);
	uint64_t bytes = total > UINT64_MAX / 4 ? UINT64_MAX : 4 * total;

	if (dev->memory_total_bytes == 0 || bytes <= dev->memory_total_bytes)
		return ACCELD_OK;
	*reason = REASON_EXCEEDS_DEVICE_MEMORY;
	snprintf(detail, detailsz, "the job's buffers take %" PRIu64 " bytes; %s has %" PRIu64 " bytes of memory", bytes,
		 dev->id, dev->memory_total_bytes);
	return ACCELD_EDEVMEM;
}

static enum acceld_err pj_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	struct pjrt_view v;
	const struct pjrt_plugin *plugin = pjrt_plugin_view(dev, &v) && v.usable ? pjrt_plugin_load(v.plugin) : NULL;
	enum pjrt_kind kind = PJRT_KIND_TPU;
	struct pj *p;

	(void)threads;
	if (plugin == NULL || plugin->api == NULL || !pjrt_kind_of(dev, &kind)) {
		snprintf(err, errsz, "%s", plugin && plugin->api == NULL ? plugin->why : "no PJRT plugin serves it");
		return ACCELD_EUNSUPPORTED;
	}
	p = xcalloc(1, sizeof(*p));
	p->host = host_get(plugin, kind);
	snprintf(p->id, sizeof(p->id), "%s", dev->id);
	p->type = dev->type;
	p->ordinal = v.ordinal;
	snprintf(p->compute_capability, sizeof(p->compute_capability), "%s", dev->gpu.compute_capability);
	snprintf(p->uuid, sizeof(p->uuid), "%s", dev->uuid);
	p->memory_total = dev->type == DEVICE_GPU ? dev->memory_total_bytes : 0;
	*state = p;
	return ACCELD_OK;
}

static void pj_close(void *state)
{
	struct pj *p = state;

	host_put(p->host);
	free(p);
}

/*
 * What a healthy device reaches through this backend, measured by tests/gpu/device_run.sh (the health check's own
 * sizes: sgemm 8192^3 at highest precision, triad of 83,516,416 elements, capped by the default job limit). Per
 * run, PJRT adds about 0.2 ms of launch and wait to the kernel time, which a triad of 0.4 ms feels.
 */
static double pj_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	if (dev->type != DEVICE_GPU || strcasecmp(dev->vendor, "NVIDIA") != 0)
		return 1.0; /* not measured yet: TPUs are expected to reach their spec figures */
	*source = "measured on an H100 80GB HBM3 (driver 580.159.04, jax-cuda13-pjrt 0.11.2), 2026-11-26";
	return k == KERNEL_SGEMM ? 0.74 : 0.50;
}

const struct backend_ops backend_pjrt = {
	.name = "pjrt",
	.serves_what = "TPUs and NVIDIA GPUs with a PJRT plugin (libtpu, JAX's CUDA plugin)",
	.rank = 10,
	.serves = pj_serves,
	.prepare = pj_prepare,
	.admit = pj_admit,
	.attach = pj_attach,
	.describe = pj_describe,
	.inspect = pj_inspect,
	.open = pj_open,
	.run = pj_run,
	.close = pj_close,
	.reference = pj_reference,
	.runs = stablehlo_has,
	.facts = pjrt_plugin_facts,
	.learn = pjrt_plugin_learn,
	.on_device = true,
};
