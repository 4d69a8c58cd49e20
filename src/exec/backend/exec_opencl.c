/* exec_opencl: OpenCL contexts, programs built once per worker, pooled buffers and the kernel launches. */
#include "exec/backend/exec_opencl.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <CL/cl.h>

#include "core/clock.h"
#include "core/config.h"
#include "exec/backend/exec_kernels.h"
#include "core/dirs.h"
#include "core/log.h"
#include "core/mem.h"

#define POOL_MAX 12
#define SGEMM_TILE_M (EXEC_SGEMM_TM * EXEC_SGEMM_LY)
#define SGEMM_TILE_N (EXEC_SGEMM_TN * EXEC_SGEMM_LX)
#define SGEMM_PITCH_PAD 16 /* floats added to the row pitch of A and B: one cache line */
#define DOT_MAX_GROUPS 256
#define STAGE_MAX 4                   /* pinned staging buffers: a run's inputs and its output */
#define STAGE_MIN_BYTES (1u << 20)    /* a smaller copy is set by the link's latency, not by pinning */
#define STAGE_CHUNK (8u << 20)        /* an upload copies into the stage a chunk at a time, each chunk's DMA
					 overlapping the next one's copy */

enum { K_SAXPY, K_TRIAD, K_DOT, K_SGEMM, K_SOFTMAX, K_GENERATE, K_GENERATE_ROWS, K_GATHER, K_COUNT };

/* prefixed: "dot" is an OpenCL built-in function */
static const char *const kernel_names[K_COUNT] = {"exec_saxpy",   "exec_triad",    "exec_dot",
						   "exec_sgemm",   "exec_softmax",  "exec_generate",
						   "exec_generate_rows", "exec_gather"};

/*
 * An idle buffer kept for the next run. One the generator filled remembers what it holds (made, key and layout), so
 * that the next run with the same seed and shapes takes its input as it is: a benchmark's repeated runs, a health
 * check's, pay for the generator once (docs/api.md, "Where the data lives").
 */
struct pooled {
	cl_mem mem;
	size_t size;
	bool busy;
	bool made;
	cl_uint key;
	size_t rows, cols, pitch;
};

/* A pinned staging buffer: allocated by the driver, mapped once for its life. */
struct staged {
	cl_mem mem;
	void *ptr;
	size_t size;
	bool busy;
};

struct exec_ocl {
	cl_device_id device;
	cl_context ctx;
	cl_command_queue queue;
	cl_program program;
	cl_kernel kernels[K_COUNT];
	size_t max_wg;
	size_t wg;                 /* work-group size of dot and softmax */
	bool sgemm_local;          /* the 4 x 8 work-group fits */
	uint64_t max_alloc;
	uint64_t global_mem;
	bool profiling;            /* the queue keeps event times: kernel_ms from the device's clock */
	uint64_t pool_cap;         /* bytes of idle buffers kept */
	struct pooled pool[POOL_MAX];
	/* a fault for tests: the output element ACCELD_FAULT_WRONG_ELEMENT names is overwritten after each run; -1
	 * none */
	int64_t fault_element;
	/* a fault for tests: a run whose buffers take more than ACCELD_FAULT_DEVICE_MEMORY bytes fails at its kernel's
	 * launch with CL_MEM_OBJECT_ALLOCATION_FAILURE, as NVIDIA's driver does when it allocates buffers at first use;
	 * 0 none */
	uint64_t fault_memory;
	uint64_t buffers_made;     /* clCreateBuffer calls, for tests */
	/*
	 * The copies that cross the link (inputs the host gave, outputs it asked for) go through pinned memory.
	 * NVIDIA's OpenCL pins the host memory of the buffers it allocates itself (CL_MEM_ALLOC_HOST_PTR), and its
	 * best-practices guide has copies made from and to such a buffer, mapped once, to a device buffer; memory the
	 * caller owns, CL_MEM_USE_HOST_PTR's included, is pageable to it and goes through the driver's own staging. So
	 * a run's data is copied into such a stage on the host and moved from there. Off for CPU devices (PoCL: the
	 * device's memory is the host's, and a stage would be one more copy) and after a stage could not be made or
	 * mapped (logged once).
	 */
	struct staged stage[STAGE_MAX];
	bool staging;
	uint64_t stages_made;      /* pinned buffers made, for tests */
};

const char *exec_ocl_error_name(int code)
{
	switch (code) {
#define E(x) \
	case x: return #x;
	E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
	E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
	E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH)
	E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE)
	E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
	E(CL_COMPILE_PROGRAM_FAILURE) E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE)
	E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE)
	E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
	E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR) E(CL_INVALID_MEM_OBJECT)
	E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER)
	E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE)
	E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
	E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION)
	E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET)
	E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT)
	E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
	E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
	E(CL_INVALID_DEVICE_PARTITION_COUNT) E(CL_INVALID_PIPE_SIZE) E(CL_INVALID_DEVICE_QUEUE)
	E(CL_INVALID_SPEC_ID) E(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef E
	case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
	default: return "CL_UNKNOWN_ERROR";
	}
}

void exec_opencl_set_cache_dir(const char *dir)
{
	if (dir == NULL || *dir == '\0' || getenv("POCL_CACHE_DIR") != NULL)
		return;
	/* a folder that cannot be made is left to PoCL, which then builds without a cache */
	(void)dirs_make(dir, 0700, "opencl", "created a folder for PoCL's program cache");
	setenv("POCL_CACHE_DIR", dir, 0);
}

static int fail(char *err, size_t errsz, cl_int rc, const char *what)
{
	snprintf(err, errsz, "%s failed: %s (%d)", what, exec_ocl_error_name(rc), (int)rc);
	return -1;
}

static void device_name(cl_device_id d, char *out, size_t outsz)
{
	out[0] = '\0';
	if (clGetDeviceInfo(d, CL_DEVICE_NAME, outsz, out, NULL) != CL_SUCCESS)
		out[0] = '\0';
	out[outsz - 1] = '\0';
}

/* The device at the registry's indices when its name agrees, else the first device with that name. */
static cl_device_id find_device(const struct device_opencl *info, char *err, size_t errsz)
{
	cl_platform_id plats[16];
	cl_uint nplat = 0;
	cl_int rc = clGetPlatformIDs(16, plats, &nplat);
	cl_device_id by_name = NULL;

	if (rc != CL_SUCCESS) {
		fail(err, errsz, rc, "clGetPlatformIDs");
		return NULL;
	}
	if (nplat > 16)
		nplat = 16;
	for (cl_uint p = 0; p < nplat; p++) {
		cl_device_id devs[64];
		cl_uint ndev = 0;

		if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &ndev) != CL_SUCCESS)
			continue;
		if (ndev > 64)
			ndev = 64;
		for (cl_uint d = 0; d < ndev; d++) {
			char name[256];

			device_name(devs[d], name, sizeof(name));
			if (p == info->platform_index && d == info->device_index &&
			    (info->name[0] == '\0' || strcmp(name, info->name) == 0))
				return devs[d];
			if (by_name == NULL && info->name[0] != '\0' && strcmp(name, info->name) == 0)
				by_name = devs[d];
		}
	}
	if (by_name == NULL)
		snprintf(err, errsz, "no OpenCL device at platform %u device %u named '%s'", info->platform_index,
			 info->device_index, info->name);
	return by_name;
}

static int build(struct exec_ocl *ocl, char *err, size_t errsz)
{
	const char *src[2] = {exec_kernels_cl, exec_kernels_cl_data};
	char opts[64];
	cl_int rc;

	ocl->program = clCreateProgramWithSource(ocl->ctx, 2, src, NULL, &rc);
	if (rc != CL_SUCCESS)
		return fail(err, errsz, rc, "clCreateProgramWithSource");
	snprintf(opts, sizeof(opts), "-DWG=%zu", ocl->wg);
	rc = clBuildProgram(ocl->program, 1, &ocl->device, opts, NULL, NULL);
	if (rc != CL_SUCCESS) {
		char log[2048] = "";
		size_t n = 0;

		clGetProgramBuildInfo(ocl->program, ocl->device, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, &n);
		log[n < sizeof(log) ? n : sizeof(log) - 1] = '\0';
		snprintf(err, errsz, "clBuildProgram failed: %s (%d); build log: %s", exec_ocl_error_name(rc), (int)rc,
			 log[0] ? log : "(empty)");
		return -1;
	}
	for (int i = 0; i < K_COUNT; i++) {
		ocl->kernels[i] = clCreateKernel(ocl->program, kernel_names[i], &rc);
		if (rc != CL_SUCCESS) {
			char what[64];

			snprintf(what, sizeof(what), "clCreateKernel(%s)", kernel_names[i]);
			return fail(err, errsz, rc, what);
		}
	}
	return 0;
}

/*
 * Launches every kernel once on tiny inputs: PoCL compiles a kernel for its work-group size at the first launch,
 * and that cost belongs to opening the device, not to the first job.
 */
static enum acceld_err warm_up(struct exec_ocl *ocl, char *err, size_t errsz)
{
	static const float in[64] = {1.0f, 2.0f, 3.0f};
	float out[64 * 64];
	struct backend_timing t;
	static const struct {
		enum kernel_id kernel;
		size_t m, n, k;
	} runs[] = {{KERNEL_SAXPY, 1, 8, 0}, {KERNEL_TRIAD, 1, 8, 0}, {KERNEL_DOT, 1, 8, 0}, {KERNEL_SGEMM, 64, 64, 1},
		    {KERNEL_SOFTMAX, 1, 8, 0}};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct kernel_work w = {.kernel = runs[i].kernel, .m = runs[i].m, .n = runs[i].n, .k = runs[i].k,
				      .alpha = 1.0f, .scale = 1.0f, .in = {in, in, NULL}, .out = out};
		enum acceld_err rc = exec_ocl_run(ocl, &w, &t, err, errsz);

		if (rc != ACCELD_OK)
			return rc;
	}
	for (int rows = 0; rows < 2; rows++) { /* the generators (of vectors, of pitched rows) and the gather */
		float sample[8];
		struct kernel_work w = {.kernel = rows ? KERNEL_SGEMM : KERNEL_SAXPY, .m = 64, .n = rows ? 128 : 8, .k = 1,
				      .alpha = 1.0f, .generate = true, .seed = 1, .nsample = 8, .sample = sample,
				      .grid = {.rows = rows ? 64 : 1, .cols = rows ? 128 : 8, .rs = 1, .cs = 1, .nrows = 1,
					       .ncols = 8, .count = 8}};
		enum acceld_err rc = exec_ocl_run(ocl, &w, &t, err, errsz);

		if (rc != ACCELD_OK)
			return rc;
	}
	return ACCELD_OK;
}

enum acceld_err exec_ocl_open(const struct device *dev, struct exec_ocl **out, char *err, size_t errsz)
{
	struct exec_ocl *ocl = NULL;
	cl_ulong max_alloc = 0;
	cl_ulong global_mem = 0;
	cl_device_type type = 0;
	cl_int rc;
	enum acceld_err ret = ACCELD_EDEVICE;

	if (!dev->opencl.present) {
		snprintf(err, errsz, "%s has no OpenCL view", dev->id);
		return ACCELD_EUNSUPPORTED;
	}
	ocl = xcalloc(1, sizeof(*ocl));
	ocl->fault_element = -1;
	ocl->device = find_device(&dev->opencl, err, errsz);
	if (ocl->device == NULL)
		goto out;
	ocl->ctx = clCreateContext(NULL, 1, &ocl->device, NULL, NULL, &rc);
	if (rc != CL_SUCCESS) {
		fail(err, errsz, rc, "clCreateContext");
		goto out;
	}
	{ /* kernel times from the device's clock where the queue can keep them, else the host's */
		cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};

		ocl->queue = clCreateCommandQueueWithProperties(ocl->ctx, ocl->device, props, &rc);
		ocl->profiling = rc == CL_SUCCESS;
		if (rc != CL_SUCCESS)
			ocl->queue = clCreateCommandQueueWithProperties(ocl->ctx, ocl->device, NULL, &rc);
	}
	if (rc != CL_SUCCESS) {
		fail(err, errsz, rc, "clCreateCommandQueueWithProperties");
		goto out;
	}
	clGetDeviceInfo(ocl->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(ocl->max_wg), &ocl->max_wg, NULL);
	clGetDeviceInfo(ocl->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc, NULL);
	clGetDeviceInfo(ocl->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global_mem), &global_mem, NULL);
	clGetDeviceInfo(ocl->device, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
	ocl->staging = !(type & CL_DEVICE_TYPE_CPU);
	ocl->max_alloc = max_alloc;
	ocl->global_mem = global_mem;
	/*
	 * Idle buffers kept: a quarter of the device's memory on a GPU, whose worker process lets go of it when idle;
	 * at most 1 GiB of a CPU's, which the service itself holds. NVIDIA's OpenCL gives a new buffer its memory at
	 * the first kernel that touches it: with 1 GiB kept on an H100, each job of 1e8 elements (1.2 GB) made one
	 * buffer anew and its kernel ran at 0.57x of a copy, where 83.5 M elements (1.0 GB, all kept) ran at 0.9x.
	 */
	ocl->pool_cap = (type & CL_DEVICE_TYPE_GPU) || global_mem / 4 < (1ull << 30) ? global_mem / 4 : (1ull << 30);
	ocl->wg = EXEC_REDUCE_WG;
	while (ocl->wg > 1 && ocl->max_wg > 0 && ocl->wg > ocl->max_wg)
		ocl->wg /= 2;
	ocl->sgemm_local = ocl->max_wg == 0 || ocl->max_wg >= EXEC_SGEMM_LX * EXEC_SGEMM_LY;
	if (build(ocl, err, errsz) != 0)
		goto out;
	if (warm_up(ocl, err, errsz) != ACCELD_OK)
		goto out;
	{
		const char *fault = getenv("ACCELD_FAULT_WRONG_ELEMENT");

		if (fault != NULL && *fault != '\0')
			ocl->fault_element = strtoll(fault, NULL, 10);
		fault = getenv("ACCELD_FAULT_DEVICE_MEMORY");
		if (fault != NULL && *fault != '\0')
			ocl->fault_memory = strtoull(fault, NULL, 10);
	}
	*out = ocl;
	ocl = NULL;
	ret = ACCELD_OK;
out:
	exec_ocl_close(ocl);
	return ret;
}

void exec_ocl_close(struct exec_ocl *ocl)
{
	if (ocl == NULL)
		return;
	for (int i = 0; i < STAGE_MAX; i++)
		if (ocl->stage[i].mem) {
			clEnqueueUnmapMemObject(ocl->queue, ocl->stage[i].mem, ocl->stage[i].ptr, 0, NULL, NULL);
			clReleaseMemObject(ocl->stage[i].mem);
		}
	if (ocl->queue && ocl->stage[0].mem)
		clFinish(ocl->queue);
	for (int i = 0; i < POOL_MAX; i++)
		if (ocl->pool[i].mem)
			clReleaseMemObject(ocl->pool[i].mem);
	for (int i = 0; i < K_COUNT; i++)
		if (ocl->kernels[i])
			clReleaseKernel(ocl->kernels[i]);
	if (ocl->program)
		clReleaseProgram(ocl->program);
	if (ocl->queue)
		clReleaseCommandQueue(ocl->queue);
	if (ocl->ctx)
		clReleaseContext(ocl->ctx);
	free(ocl);
}

uint64_t exec_ocl_buffers_made(const struct exec_ocl *ocl)
{
	return ocl->buffers_made;
}

uint64_t exec_ocl_stages_made(const struct exec_ocl *ocl)
{
	return ocl->stages_made;
}

uint64_t exec_ocl_pool_bytes(const struct exec_ocl *ocl)
{
	uint64_t sum = 0;

	for (int i = 0; i < POOL_MAX; i++)
		if (ocl->pool[i].mem)
			sum += ocl->pool[i].size;
	return sum;
}

/* --- the buffer pool --- */

static void pool_trim(struct exec_ocl *ocl, size_t incoming)
{
	uint64_t idle = 0;

	for (int i = 0; i < POOL_MAX; i++)
		if (ocl->pool[i].mem && !ocl->pool[i].busy)
			idle += ocl->pool[i].size;
	/* drop idle buffers, largest first, until the new one fits under the cap */
	while (idle > 0 && idle + incoming > ocl->pool_cap) {
		int big = -1;

		for (int i = 0; i < POOL_MAX; i++)
			if (ocl->pool[i].mem && !ocl->pool[i].busy && (big < 0 || ocl->pool[i].size > ocl->pool[big].size))
				big = i;
		if (big < 0)
			break;
		idle -= ocl->pool[big].size;
		clReleaseMemObject(ocl->pool[big].mem);
		ocl->pool[big] = (struct pooled){0};
	}
}

/*
 * A buffer of at least size bytes (an idle one of at most twice the size, one that holds no generated input first,
 * else a new one); NULL on failure. What it held is forgotten: the run writes it.
 */
static cl_mem pool_get(struct exec_ocl *ocl, size_t size, cl_int *rc)
{
	int best = -1;
	int slot = -1;
	cl_mem mem;

	if (size == 0)
		size = 4;
	for (int i = 0; i < POOL_MAX; i++) {
		struct pooled *p = &ocl->pool[i];

		if (p->mem && !p->busy && p->size >= size && p->size <= 2 * size &&
		    (best < 0 || (ocl->pool[best].made && !p->made) ||
		     (ocl->pool[best].made == p->made && p->size < ocl->pool[best].size)))
			best = i;
	}
	if (best >= 0) {
		ocl->pool[best].busy = true;
		ocl->pool[best].made = false;
		*rc = CL_SUCCESS;
		return ocl->pool[best].mem;
	}
	pool_trim(ocl, size);
	for (int i = 0; i < POOL_MAX && slot < 0; i++)
		if (ocl->pool[i].mem == NULL)
			slot = i;
	if (slot < 0) { /* every slot holds a buffer: evict an idle one */
		for (int i = 0; i < POOL_MAX && slot < 0; i++)
			if (!ocl->pool[i].busy)
				slot = i;
		if (slot < 0) {
			*rc = CL_OUT_OF_RESOURCES;
			return NULL;
		}
		clReleaseMemObject(ocl->pool[slot].mem);
		ocl->pool[slot] = (struct pooled){0};
	}
	mem = clCreateBuffer(ocl->ctx, CL_MEM_READ_WRITE, size, NULL, rc);
	if (*rc != CL_SUCCESS)
		return NULL;
	ocl->buffers_made++;
	ocl->pool[slot] = (struct pooled){.mem = mem, .size = size, .busy = true};
	return mem;
}

/* The idle buffer holding input key made as rows x cols at pitch, taken for the run, or NULL. */
static cl_mem pool_get_made(struct exec_ocl *ocl, cl_uint key, size_t rows, size_t cols, size_t pitch)
{
	for (int i = 0; i < POOL_MAX; i++) {
		struct pooled *p = &ocl->pool[i];

		if (p->mem && !p->busy && p->made && p->key == key && p->rows == rows && p->cols == cols &&
		    p->pitch == pitch) {
			p->busy = true;
			return p->mem;
		}
	}
	return NULL;
}

/* Marks mem as holding input key made as rows x cols at pitch. */
static void pool_note_made(struct exec_ocl *ocl, cl_mem mem, cl_uint key, size_t rows, size_t cols, size_t pitch)
{
	for (int i = 0; i < POOL_MAX; i++) {
		struct pooled *p = &ocl->pool[i];

		if (p->mem == mem) {
			p->made = true;
			p->key = key;
			p->rows = rows;
			p->cols = cols;
			p->pitch = pitch;
		}
	}
}

/* The run's buffers go back to the pool; after a failed run none is trusted to hold what it was made with. */
static void pool_put_all(struct exec_ocl *ocl, bool ok)
{
	for (int i = 0; i < POOL_MAX; i++) {
		if (ocl->pool[i].busy && !ok)
			ocl->pool[i].made = false;
		ocl->pool[i].busy = false;
	}
	pool_trim(ocl, 0);
	for (int i = 0; i < STAGE_MAX; i++)
		ocl->stage[i].busy = false;
}

/* Makes stage s a pinned buffer of size bytes, mapped; false (staging turned off, said once) when it cannot. */
static bool stage_make(struct exec_ocl *ocl, struct staged *s, size_t size)
{
	cl_int rc = CL_SUCCESS;
	const char *what = "clCreateBuffer (CL_MEM_ALLOC_HOST_PTR)";

	if (s->mem != NULL) { /* an idle one too small: its memory goes back first */
		clEnqueueUnmapMemObject(ocl->queue, s->mem, s->ptr, 0, NULL, NULL);
		clReleaseMemObject(s->mem);
		*s = (struct staged){0};
	}
	s->mem = clCreateBuffer(ocl->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, NULL, &rc);
	if (s->mem != NULL) {
		what = "clEnqueueMapBuffer";
		s->ptr = clEnqueueMapBuffer(ocl->queue, s->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, NULL,
					    NULL, &rc);
	}
	if (s->mem != NULL && s->ptr != NULL && rc == CL_SUCCESS) {
		s->size = size;
		ocl->stages_made++;
		return true;
	}
	if (s->mem != NULL)
		clReleaseMemObject(s->mem);
	*s = (struct staged){0};
	ocl->staging = false;
	log_fields(LOGL_WARN, "opencl", "no pinned staging buffer; transfers use pageable memory",
		   (struct log_field[]){LOG_S("call", what), LOG_S("error", exec_ocl_error_name(rc)),
					LOG_I("bytes", size)},
		   3);
	return false;
}

/*
 * A pinned stage of at least bytes for one copy of the run (busy until the run ends), or NULL: staging off, a copy
 * too small to gain from it, or every stage in use. The smallest idle stage that fits is reused; else an empty or
 * idle slot gets a new one of that size.
 */
static void *stage_get(struct exec_ocl *ocl, size_t bytes)
{
	int slot = -1;

	if (!ocl->staging || bytes < STAGE_MIN_BYTES)
		return NULL;
	for (int i = 0; i < STAGE_MAX; i++) {
		const struct staged *s = &ocl->stage[i];

		if (s->mem != NULL && !s->busy && s->size >= bytes && (slot < 0 || s->size < ocl->stage[slot].size))
			slot = i;
	}
	if (slot < 0) {
		for (int i = 0; i < STAGE_MAX && (slot < 0 || ocl->stage[slot].mem != NULL); i++)
			if (!ocl->stage[i].busy)
				slot = i;
		if (slot < 0 || !stage_make(ocl, &ocl->stage[slot], bytes))
			return NULL;
	}
	ocl->stage[slot].busy = true;
	return ocl->stage[slot].ptr;
}

/* --- launches --- */

struct launch {
	struct exec_ocl *ocl;
	cl_int rc;
	const char *what;
	uint64_t up_bytes;   /* moved from the host to the device */
	uint64_t down_bytes; /* moved from the device to the host */
	uint64_t gen_ns;     /* making generated inputs on the device */
	uint64_t need;       /* bytes of the job's buffers (kernel_total_len) */
	cl_event kev;        /* the kernel's launch, when the queue profiles; NULL none */
	bool device_clock;   /* the kernel time came from kev */
	uint64_t launch_ns;  /* the host's time from the kernel's launch to the end of its clFinish */
	uint64_t kernel_t0;  /* when the uploads had finished and the kernel was launched */
	bool host_data;      /* data of the host's crossed (an input it gave, an output it asked for) */
	bool pageable;       /* some of it crossed from or to pageable memory */
};

static void set_arg(struct launch *l, cl_kernel k, cl_uint idx, size_t size, const void *value)
{
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return;
	rc = clSetKernelArg(k, idx, size, value);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clSetKernelArg";
	}
}

static cl_mem upload(struct launch *l, const float *src, size_t count)
{
	cl_mem m;
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return NULL;
	m = pool_get(l->ocl, count * sizeof(float), &rc);
	if (m == NULL) {
		l->rc = rc;
		l->what = "clCreateBuffer";
		return NULL;
	}
	if (src != NULL && count > 0) {
		size_t bytes = count * sizeof(float);
		unsigned char *stage = stage_get(l->ocl, bytes);

		l->up_bytes += bytes;
		l->host_data = true;
		l->pageable = l->pageable || stage == NULL;
		if (stage == NULL)
			rc = clEnqueueWriteBuffer(l->ocl->queue, m, CL_FALSE, 0, bytes, src, 0, NULL, NULL);
		/* a chunk's copy into the stage, then its DMA, queued while the next chunk is copied */
		for (size_t off = 0; stage != NULL && off < bytes && rc == CL_SUCCESS; off += STAGE_CHUNK) {
			size_t n = bytes - off < STAGE_CHUNK ? bytes - off : STAGE_CHUNK;

			memcpy(stage + off, (const unsigned char *)src + off, n);
			rc = clEnqueueWriteBuffer(l->ocl->queue, m, CL_FALSE, off, n, stage + off, 0, NULL, NULL);
		}
		if (rc != CL_SUCCESS) {
			l->rc = rc;
			l->what = "clEnqueueWriteBuffer";
		}
	}
	return m;
}

static cl_mem device_buffer(struct launch *l, size_t count)
{
	return upload(l, NULL, count);
}

static void zero(struct launch *l, cl_mem m, size_t bytes)
{
	float z = 0.0f;
	cl_int rc;

	if (l->rc != CL_SUCCESS || bytes == 0)
		return;
	rc = clEnqueueFillBuffer(l->ocl->queue, m, &z, sizeof(z), 0, bytes, 0, NULL, NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clEnqueueFillBuffer";
	}
}

/* Writes a rows x cols host matrix into a device matrix whose rows are pitch elements long. */
static void write_rect(struct launch *l, cl_mem m, const float *src, size_t rows, size_t cols, size_t pitch)
{
	size_t origin[3] = {0, 0, 0};
	size_t region[3] = {cols * sizeof(float), rows, 1};
	cl_int rc;
	const void *from = src;

	if (l->rc != CL_SUCCESS || rows == 0 || cols == 0 || src == NULL)
		return;
	l->up_bytes += rows * cols * sizeof(float);
	l->host_data = true;
	{
		void *stage = stage_get(l->ocl, rows * cols * sizeof(float));

		if (stage != NULL)
			from = memcpy(stage, src, rows * cols * sizeof(float));
		l->pageable = l->pageable || stage == NULL;
	}
	rc = clEnqueueWriteBufferRect(l->ocl->queue, m, CL_FALSE, origin, origin, region, pitch * sizeof(float), 0,
				      cols * sizeof(float), 0, from, 0, NULL, NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clEnqueueWriteBufferRect";
	}
}

static void finish(struct launch *l, const char *what)
{
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return;
	rc = clFinish(l->ocl->queue);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = what;
	}
}

/* Waits for the uploads (and generators) to finish and marks the kernel's start: the line between the run's uploads
 * and what follows. Returns the time. */
static uint64_t begin_kernel(struct launch *l)
{
	finish(l, "clFinish (upload)");
	l->kernel_t0 = clock_mono_ns();
	return l->kernel_t0;
}

static void enqueue(struct launch *l, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local)
{
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return;
	rc = clEnqueueNDRangeKernel(l->ocl->queue, k, dims, NULL, global, local, 0, NULL, NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clEnqueueNDRangeKernel";
	}
}

/* The launch of the run's kernel: with an event for its device time when the queue profiles. */
static void enqueue_kernel(struct launch *l, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local)
{
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return;
	if (l->ocl->fault_memory > 0 && l->need > l->ocl->fault_memory) {
		l->rc = CL_MEM_OBJECT_ALLOCATION_FAILURE;
		l->what = "clEnqueueNDRangeKernel";
		return;
	}
	if (l->kev != NULL) {
		clReleaseEvent(l->kev);
		l->kev = NULL;
	}
	rc = clEnqueueNDRangeKernel(l->ocl->queue, k, dims, NULL, global, local, 0, NULL,
				    l->ocl->profiling ? &l->kev : NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clEnqueueNDRangeKernel";
	}
}

/*
 * The kernel's time after its clFinish: from the device's clock (its event's start to end) where the queue profiles,
 * else the host's from t0 to t1, which adds the driver's launch and wake-up (for a sub-millisecond kernel, as much
 * as the kernel itself).
 */
static uint64_t kernel_time(struct launch *l, uint64_t t0, uint64_t t1)
{
	cl_ulong start = 0, end = 0;

	l->launch_ns = t1 - t0;
	if (l->rc == CL_SUCCESS && l->kev != NULL &&
	    clGetEventProfilingInfo(l->kev, CL_PROFILING_COMMAND_START, sizeof(start), &start, NULL) == CL_SUCCESS &&
	    clGetEventProfilingInfo(l->kev, CL_PROFILING_COMMAND_END, sizeof(end), &end, NULL) == CL_SUCCESS &&
	    end >= start && end - start <= t1 - t0) {
		l->device_clock = true;
		return end - start;
	}
	return t1 - t0;
}

static void read_back(struct launch *l, cl_mem m, float *dst, size_t count)
{
	cl_int rc;

	if (l->rc != CL_SUCCESS || count == 0 || dst == NULL)
		return;
	l->down_bytes += count * sizeof(float);
	rc = clEnqueueReadBuffer(l->ocl->queue, m, CL_TRUE, 0, count * sizeof(float), dst, 0, NULL, NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = "clEnqueueReadBuffer";
	}
}

/*
 * Reads the output the host asked for, rows of cols at a pitch in m, into dst: through a pinned stage where there is
 * one (then copied out of it), else straight into dst.
 */
static void read_output(struct launch *l, cl_mem m, float *dst, size_t rows, size_t cols, size_t pitch)
{
	size_t bytes = rows * cols * sizeof(float);
	size_t origin[3] = {0, 0, 0};
	size_t region[3] = {cols * sizeof(float), rows, 1};
	void *stage;
	cl_int rc;

	if (l->rc != CL_SUCCESS || bytes == 0)
		return;
	stage = stage_get(l->ocl, bytes);
	l->down_bytes += bytes;
	l->host_data = true;
	l->pageable = l->pageable || stage == NULL;
	if (pitch == cols)
		rc = clEnqueueReadBuffer(l->ocl->queue, m, CL_TRUE, 0, bytes, stage ? stage : dst, 0, NULL, NULL);
	else
		rc = clEnqueueReadBufferRect(l->ocl->queue, m, CL_TRUE, origin, origin, region, pitch * sizeof(float), 0,
					     cols * sizeof(float), 0, stage ? stage : dst, 0, NULL, NULL);
	if (rc != CL_SUCCESS) {
		l->rc = rc;
		l->what = pitch == cols ? "clEnqueueReadBuffer" : "clEnqueueReadBufferRect";
		return;
	}
	if (stage != NULL)
		memcpy(dst, stage, bytes);
}

static size_t round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/* Whether input i of the run is made on the device. */
static bool generated(const struct kernel_work *w, unsigned i)
{
	return w->generate && w->in[i] == NULL && kernel_input_generated(w, i);
}

/*
 * Makes input i of the run in m on the device: rows x cols elements at a row pitch, by the kernel table's generator.
 * The uploads before it are finished first, and its time is the run's generate time.
 */
static void generate(struct launch *l, cl_mem m, const struct kernel_work *w, unsigned i, size_t rows, size_t cols,
		     size_t pitch)
{
	struct exec_ocl *ocl = l->ocl;
	cl_ulong count = (cl_ulong)rows * cols, r = rows, c = cols, p = pitch;
	cl_uint key = kernel_gen_key(w->seed, i);
	size_t local = 64;
	uint64_t t0;

	finish(l, "clFinish (before generating)");
	t0 = clock_mono_ns();
	if (count == 0) {
		/* nothing to make */
	} else if (pitch == cols) { /* one work-item an element */
		size_t global = round_up(count, local);

		set_arg(l, ocl->kernels[K_GENERATE], 0, sizeof(count), &count);
		set_arg(l, ocl->kernels[K_GENERATE], 1, sizeof(key), &key);
		set_arg(l, ocl->kernels[K_GENERATE], 2, sizeof(cl_mem), &m);
		enqueue(l, ocl->kernels[K_GENERATE], 1, &global, ocl->max_wg == 0 || ocl->max_wg >= local ? &local : NULL);
	} else { /* work-item (column, row): no division */
		size_t global[2] = {round_up(cols, local), rows};
		size_t lsize[2] = {local, 1};

		set_arg(l, ocl->kernels[K_GENERATE_ROWS], 0, sizeof(r), &r);
		set_arg(l, ocl->kernels[K_GENERATE_ROWS], 1, sizeof(c), &c);
		set_arg(l, ocl->kernels[K_GENERATE_ROWS], 2, sizeof(p), &p);
		set_arg(l, ocl->kernels[K_GENERATE_ROWS], 3, sizeof(key), &key);
		set_arg(l, ocl->kernels[K_GENERATE_ROWS], 4, sizeof(cl_mem), &m);
		enqueue(l, ocl->kernels[K_GENERATE_ROWS], 2, global,
			ocl->max_wg == 0 || ocl->max_wg >= local ? lsize : NULL);
	}
	finish(l, "clFinish (generate)");
	l->gen_ns += clock_mono_ns() - t0;
}

/*
 * A buffer of count elements holding input i of the run made by the generator as rows x cols at a pitch (the rest
 * zeros when zero_rest): the one an earlier run left with the same key and layout, else one made now.
 */
static cl_mem made_input(struct launch *l, const struct kernel_work *w, unsigned i, size_t count, size_t rows,
			 size_t cols, size_t pitch, bool zero_rest)
{
	cl_uint key = kernel_gen_key(w->seed, i);
	cl_mem m;

	if (l->rc != CL_SUCCESS)
		return NULL;
	m = pool_get_made(l->ocl, key, rows, cols, pitch);
	if (m != NULL)
		return m;
	m = device_buffer(l, count);
	if (m == NULL)
		return NULL;
	if (zero_rest)
		zero(l, m, count * sizeof(float));
	generate(l, m, w, i, rows, cols, pitch);
	if (l->rc == CL_SUCCESS)
		pool_note_made(l->ocl, m, key, rows, cols, pitch);
	return m;
}

/* Input i of a vector or row-major run of count elements: uploaded from the host, or made on the device. */
static cl_mem input(struct launch *l, const struct kernel_work *w, unsigned i, size_t count)
{
	if (!generated(w, i))
		return upload(l, w->in[i], count);
	return made_input(l, w, i, count, 1, count, count, false);
}

/*
 * After the kernel: the fault for tests, the sample gathered on the device and read back, and the whole output read
 * back only when the host asked for it (w->out). The output is rows of cols at a pitch in out.
 */
static void results(struct launch *l, cl_mem out, struct kernel_work *w, size_t rows, size_t cols, size_t pitch)
{
	struct exec_ocl *ocl = l->ocl;
	cl_ulong len = (cl_ulong)rows * cols, c = cols, p = pitch, r = rows, nc = w->grid.ncols;
	cl_ulong r0 = w->grid.r0, rs = w->grid.rs, c0 = w->grid.c0, cs = w->grid.cs;
	size_t n = w->nsample;
	cl_int rc;

	if (l->rc != CL_SUCCESS)
		return;
	if (ocl->fault_element >= 0 && (cl_ulong)ocl->fault_element < len) {
		cl_ulong e = (cl_ulong)ocl->fault_element;
		float wrong = 1e6f;

		rc = clEnqueueFillBuffer(ocl->queue, out, &wrong, sizeof(wrong), (e / cols * pitch + e % cols) * sizeof(float),
					 sizeof(float), 0, NULL, NULL);
		if (rc != CL_SUCCESS) {
			l->rc = rc;
			l->what = "clEnqueueFillBuffer (fault)";
			return;
		}
	}
	if (n > 0 && w->sample != NULL && n == len && kernel_sample_whole(&w->grid) && pitch == cols) {
		read_back(l, out, w->sample, n); /* the sample is the whole output: no gather */
	} else if (n > 0 && w->sample != NULL) {
		cl_mem s = device_buffer(l, n);

		set_arg(l, ocl->kernels[K_GATHER], 0, sizeof(r0), &r0);
		set_arg(l, ocl->kernels[K_GATHER], 1, sizeof(rs), &rs);
		set_arg(l, ocl->kernels[K_GATHER], 2, sizeof(r), &r);
		set_arg(l, ocl->kernels[K_GATHER], 3, sizeof(c0), &c0);
		set_arg(l, ocl->kernels[K_GATHER], 4, sizeof(cs), &cs);
		set_arg(l, ocl->kernels[K_GATHER], 5, sizeof(c), &c);
		set_arg(l, ocl->kernels[K_GATHER], 6, sizeof(nc), &nc);
		set_arg(l, ocl->kernels[K_GATHER], 7, sizeof(p), &p);
		set_arg(l, ocl->kernels[K_GATHER], 8, sizeof(cl_mem), &out);
		set_arg(l, ocl->kernels[K_GATHER], 9, sizeof(cl_mem), &s);
		enqueue(l, ocl->kernels[K_GATHER], 1, &n, NULL);
		read_back(l, s, w->sample, n);
	}
	if (w->out != NULL)
		read_output(l, out, w->out, rows, cols, pitch);
}

/* Runs the vector kernels; returns the kernel time in ns. */
static uint64_t run_vector(struct launch *l, struct kernel_work *w)
{
	struct exec_ocl *ocl = l->ocl;
	cl_ulong n = w->n;
	cl_mem x = input(l, w, 0, w->n);
	cl_mem y = input(l, w, 1, w->n);
	cl_mem out = NULL;
	uint64_t t0;
	uint64_t t1;
	size_t items = (w->n + 3) / 4;

	if (w->kernel == KERNEL_DOT) {
		size_t groups = (items + ocl->wg - 1) / ocl->wg;

		if (groups > DOT_MAX_GROUPS)
			groups = DOT_MAX_GROUPS;
		if (groups == 0)
			groups = 1;
		items = groups * ocl->wg;
		out = device_buffer(l, groups);
		t0 = begin_kernel(l);
		set_arg(l, ocl->kernels[K_DOT], 0, sizeof(n), &n);
		set_arg(l, ocl->kernels[K_DOT], 1, sizeof(cl_mem), &x);
		set_arg(l, ocl->kernels[K_DOT], 2, sizeof(cl_mem), &y);
		set_arg(l, ocl->kernels[K_DOT], 3, sizeof(cl_mem), &out);
		enqueue_kernel(l, ocl->kernels[K_DOT], 1, &items, &ocl->wg);
		finish(l, "clFinish (dot)");
		t1 = kernel_time(l, t0, clock_mono_ns());
		{
			float partial[DOT_MAX_GROUPS];
			double sum = 0.0;

			read_back(l, out, partial, groups);
			l->down_bytes -= groups * sizeof(float); /* the partial sums are the result, not a transfer of data */
			for (size_t i = 0; i < groups && l->rc == CL_SUCCESS; i++)
				sum += partial[i];
			w->value = sum;
		}
		return t1;
	}
	out = device_buffer(l, w->n);
	t0 = begin_kernel(l);
	{
		cl_kernel k = ocl->kernels[w->kernel == KERNEL_SAXPY ? K_SAXPY : K_TRIAD];
		float scalar = w->kernel == KERNEL_SAXPY ? w->alpha : w->scale;

		set_arg(l, k, 0, sizeof(n), &n);
		set_arg(l, k, 1, sizeof(float), &scalar);
		set_arg(l, k, 2, sizeof(cl_mem), &x);
		set_arg(l, k, 3, sizeof(cl_mem), &y);
		set_arg(l, k, 4, sizeof(cl_mem), &out);
		/*
		 * A work-group size of our own, with the range rounded up to it (the kernel passes items past n by):
		 * left to choose, a driver must take a divisor of the range, and for 1e8 elements NVIDIA's took one
		 * that ran saxpy at 0.57x of a copy where a range of 2^k * 81559 ran at 0.9x.
		 */
		if (items > 0) {
			size_t local = ocl->wg;

			items = round_up(items, local);
			enqueue_kernel(l, k, 1, &items, &local);
		}
	}
	finish(l, "clFinish (kernel)");
	t1 = kernel_time(l, t0, clock_mono_ns());
	results(l, out, w, 1, w->n, w->n);
	return t1;
}

static uint64_t run_sgemm(struct launch *l, struct kernel_work *w)
{
	struct exec_ocl *ocl = l->ocl;
	size_t mp = round_up(w->m, SGEMM_TILE_M);
	size_t np = round_up(w->n, SGEMM_TILE_N);
	bool padded = mp != w->m || np != w->n;
	/* one cache line more per row: with power-of-two pitches the rows an item walks down share cache sets */
	size_t lda = w->k + SGEMM_PITCH_PAD;
	size_t ldb = np + SGEMM_PITCH_PAD;
	cl_mem a = generated(w, 0) ? made_input(l, w, 0, mp * lda, w->m, w->k, lda, padded) : device_buffer(l, mp * lda);
	cl_mem b = generated(w, 1) ? made_input(l, w, 1, w->k * ldb, w->k, w->n, ldb, padded)
				   : device_buffer(l, w->k * ldb);
	bool use_c = w->beta != 0.0f && (w->in[2] != NULL || generated(w, 2));
	cl_mem c = use_c && generated(w, 2) ? made_input(l, w, 2, mp * np, w->m, w->n, np, padded)
					    : device_buffer(l, use_c ? mp * np : 1);
	cl_mem out = device_buffer(l, mp * np);
	cl_int mi = (cl_int)mp;
	cl_int ni = (cl_int)np;
	cl_int ki = (cl_int)w->k;
	cl_int ldai = (cl_int)lda;
	cl_int ldbi = (cl_int)ldb;
	float beta = use_c ? w->beta : 0.0f;
	size_t global[2] = {np / EXEC_SGEMM_TN, mp / EXEC_SGEMM_TM};
	size_t local[2] = {EXEC_SGEMM_LX, EXEC_SGEMM_LY};
	uint64_t t0;
	uint64_t t1;

	if (padded) { /* zero rows and columns past the matrix so they add nothing (made inputs came zeroed) */
		if (!generated(w, 0))
			zero(l, a, mp * lda * sizeof(float));
		if (!generated(w, 1))
			zero(l, b, w->k * ldb * sizeof(float));
		if (use_c && !generated(w, 2))
			zero(l, c, mp * np * sizeof(float));
	}
	write_rect(l, a, w->in[0], w->m, w->k, lda);
	write_rect(l, b, w->in[1], w->k, w->n, ldb);
	if (use_c)
		write_rect(l, c, w->in[2], w->m, w->n, np);
	t0 = begin_kernel(l);
	set_arg(l, ocl->kernels[K_SGEMM], 0, sizeof(cl_int), &mi);
	set_arg(l, ocl->kernels[K_SGEMM], 1, sizeof(cl_int), &ni);
	set_arg(l, ocl->kernels[K_SGEMM], 2, sizeof(cl_int), &ki);
	set_arg(l, ocl->kernels[K_SGEMM], 3, sizeof(float), &w->alpha);
	set_arg(l, ocl->kernels[K_SGEMM], 4, sizeof(cl_mem), &a);
	set_arg(l, ocl->kernels[K_SGEMM], 5, sizeof(cl_int), &ldai);
	set_arg(l, ocl->kernels[K_SGEMM], 6, sizeof(cl_mem), &b);
	set_arg(l, ocl->kernels[K_SGEMM], 7, sizeof(cl_int), &ldbi);
	set_arg(l, ocl->kernels[K_SGEMM], 8, sizeof(float), &beta);
	set_arg(l, ocl->kernels[K_SGEMM], 9, sizeof(cl_mem), &c);
	set_arg(l, ocl->kernels[K_SGEMM], 10, sizeof(cl_mem), &out);
	enqueue_kernel(l, ocl->kernels[K_SGEMM], 2, global, ocl->sgemm_local ? local : NULL);
	finish(l, "clFinish (sgemm)");
	t1 = kernel_time(l, t0, clock_mono_ns());
	results(l, out, w, w->m, w->n, np);
	return t1;
}

static uint64_t run_softmax(struct launch *l, struct kernel_work *w)
{
	struct exec_ocl *ocl = l->ocl;
	size_t count = w->m * w->n;
	cl_mem x = input(l, w, 0, count);
	cl_mem out = device_buffer(l, count);
	cl_ulong cols = w->n;
	size_t global = w->m * ocl->wg;
	uint64_t t0;
	uint64_t t1;

	t0 = begin_kernel(l);
	set_arg(l, ocl->kernels[K_SOFTMAX], 0, sizeof(cols), &cols);
	set_arg(l, ocl->kernels[K_SOFTMAX], 1, sizeof(cl_mem), &x);
	set_arg(l, ocl->kernels[K_SOFTMAX], 2, sizeof(cl_mem), &out);
	if (global > 0)
		enqueue_kernel(l, ocl->kernels[K_SOFTMAX], 1, &global, &ocl->wg);
	finish(l, "clFinish (softmax)");
	t1 = kernel_time(l, t0, clock_mono_ns());
	results(l, out, w, w->m, w->n, w->n);
	return t1;
}

/* The function that launches each kernel; it returns the kernel's time in ns (kernel_time). */
typedef uint64_t ocl_kernel_fn(struct launch *l, struct kernel_work *w);

static ocl_kernel_fn *const ocl_kernels[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = run_vector, [KERNEL_TRIAD] = run_vector,	[KERNEL_DOT] = run_vector,
	[KERNEL_SGEMM] = run_sgemm,  [KERNEL_SOFTMAX] = run_softmax,
};

static bool ocl_runs(enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT && ocl_kernels[k] != NULL;
}

/*
 * Whether an error says the job's buffers do not fit the device: an allocation that failed, or ran out of resources,
 * while buffers were created or first used (a driver may allocate them only then: NVIDIA's at the kernel's launch).
 * CL_OUT_OF_RESOURCES once the kernel ran (at clFinish, a read) is something else: NVIDIA reports a kernel's fault so.
 */
static bool device_memory_error(cl_int rc, const char *what)
{
	if (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_INVALID_BUFFER_SIZE)
		return true;
	return rc == CL_OUT_OF_RESOURCES && strncmp(what, "clFinish", 8) != 0 && strncmp(what, "clEnqueueRead", 13) != 0;
}

enum acceld_err exec_ocl_run(struct exec_ocl *ocl, struct kernel_work *w, struct backend_timing *t, char *err,
			     size_t errsz)
{
	struct launch l = {.ocl = ocl, .rc = CL_SUCCESS, .what = ""};
	uint64_t start = clock_mono_ns();
	uint64_t kernel_ns = 0;
	uint64_t total = kernel_total_len(w->kernel, &(struct kernel_shape){.m = w->m, .n = w->n, .k = w->k});
	uint64_t end;

	if (w->kernel == KERNEL_SGEMM && (w->m > INT_MAX || w->n > INT_MAX || w->k > INT_MAX)) {
		snprintf(err, errsz, "sgemm sizes beyond %d are not supported by the OpenCL backend", INT_MAX);
		return ACCELD_ETOOLARGE;
	}
	if (!ocl_runs(w->kernel)) {
		snprintf(err, errsz, "the OpenCL backend has no %s", kernel_name(w->kernel));
		return ACCELD_EDEVICE;
	}
	l.need = total > UINT64_MAX / sizeof(float) ? UINT64_MAX : total * sizeof(float);
	kernel_ns = ocl_kernels[w->kernel](&l, w);
	pool_put_all(ocl, l.rc == CL_SUCCESS);
	if (l.kev != NULL)
		clReleaseEvent(l.kev);
	if (l.rc != CL_SUCCESS) {
		clFinish(ocl->queue);
		if (device_memory_error(l.rc, l.what)) {
			char name[128];

			device_name(ocl->device, name, sizeof(name));
			snprintf(err, errsz,
				 "the job's buffers take %" PRIu64 " bytes; %s (%" PRIu64 " bytes of memory) could not "
				 "allocate them: %s failed: %s (%d)",
				 l.need, name[0] ? name : "the device", ocl->global_mem, l.what, exec_ocl_error_name(l.rc),
				 (int)l.rc);
			return ACCELD_EDEVMEM;
		}
		fail(err, errsz, l.rc, l.what);
		return l.rc == CL_OUT_OF_HOST_MEMORY ? ACCELD_ENOMEM : ACCELD_EDEVICE;
	}
	end = clock_mono_ns();
	if (l.kernel_t0 == 0)
		l.kernel_t0 = end - kernel_ns;
	t->kernel_ms = (double)kernel_ns / 1e6;
	t->kernel_device_clock = l.device_clock;
	t->generate_ms = (double)l.gen_ns / 1e6;
	/*
	 * everything but the kernel's launch and the generation: before the kernel the uploads (and the launch of the
	 * copies), after it the gather and the read-back (what the host's clock adds to the device's kernel time is in
	 * total_ms alone)
	 */
	t->upload_ms = (double)(l.kernel_t0 - start - l.gen_ns) / 1e6;
	t->download_ms = (double)(end - l.kernel_t0 - (l.launch_ns > 0 ? l.launch_ns : kernel_ns)) / 1e6;
	t->transfer_ms = t->upload_ms + t->download_ms;
	t->upload_bytes = l.up_bytes;
	t->download_bytes = l.down_bytes;
	t->transfer_bytes = l.up_bytes + l.down_bytes;
	t->transfer_memory = !l.host_data ? BACKEND_MEMORY_UNKNOWN
			     : l.pageable  ? BACKEND_MEMORY_PAGEABLE
					   : BACKEND_MEMORY_PINNED;
	return ACCELD_OK;
}

/* --- the backend --- */

static bool ocl_serves(const struct device *dev)
{
	return dev->opencl.present && dev->type != DEVICE_TPU;
}

/* POCL_CACHE_DIR: the configured folder, else "pocl-cache" beside the database (PoCL's default for in-memory
 * or URI databases) */
static void ocl_prepare(const struct config *cfg)
{
	char dir[4096];
	const char *slash;

	dir[0] = '\0';
	if (cfg->pocl_cache_dir != NULL)
		snprintf(dir, sizeof(dir), "%s", cfg->pocl_cache_dir);
	else if (cfg->db_path == NULL || strcmp(cfg->db_path, ":memory:") == 0 || strncmp(cfg->db_path, "file:", 5) == 0)
		return;
	else if ((slash = strrchr(cfg->db_path, '/')) == NULL)
		snprintf(dir, sizeof(dir), "pocl-cache");
	else
		snprintf(dir, sizeof(dir), "%.*s/pocl-cache", (int)(slash - cfg->db_path), cfg->db_path);
	exec_opencl_set_cache_dir(dir);
}

/* every buffer of a run must fit the device's largest allocation */
static enum acceld_err ocl_admit(const struct device *dev, enum kernel_id k, const struct kernel_shape *s,
				 enum reason *reason, char *detail, size_t detailsz)
{
	uint64_t largest = kernel_output_len(k, s);

	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++)
		if (kernel_input_len(k, s, i) > largest)
			largest = kernel_input_len(k, s, i);
	if (dev->opencl.max_alloc_bytes == 0 || largest <= dev->opencl.max_alloc_bytes / sizeof(float))
		return ACCELD_OK;
	*reason = REASON_EXCEEDS_DEVICE_ALLOCATION;
	snprintf(detail, detailsz, "a buffer of %llu bytes exceeds %s's largest allocation of %llu bytes",
		 largest > UINT64_MAX / sizeof(float) ? (unsigned long long)UINT64_MAX
						      : (unsigned long long)(largest * sizeof(float)),
		 dev->id, (unsigned long long)dev->opencl.max_alloc_bytes);
	return ACCELD_ETOOLARGE;
}

static enum acceld_err ocl_backend_open(const struct device *dev, unsigned threads, void **state, char *err,
					size_t errsz)
{
	struct exec_ocl *ocl = NULL;
	enum acceld_err rc;

	(void)threads;
	rc = exec_ocl_open(dev, &ocl, err, errsz);
	if (rc == ACCELD_OK)
		*state = ocl;
	return rc;
}

static enum acceld_err ocl_backend_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				       size_t errsz)
{
	w->precision = KERNEL_PRECISION_HIGHEST; /* float32 throughout */
	return exec_ocl_run(state, w, t, err, errsz);
}

static void ocl_backend_close(void *state)
{
	exec_ocl_close(state);
}

/*
 * What a healthy device reaches through this backend's own kernels, measured by tests/gpu/device_run.sh with the
 * health check's sizes (sgemm 8192^3, triad of 83,516,416 elements): the hand-written sgemm reaches 7.4 of an
 * H100's 67 FP32 TFLOP/s, where cuBLAS through PJRT reaches 50. Other GPUs have not been measured.
 */
static double ocl_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	if (dev->type != DEVICE_GPU || strcasecmp(dev->vendor, "NVIDIA") != 0)
		return 1.0;
	*source = "measured on an H100 80GB HBM3 (driver 580.159.04, NVIDIA OpenCL 3.0), 2026-11-26";
	return k == KERNEL_SGEMM ? 0.11 : 0.77;
}

const struct backend_ops backend_opencl = {
	.name = "opencl",
	.serves_what = "devices with an OpenCL view",
	.rank = 20,
	.serves = ocl_serves,
	.prepare = ocl_prepare,
	.admit = ocl_admit,
	.open = ocl_backend_open,
	.run = ocl_backend_run,
	.close = ocl_backend_close,
	.reference = ocl_reference,
	.runs = ocl_runs,
	.on_device = true,
};
