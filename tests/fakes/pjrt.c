/*
 * A stand-in PJRT plugin for the PJRT backend's tests, built as $(BUILD)/fakes/libpjrt.so. It exports
 * GetPjrtApi with the real layouts (src/exec/backend/pjrt_abi.h) and runs acceld's five float32 programs on the CPU.
 *
 * Programs: PJRT_Client_Compile takes format "mlir" as text. The module must be named @acceld_<kernel>
 * (saxpy, triad, dot, sgemm, softmax) and hold `func.func public @main(...)`, whose tensor types fix the shapes:
 *   saxpy(f32[], f32[n], f32[n]) -> f32[n]        alpha * x + y
 *   triad(f32[], f32[n], f32[n]) -> f32[n]        b + s * c
 *   dot(f32[n], f32[n]) -> f32[]                  sum of x * y
 *   sgemm(f32[], f32[], f32[m,k], f32[k,n], f32[m,n]) -> f32[m,n]   alpha * a @ b + beta * c, row-major
 *   sgemm(f32[], f32[m,k], f32[k,n]) -> f32[m,n]                    alpha * a @ b (no c)
 *   softmax(f32[m,n]) -> f32[m,n]                 row by row
 *   generate(ui32[]) -> f32[n] or f32[m,n]        the kernel table's generator (kernel_gen_value) of that key
 *   gather(f32[n] or f32[m,n], ui64[] x 4) -> f32[c]   the grid r0, rs, c0, cs names (kernel_sample_index)
 * Buffers go up as F32, U32 or U64.
 * Anything else fails to compile with a message quoting the offending line. The op bodies are not read, but
 * the precision a dot_general asks for (`precision HIGHEST|HIGH|DEFAULT` or `precision = [HIGHEST, ...]`) is
 * recorded, and on a "cuda" or "tpu" platform sgemm rounds its operands the way the hardware would: TF32
 * (10-bit mantissa) for DEFAULT, HIGH or none on cuda; bfloat16 (7 bits) for DEFAULT or none and about 16 bits
 * (three bfloat16 passes) for HIGH on tpu; HIGHEST is exact float32. The compile options must parse as an
 * xla.CompileOptionsProto with num_replicas = num_partitions = 1; the device comes from execute_device, else
 * the first id of its device_assignment, else its device_ordinal.
 *
 * Read at PJRT_Client_Create:
 *   FAKE_PJRT_PLATFORM=name   platform name (default "fake"); "cuda"/"gpu"/"rocm" describe GPUs the way XLA's
 *                             GPU plugin does (and check its create options), "tpu" describes TPU chips
 *   FAKE_PJRT_DEVICES=N       devices, 1 to 8 (default 1; 0 makes client creation fail as with no devices)
 *   FAKE_PJRT_KIND=text[,..]  device kind (default "NVIDIA H100 80GB HBM3", "TPU v5 lite" or "Fake CPU")
 *   FAKE_PJRT_MEMORY=bytes[,..]  memory per device, with an optional k/m/g suffix (default 16g); a GPU's allocator
 *                             may hand out memory_fraction of it (default 0.75, as the real plugin's)
 *   FAKE_PJRT_CC=x.y[,..]     a GPU's compute capability (default 9.0)
 *                             (a list gives device i its i-th entry, the last one for later devices)
 *   FAKE_PJRT_CORES_PER_CHIP=2  a TPU chip is two devices (core_on_chip 0 and 1), as v2 to v4 can be listed;
 *   FAKE_PJRT_HW_IDS=chips    their local hardware ids then count chips, not cores (both layouts are possible;
 *                             neither was seen here: tests/pjrt_conformance.md, tpu-attributes)
 * Like the real CUDA plugin, the process's first GPU client takes its GPUs (visible_devices, else all) for every
 * later one (XLA's ClientLibrary keeps one LocalClient per platform); see tests/pjrt_conformance.md.
 * Failure switches, read on every call:
 *   FAKE_PJRT_VERSION=M.m     the API version GetPjrtApi reports (default 0.115, JAX's CUDA plugin 0.11.2's; 0.94
 *                             is the header acceld's layouts were read from)
 *   FAKE_PJRT_API_SIZE=bytes  the PJRT_Api struct_size GetPjrtApi reports (default 1144, the real plugin's table at
 *                             0.115; 624 ends at PJRT_Buffer_ReadyEvent, the last slot acceld calls)
 *   FAKE_PJRT_INIT_FAIL=1     PJRT_Plugin_Initialize fails
 *   FAKE_PJRT_CREATE_FAIL=1   PJRT_Client_Create fails as when no device can be opened
 *   FAKE_PJRT_BUSY_DEVICES=i[,i]  these GPUs are held by another process: the process's first client skips each
 *                             with "unable to create StreamExecutor for CUDA:i: ..." on stderr and opens on the
 *                             others (which it keeps, as the real plugin does); with none left it fails INTERNAL
 *                             "no supported devices found for platform CUDA" and keeps nothing
 *   FAKE_PJRT_EXEC_OPTIONS_SIZE=n  the plugin's own PJRT_ExecuteOptions size (default 144, the 0.115 plugin's;
 *                             112, 0.94's, at versions below 0.97): a smaller one is refused, as a plugin newer than
 *                             the caller does
 * On cuda, CUDA_VISIBLE_DEVICES set and empty fails PJRT_Client_Create FAILED_PRECONDITION "No visible GPU
 * devices.", as the real plugin does when CUDA sees no GPU.
 *   FAKE_PJRT_BUSY=1          PJRT_Client_Create fails as when another process holds the devices: on tpu
 *                             libtpu's lock file message (ABORTED); FAKE_PJRT_BUSY=device gives the
 *                             open(/dev/accel0) form; on cuda every GPU is busy (as FAKE_PJRT_BUSY_DEVICES)
 *   FAKE_PJRT_COMPILE_FAIL=1  PJRT_Client_Compile fails (INTERNAL)
 *   FAKE_PJRT_OOM=1|upload|execute   RESOURCE_EXHAUSTED from BufferFromHostBuffer (1, upload) or Execute;
 *                             either also fails whenever live bytes would pass the device's memory; on a GPU
 *                             in the BFC allocator's words ("Out of memory while trying to allocate 4.97GiB with
 *                             allocator GPU_0_bfc on device 0."), elsewhere in bytes
 *   FAKE_PJRT_EXEC_FAIL=1     Execute fails (INTERNAL); =async: Execute succeeds but its outputs and
 *                             completion event carry the INTERNAL error
 *   FAKE_PJRT_SLOW_MS=N       an execution completes N ms after Execute: its events become ready only then
 *   FAKE_PJRT_NO_MEMSTATS=1   PJRT_Device_MemoryStats answers UNIMPLEMENTED
 *   FAKE_PJRT_WRONG_RESULT=1  the kernels' outputs are perturbed (element 0), for verification tests
 *   FAKE_PJRT_COUNTS=path     after every upload and download, the file holds "uploads N", "upload_bytes B",
 *                             "downloads N" and "download_bytes B", one a line: what crossed the link; then
 *                             "dma_maps N", "dma_unmaps N" (PJRT_Client_DmaMap and DmaUnmap calls that
 *                             succeeded), "pinned_uploads N" and "pinned_downloads N" (transfers whose host memory
 *                             lay in a range DmaMap registered)
 *   FAKE_PJRT_DMA=fail|none   PJRT_Client_DmaMap fails (INTERNAL), or the table has no DmaMap and DmaUnmap (their
 *                             slots NULL, as a plugin that predates them); otherwise DmaMap registers a page-aligned
 *                             range (anything else is INVALID_ARGUMENT: the stand-in is stricter than CUDA's
 *                             cuMemHostRegister) and DmaUnmap takes back only what DmaMap registered
 *   FAKE_PJRT_EXACT=1         sgemm does not round its operands on cuda or tpu
 *   FAKE_PJRT_CRASH=execute|compile|client  abort() in PJRT_LoadedExecutable_Execute, PJRT_Client_Compile or
 *                             PJRT_Client_Create, after writing "fake pjrt: FAKE_PJRT_CRASH=<where>: aborting" to
 *                             stderr (a CHECK failure in XLA ends the process the same way); with
 *                             FAKE_PJRT_CRASH_FLAG=path, only while that file exists
 *   FAKE_PJRT_LOCKFILE=path   on tpu, PJRT_Client_Create takes libtpu's process lock: lockf on path (libtpu's is
 *                             /tmp/libtpu_lockfile; unset: no lock, so that test runs on one machine never
 *                             collide), held until the process exits (destroying the client keeps it, as libtpu
 *                             does); a lock held elsewhere fails with libtpu's two ABORTED messages
 *   FAKE_PJRT_ENV_LOG=path    PJRT_Client_Create writes there the TPU_PROCESS_BOUNDS, TPU_CHIPS_PER_PROCESS_BOUNDS
 *                             and TPU_VISIBLE_CHIPS the process has, "NAME=value" a line ("NAME unset" when
 *                             absent): the local bounds libtpu would read on a host of a slice of several
 *   FAKE_PJRT_CREATE_SLOW_MS=N  PJRT_Client_Create takes N ms more before it answers (libtpu on a slice of several
 *                             hosts waits for every host)
 *
 * Stricter than a real plugin on purpose: PJRT_Plugin_Initialize must come first; ToHostBuffer fills dst with
 * NaN and writes the data only when its event is seen complete (Await, IsReady true, Error or OnReady), so a
 * caller that reads before awaiting sees garbage; destroying a client that still has buffers or executables
 * fails. Every argument struct's struct_size is checked like a real plugin does.
 *
 * A GPU has the GPU plugin's two memory spaces, "device" (its default) and "pinned_host"; other devices have none.
 * Executables serialize (PJRT_Executable_Serialize) into bytes naming the API version and platform that wrote them;
 * PJRT_Executable_DeserializeAndLoad loads only those of the same version and platform, as the real header demands.
 * FAKE_PJRT_COMPILE_LOG=path: a line per real compile ("<pid> compile <kernel>") is appended there, so tests can
 * count compiles across processes.
 *
 * Test hooks: fake_pjrt_calls(name) counts calls by PJRT function name; fake_pjrt_bytes("upload"|"download") the
 * bytes those moved; fake_pjrt_live(what) counts live
 * "clients", "executables" (loaded ones and PJRT_Executable views), "buffers", "events", "errors", pending
 * "callbacks", or "all"; fake_pjrt_last_precision() is what the last compile of a kernel asked for ("" when none);
 * fake_pjrt_create_option(name) renders the value the last PJRT_Client_Create got ("true", "0.5", "1,2", ...)
 * or NULL; fake_pjrt_compile_option(name) reads the last compile options' "num_replicas", "num_partitions",
 * "device_ordinal", "replica_count", "computation_count" or "device_id" (-1 when absent).
 * Thread safety: one client used from one thread at a time, with events awaited or called back on others.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/backend/pjrt_abi.h"
#include "exec/kernel.h"

#define MAX_DEVICES 8
#define MAX_DIMS 8
#define MAX_ARGS 5
#define MAX_OPTIONS 16
#define GIB (1024ll * 1024 * 1024)

enum flavour { FLAVOUR_FAKE, FLAVOUR_GPU, FLAVOUR_TPU };
enum kernel { K_SAXPY, K_TRIAD, K_DOT, K_SGEMM, K_SOFTMAX, K_GENERATE, K_GATHER, K_COUNT };

static const char *const kernel_names[K_COUNT] = {"saxpy", "triad", "dot", "sgemm", "softmax", "generate", "gather"};
static const int kernel_arity[K_COUNT] = {3, 3, 2, 5, 1, 1, 5}; /* sgemm also 3: alpha, a, b */

enum elem { E_F32, E_U32, E_U64 }; /* a tensor's element type */

struct PJRT_Error {
	PJRT_Error_Code code;
	size_t len;
	char msg[];
};

/* What an event completes: a status, a time, and maybe a device-to-host copy still to be written. */
struct event_core {
	pthread_mutex_t lock;
	int refs;
	struct timespec ready_at;
	PJRT_Error_Code code;
	char *msg;
	void *dst;
	float *src;
	size_t bytes;
};

struct PJRT_Event {
	struct event_core *core;
};

struct PJRT_DeviceDescription {
	int id;
	char kind[64];
	char debug[128];
	char repr[192];
	char vendor[32];
	char cc[8];
	int64_t coords[3];
	PJRT_NamedValue attrs[12];
	size_t nattrs;
};

struct PJRT_Memory {
	int id;
	const char *kind;
};

struct PJRT_Device {
	PJRT_Client *client;
	int ordinal;
	int hw;                       /* its local hardware id */
	struct PJRT_DeviceDescription desc;
	int64_t limit, in_use, peak, num_allocs, largest;
	struct PJRT_Memory memory[2]; /* a GPU's "device" (the default) and "pinned_host"; none elsewhere */
	PJRT_Memory *memories[2];
	size_t nmemories;
};

struct PJRT_Client {
	enum flavour flavour;
	char platform[32];
	char version[64];
	struct PJRT_Device devs[MAX_DEVICES];
	PJRT_Device *list[MAX_DEVICES];
	size_t ndev;
	long live_buffers, live_execs;
};

struct shape {
	int64_t dims[MAX_DIMS];
	size_t ndims;
	enum elem type;
};

static size_t elem_size(enum elem t)
{
	return t == E_U64 ? 8 : 4;
}

struct PJRT_LoadedExecutable {
	PJRT_Client *client;
	enum kernel kernel;
	int nargs;
	struct shape args[MAX_ARGS];
	struct shape result;
	char precision[8];
	PJRT_Device *device;
};

struct PJRT_Executable {
	size_t num_outputs;
	PJRT_LoadedExecutable program; /* what it was taken from, for PJRT_Executable_Serialize */
};

struct PJRT_Buffer {
	PJRT_Device *dev;
	struct shape shape;
	size_t count;
	size_t bytes;
	float *data;
	struct timespec ready_at;
	PJRT_Error_Code code;
	char *msg;
};

/* ----------------------------------------------------------------------------------------- test hooks */

enum live { LIVE_CLIENTS, LIVE_EXECUTABLES, LIVE_BUFFERS, LIVE_EVENTS, LIVE_ERRORS, LIVE_CALLBACKS, LIVE_COUNT };

static const char *const live_names[LIVE_COUNT] = {"clients", "executables", "buffers",
						   "events",  "errors",      "callbacks"};

static const char *const counted[] = {
	"GetPjrtApi", "PJRT_Error_Destroy", "PJRT_Error_Message", "PJRT_Error_GetCode", "PJRT_Plugin_Initialize",
	"PJRT_Plugin_Attributes", "PJRT_Event_Destroy", "PJRT_Event_IsReady", "PJRT_Event_Error", "PJRT_Event_Await",
	"PJRT_Event_OnReady", "PJRT_Client_Create", "PJRT_Client_Destroy", "PJRT_Client_PlatformName",
	"PJRT_Client_ProcessIndex", "PJRT_Client_PlatformVersion", "PJRT_Client_Devices",
	"PJRT_Client_AddressableDevices", "PJRT_Client_Compile", "PJRT_Client_BufferFromHostBuffer",
	"PJRT_DeviceDescription_Id", "PJRT_DeviceDescription_ProcessIndex", "PJRT_DeviceDescription_Attributes",
	"PJRT_DeviceDescription_Kind", "PJRT_DeviceDescription_DebugString", "PJRT_DeviceDescription_ToString",
	"PJRT_Device_GetDescription", "PJRT_Device_IsAddressable", "PJRT_Device_LocalHardwareId",
	"PJRT_Device_MemoryStats", "PJRT_Executable_Destroy", "PJRT_Executable_NumOutputs",
	"PJRT_LoadedExecutable_Destroy", "PJRT_LoadedExecutable_GetExecutable", "PJRT_LoadedExecutable_Execute",
	"PJRT_Buffer_Destroy", "PJRT_Buffer_ElementType", "PJRT_Buffer_Dimensions",
	"PJRT_Buffer_OnDeviceSizeInBytes", "PJRT_Buffer_ToHostBuffer", "PJRT_Buffer_ReadyEvent",
	"PJRT_Executable_Serialize", "PJRT_Executable_DeserializeAndLoad", "PJRT_Device_AddressableMemories",
	"PJRT_Device_DefaultMemory", "PJRT_Memory_Id", "PJRT_Memory_Kind", "PJRT_Client_DmaMap",
	"PJRT_Client_DmaUnmap",
};

/* The table as JAX's CUDA plugin 0.115 has it: 1144 bytes (138 slots); acceld declares the first 73 and DmaMap and
 * DmaUnmap (110, 111), the others stay NULL here (tests/pjrt_conformance.md, api-version). */
#define REAL_API_MINOR 115
#define REAL_API_SIZE 1144
struct api_table {
	PJRT_Api head;
	void *later[(REAL_API_SIZE - sizeof(PJRT_Api)) / sizeof(void *)];
};
static struct api_table table; /* filled below */
#define api (table.head)
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_live[LIVE_COUNT];
static long g_calls[sizeof(counted) / sizeof(counted[0])];
static int g_initialized;
/* The GPUs the process's first CUDA client took: XLA's ClientLibrary keeps that LocalClient for the process, so
 * every later client gets them whatever its visible_devices say (client_library.cc, GetOrCreateLocalClient). */
static int g_gpus_taken;
static int g_gpu_taken[MAX_DEVICES];
static long g_clients_made;
static char g_precision[8];
static char g_opt_name[MAX_OPTIONS][48];
static char g_opt_value[MAX_OPTIONS][64];
static size_t g_nopts;
static long long g_compile_opts[6] = {-1, -1, -1, -1, -1, -1};
static long g_moved[4]; /* uploads, their bytes, downloads, their bytes */
static long g_dma[4];   /* DmaMap and DmaUnmap calls that succeeded, uploads and downloads of registered memory */
#define DMA_MAX 16
static struct {
	const char *data;
	size_t size;
} g_mapped[DMA_MAX];    /* the ranges DmaMap registered, g_lock held */
static const char *const compile_opt_names[6] = {"num_replicas", "num_partitions", "device_ordinal",
						 "replica_count", "computation_count", "device_id"};

long fake_pjrt_calls(const char *name);
long fake_pjrt_bytes(const char *what);
long fake_pjrt_live(const char *what);
const char *fake_pjrt_last_precision(void);
const char *fake_pjrt_create_option(const char *name);
long long fake_pjrt_compile_option(const char *name);
const PJRT_Api *GetPjrtApi(void);

static void count(const char *name)
{
	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		if (strcmp(counted[i], name) == 0)
			g_calls[i]++;
	pthread_mutex_unlock(&g_lock);
}

/* Writes the counts to FAKE_PJRT_COUNTS's file. */
static void write_counts(void)
{
	const char *path = getenv("FAKE_PJRT_COUNTS");
	long v[4], d[4];

	pthread_mutex_lock(&g_lock);
	memcpy(v, g_moved, sizeof(v));
	memcpy(d, g_dma, sizeof(d));
	pthread_mutex_unlock(&g_lock);
	if (path != NULL && *path != '\0') {
		FILE *f = fopen(path, "w");

		if (f != NULL) {
			fprintf(f, "uploads %ld\nupload_bytes %ld\ndownloads %ld\ndownload_bytes %ld\n", v[0], v[1], v[2],
				v[3]);
			fprintf(f, "dma_maps %ld\ndma_unmaps %ld\npinned_uploads %ld\npinned_downloads %ld\n", d[0], d[1],
				d[2], d[3]);
			fclose(f);
		}
	}
}

/* Whether [p, p + n) lies in a range DmaMap registered; g_lock held. */
static int registered(const void *p, size_t n)
{
	const char *c = p;

	for (int i = 0; i < DMA_MAX; i++)
		if (g_mapped[i].data != NULL && c >= g_mapped[i].data && n <= g_mapped[i].size &&
		    (size_t)(c - g_mapped[i].data) <= g_mapped[i].size - n)
			return 1;
	return 0;
}

/* Counts one transfer (0 upload, 1 download) of bytes from or to host, and writes the counts out. */
static void moved(int way, const void *host, size_t bytes)
{
	pthread_mutex_lock(&g_lock);
	g_moved[2 * way]++;
	g_moved[2 * way + 1] += (long)bytes;
	if (host != NULL && registered(host, bytes))
		g_dma[2 + way]++;
	pthread_mutex_unlock(&g_lock);
	write_counts();
}

long fake_pjrt_bytes(const char *what)
{
	long n;

	pthread_mutex_lock(&g_lock);
	n = strcmp(what, "upload") == 0 ? g_moved[1] : strcmp(what, "download") == 0 ? g_moved[3] : -1;
	pthread_mutex_unlock(&g_lock);
	return n;
}

static void live_add(enum live what, long delta)
{
	pthread_mutex_lock(&g_lock);
	g_live[what] += delta;
	pthread_mutex_unlock(&g_lock);
}

long fake_pjrt_calls(const char *name)
{
	long n = -1;

	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++)
		if (strcmp(counted[i], name) == 0)
			n = g_calls[i];
	pthread_mutex_unlock(&g_lock);
	return n;
}

long fake_pjrt_live(const char *what)
{
	long n = -1;

	pthread_mutex_lock(&g_lock);
	if (strcmp(what, "all") == 0) {
		n = 0;
		for (int i = 0; i < LIVE_COUNT; i++)
			n += g_live[i];
	}
	for (int i = 0; i < LIVE_COUNT; i++)
		if (strcmp(live_names[i], what) == 0)
			n = g_live[i];
	pthread_mutex_unlock(&g_lock);
	return n;
}

const char *fake_pjrt_last_precision(void)
{
	return g_precision;
}

const char *fake_pjrt_create_option(const char *name)
{
	for (size_t i = 0; i < g_nopts; i++)
		if (strcmp(g_opt_name[i], name) == 0)
			return g_opt_value[i];
	return NULL;
}

long long fake_pjrt_compile_option(const char *name)
{
	for (size_t i = 0; i < 6; i++)
		if (strcmp(compile_opt_names[i], name) == 0)
			return g_compile_opts[i];
	return -1;
}

/* ------------------------------------------------------------------------------------------- helpers */

static void *xmalloc(size_t n)
{
	void *p = malloc(n > 0 ? n : 1);

	if (p == NULL) {
		fputs("fake pjrt: out of memory\n", stderr);
		abort();
	}
	return p;
}

static const char *env_str(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

static long env_long(const char *name, long dflt)
{
	const char *v = env_str(name);
	char *end;
	long n;

	if (v == NULL)
		return dflt;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno == 0 && *end == '\0' ? n : dflt;
}

static int env_on(const char *name)
{
	const char *v = env_str(name);

	return v != NULL && strcmp(v, "0") != 0;
}

static int env_is(const char *name, const char *value)
{
	const char *v = env_str(name);

	return v != NULL && strcmp(v, value) == 0;
}

/* Whether the comma-separated list of integers holds v. */
static int in_list(const char *list, long v)
{
	while (list != NULL && *list != '\0') {
		char *end;
		long x = strtol(list, &end, 10);

		if (end != list && x == v)
			return 1;
		list = strchr(list, ',');
		if (list != NULL)
			list++;
	}
	return 0;
}

/* Bytes from "123", "4k", "16g"; dflt when NULL or malformed. */
static int64_t parse_bytes(const char *v, int64_t dflt)
{
	char *end;
	long long n;

	if (v == NULL)
		return dflt;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || n < 0 || end == v)
		return dflt;
	if (*end == 'k' || *end == 'K')
		n *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		n *= 1024 * 1024, end++;
	else if (*end == 'g' || *end == 'G')
		n *= GIB, end++;
	return *end == '\0' ? n : dflt;
}

static int item(const char *list, size_t i, char *out, size_t len);

/* The i-th device's bytes from a comma-separated list in the variable (the last entry for later devices). */
static int64_t env_bytes_at(const char *name, size_t i, int64_t dflt)
{
	char one[32];

	return item(env_str(name), i, one, sizeof(one)) ? parse_bytes(one, dflt) : dflt;
}

static PJRT_Error *make_error(PJRT_Error_Code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static PJRT_Error *make_error(PJRT_Error_Code code, const char *fmt, ...)
{
	va_list ap;
	int n;
	PJRT_Error *e;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	e = xmalloc(sizeof(*e) + (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(e->msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	e->code = code;
	e->len = (size_t)n;
	live_add(LIVE_ERRORS, 1);
	return e;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = xmalloc(n);

	memcpy(d, s, n);
	return d;
}

/* The size check every real entry point makes first. */
static PJRT_Error *check_size(const char *what, size_t expected, size_t actual)
{
	if (actual < expected)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "Unexpected %s size: expected %zu, got %zu. Check installed software versions.", what,
				  expected, actual);
	return NULL;
}

#define CHECK_ARGS(args, type)                                                                                     \
	do {                                                                                                       \
		PJRT_Error *size_err_ = check_size(#type, type##_STRUCT_SIZE, (args)->struct_size);                \
		if (size_err_ != NULL)                                                                             \
			return size_err_;                                                                          \
	} while (0)

static struct timespec now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

static struct timespec after_ms(struct timespec t, long ms)
{
	if (ms <= 0)
		return t;
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static int later(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

static int is_past(struct timespec t)
{
	return !later(t, now());
}

static void sleep_until(struct timespec t)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
}

static enum flavour flavour_of(const char *platform)
{
	if (strcmp(platform, "cuda") == 0 || strcmp(platform, "gpu") == 0 || strcmp(platform, "rocm") == 0)
		return FLAVOUR_GPU;
	if (strcmp(platform, "tpu") == 0)
		return FLAVOUR_TPU;
	return FLAVOUR_FAKE;
}

static const char *platform_env(void)
{
	const char *p = env_str("FAKE_PJRT_PLATFORM");

	return p != NULL ? p : "fake";
}

static void shape_str(const struct shape *s, char *out, size_t len)
{
	size_t used = (size_t)snprintf(out, len, "f32[");

	for (size_t i = 0; i < s->ndims && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%lld", i ? "," : "", (long long)s->dims[i]);
	if (used < len)
		snprintf(out + used, len - used, "]");
}

static int shape_eq(const struct shape *a, const struct shape *b)
{
	if (a->ndims != b->ndims || a->type != b->type)
		return 0;
	for (size_t i = 0; i < a->ndims; i++)
		if (a->dims[i] != b->dims[i])
			return 0;
	return 1;
}

/* ---------------------------------------------------------------------------------------------- errors */

static void error_destroy(PJRT_Error_Destroy_Args *args)
{
	count("PJRT_Error_Destroy");
	if (args->struct_size < PJRT_Error_Destroy_Args_STRUCT_SIZE || args->error == NULL)
		return;
	free(args->error);
	live_add(LIVE_ERRORS, -1);
}

static void error_message(PJRT_Error_Message_Args *args)
{
	count("PJRT_Error_Message");
	if (args->struct_size < PJRT_Error_Message_Args_STRUCT_SIZE || args->error == NULL)
		return;
	args->message = args->error->msg;
	args->message_size = args->error->len;
}

static PJRT_Error *error_get_code(PJRT_Error_GetCode_Args *args)
{
	count("PJRT_Error_GetCode");
	CHECK_ARGS(args, PJRT_Error_GetCode_Args);
	args->code = args->error->code;
	return NULL;
}

/* ---------------------------------------------------------------------------------------------- plugin */

/* What JAX's CUDA plugin 0.11.2 (PJRT 0.115) reports (tests/gpu/README.md, "Runs"); cuda_version only on cuda. */
static const int64_t stablehlo_current[3] = {1, 20, 0};
static const int64_t stablehlo_minimum[3] = {0, 9, 0};
static const int64_t xla_version = 2;
static const int64_t cuda_version = 13000;

static PJRT_Error *plugin_initialize(PJRT_Plugin_Initialize_Args *args)
{
	count("PJRT_Plugin_Initialize");
	CHECK_ARGS(args, PJRT_Plugin_Initialize_Args);
	if (env_on("FAKE_PJRT_INIT_FAIL"))
		return make_error(PJRT_Error_Code_INTERNAL, "fake plugin: initialization failed (FAKE_PJRT_INIT_FAIL)");
	g_initialized = 1;
	return NULL;
}

static PJRT_Error *plugin_attributes(PJRT_Plugin_Attributes_Args *args)
{
	static PJRT_NamedValue attrs[4];

	count("PJRT_Plugin_Attributes");
	CHECK_ARGS(args, PJRT_Plugin_Attributes_Args);
	attrs[0] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "xla_version",
				     .name_size = 11, .type = PJRT_NamedValue_kInt64, .int64_value = xla_version,
				     .value_size = 1};
	attrs[1] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "stablehlo_current_version",
				     .name_size = 25, .type = PJRT_NamedValue_kInt64List,
				     .int64_array_value = stablehlo_current, .value_size = 3};
	attrs[2] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "stablehlo_minimum_version",
				     .name_size = 25, .type = PJRT_NamedValue_kInt64List,
				     .int64_array_value = stablehlo_minimum, .value_size = 3};
	attrs[3] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = "cuda_version",
				     .name_size = 12, .type = PJRT_NamedValue_kInt64, .int64_value = cuda_version,
				     .value_size = 1};
	args->attributes = attrs;
	args->num_attributes = flavour_of(platform_env()) == FLAVOUR_GPU ? 4 : 3;
	return NULL;
}

/* ---------------------------------------------------------------------------------------------- events */

static PJRT_Event *event_new(struct timespec ready_at, PJRT_Error_Code code, const char *msg)
{
	struct event_core *c = xmalloc(sizeof(*c));
	PJRT_Event *e = xmalloc(sizeof(*e));

	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->refs = 1;
	c->ready_at = ready_at;
	c->code = code;
	c->msg = msg != NULL ? xstrdup(msg) : NULL;
	e->core = c;
	live_add(LIVE_EVENTS, 1);
	return e;
}

static void core_unref(struct event_core *c)
{
	int left;

	pthread_mutex_lock(&c->lock);
	left = --c->refs;
	pthread_mutex_unlock(&c->lock);
	if (left > 0)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->src);
	free(c->msg);
	free(c);
}

/* The event is complete: writes a pending copy (once) and returns its status as a new error or NULL. */
static PJRT_Error *core_observe(struct event_core *c)
{
	PJRT_Error *err = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->src != NULL) {
		if (c->code == PJRT_Error_Code_OK)
			memcpy(c->dst, c->src, c->bytes);
		free(c->src);
		c->src = NULL;
	}
	if (c->code != PJRT_Error_Code_OK)
		err = make_error(c->code, "%s", c->msg != NULL ? c->msg : "");
	pthread_mutex_unlock(&c->lock);
	return err;
}

static PJRT_Error *event_destroy(PJRT_Event_Destroy_Args *args)
{
	count("PJRT_Event_Destroy");
	CHECK_ARGS(args, PJRT_Event_Destroy_Args);
	if (args->event == NULL)
		return NULL;
	core_unref(args->event->core);
	free(args->event);
	live_add(LIVE_EVENTS, -1);
	return NULL;
}

static PJRT_Error *event_is_ready(PJRT_Event_IsReady_Args *args)
{
	count("PJRT_Event_IsReady");
	CHECK_ARGS(args, PJRT_Event_IsReady_Args);
	args->is_ready = is_past(args->event->core->ready_at);
	if (args->is_ready) {
		PJRT_Error *status = core_observe(args->event->core);

		/* the status itself is read with PJRT_Event_Error */
		if (status != NULL) {
			free(status);
			live_add(LIVE_ERRORS, -1);
		}
	}
	return NULL;
}

static PJRT_Error *event_error(PJRT_Event_Error_Args *args)
{
	count("PJRT_Event_Error");
	CHECK_ARGS(args, PJRT_Event_Error_Args);
	if (!is_past(args->event->core->ready_at))
		return make_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "PJRT_Event_Error called before the event is ready");
	return core_observe(args->event->core);
}

static PJRT_Error *event_await(PJRT_Event_Await_Args *args)
{
	count("PJRT_Event_Await");
	CHECK_ARGS(args, PJRT_Event_Await_Args);
	sleep_until(args->event->core->ready_at);
	return core_observe(args->event->core);
}

/*
 * OnReady on an event not yet complete: a thread waits for it and calls back. The threads are joinable and kept
 * in a table so that a finished one is reaped at the next OnReady and all are joined when the library is
 * unloaded: no thread may still be running this code after dlclose.
 */
#define MAX_WAITERS 64

struct waiter {
	struct event_core *core;
	PJRT_Event_OnReadyCallback callback;
	void *user_arg;
	size_t slot;
};

static struct {
	pthread_t thread;
	int used;
	int finished;
} g_waiters[MAX_WAITERS];

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	size_t slot = w->slot;

	sleep_until(w->core->ready_at);
	w->callback(core_observe(w->core), w->user_arg);
	core_unref(w->core);
	free(w);
	pthread_mutex_lock(&g_lock);
	g_live[LIVE_CALLBACKS]--;
	g_waiters[slot].finished = 1;
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

/* A free slot in the waiter table, joining finished threads (and, when all are busy, the first one). */
static size_t waiter_slot(void)
{
	size_t free_slot = MAX_WAITERS;
	pthread_t t;

	for (;;) {
		pthread_mutex_lock(&g_lock);
		for (size_t i = 0; i < MAX_WAITERS; i++) {
			if (g_waiters[i].used && g_waiters[i].finished) {
				t = g_waiters[i].thread;
				g_waiters[i].used = 0;
				pthread_mutex_unlock(&g_lock);
				pthread_join(t, NULL);
				pthread_mutex_lock(&g_lock);
			}
			if (!g_waiters[i].used && free_slot == MAX_WAITERS)
				free_slot = i;
		}
		if (free_slot < MAX_WAITERS) {
			g_waiters[free_slot].used = 1;
			g_waiters[free_slot].finished = 0;
			pthread_mutex_unlock(&g_lock);
			return free_slot;
		}
		t = g_waiters[0].thread;
		g_waiters[0].used = 0;
		pthread_mutex_unlock(&g_lock);
		pthread_join(t, NULL);
	}
}

static void join_waiters(void) __attribute__((destructor));

static void join_waiters(void)
{
	for (size_t i = 0; i < MAX_WAITERS; i++)
		if (g_waiters[i].used) {
			pthread_join(g_waiters[i].thread, NULL);
			g_waiters[i].used = 0;
		}
}

static PJRT_Error *event_on_ready(PJRT_Event_OnReady_Args *args)
{
	struct event_core *c;
	struct waiter *w;
	int rc;

	count("PJRT_Event_OnReady");
	CHECK_ARGS(args, PJRT_Event_OnReady_Args);
	c = args->event->core;
	if (is_past(c->ready_at)) {
		args->callback(core_observe(c), args->user_arg);
		return NULL;
	}
	/* the thread holds its own reference, so the event may be destroyed before it completes */
	w = xmalloc(sizeof(*w));
	pthread_mutex_lock(&c->lock);
	c->refs++;
	pthread_mutex_unlock(&c->lock);
	w->core = c;
	w->callback = args->callback;
	w->user_arg = args->user_arg;
	w->slot = waiter_slot();
	live_add(LIVE_CALLBACKS, 1);
	rc = pthread_create(&g_waiters[w->slot].thread, NULL, waiter_main, w);
	if (rc != 0) {
		pthread_mutex_lock(&g_lock);
		g_waiters[w->slot].used = 0;
		pthread_mutex_unlock(&g_lock);
		core_unref(c);
		free(w);
		live_add(LIVE_CALLBACKS, -1);
		return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "fake plugin: cannot start a thread: %s",
				  strerror(rc));
	}
	return NULL;
}

/* ---------------------------------------------------------------------------------------------- client */

/* The create options XLA's GPU plugin accepts, with their types (pjrt_c_api_gpu_internal.cc). */
static const struct {
	const char *name;
	PJRT_NamedValue_Type type;
} gpu_options[] = {
	{"platform_name", PJRT_NamedValue_kString},
	{"allocator", PJRT_NamedValue_kString},
	{"memory_fraction", PJRT_NamedValue_kFloat},
	{"preallocate", PJRT_NamedValue_kBool},
	{"collective_memory_size", PJRT_NamedValue_kInt64},
	{"visible_devices", PJRT_NamedValue_kInt64List},
	{"node_id", PJRT_NamedValue_kInt64},
	{"num_nodes", PJRT_NamedValue_kInt64},
	{"should_stage_host_to_device_transfers", PJRT_NamedValue_kBool},
	{"abort_collectives_on_failure", PJRT_NamedValue_kBool},
	{"use_tfrt_gpu_client", PJRT_NamedValue_kBool},
	{"enable_mock_nccl", PJRT_NamedValue_kBool},
	{"mock_gpu_topology", PJRT_NamedValue_kString},
	{"partition_index", PJRT_NamedValue_kInt64},
}, tpu_options[] = {
	{"ml_framework_name", PJRT_NamedValue_kString},
	{"ml_framework_version", PJRT_NamedValue_kString},
};

/* xla::PjRtValueType's alternative index for a PJRT type, as the real "type index" message prints it. */
static int variant_index(PJRT_NamedValue_Type t)
{
	switch (t) {
	case PJRT_NamedValue_kString:
		return 0;
	case PJRT_NamedValue_kBool:
		return 1;
	case PJRT_NamedValue_kInt64:
		return 2;
	case PJRT_NamedValue_kInt64List:
		return 3;
	case PJRT_NamedValue_kFloat:
		return 4;
	}
	return -1;
}

static void render_option(const PJRT_NamedValue *v, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	switch (v->type) {
	case PJRT_NamedValue_kString:
		snprintf(out, len, "%.*s", (int)(v->value_size < len ? v->value_size : len - 1), v->string_value);
		break;
	case PJRT_NamedValue_kInt64:
		snprintf(out, len, "%lld", (long long)v->int64_value);
		break;
	case PJRT_NamedValue_kInt64List:
		for (size_t i = 0; i < v->value_size && used < len; i++)
			used += (size_t)snprintf(out + used, len - used, "%s%lld", i ? "," : "",
						 (long long)v->int64_array_value[i]);
		break;
	case PJRT_NamedValue_kFloat:
		snprintf(out, len, "%g", (double)v->float_value);
		break;
	case PJRT_NamedValue_kBool:
		snprintf(out, len, "%s", v->bool_value ? "true" : "false");
		break;
	}
}

/* Checks names and types like the real plugins: an unknown name or a wrong type fails client creation. */
static PJRT_Error *check_options(enum flavour fl, const PJRT_NamedValue *opts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const PJRT_NamedValue *o = &opts[i];
		int known = fl == FLAVOUR_FAKE;
		PJRT_NamedValue_Type want = o->type;
		size_t nk = fl == FLAVOUR_GPU ? sizeof(gpu_options) / sizeof(gpu_options[0])
					      : sizeof(tpu_options) / sizeof(tpu_options[0]);

		if (o->struct_size < PJRT_NamedValue_STRUCT_SIZE)
			return check_size("PJRT_NamedValue", PJRT_NamedValue_STRUCT_SIZE, o->struct_size);
		for (size_t k = 0; fl != FLAVOUR_FAKE && k < nk; k++) {
			const char *name = fl == FLAVOUR_GPU ? gpu_options[k].name : tpu_options[k].name;

			if (strlen(name) == o->name_size && strncmp(name, o->name, o->name_size) == 0) {
				known = 1;
				want = fl == FLAVOUR_GPU ? gpu_options[k].type : tpu_options[k].type;
			}
		}
		if (!known)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "Unexpected option name passed to PJRT_Client_Create: %.*s", (int)o->name_size,
					  o->name);
		if (want != o->type)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "Option passed to PJRT_Client_Create with name %.*s has type index %d but "
					  "expected type index is %d",
					  (int)o->name_size, o->name, variant_index(o->type), (int)want);
	}
	return NULL;
}

static const PJRT_NamedValue *find_option(const PJRT_NamedValue *opts, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(name) == opts[i].name_size && strncmp(name, opts[i].name, opts[i].name_size) == 0)
			return &opts[i];
	return NULL;
}

static void record_options(const PJRT_NamedValue *opts, size_t n)
{
	g_nopts = 0;
	for (size_t i = 0; i < n && g_nopts < MAX_OPTIONS; i++) {
		snprintf(g_opt_name[g_nopts], sizeof(g_opt_name[0]), "%.*s", (int)opts[i].name_size, opts[i].name);
		render_option(&opts[i], g_opt_value[g_nopts], sizeof(g_opt_value[0]));
		g_nopts++;
	}
}

static PJRT_NamedValue attr_int(const char *name, int64_t v)
{
	return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name, .name_size = strlen(name),
				 .type = PJRT_NamedValue_kInt64, .int64_value = v, .value_size = 1};
}

static PJRT_NamedValue attr_str(const char *name, const char *v)
{
	return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name, .name_size = strlen(name),
				 .type = PJRT_NamedValue_kString, .string_value = v, .value_size = strlen(v)};
}

static PJRT_NamedValue attr_list(const char *name, const int64_t *v, size_t n)
{
	return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name, .name_size = strlen(name),
				 .type = PJRT_NamedValue_kInt64List, .int64_array_value = v, .value_size = n};
}

/* The i-th entry of a comma-separated list (the last one for any later i) into out; false when list is NULL. */
static int item(const char *list, size_t i, char *out, size_t len)
{
	size_t n;

	if (list == NULL)
		return 0;
	for (; i > 0 && strchr(list, ',') != NULL; i--)
		list = strchr(list, ',') + 1;
	n = strcspn(list, ",");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), list);
	return 1;
}

/* Rotates the attributes by r places: the real plugins keep them in a hash map, whose order changes from one
 * client to the next (two clients of one process listed an H100's nine in different orders), so no caller may
 * depend on it. */
static void rotate(struct PJRT_DeviceDescription *s, size_t r)
{
	PJRT_NamedValue tmp[12];

	if (s->nattrs == 0)
		return;
	for (size_t i = 0; i < s->nattrs; i++)
		tmp[i] = s->attrs[(i + r) % s->nattrs];
	memcpy(s->attrs, tmp, s->nattrs * sizeof(tmp[0]));
}

/* Fills a device's description the way the real plugin of its flavour does (tests/pjrt_conformance.md). */
static void describe(PJRT_Client *c, PJRT_Device *d, int ordinal, int id, int64_t memory)
{
	struct PJRT_DeviceDescription *s = &d->desc;
	char kind_buf[64], cc_buf[8];
	const char *kind = item(env_str("FAKE_PJRT_KIND"), (size_t)ordinal, kind_buf, sizeof(kind_buf)) ? kind_buf : NULL;
	const char *cc = item(env_str("FAKE_PJRT_CC"), (size_t)ordinal, cc_buf, sizeof(cc_buf)) ? cc_buf : NULL;

	memset(s, 0, sizeof(*s));
	s->id = id;
	if (c->flavour == FLAVOUR_GPU) {
		/* JAX's CUDA plugin 0.11.2 on an H100: these nine, and no PCI address or UUID */
		snprintf(s->kind, sizeof(s->kind), "%s", kind != NULL ? kind : "NVIDIA H100 80GB HBM3");
		snprintf(s->vendor, sizeof(s->vendor), "NVIDIA Corporation");
		snprintf(s->cc, sizeof(s->cc), "%s", cc != NULL ? cc : "9.0");
		/* (0, 0, local device id): [0,0,0] seen for ordinal 0, the rest as upstream's tests expect */
		s->coords[0] = 0;
		s->coords[1] = 0;
		s->coords[2] = ordinal;
		s->attrs[s->nattrs++] = attr_list("coords", s->coords, 3);
		s->attrs[s->nattrs++] = attr_str("device_vendor", s->vendor);
		s->attrs[s->nattrs++] = attr_int("slice_index", 0);
		s->attrs[s->nattrs++] = attr_int("partition_index", 0);
		s->attrs[s->nattrs++] = attr_str("compute_capability", s->cc);
		s->attrs[s->nattrs++] = attr_int("shared_memory_per_block_optin", 232448);
		s->attrs[s->nattrs++] = attr_int("core_count", 132);
		s->attrs[s->nattrs++] = attr_int("device_memory_bytes_limit", memory);
		s->attrs[s->nattrs++] = attr_str("fabric_uuid", "");
		rotate(s, (size_t)g_clients_made);
		/* what jax-cuda13-pjrt 0.11.2's PJRT_DeviceDescription_ToString and DebugString answer (seen on an H200:
		 * tests/pjrt_conformance.md, gpu-strings) */
		snprintf(s->debug, sizeof(s->debug), "cuda:%d", id);
		snprintf(s->repr, sizeof(s->repr), "CudaDevice(id=%d)", id);
	} else if (c->flavour == FLAVOUR_TPU) {
		/* libtpu: coords and core_on_chip; with two cores a chip (FAKE_PJRT_CORES_PER_CHIP=2, v2 to v4 listed
		 * core by core) each chip is two devices */
		long cores = env_long("FAKE_PJRT_CORES_PER_CHIP", 1) == 2 ? 2 : 1;
		long chip = ordinal / cores;

		snprintf(s->kind, sizeof(s->kind), "%s", kind != NULL ? kind : "TPU v5 lite");
		/* chips on a 2-wide grid */
		s->coords[0] = chip % 2;
		s->coords[1] = chip / 2;
		s->coords[2] = 0;
		s->attrs[s->nattrs++] = attr_list("coords", s->coords, 3);
		s->attrs[s->nattrs++] = attr_int("core_on_chip", ordinal % cores);
		s->attrs[s->nattrs++] = attr_int("slice_index", 0);
		snprintf(s->debug, sizeof(s->debug), "TPU_%d(host=0,(%lld,%lld,0,%ld))", id, (long long)s->coords[0],
			 (long long)s->coords[1], (long)(ordinal % cores));
		snprintf(s->repr, sizeof(s->repr), "TpuDevice(id=%d, process_index=0, coords=(%lld,%lld,0), core_on_chip=%ld)",
			 id, (long long)s->coords[0], (long long)s->coords[1], (long)(ordinal % cores));
	} else {
		snprintf(s->kind, sizeof(s->kind), "%s", kind != NULL ? kind : "Fake CPU");
		s->coords[0] = ordinal;
		s->attrs[s->nattrs++] = attr_list("coords", s->coords, 1);
		snprintf(s->debug, sizeof(s->debug), "fake:%d", id);
		snprintf(s->repr, sizeof(s->repr), "FakeDevice(id=%d)", id);
	}
}

static PJRT_Error *create_refused(enum flavour fl)
{
	if (env_on("FAKE_PJRT_BUSY")) {
		if (fl == FLAVOUR_TPU && env_is("FAKE_PJRT_BUSY", "device"))
			return make_error(PJRT_Error_Code_INTERNAL,
					  "TPU initialization failed: open(/dev/accel0): Device or resource busy: "
					  "possibly held by another process");
		if (fl == FLAVOUR_TPU)
			return make_error(PJRT_Error_Code_ABORTED,
					  "The TPU is already in use by process with pid %ld. Not attempting to load "
					  "libtpu.so in this process.",
					  env_long("FAKE_PJRT_BUSY_PID", 4242));
		if (fl == FLAVOUR_GPU)
			return NULL; /* every GPU is skipped, one by one, in client_create */
		return make_error(PJRT_Error_Code_UNAVAILABLE, "fake plugin: devices busy (FAKE_PJRT_BUSY)");
	}
	if (env_on("FAKE_PJRT_CREATE_FAIL") || env_long("FAKE_PJRT_DEVICES", 1) <= 0) {
		if (fl == FLAVOUR_TPU)
			return make_error(PJRT_Error_Code_NOT_FOUND, "TPU initialization failed: No TPU devices found.");
		if (fl == FLAVOUR_GPU)
			return make_error(PJRT_Error_Code_INTERNAL, "no supported devices found for platform CUDA");
		return make_error(PJRT_Error_Code_INTERNAL, "fake plugin: no devices (FAKE_PJRT_CREATE_FAIL)");
	}
	return NULL;
}

/* FAKE_PJRT_ENV_LOG: the TPU bounds this process was given, written to that file. */
static void env_log(void)
{
	static const char *const names[] = {"TPU_PROCESS_BOUNDS", "TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_VISIBLE_CHIPS"};
	const char *path = env_str("FAKE_PJRT_ENV_LOG");
	FILE *f;

	if (path == NULL || (f = fopen(path, "w")) == NULL)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);

		if (v != NULL)
			fprintf(f, "%s=%s\n", names[i], v);
		else
			fprintf(f, "%s unset\n", names[i]);
	}
	fclose(f);
}

/* FAKE_PJRT_CREATE_SLOW_MS: client creation takes that long more. */
static void create_slow(void)
{
	long ms = env_long("FAKE_PJRT_CREATE_SLOW_MS", 0);
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* FAKE_PJRT_CRASH: ends the process in the call named where, saying so on stderr first. */
static void crash_in(const char *where)
{
	const char *flag = env_str("FAKE_PJRT_CRASH_FLAG");

	if (!env_is("FAKE_PJRT_CRASH", where) || (flag != NULL && access(flag, F_OK) != 0))
		return;
	fprintf(stderr, "fake pjrt: FAKE_PJRT_CRASH=%s: aborting\n", where);
	fflush(stderr);
	abort();
}

/*
 * libtpu's process lock (TryAcquireTpuLock): lockf on the lock file at the first client, kept until the process
 * exits. NULL when taken (or FAKE_PJRT_LOCKFILE is unset), else libtpu's ABORTED error naming the holder.
 */
static PJRT_Error *tpu_lock(void)
{
	static int held = -1;
	const char *path = env_str("FAKE_PJRT_LOCKFILE");
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int fd;

	if (path == NULL || held >= 0)
		return NULL;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && lockf(fd, F_TLOCK, 0) == 0) {
		held = fd; /* never closed: the lock goes with the process */
		return NULL;
	}
	if (fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0) {
		close(fd);
		return make_error(PJRT_Error_Code_ABORTED,
				  "The TPU is already in use by process with pid %ld. Not attempting to load libtpu.so "
				  "in this process.", (long)fl.l_pid);
	}
	if (fd >= 0)
		close(fd);
	return make_error(PJRT_Error_Code_ABORTED,
			  "The TPU is already in use by another process probably owned by another user. Run \"$ sudo "
			  "lsof -w /dev/accel0\" to figure out which process is using the TPU. If you still get this "
			  "message, run \"$ sudo rm /tmp/libtpu_lockfile\".");
}

static PJRT_Error *client_create(PJRT_Client_Create_Args *args)
{
	const char *platform = platform_env();
	enum flavour fl = flavour_of(platform);
	long ndev = env_long("FAKE_PJRT_DEVICES", 1);
	int64_t memory;
	const PJRT_NamedValue *vis, *frac, *alloc;
	PJRT_Client *c;
	PJRT_Error *err;
	int64_t gpu_limit;
	long cores;

	count("PJRT_Client_Create");
	crash_in("client");
	env_log();
	create_slow();
	CHECK_ARGS(args, PJRT_Client_Create_Args);
	if (!g_initialized)
		return make_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "fake plugin: PJRT_Plugin_Initialize must be called before PJRT_Client_Create");
	err = check_options(fl, args->create_options, args->num_options);
	if (err != NULL)
		return err;
	record_options(args->create_options, args->num_options);
	err = create_refused(fl);
	if (err == NULL && fl == FLAVOUR_GPU && getenv("CUDA_VISIBLE_DEVICES") != NULL &&
	    *getenv("CUDA_VISIBLE_DEVICES") == '\0') {
		/* CUDA sees no GPU at all (seen on an H200: tests/pjrt_conformance.md, no-visible-gpu) */
		fprintf(stderr, "E external/xla/xla/stream_executor/cuda/cuda_platform.cc:57] failed call to cuInit: "
			"INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is "
			"detected\n");
		err = make_error(PJRT_Error_Code_FAILED_PRECONDITION, "No visible GPU devices.");
	}
	if (err == NULL && fl == FLAVOUR_TPU)
		err = tpu_lock();
	if (err != NULL)
		return err;
	alloc = find_option(args->create_options, args->num_options, "allocator");
	if (fl == FLAVOUR_GPU && alloc != NULL) {
		static const char *const ok[] = {"default", "platform", "bfc", "cuda_async", "vmm", "address"};
		int found = 0;

		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			found |= strlen(ok[i]) == alloc->value_size &&
				 strncmp(ok[i], alloc->string_value, alloc->value_size) == 0;
		if (!found)
			return make_error(PJRT_Error_Code_UNIMPLEMENTED,
					  "Allocator %.*s not supported for PJRT GPU plugin. Supported allocator options "
					  "are: 'default', 'platform', 'bfc', 'cuda_async', 'vmm' and 'address'.",
					  (int)alloc->value_size, alloc->string_value);
	}
	if (ndev > MAX_DEVICES)
		ndev = MAX_DEVICES;
	frac = fl == FLAVOUR_GPU ? find_option(args->create_options, args->num_options, "memory_fraction") : NULL;
	if (frac != NULL && !(frac->float_value > 0.0f && frac->float_value <= 1.0f))
		frac = NULL;
	vis = fl == FLAVOUR_GPU ? find_option(args->create_options, args->num_options, "visible_devices") : NULL;
	if (fl == FLAVOUR_GPU && !g_gpus_taken) {
		/* the first client takes its GPUs; one held by another process is skipped with a warning on stderr, as
		 * xla/service/platform_util.cc (GetStreamExecutors) does, and kept out for the process's life */
		const char *busy = env_str("FAKE_PJRT_BUSY_DEVICES");
		int take[MAX_DEVICES] = {0};

		for (long o = 0; o < ndev && o < MAX_DEVICES; o++) {
			for (size_t i = 0; vis != NULL && i < vis->value_size; i++)
				take[o] |= vis->int64_array_value[i] == o;
			take[o] |= vis == NULL;
			if (take[o] && ((busy != NULL && in_list(busy, o)) || env_on("FAKE_PJRT_BUSY"))) {
				fprintf(stderr, "W external/xla/xla/service/platform_util.cc:220] unable to create "
					"StreamExecutor for CUDA:%ld: CUDA error: Failed call to cuDevicePrimaryCtxRetain: "
					"CUDA_ERROR_DEVICES_UNAVAILABLE: CUDA-capable device(s) is/are busy or unavailable\n",
					o);
				take[o] = 0;
			}
		}
		/* an ordinal CUDA does not have is skipped (XLA logs "Failed to create stream executor for device
		 * CUDA:9"); none left is an error, and nothing is kept (seen on an H100 with visible_devices=[9]) */
		for (long o = 0; o < MAX_DEVICES; o++)
			if (take[o])
				break;
			else if (o == MAX_DEVICES - 1)
				return make_error(PJRT_Error_Code_INTERNAL, "no supported devices found for platform CUDA");
		memcpy(g_gpu_taken, take, sizeof(take));
		g_gpus_taken = 1;
	}

	c = xmalloc(sizeof(*c));
	memset(c, 0, sizeof(*c));
	c->flavour = fl;
	snprintf(c->platform, sizeof(c->platform), "%s", platform);
	snprintf(c->version, sizeof(c->version), "%s", fl == FLAVOUR_GPU ? "cuda 13000" :
						       fl == FLAVOUR_TPU ? "libtpu fake" : "fake 1.0");
	cores = fl == FLAVOUR_TPU && env_long("FAKE_PJRT_CORES_PER_CHIP", 1) == 2 ? 2 : 1;
	for (long o = 0; o < ndev * cores && o < MAX_DEVICES; o++) {
		PJRT_Device *d;

		if (fl == FLAVOUR_GPU && !g_gpu_taken[o])
			continue;
		d = &c->devs[c->ndev];
		d->client = c;
		d->ordinal = (int)o;
		/* libtpu's local hardware ids count chips or TensorCores (FAKE_PJRT_HW_IDS=chips): both are possible,
		 * neither seen here (tests/pjrt_conformance.md, tpu-attributes) */
		d->hw = cores == 2 && env_is("FAKE_PJRT_HW_IDS", "chips") ? (int)(o / 2) : (int)o;
		memory = env_bytes_at("FAKE_PJRT_MEMORY", (size_t)o, 16 * GIB);
		/* the real GPU allocator's limit: memory_fraction (default 0.75) of the memory (CreateBFCAllocator),
		 * rounded up to 2 MiB (seen on an H200: tests/pjrt_conformance.md, memory-stats) */
		gpu_limit = (int64_t)((double)memory * (frac != NULL ? frac->float_value : 0.75));
		gpu_limit = (gpu_limit + (2 << 20) - 1) / (2 << 20) * (2 << 20);
		d->limit = fl == FLAVOUR_GPU ? gpu_limit : memory;
		describe(c, d, (int)o, (int)o, memory);
		if (fl == FLAVOUR_GPU) {
			/* the GPU plugin's memory spaces: the device's own, then pinned host memory, ids by device */
			d->memory[0] = (struct PJRT_Memory){.id = 2 * (int)c->ndev, .kind = "device"};
			d->memory[1] = (struct PJRT_Memory){.id = 2 * (int)c->ndev + 1, .kind = "pinned_host"};
			d->memories[0] = &d->memory[0];
			d->memories[1] = &d->memory[1];
			d->nmemories = 2;
		}
		c->list[c->ndev++] = d;
	}
	g_clients_made++;
	args->client = c;
	live_add(LIVE_CLIENTS, 1);
	return NULL;
}

static PJRT_Error *client_destroy(PJRT_Client_Destroy_Args *args)
{
	PJRT_Client *c;

	count("PJRT_Client_Destroy");
	CHECK_ARGS(args, PJRT_Client_Destroy_Args);
	c = args->client;
	if (c == NULL)
		return NULL;
	if (c->live_buffers > 0 || c->live_execs > 0)
		return make_error(PJRT_Error_Code_FAILED_PRECONDITION,
				  "fake plugin: client destroyed with %ld live buffers and %ld live executables",
				  c->live_buffers, c->live_execs);
	free(c);
	live_add(LIVE_CLIENTS, -1);
	return NULL;
}

static PJRT_Error *client_platform_name(PJRT_Client_PlatformName_Args *args)
{
	count("PJRT_Client_PlatformName");
	CHECK_ARGS(args, PJRT_Client_PlatformName_Args);
	args->platform_name = args->client->platform;
	args->platform_name_size = strlen(args->client->platform);
	return NULL;
}

static PJRT_Error *client_process_index(PJRT_Client_ProcessIndex_Args *args)
{
	count("PJRT_Client_ProcessIndex");
	CHECK_ARGS(args, PJRT_Client_ProcessIndex_Args);
	args->process_index = 0;
	return NULL;
}

static PJRT_Error *client_platform_version(PJRT_Client_PlatformVersion_Args *args)
{
	count("PJRT_Client_PlatformVersion");
	CHECK_ARGS(args, PJRT_Client_PlatformVersion_Args);
	args->platform_version = args->client->version;
	args->platform_version_size = strlen(args->client->version);
	return NULL;
}

static PJRT_Error *client_devices(PJRT_Client_Devices_Args *args)
{
	count("PJRT_Client_Devices");
	CHECK_ARGS(args, PJRT_Client_Devices_Args);
	args->devices = args->client->list;
	args->num_devices = args->client->ndev;
	return NULL;
}

static PJRT_Error *client_addressable_devices(PJRT_Client_AddressableDevices_Args *args)
{
	count("PJRT_Client_AddressableDevices");
	CHECK_ARGS(args, PJRT_Client_AddressableDevices_Args);
	args->addressable_devices = args->client->list;
	args->num_addressable_devices = args->client->ndev;
	return NULL;
}

/* ------------------------------------------------------------------------------------- compile options */

struct compile_opts {
	long long v[6]; /* in compile_opt_names order */
};

static int read_varint(const unsigned char **p, const unsigned char *end, unsigned long long *out)
{
	unsigned long long v = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		unsigned char b = *(*p)++;

		v |= (unsigned long long)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*out = v;
			return 1;
		}
	}
	return 0;
}

/* Skips one field's payload of the given wire type; 0 on malformed input. */
static int skip_field(const unsigned char **p, const unsigned char *end, unsigned wire)
{
	unsigned long long n;

	switch (wire) {
	case 0:
		return read_varint(p, end, &n);
	case 1:
		if (end - *p < 8)
			return 0;
		*p += 8;
		return 1;
	case 2:
		if (!read_varint(p, end, &n) || n > (unsigned long long)(end - *p))
			return 0;
		*p += n;
		return 1;
	case 5:
		if (end - *p < 4)
			return 0;
		*p += 4;
		return 1;
	default:
		return 0;
	}
}

/* Walks a message, calling visit for each field; visit returns 0 to stop with an error. */
static int walk(const unsigned char *p, const unsigned char *end, void *ctx,
		int (*visit)(void *ctx, unsigned field, unsigned wire, const unsigned char **p, const unsigned char *end))
{
	while (p < end) {
		unsigned long long key;

		if (!read_varint(&p, end, &key) || (key >> 3) == 0)
			return 0;
		if (!visit(ctx, (unsigned)(key >> 3), (unsigned)(key & 7), &p, end))
			return 0;
	}
	return 1;
}

static int len_payload(const unsigned char **p, const unsigned char *end, const unsigned char **start,
		       const unsigned char **stop)
{
	unsigned long long n;

	if (!read_varint(p, end, &n) || n > (unsigned long long)(end - *p))
		return 0;
	*start = *p;
	*stop = *p + n;
	*p += n;
	return 1;
}

static int visit_computation_device(void *ctx, unsigned field, unsigned wire, const unsigned char **p,
				    const unsigned char *end)
{
	struct compile_opts *o = ctx;
	unsigned long long v;
	const unsigned char *s, *e;

	if (field != 1)
		return skip_field(p, end, wire);
	if (wire == 0) {
		if (!read_varint(p, end, &v))
			return 0;
		if (o->v[5] < 0)
			o->v[5] = (long long)v;
		return 1;
	}
	if (wire != 2 || !len_payload(p, end, &s, &e))
		return 0;
	while (s < e) {
		if (!read_varint(&s, e, &v))
			return 0;
		if (o->v[5] < 0)
			o->v[5] = (long long)v;
	}
	return 1;
}

static int visit_assignment(void *ctx, unsigned field, unsigned wire, const unsigned char **p,
			    const unsigned char *end)
{
	struct compile_opts *o = ctx;
	unsigned long long v;
	const unsigned char *s, *e;

	if ((field == 1 || field == 2) && wire == 0) {
		if (!read_varint(p, end, &v))
			return 0;
		o->v[field == 1 ? 3 : 4] = (long long)v;
		return 1;
	}
	if (field == 3 && wire == 2)
		return len_payload(p, end, &s, &e) && walk(s, e, o, visit_computation_device);
	return skip_field(p, end, wire);
}

static int visit_build_options(void *ctx, unsigned field, unsigned wire, const unsigned char **p,
			       const unsigned char *end)
{
	struct compile_opts *o = ctx;
	unsigned long long v;
	const unsigned char *s, *e;

	if ((field == 1 || field == 4 || field == 5) && wire == 0) {
		if (!read_varint(p, end, &v))
			return 0;
		o->v[field == 4 ? 0 : field == 5 ? 1 : 2] = (long long)v;
		return 1;
	}
	if (field == 9 && wire == 2)
		return len_payload(p, end, &s, &e) && walk(s, e, o, visit_assignment);
	return skip_field(p, end, wire);
}

static int visit_compile_options(void *ctx, unsigned field, unsigned wire, const unsigned char **p,
				 const unsigned char *end)
{
	const unsigned char *s, *e;

	if (field == 3 && wire == 2)
		return len_payload(p, end, &s, &e) && walk(s, e, ctx, visit_build_options);
	return skip_field(p, end, wire);
}

/* ------------------------------------------------------------------------------------------- programs */

/* A parse error at pos, located like MLIR's diagnostics (line:column) and quoting the line. */
static PJRT_Error *parse_error(const char *text, const char *pos, const char *what)
{
	const char *start = text;
	int line = 1;

	for (const char *p = text; p < pos; p++)
		if (*p == '\n') {
			line++;
			start = p + 1;
		}
	return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
			  "Failed to parse MLIR program: <program>:%d:%d: error: %s\n  %.*s", line,
			  (int)(pos - start) + 1, what, (int)strcspn(start, "\n"), start);
}

/* Parses "tensor<2x3xf32>" at p; 0 when it is not a static f32 tensor type. */
static int parse_tensor(const char *p, struct shape *s)
{
	char *end;

	if (strncmp(p, "tensor<", 7) != 0)
		return 0;
	p += 7;
	s->ndims = 0;
	while (*p >= '0' && *p <= '9') {
		long long d = strtoll(p, &end, 10);

		if (*end != 'x' || s->ndims == MAX_DIMS)
			return 0;
		s->dims[s->ndims++] = d;
		p = end + 1;
	}
	s->type = strncmp(p, "ui32>", 5) == 0 ? E_U32 : strncmp(p, "ui64>", 5) == 0 ? E_U64 : E_F32;
	return strncmp(p, "f32>", 4) == 0 || s->type != E_F32;
}

/* The end of a parenthesised list starting at open ('('), skipping quoted strings; NULL when unbalanced. */
static const char *close_paren(const char *open)
{
	int depth = 0;

	for (const char *p = open; *p != '\0'; p++) {
		if (*p == '"') {
			for (p++; *p != '\0' && *p != '"'; p++)
				if (*p == '\\' && p[1] != '\0')
					p++;
			if (*p == '\0')
				return NULL;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && --depth == 0) {
			return p;
		}
	}
	return NULL;
}

/* Collects the tensor types between from and to; -1 when one is not a static f32 tensor. */
static int collect_tensors(const char *from, const char *to, struct shape *out, int max)
{
	int n = 0;

	for (const char *p = strstr(from, "tensor<"); p != NULL && p < to; p = strstr(p + 7, "tensor<")) {
		if (n == max || !parse_tensor(p, &out[n]))
			return -1;
		n++;
	}
	return n;
}

static int rank_is(const struct shape *s, size_t r)
{
	return s->ndims == r;
}

/* Whether @main's signature fits the kernel (arity, ranks, matching sizes). */
static int signature_fits(enum kernel k, const struct shape *a, int nargs, const struct shape *r)
{
	if (nargs != kernel_arity[k] && !(k == K_SGEMM && nargs == 3))
		return 0;
	switch (k) {
	case K_SAXPY:
	case K_TRIAD:
		return rank_is(&a[0], 0) && rank_is(&a[1], 1) && shape_eq(&a[1], &a[2]) && shape_eq(&a[1], r);
	case K_DOT:
		return rank_is(&a[0], 1) && shape_eq(&a[0], &a[1]) && rank_is(r, 0);
	case K_SGEMM:
		if (nargs == 3)
			return rank_is(&a[0], 0) && rank_is(&a[1], 2) && rank_is(&a[2], 2) &&
			       a[1].dims[1] == a[2].dims[0] && r->ndims == 2 && r->dims[0] == a[1].dims[0] &&
			       r->dims[1] == a[2].dims[1];
		return rank_is(&a[0], 0) && rank_is(&a[1], 0) && rank_is(&a[2], 2) && rank_is(&a[3], 2) &&
		       rank_is(&a[4], 2) && a[2].dims[1] == a[3].dims[0] && a[4].dims[0] == a[2].dims[0] &&
		       a[4].dims[1] == a[3].dims[1] && shape_eq(&a[4], r);
	case K_SOFTMAX:
		return rank_is(&a[0], 2) && shape_eq(&a[0], r);
	case K_GENERATE:
		return rank_is(&a[0], 0) && a[0].type == E_U32 && (rank_is(r, 1) || rank_is(r, 2));
	case K_GATHER:
		return (rank_is(&a[0], 1) || rank_is(&a[0], 2)) && rank_is(&a[1], 0) && a[1].type == E_U64 &&
		       rank_is(&a[2], 0) && a[2].type == E_U64 && rank_is(&a[3], 0) && a[3].type == E_U64 &&
		       rank_is(&a[4], 0) && a[4].type == E_U64 && rank_is(r, 1);
	case K_COUNT:
		break;
	}
	return 0;
}

static const char *const signatures[K_COUNT] = {
	"(tensor<f32>, tensor<Nxf32>, tensor<Nxf32>) -> tensor<Nxf32>",
	"(tensor<f32>, tensor<Nxf32>, tensor<Nxf32>) -> tensor<Nxf32>",
	"(tensor<Nxf32>, tensor<Nxf32>) -> tensor<f32>",
	"(tensor<f32>, tensor<f32>, tensor<MxKxf32>, tensor<KxNxf32>, tensor<MxNxf32>) -> tensor<MxNxf32> or "
	"(tensor<f32>, tensor<MxKxf32>, tensor<KxNxf32>) -> tensor<MxNxf32>",
	"(tensor<MxNxf32>) -> tensor<MxNxf32>",
	"(tensor<ui32>) -> tensor<Nxf32> or tensor<MxNxf32>",
	"(tensor<Nxf32> or tensor<MxNxf32>, tensor<ui64>, tensor<ui64>) -> tensor<Cxf32>",
};

static void record_precision(const char *text, char *out, size_t len)
{
	const char *p = "";

	if (strstr(text, "precision HIGHEST") != NULL || strstr(text, "precision = [HIGHEST") != NULL)
		p = "HIGHEST";
	else if (strstr(text, "precision HIGH") != NULL || strstr(text, "precision = [HIGH") != NULL)
		p = "HIGH";
	else if (strstr(text, "precision DEFAULT") != NULL || strstr(text, "precision = [DEFAULT") != NULL)
		p = "DEFAULT";
	snprintf(out, len, "%s", p);
}

/* Reads the module name and @main's signature into x. */
static PJRT_Error *parse_program(const char *text, PJRT_LoadedExecutable *x)
{
	const char *mod = strstr(text, "module @");
	const char *name, *fn, *close, *arrow, *body;
	size_t len;
	int nargs, nres;
	char what[200];

	if (mod == NULL) {
		const char *first = text + strspn(text, " \t\r\n");

		return parse_error(text, first, "expected 'module @acceld_<kernel>'");
	}
	name = mod + 8;
	len = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
	x->kernel = K_COUNT;
	for (int k = 0; k < K_COUNT; k++)
		if (len == 7 + strlen(kernel_names[k]) && strncmp(name, "acceld_", 7) == 0 &&
		    strncmp(name + 7, kernel_names[k], len - 7) == 0)
			x->kernel = (enum kernel)k;
	if (x->kernel == K_COUNT) {
		snprintf(what, sizeof(what), "unknown module '@%.*s': the fake runs @acceld_saxpy, @acceld_triad, "
			 "@acceld_dot, @acceld_sgemm, @acceld_softmax, @acceld_generate and @acceld_gather", (int)len, name);
		return parse_error(text, name, what);
	}
	fn = strstr(text, "func.func public @main(");
	if (fn == NULL)
		return parse_error(text, mod, "expected 'func.func public @main(' in the module");
	close = close_paren(fn + strlen("func.func public @main"));
	arrow = close != NULL ? strstr(close, "->") : NULL;
	if (arrow == NULL)
		return parse_error(text, fn, "expected '(arguments) -> result' after @main");
	body = arrow + 2 + strspn(arrow + 2, " \t\r\n");
	if (*body == '(')
		body = close_paren(body);
	else
		body = strchr(body, '{');
	nargs = collect_tensors(fn, close, x->args, MAX_ARGS);
	nres = body != NULL ? collect_tensors(arrow, body, &x->result, 1) : -1;
	if (nargs < 0 || nres != 1 || !signature_fits(x->kernel, x->args, nargs, &x->result)) {
		snprintf(what, sizeof(what), "@main of @acceld_%s must have the signature %s",
			 kernel_names[x->kernel], signatures[x->kernel]);
		return parse_error(text, fn, what);
	}
	x->nargs = nargs;
	record_precision(text, x->precision, sizeof(x->precision));
	return NULL;
}

/* FAKE_PJRT_COMPILE_LOG=path: a line per real compile, appended, so tests count compiles across processes. */
static void log_compile(const PJRT_LoadedExecutable *x)
{
	const char *path = env_str("FAKE_PJRT_COMPILE_LOG");
	FILE *f = path != NULL ? fopen(path, "a") : NULL;

	if (f == NULL)
		return;
	fprintf(f, "%ld compile %s\n", (long)getpid(), kernel_names[x->kernel]);
	fclose(f);
}

static PJRT_Error *client_compile(PJRT_Client_Compile_Args *args)
{
	const PJRT_Program *prog;
	struct compile_opts opts = {{0, 0, 0, -1, -1, -1}};
	PJRT_LoadedExecutable *x;
	PJRT_Client *c;
	PJRT_Error *err;
	char *text;

	count("PJRT_Client_Compile");
	crash_in("compile");
	CHECK_ARGS(args, PJRT_Client_Compile_Args);
	c = args->client;
	prog = args->program;
	if (prog == NULL)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Client_Compile: program is NULL");
	err = check_size("PJRT_Program", PJRT_Program_STRUCT_SIZE, prog->struct_size);
	if (err != NULL)
		return err;
	if (prog->format_size != 4 || strncmp(prog->format, "mlir", 4) != 0)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "Unknown program format '%.*s'.",
				  (int)prog->format_size, prog->format);
	if (prog->code_size >= 4 && memcmp(prog->code, "ML\xefR", 4) == 0)
		return make_error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin: MLIR bytecode is not read, send text");
	if (args->compile_options != NULL &&
	    !walk((const unsigned char *)args->compile_options,
		  (const unsigned char *)args->compile_options + args->compile_options_size, &opts,
		  visit_compile_options))
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "PJRT_Client_Compile: failed to deserialize CompileOptionsProto");
	memcpy(g_compile_opts, opts.v, sizeof(g_compile_opts));
	if (opts.v[0] != 1 || opts.v[1] != 1)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "fake plugin: executable_build_options needs num_replicas = 1 and num_partitions = "
				  "1, got %lld and %lld",
				  opts.v[0], opts.v[1]);
	if (env_on("FAKE_PJRT_COMPILE_FAIL"))
		return make_error(PJRT_Error_Code_INTERNAL, "fake plugin: compilation failed (FAKE_PJRT_COMPILE_FAIL)");

	x = xmalloc(sizeof(*x));
	memset(x, 0, sizeof(*x));
	x->client = c;
	text = xmalloc(prog->code_size + 1);
	memcpy(text, prog->code, prog->code_size);
	text[prog->code_size] = '\0';
	err = parse_program(text, x);
	if (err == NULL && x->kernel != K_GENERATE && x->kernel != K_GATHER)
		snprintf(g_precision, sizeof(g_precision), "%s", x->precision);
	free(text);
	if (err != NULL) {
		free(x);
		return err;
	}
	x->device = c->list[0];
	for (size_t i = 0; i < c->ndev; i++) {
		if (opts.v[5] >= 0 && c->list[i]->desc.id == opts.v[5])
			x->device = c->list[i];
		if (opts.v[5] < 0 && opts.v[2] > 0 && c->list[i]->ordinal == opts.v[2])
			x->device = c->list[i];
	}
	if (opts.v[5] >= 0 && x->device->desc.id != opts.v[5]) {
		free(x);
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: no device with id %lld", opts.v[5]);
	}
	pthread_mutex_lock(&g_lock);
	c->live_execs++;
	pthread_mutex_unlock(&g_lock);
	live_add(LIVE_EXECUTABLES, 1);
	log_compile(x);
	args->executable = x;
	return NULL;
}

/* The bytes of a serialized executable: a header naming the plugin version and platform it is for, then the
 * program as compiled. */
struct serialized {
	char magic[16];
	int major, minor;
	char platform[32];
	int device_ordinal;
	enum kernel kernel;
	int nargs;
	struct shape args[MAX_ARGS];
	struct shape result;
	char precision[8];
};

#define SERIALIZED_MAGIC "fake-pjrt-exe-1"

static void serialized_delete(PJRT_SerializedExecutable *exec)
{
	free(exec);
}

static PJRT_Error *executable_serialize(PJRT_Executable_Serialize_Args *args)
{
	const PJRT_LoadedExecutable *x;
	struct serialized *b;

	count("PJRT_Executable_Serialize");
	CHECK_ARGS(args, PJRT_Executable_Serialize_Args);
	if (args->executable == NULL)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Executable_Serialize: executable is NULL");
	x = &args->executable->program;
	b = xmalloc(sizeof(*b));
	memset(b, 0, sizeof(*b));
	snprintf(b->magic, sizeof(b->magic), "%s", SERIALIZED_MAGIC);
	b->major = api.pjrt_api_version.major_version;
	b->minor = api.pjrt_api_version.minor_version;
	snprintf(b->platform, sizeof(b->platform), "%s", x->client->platform);
	b->device_ordinal = x->device->ordinal;
	b->kernel = x->kernel;
	b->nargs = x->nargs;
	memcpy(b->args, x->args, sizeof(b->args));
	b->result = x->result;
	memcpy(b->precision, x->precision, sizeof(b->precision));
	args->serialized_bytes = (const char *)b;
	args->serialized_bytes_size = sizeof(*b);
	args->serialized_executable = (PJRT_SerializedExecutable *)b;
	args->serialized_executable_deleter = serialized_delete;
	return NULL;
}

static PJRT_Error *executable_deserialize(PJRT_Executable_DeserializeAndLoad_Args *args)
{
	struct serialized b;
	PJRT_LoadedExecutable *x;
	PJRT_Client *c;

	count("PJRT_Executable_DeserializeAndLoad");
	CHECK_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args);
	c = args->client;
	if (args->serialized_executable_size != sizeof(b))
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "fake plugin: a serialized executable of %zu bytes is not one of this plugin's",
				  args->serialized_executable_size);
	memcpy(&b, args->serialized_executable, sizeof(b));
	if (strncmp(b.magic, SERIALIZED_MAGIC, sizeof(b.magic)) != 0 || b.kernel < 0 || b.kernel >= K_COUNT ||
	    b.nargs < 0 || b.nargs > MAX_ARGS)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: not a serialized executable");
	/* like the real ones, only the platform and plugin version that wrote it may load it */
	if (b.major != api.pjrt_api_version.major_version || b.minor != api.pjrt_api_version.minor_version ||
	    strncmp(b.platform, c->platform, sizeof(b.platform)) != 0)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "fake plugin: the executable was serialized by PJRT %d.%d on %.32s, this is %d.%d on %s",
				  b.major, b.minor, b.platform, api.pjrt_api_version.major_version,
				  api.pjrt_api_version.minor_version, c->platform);
	x = xmalloc(sizeof(*x));
	memset(x, 0, sizeof(*x));
	x->client = c;
	x->kernel = b.kernel;
	x->nargs = b.nargs;
	memcpy(x->args, b.args, sizeof(x->args));
	x->result = b.result;
	memcpy(x->precision, b.precision, sizeof(x->precision));
	x->precision[sizeof(x->precision) - 1] = '\0';
	x->device = c->list[0];
	for (size_t i = 0; i < c->ndev; i++)
		if (c->list[i]->ordinal == b.device_ordinal)
			x->device = c->list[i];
	pthread_mutex_lock(&g_lock);
	c->live_execs++;
	pthread_mutex_unlock(&g_lock);
	live_add(LIVE_EXECUTABLES, 1);
	args->loaded_executable = x;
	return NULL;
}

/* ---------------------------------------------------------------------------------------------- buffers */

static int own_device(const PJRT_Client *c, const PJRT_Device *d)
{
	for (size_t i = 0; i < c->ndev; i++)
		if (c->list[i] == d)
			return 1;
	return 0;
}

/* bytes as XLA's HumanReadableNumBytes writes them: "512B", "4.97GiB" */
static void human_bytes(size_t bytes, char *out, size_t outsz)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(out, outsz, "%zuB", bytes);
		return;
	}
	v /= 1024.0;
	while (v >= 1024.0 && u + 1 < sizeof(units) - 1) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, outsz, "%.2f%ciB", v, units[u]);
}

/*
 * RESOURCE_EXHAUSTED for an allocation of bytes on d: on a GPU in the words of the CUDA plugin's BFC allocator, as a
 * job beyond free memory failed at execution on an H200 (tests/gpu/runs/2026-11-28-h200-1/check_worker.txt: "Out of
 * memory while trying to allocate 4.97GiB with allocator GPU_0_bfc on device 0."); elsewhere in bytes.
 */
static PJRT_Error *out_of_memory(const PJRT_Device *d, size_t bytes, int64_t in_use, int64_t limit)
{
	char size[32];

	if (d->client->flavour == FLAVOUR_GPU) {
		human_bytes(bytes, size, sizeof(size));
		return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
				  "Out of memory while trying to allocate %s with allocator GPU_%d_bfc on device %d.", size,
				  d->hw, d->hw);
	}
	if (limit < 0)
		return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Out of memory while trying to allocate %zu bytes.",
				  bytes);
	return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED,
			  "Out of memory while trying to allocate %zu bytes. (%lld of %lld bytes in use)", bytes,
			  (long long)in_use, (long long)limit);
}

/* Takes bytes of d's memory for a new buffer, or says why not. */
static PJRT_Error *reserve(PJRT_Device *d, size_t bytes, const char *oom_switch)
{
	int forced = env_on("FAKE_PJRT_OOM") &&
		     (env_is("FAKE_PJRT_OOM", oom_switch) ||
		      (strcmp(oom_switch, "upload") == 0 && !env_is("FAKE_PJRT_OOM", "execute")));
	int64_t in_use, limit;
	int fits;

	if (forced)
		return out_of_memory(d, bytes, -1, -1);
	pthread_mutex_lock(&g_lock);
	in_use = d->in_use;
	limit = d->limit;
	fits = (int64_t)bytes <= limit - in_use;
	if (fits) {
		d->in_use += (int64_t)bytes;
		d->peak = d->in_use > d->peak ? d->in_use : d->peak;
		d->num_allocs++;
		d->largest = (int64_t)bytes > d->largest ? (int64_t)bytes : d->largest;
		d->client->live_buffers++;
	}
	pthread_mutex_unlock(&g_lock);
	if (!fits)
		return out_of_memory(d, bytes, in_use, limit);
	return NULL;
}

static PJRT_Buffer *buffer_new(PJRT_Device *d, const struct shape *s, size_t count_, struct timespec ready_at)
{
	PJRT_Buffer *b = xmalloc(sizeof(*b));

	memset(b, 0, sizeof(*b));
	b->dev = d;
	b->shape = *s;
	b->count = count_;
	b->bytes = count_ * elem_size(s->type);
	b->data = xmalloc(b->bytes ? b->bytes : sizeof(float));
	b->ready_at = ready_at;
	live_add(LIVE_BUFFERS, 1);
	return b;
}

static PJRT_Error *buffer_from_host(PJRT_Client_BufferFromHostBuffer_Args *args)
{
	struct shape s;
	size_t n = 1;
	PJRT_Buffer *b;
	PJRT_Error *err;

	count("PJRT_Client_BufferFromHostBuffer");
	CHECK_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args);
	if (args->type != PJRT_Buffer_Type_F32 && args->type != PJRT_Buffer_Type_U32 &&
	    args->type != PJRT_Buffer_Type_U64)
		return make_error(PJRT_Error_Code_UNIMPLEMENTED,
				  "fake plugin: element type %d is not supported, only F32, U32 and U64", (int)args->type);
	s.type = args->type == PJRT_Buffer_Type_U32 ? E_U32 : args->type == PJRT_Buffer_Type_U64 ? E_U64 : E_F32;
	if (args->num_dims > MAX_DIMS)
		return make_error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin: more than %d dimensions", MAX_DIMS);
	if (args->memory != NULL || args->device_layout != NULL)
		return make_error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin: memory and device_layout must be NULL");
	if (args->device == NULL || !own_device(args->client, args->device))
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: device is not one of this client's");
	s.ndims = args->num_dims;
	for (size_t i = 0; i < args->num_dims; i++) {
		if (args->dims[i] < 0)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "negative dimension %lld",
					  (long long)args->dims[i]);
		if (args->dims[i] > 0 && n > SIZE_MAX / sizeof(float) / (size_t)args->dims[i])
			return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Out of memory: shape too large");
		s.dims[i] = args->dims[i];
		n *= (size_t)args->dims[i];
	}
	if (args->num_byte_strides > 0) {
		int64_t stride = (int64_t)elem_size(s.type);

		if (args->num_byte_strides != args->num_dims)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "byte_strides must match dims");
		for (size_t i = args->num_dims; i-- > 0;) {
			if (args->byte_strides[i] != stride)
				return make_error(PJRT_Error_Code_UNIMPLEMENTED,
						  "fake plugin: only dense row-major byte_strides");
			stride *= args->dims[i];
		}
	}
	if (n > 0 && args->data == NULL)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "data is NULL");
	err = reserve(args->device, n * elem_size(s.type), "upload");
	if (err != NULL)
		return err;
	b = buffer_new(args->device, &s, n, now());
	moved(0, args->data, b->bytes);
	if (n > 0)
		memcpy(b->data, args->data, b->bytes);
	/* the copy is done: the host buffer is free at once, whatever the semantics */
	args->done_with_host_buffer = event_new(now(), PJRT_Error_Code_OK, NULL);
	args->buffer = b;
	return NULL;
}

static PJRT_Error *buffer_destroy(PJRT_Buffer_Destroy_Args *args)
{
	PJRT_Buffer *b;

	count("PJRT_Buffer_Destroy");
	CHECK_ARGS(args, PJRT_Buffer_Destroy_Args);
	b = args->buffer;
	if (b == NULL)
		return NULL;
	pthread_mutex_lock(&g_lock);
	b->dev->in_use -= (int64_t)b->bytes;
	b->dev->client->live_buffers--;
	pthread_mutex_unlock(&g_lock);
	free(b->data);
	free(b->msg);
	free(b);
	live_add(LIVE_BUFFERS, -1);
	return NULL;
}

static PJRT_Error *buffer_element_type(PJRT_Buffer_ElementType_Args *args)
{
	count("PJRT_Buffer_ElementType");
	CHECK_ARGS(args, PJRT_Buffer_ElementType_Args);
	args->type = PJRT_Buffer_Type_F32;
	return NULL;
}

static PJRT_Error *buffer_dimensions(PJRT_Buffer_Dimensions_Args *args)
{
	count("PJRT_Buffer_Dimensions");
	CHECK_ARGS(args, PJRT_Buffer_Dimensions_Args);
	args->dims = args->buffer->shape.dims;
	args->num_dims = args->buffer->shape.ndims;
	return NULL;
}

static PJRT_Error *buffer_on_device_size(PJRT_Buffer_OnDeviceSizeInBytes_Args *args)
{
	count("PJRT_Buffer_OnDeviceSizeInBytes");
	CHECK_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args);
	args->on_device_size_in_bytes = args->buffer->bytes;
	return NULL;
}

static PJRT_Error *buffer_to_host(PJRT_Buffer_ToHostBuffer_Args *args)
{
	PJRT_Buffer *b;
	PJRT_Event *e;

	count("PJRT_Buffer_ToHostBuffer");
	CHECK_ARGS(args, PJRT_Buffer_ToHostBuffer_Args);
	b = args->src;
	if (args->host_layout != NULL) {
		/* the C API wrapper's rules, then the one layout the fake holds data in: dense, major to minor */
		const PJRT_Buffer_MemoryLayout *l = args->host_layout;

		if (l->struct_size < PJRT_Buffer_MemoryLayout_STRUCT_SIZE)
			return check_size("PJRT_Buffer_MemoryLayout", PJRT_Buffer_MemoryLayout_STRUCT_SIZE, l->struct_size);
		if (l->type == PJRT_Buffer_MemoryLayout_Type_Strides)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Buffer_ToHostBuffer does not support "
					  "host_layout with strides for platform %s", b->dev->client->platform);
		if (l->tiled.num_tiles > 0)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_Buffer_ToHostBuffer does not support "
					  "host_layout with tiled dimension for platform %s", b->dev->client->platform);
		if (l->tiled.minor_to_major_size != b->shape.ndims)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: a layout of %zu dimensions "
					  "for a buffer of %zu", l->tiled.minor_to_major_size, b->shape.ndims);
		for (size_t i = 0; i < b->shape.ndims; i++)
			if (l->tiled.minor_to_major[i] != (int64_t)(b->shape.ndims - 1 - i))
				return make_error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin: only the major-to-minor "
						  "host layout is copied");
	}
	if (args->dst == NULL) {
		args->dst_size = b->bytes;
		args->event = NULL;
		return NULL;
	}
	if (args->dst_size < b->bytes)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "`dst_size` must be >= %zu, got %zu.", b->bytes,
				  args->dst_size);
	/* until the event is seen complete dst holds NaNs, so a read before the await shows */
	memset(args->dst, 0xff, b->bytes);
	e = event_new(b->ready_at, b->code, b->msg);
	moved(1, args->dst, b->bytes);
	if (b->code == PJRT_Error_Code_OK && b->bytes > 0) {
		e->core->src = xmalloc(b->bytes);
		memcpy(e->core->src, b->data, b->bytes);
		e->core->dst = args->dst;
		e->core->bytes = b->bytes;
	}
	args->event = e;
	return NULL;
}

static PJRT_Error *buffer_ready_event(PJRT_Buffer_ReadyEvent_Args *args)
{
	count("PJRT_Buffer_ReadyEvent");
	CHECK_ARGS(args, PJRT_Buffer_ReadyEvent_Args);
	args->event = event_new(args->buffer->ready_at, args->buffer->code, args->buffer->msg);
	return NULL;
}

/* ---------------------------------------------------------------------------------------------- devices */

static PJRT_Error *device_get_description(PJRT_Device_GetDescription_Args *args)
{
	count("PJRT_Device_GetDescription");
	CHECK_ARGS(args, PJRT_Device_GetDescription_Args);
	args->device_description = &args->device->desc;
	return NULL;
}

static PJRT_Error *device_is_addressable(PJRT_Device_IsAddressable_Args *args)
{
	count("PJRT_Device_IsAddressable");
	CHECK_ARGS(args, PJRT_Device_IsAddressable_Args);
	args->is_addressable = true;
	return NULL;
}

static PJRT_Error *device_local_hardware_id(PJRT_Device_LocalHardwareId_Args *args)
{
	count("PJRT_Device_LocalHardwareId");
	CHECK_ARGS(args, PJRT_Device_LocalHardwareId_Args);
	args->local_hardware_id = args->device->hw;
	return NULL;
}

static PJRT_Error *device_addressable_memories(PJRT_Device_AddressableMemories_Args *args)
{
	count("PJRT_Device_AddressableMemories");
	CHECK_ARGS(args, PJRT_Device_AddressableMemories_Args);
	args->memories = args->device->memories;
	args->num_memories = args->device->nmemories;
	return NULL;
}

static PJRT_Error *device_default_memory(PJRT_Device_DefaultMemory_Args *args)
{
	count("PJRT_Device_DefaultMemory");
	CHECK_ARGS(args, PJRT_Device_DefaultMemory_Args);
	if (args->device->nmemories == 0)
		return make_error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin: this device has no memory spaces");
	args->memory = args->device->memories[0];
	return NULL;
}

static PJRT_Error *memory_id(PJRT_Memory_Id_Args *args)
{
	count("PJRT_Memory_Id");
	CHECK_ARGS(args, PJRT_Memory_Id_Args);
	args->id = args->memory->id;
	return NULL;
}

static PJRT_Error *memory_kind(PJRT_Memory_Kind_Args *args)
{
	count("PJRT_Memory_Kind");
	CHECK_ARGS(args, PJRT_Memory_Kind_Args);
	args->kind = args->memory->kind;
	args->kind_size = strlen(args->memory->kind);
	return NULL;
}

static PJRT_Error *device_memory_stats(PJRT_Device_MemoryStats_Args *args)
{
	PJRT_Device *d;
	PJRT_Error *err;

	count("PJRT_Device_MemoryStats");
	/* the CUDA plugin at 0.115 answers 0.113's 201 bytes (seen); that it answers 0.112's 185 as well is not measured
	 * (the stand-in does); peak_allocated_bytes only with 201; smaller is refused as every entry point does */
	err = check_size("PJRT_Device_MemoryStats_Args", PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args,
				 peak_pool_bytes_is_set), args->struct_size);
	if (err != NULL)
		return err;
	if (env_on("FAKE_PJRT_NO_MEMSTATS"))
		return make_error(PJRT_Error_Code_UNIMPLEMENTED, "PJRT_Device_MemoryStats is not implemented");
	d = args->device;
	pthread_mutex_lock(&g_lock);
	args->bytes_in_use = d->in_use;
	args->peak_bytes_in_use = d->peak;
	args->peak_bytes_in_use_is_set = true;
	args->num_allocs = d->num_allocs;
	args->num_allocs_is_set = true;
	args->largest_alloc_size = d->largest;
	args->largest_alloc_size_is_set = true;
	args->bytes_limit = d->limit;
	args->bytes_limit_is_set = true;
	args->bytes_reserved = 0;
	args->bytes_reserved_is_set = true;
	args->peak_bytes_reserved_is_set = false;
	args->bytes_reservable_limit_is_set = false;
	args->largest_free_block_bytes = d->limit - d->in_use;
	args->largest_free_block_bytes_is_set = true;
	args->pool_bytes_is_set = false;
	args->peak_pool_bytes_is_set = false;
	if (args->struct_size >= PJRT_Device_MemoryStats_Args_STRUCT_SIZE) {
		args->peak_allocated_bytes = d->peak;
		args->peak_allocated_bytes_is_set = true;
	}
	pthread_mutex_unlock(&g_lock);
	return NULL;
}

static PJRT_Error *desc_id(PJRT_DeviceDescription_Id_Args *args)
{
	count("PJRT_DeviceDescription_Id");
	CHECK_ARGS(args, PJRT_DeviceDescription_Id_Args);
	args->id = args->device_description->id;
	return NULL;
}

static PJRT_Error *desc_process_index(PJRT_DeviceDescription_ProcessIndex_Args *args)
{
	count("PJRT_DeviceDescription_ProcessIndex");
	CHECK_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args);
	args->process_index = 0;
	return NULL;
}

static PJRT_Error *desc_attributes(PJRT_DeviceDescription_Attributes_Args *args)
{
	count("PJRT_DeviceDescription_Attributes");
	CHECK_ARGS(args, PJRT_DeviceDescription_Attributes_Args);
	args->attributes = args->device_description->attrs;
	args->num_attributes = args->device_description->nattrs;
	return NULL;
}

static PJRT_Error *desc_kind(PJRT_DeviceDescription_Kind_Args *args)
{
	count("PJRT_DeviceDescription_Kind");
	CHECK_ARGS(args, PJRT_DeviceDescription_Kind_Args);
	args->device_kind = args->device_description->kind;
	args->device_kind_size = strlen(args->device_description->kind);
	return NULL;
}

static PJRT_Error *desc_debug_string(PJRT_DeviceDescription_DebugString_Args *args)
{
	count("PJRT_DeviceDescription_DebugString");
	CHECK_ARGS(args, PJRT_DeviceDescription_DebugString_Args);
	args->debug_string = args->device_description->debug;
	args->debug_string_size = strlen(args->device_description->debug);
	return NULL;
}

static PJRT_Error *desc_to_string(PJRT_DeviceDescription_ToString_Args *args)
{
	count("PJRT_DeviceDescription_ToString");
	CHECK_ARGS(args, PJRT_DeviceDescription_ToString_Args);
	args->to_string = args->device_description->repr;
	args->to_string_size = strlen(args->device_description->repr);
	return NULL;
}

/* ------------------------------------------------------------------------------------------ executables */

static PJRT_Error *loaded_destroy(PJRT_LoadedExecutable_Destroy_Args *args)
{
	PJRT_LoadedExecutable *x;

	count("PJRT_LoadedExecutable_Destroy");
	CHECK_ARGS(args, PJRT_LoadedExecutable_Destroy_Args);
	x = args->executable;
	if (x == NULL)
		return NULL;
	pthread_mutex_lock(&g_lock);
	x->client->live_execs--;
	pthread_mutex_unlock(&g_lock);
	free(x);
	live_add(LIVE_EXECUTABLES, -1);
	return NULL;
}

static PJRT_Error *loaded_get_executable(PJRT_LoadedExecutable_GetExecutable_Args *args)
{
	PJRT_Executable *e;

	count("PJRT_LoadedExecutable_GetExecutable");
	CHECK_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args);
	e = xmalloc(sizeof(*e));
	e->num_outputs = 1;
	e->program = *args->loaded_executable;
	args->executable = e;
	live_add(LIVE_EXECUTABLES, 1);
	return NULL;
}

static PJRT_Error *executable_destroy(PJRT_Executable_Destroy_Args *args)
{
	count("PJRT_Executable_Destroy");
	CHECK_ARGS(args, PJRT_Executable_Destroy_Args);
	if (args->executable == NULL)
		return NULL;
	free(args->executable);
	live_add(LIVE_EXECUTABLES, -1);
	return NULL;
}

static PJRT_Error *executable_num_outputs(PJRT_Executable_NumOutputs_Args *args)
{
	count("PJRT_Executable_NumOutputs");
	CHECK_ARGS(args, PJRT_Executable_NumOutputs_Args);
	args->num_outputs = args->executable->num_outputs;
	return NULL;
}

/* Rounds v to `bits` mantissa bits, to nearest even, as TF32 (10) or bfloat16 (7) hardware reads it. */
static float round_mantissa(float v, int bits)
{
	uint32_t u;
	int drop = 23 - bits;

	if (drop <= 0 || !isfinite(v))
		return v;
	memcpy(&u, &v, sizeof(u));
	u += ((uint32_t)1 << (drop - 1)) - 1 + ((u >> drop) & 1);
	u &= ~(((uint32_t)1 << drop) - 1);
	memcpy(&v, &u, sizeof(v));
	return v;
}

/* The mantissa bits sgemm's operands keep on this platform at this precision. */
static int operand_bits(const PJRT_LoadedExecutable *x)
{
	int highest = strcmp(x->precision, "HIGHEST") == 0;
	int high = strcmp(x->precision, "HIGH") == 0;

	if (env_on("FAKE_PJRT_EXACT") || highest)
		return 23;
	if (x->client->flavour == FLAVOUR_GPU)
		return 10;
	if (x->client->flavour == FLAVOUR_TPU)
		return high ? 16 : 7;
	return 23;
}

static void run_kernel(const PJRT_LoadedExecutable *x, PJRT_Buffer *const *in, float *out)
{
	switch (x->kernel) {
	case K_SAXPY:
		for (size_t i = 0; i < in[1]->count; i++)
			out[i] = in[0]->data[0] * in[1]->data[i] + in[2]->data[i];
		break;
	case K_TRIAD:
		for (size_t i = 0; i < in[1]->count; i++)
			out[i] = in[1]->data[i] + in[0]->data[0] * in[2]->data[i];
		break;
	case K_DOT: {
		float sum = 0.0f;

		for (size_t i = 0; i < in[0]->count; i++)
			sum += in[0]->data[i] * in[1]->data[i];
		out[0] = sum;
		break;
	}
	case K_SGEMM: {
		/* (alpha, beta, a, b, c) or (alpha, a, b) */
		const struct PJRT_Buffer *a = in[x->nargs == 3 ? 1 : 2], *b = in[x->nargs == 3 ? 2 : 3];
		size_t m = (size_t)a->shape.dims[0], k = (size_t)a->shape.dims[1];
		size_t n = (size_t)b->shape.dims[1];
		int bits = operand_bits(x);

		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < n; j++) {
				float acc = 0.0f;

				for (size_t p = 0; p < k; p++)
					acc += round_mantissa(a->data[i * k + p], bits) *
					       round_mantissa(b->data[p * n + j], bits);
				out[i * n + j] = in[0]->data[0] * acc +
						 (x->nargs == 3 ? 0.0f : in[1]->data[0] * in[4]->data[i * n + j]);
			}
		break;
	}
	case K_SOFTMAX: {
		size_t m = (size_t)in[0]->shape.dims[0], n = (size_t)in[0]->shape.dims[1];

		for (size_t i = 0; i < m; i++) {
			const float *row = in[0]->data + i * n;
			float mx = -INFINITY, sum = 0.0f;

			for (size_t j = 0; j < n; j++)
				mx = row[j] > mx ? row[j] : mx;
			for (size_t j = 0; j < n; j++) {
				out[i * n + j] = expf(row[j] - mx);
				sum += out[i * n + j];
			}
			for (size_t j = 0; j < n; j++)
				out[i * n + j] /= sum;
		}
		break;
	}
	case K_GENERATE: {
		uint32_t key;
		size_t n = 1;

		memcpy(&key, in[0]->data, sizeof(key));
		for (size_t i = 0; i < x->result.ndims; i++)
			n *= (size_t)x->result.dims[i];
		for (size_t e = 0; e < n; e++)
			out[e] = kernel_gen_value(key, e);
		break;
	}
	case K_GATHER: {
		/* the grid of struct kernel_sample: the output's shape, the grid's columns for it, the four scalars */
		struct kernel_sample g = {.rows = in[0]->shape.ndims == 2 ? (uint64_t)in[0]->shape.dims[0] : 1,
					  .cols = (uint64_t)in[0]->shape.dims[in[0]->shape.ndims - 1]};

		memcpy(&g.r0, in[1]->data, sizeof(g.r0));
		memcpy(&g.rs, in[2]->data, sizeof(g.rs));
		memcpy(&g.c0, in[3]->data, sizeof(g.c0));
		memcpy(&g.cs, in[4]->data, sizeof(g.cs));
		kernel_sample_grid(g.rows, g.cols, &g.nrows, &g.ncols);
		for (int64_t j = 0; j < x->result.dims[0]; j++)
			out[j] = in[0]->data[kernel_sample_index(&g, (size_t)j)];
		break;
	}
	case K_COUNT:
		break;
	}
}

static PJRT_Error *loaded_execute(PJRT_LoadedExecutable_Execute_Args *args)
{
	PJRT_LoadedExecutable *x;
	PJRT_Device *dev;
	PJRT_Buffer *const *in;
	PJRT_Buffer *out;
	struct timespec ready_at = now();
	PJRT_Error_Code code = PJRT_Error_Code_OK;
	const char *msg = NULL;
	size_t n = 1;
	PJRT_Error *err;

	count("PJRT_LoadedExecutable_Execute");
	crash_in("execute");
	CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args);
	if (args->options == NULL)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "PJRT_LoadedExecutable_Execute: options is NULL");
	/* the plugin's own size: 0.115's 144 bytes (0.94's 112 below 0.97), or FAKE_PJRT_EXEC_OPTIONS_SIZE, as a
	 * newer plugin's would be */
	err = check_size("PJRT_ExecuteOptions",
			 (size_t)env_long("FAKE_PJRT_EXEC_OPTIONS_SIZE",
					  api.pjrt_api_version.minor_version >= 97 ?
						  (long)PJRT_ExecuteOptions_STRUCT_SIZE :
						  (long)PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, incarnation_ids)),
			 args->options->struct_size);
	if (err != NULL)
		return err;
	x = args->executable;
	if (env_on("FAKE_PJRT_EXEC_FAIL") && !env_is("FAKE_PJRT_EXEC_FAIL", "async"))
		return make_error(PJRT_Error_Code_INTERNAL, "Failed to launch kernel: CUDA_ERROR_LAUNCH_FAILED: "
				  "unspecified launch failure (FAKE_PJRT_EXEC_FAIL)");
	if (args->num_devices != 1)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: executes on one device, not %zu",
				  args->num_devices);
	if (args->num_args != (size_t)x->nargs)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
				  "Execution supplied %zu buffers but compiled program expected %d buffers", args->num_args,
				  x->nargs);
	dev = args->execute_device != NULL ? args->execute_device : x->device;
	if (!own_device(x->client, dev))
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: execute_device is not this client's");
	in = args->argument_lists[0];
	for (int i = 0; i < x->nargs; i++) {
		char want[96], got[96];

		if (in[i] == NULL)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "argument %d is NULL", i);
		if (in[i]->dev != dev)
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "Buffer passed to Execute() as argument %d to replica 0 is on device %s, but "
					  "replica is assigned to device %s.",
					  i, in[i]->dev->desc.debug, dev->desc.debug);
		if (!shape_eq(&in[i]->shape, &x->args[i])) {
			shape_str(&x->args[i], want, sizeof(want));
			shape_str(&in[i]->shape, got, sizeof(got));
			return make_error(PJRT_Error_Code_INVALID_ARGUMENT,
					  "Executable expected shape %s for argument %d but got incompatible shape %s", want,
					  i, got);
		}
		if (later(in[i]->ready_at, ready_at))
			ready_at = in[i]->ready_at;
		if (in[i]->code != PJRT_Error_Code_OK && code == PJRT_Error_Code_OK) {
			code = in[i]->code;
			msg = in[i]->msg;
		}
	}
	for (size_t i = 0; i < x->result.ndims; i++)
		n *= (size_t)x->result.dims[i];
	err = reserve(dev, n * sizeof(float), "execute");
	if (err != NULL)
		return err;
	ready_at = after_ms(ready_at, env_long("FAKE_PJRT_SLOW_MS", 0));
	out = buffer_new(dev, &x->result, n, ready_at);
	if (code == PJRT_Error_Code_OK && env_is("FAKE_PJRT_EXEC_FAIL", "async")) {
		code = PJRT_Error_Code_INTERNAL;
		msg = "Failed to execute: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered "
		      "(FAKE_PJRT_EXEC_FAIL=async)";
	}
	if (code == PJRT_Error_Code_OK) {
		run_kernel(x, in, out->data);
		if (env_on("FAKE_PJRT_WRONG_RESULT") && n > 0 && x->kernel != K_GENERATE && x->kernel != K_GATHER)
			out->data[0] = out->data[0] * 1.5f + 1.0f;
	} else {
		memset(out->data, 0xff, out->bytes);
		out->code = code;
		out->msg = xstrdup(msg);
	}
	args->output_lists[0][0] = out;
	if (args->device_complete_events != NULL)
		args->device_complete_events[0] = event_new(ready_at, code, msg);
	return NULL;
}

/* ------------------------------------------------------------------------------------------- DMA mapping */

static PJRT_Error *client_dma_map(PJRT_Client_DmaMap_Args *args)
{
	long page = sysconf(_SC_PAGESIZE);
	const char *mode = env_str("FAKE_PJRT_DMA");
	int slot = -1;

	count("PJRT_Client_DmaMap");
	CHECK_ARGS(args, PJRT_Client_DmaMap_Args);
	if (mode != NULL && strcmp(mode, "fail") == 0)
		return make_error(PJRT_Error_Code_INTERNAL, "fake plugin: FAKE_PJRT_DMA=fail: cannot register host memory");
	if (args->client == NULL || args->data == NULL || args->size == 0)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: DmaMap needs a client, data and a size");
	if (page <= 0 || (uintptr_t)args->data % (uintptr_t)page != 0)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: DmaMap needs page-aligned memory");
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < DMA_MAX && slot < 0; i++)
		if (g_mapped[i].data == NULL)
			slot = i;
	if (slot >= 0 && !registered(args->data, 1)) {
		g_mapped[slot].data = args->data;
		g_mapped[slot].size = args->size;
		g_dma[0]++;
	}
	pthread_mutex_unlock(&g_lock);
	if (slot < 0)
		return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, "fake plugin: more than %d ranges registered",
				  DMA_MAX);
	write_counts();
	return NULL;
}

static PJRT_Error *client_dma_unmap(PJRT_Client_DmaUnmap_Args *args)
{
	int found = 0;

	count("PJRT_Client_DmaUnmap");
	CHECK_ARGS(args, PJRT_Client_DmaUnmap_Args);
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < DMA_MAX && !found; i++) {
		if (g_mapped[i].data != NULL && g_mapped[i].data == args->data) {
			g_mapped[i].data = NULL;
			g_mapped[i].size = 0;
			g_dma[1]++;
			found = 1;
		}
	}
	pthread_mutex_unlock(&g_lock);
	if (!found)
		return make_error(PJRT_Error_Code_INVALID_ARGUMENT, "fake plugin: DmaUnmap of memory DmaMap did not "
				  "register");
	write_counts();
	return NULL;
}

/* ------------------------------------------------------------------------------------------- the table */

/* Two bare entries, so a caller's walk of the chain is exercised; their sizes cover no real extension body. */
static PJRT_Extension_Base ext_layouts = {PJRT_Extension_Base_STRUCT_SIZE, PJRT_Extension_Type_Layouts, NULL};
static PJRT_Extension_Base ext_profiler = {PJRT_Extension_Base_STRUCT_SIZE, PJRT_Extension_Type_Profiler,
					   &ext_layouts};

static struct api_table table = {.head = {
	.struct_size = REAL_API_SIZE,
	.extension_start = &ext_profiler,
	.pjrt_api_version = {.struct_size = PJRT_Api_Version_STRUCT_SIZE, .major_version = PJRT_API_MAJOR,
			     .minor_version = REAL_API_MINOR},
	.PJRT_Error_Destroy = error_destroy,
	.PJRT_Error_Message = error_message,
	.PJRT_Error_GetCode = error_get_code,
	.PJRT_Plugin_Initialize = plugin_initialize,
	.PJRT_Plugin_Attributes = plugin_attributes,
	.PJRT_Event_Destroy = event_destroy,
	.PJRT_Event_IsReady = event_is_ready,
	.PJRT_Event_Error = event_error,
	.PJRT_Event_Await = event_await,
	.PJRT_Event_OnReady = event_on_ready,
	.PJRT_Client_Create = client_create,
	.PJRT_Client_Destroy = client_destroy,
	.PJRT_Client_PlatformName = client_platform_name,
	.PJRT_Client_ProcessIndex = client_process_index,
	.PJRT_Client_PlatformVersion = client_platform_version,
	.PJRT_Client_Devices = client_devices,
	.PJRT_Client_AddressableDevices = client_addressable_devices,
	.PJRT_Client_Compile = client_compile,
	.PJRT_Client_BufferFromHostBuffer = buffer_from_host,
	.PJRT_DeviceDescription_Id = desc_id,
	.PJRT_DeviceDescription_ProcessIndex = desc_process_index,
	.PJRT_DeviceDescription_Attributes = desc_attributes,
	.PJRT_DeviceDescription_Kind = desc_kind,
	.PJRT_DeviceDescription_DebugString = desc_debug_string,
	.PJRT_DeviceDescription_ToString = desc_to_string,
	.PJRT_Device_GetDescription = device_get_description,
	.PJRT_Device_IsAddressable = device_is_addressable,
	.PJRT_Device_LocalHardwareId = device_local_hardware_id,
	.PJRT_Device_MemoryStats = device_memory_stats,
	.PJRT_Device_AddressableMemories = device_addressable_memories,
	.PJRT_Device_DefaultMemory = device_default_memory,
	.PJRT_Memory_Id = memory_id,
	.PJRT_Memory_Kind = memory_kind,
	.PJRT_Executable_Destroy = executable_destroy,
	.PJRT_Executable_NumOutputs = executable_num_outputs,
	.PJRT_LoadedExecutable_Destroy = loaded_destroy,
	.PJRT_LoadedExecutable_GetExecutable = loaded_get_executable,
	.PJRT_LoadedExecutable_Execute = loaded_execute,
	.PJRT_Executable_Serialize = executable_serialize,
	.PJRT_Executable_DeserializeAndLoad = executable_deserialize,
	.PJRT_Buffer_Destroy = buffer_destroy,
	.PJRT_Buffer_ElementType = buffer_element_type,
	.PJRT_Buffer_Dimensions = buffer_dimensions,
	.PJRT_Buffer_OnDeviceSizeInBytes = buffer_on_device_size,
	.PJRT_Buffer_ToHostBuffer = buffer_to_host,
	.PJRT_Buffer_ReadyEvent = buffer_ready_event,
	.PJRT_Client_DmaMap = client_dma_map,
	.PJRT_Client_DmaUnmap = client_dma_unmap,
}};
_Static_assert(sizeof(struct api_table) == REAL_API_SIZE, "the real CUDA plugin's table size");

const PJRT_Api *GetPjrtApi(void)
{
	const char *v = env_str("FAKE_PJRT_VERSION");
	long size = env_long("FAKE_PJRT_API_SIZE", REAL_API_SIZE);
	long major = PJRT_API_MAJOR, minor = REAL_API_MINOR;
	char *end;

	count("GetPjrtApi");
	if (v != NULL) {
		major = strtol(v, &end, 10);
		minor = *end == '.' ? strtol(end + 1, &end, 10) : -1;
		if (*end != '\0' || major < 0 || minor < 0) {
			major = PJRT_API_MAJOR;
			minor = REAL_API_MINOR;
		}
	}
	api.pjrt_api_version.major_version = (int)major;
	api.pjrt_api_version.minor_version = (int)minor;
	api.struct_size = size > 0 && size < REAL_API_SIZE ? (size_t)size : REAL_API_SIZE;
	v = env_str("FAKE_PJRT_DMA");
	api.PJRT_Client_DmaMap = v != NULL && strcmp(v, "none") == 0 ? NULL : client_dma_map;
	api.PJRT_Client_DmaUnmap = v != NULL && strcmp(v, "none") == 0 ? NULL : client_dma_unmap;
	return &api;
}
