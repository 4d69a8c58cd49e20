/*
 * A fake OpenCL vendor driver for the health-check tests, built as $(BUILD)/fakes/libfakecl.so.
 *
 * The ICD loader (ocl-icd) loads it through an .icd file in OCL_ICD_VENDORS. It offers one platform with one GPU that
 * describes itself as the fake NVML's GPU 0 ("NVIDIA H100 80GB HBM3" on PCI 0000:65:00.0, the same UUID), so
 * detection merges the two views into one executable gpu:0 with NVML telemetry and the H100 row of the spec table.
 * It serves exactly the calls acceld's OpenCL backend makes (exec_opencl.c) and runs its five kernels, its generators
 * of inputs (the kernel table's generator, kernel_gen_value) and its gather of a sample on the host, by name, from
 * the arguments acceld sets: a device that computes right and is far slower than an H100. Switches,
 * read on every launch:
 *   FAKE_CL_WRONG=1          every 16th output value (and a dot's sum) is off by one: results that fail verification
 *   FAKE_CL_SLOW_MS=N        every kernel launch sleeps N ms more (default 0; 100 while FAKE_CL_SLOW_FILE exists)
 *   FAKE_CL_SLOW_FILE=PATH   the slowdown applies only while PATH exists, so a test can throttle the device while
 *                            a long check runs
 *   FAKE_CL_MAX_ALLOC=BYTES  the largest buffer (default 16 MiB), which bounds the sizes a check chooses
 *   FAKE_CL_NO_PINNED=1      a buffer asked for with CL_MEM_ALLOC_HOST_PTR (host memory the driver pins) cannot be
 *                            made (CL_MEM_OBJECT_ALLOCATION_FAILURE); others can
 * clEnqueueMapBuffer hands out the buffer's own memory (it lives on the host here); unmapping does nothing.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_icd.h>

#include "exec/kernel.h"

struct _cl_platform_id {
	const cl_icd_dispatch *dispatch;
};

struct _cl_device_id {
	const cl_icd_dispatch *dispatch;
};

struct _cl_context {
	const cl_icd_dispatch *dispatch;
};

struct _cl_command_queue {
	const cl_icd_dispatch *dispatch;
};

struct _cl_mem {
	const cl_icd_dispatch *dispatch;
	size_t size;
	unsigned char *data;
};

struct _cl_program {
	const cl_icd_dispatch *dispatch;
};

enum { K_SAXPY, K_TRIAD, K_DOT, K_SGEMM, K_SOFTMAX, K_GENERATE, K_GENERATE_ROWS, K_GATHER, K_COUNT };

#define MAX_ARGS 12

struct _cl_kernel {
	const cl_icd_dispatch *dispatch;
	int which;
	struct {
		size_t size;
		unsigned char bytes[16];
	} args[MAX_ARGS];
};

static const char *const kernel_names[K_COUNT] = {"exec_saxpy",   "exec_triad",	  "exec_dot",
						   "exec_sgemm",   "exec_softmax", "exec_generate",
						   "exec_generate_rows", "exec_gather"};

static cl_icd_dispatch dispatch;
static struct _cl_platform_id platform = {&dispatch};
static struct _cl_device_id device = {&dispatch};

/* the fake NVML's GPU 0 */
#define NAME "NVIDIA H100 80GB HBM3"
static const unsigned char uuid[16] = {0x89, 0x32, 0xf9, 0x37, 0xd7, 0x2c, 0x41, 0x06,
				       0xc1, 0x2f, 0x20, 0xbd, 0x9f, 0xae, 0xd9, 0xf6};

cl_int clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms);
void *clGetExtensionFunctionAddress(const char *name);

static unsigned long env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return dflt;
	n = strtoul(v, &end, 10);
	return *end == '\0' ? n : dflt;
}

static size_t max_alloc(void)
{
	return (size_t)env_ulong("FAKE_CL_MAX_ALLOC", 16ul << 20);
}

static cl_int answer(const void *src, size_t n, size_t size, void *value, size_t *size_ret)
{
	if (size_ret != NULL)
		*size_ret = n;
	if (value == NULL)
		return CL_SUCCESS;
	if (size < n)
		return CL_INVALID_VALUE;
	memcpy(value, src, n);
	return CL_SUCCESS;
}

static cl_int answer_text(const char *s, size_t size, void *value, size_t *size_ret)
{
	return answer(s, strlen(s) + 1, size, value, size_ret);
}

/*
 * The entry points the loader looks up are exported, but the dispatch table and the extension lookup use these
 * file-local twins: a reference to an exported name inside this library would bind to the loader's own function of
 * that name (libOpenCL exports it too), which dispatches straight back here.
 */
static cl_int platform_ids(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms)
{
	if (num_entries == 0 && platforms != NULL)
		return CL_INVALID_VALUE;
	if (num_platforms != NULL)
		*num_platforms = 1;
	if (platforms != NULL)
		platforms[0] = &platform;
	return CL_SUCCESS;
}

cl_int clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms)
{
	return platform_ids(num_entries, platforms, num_platforms);
}

static cl_int CL_API_CALL platform_info(cl_platform_id p, cl_platform_info name, size_t size, void *value,
					size_t *size_ret)
{
	if (p != &platform)
		return CL_INVALID_PLATFORM;
	switch (name) {
	case CL_PLATFORM_NAME:
		return answer_text("acceld fake OpenCL", size, value, size_ret);
	case CL_PLATFORM_VENDOR:
		return answer_text("acceld tests", size, value, size_ret);
	case CL_PLATFORM_VERSION:
		return answer_text("OpenCL 3.0 fake", size, value, size_ret);
	case CL_PLATFORM_PROFILE:
		return answer_text("FULL_PROFILE", size, value, size_ret);
	case CL_PLATFORM_EXTENSIONS:
		return answer_text("cl_khr_icd", size, value, size_ret);
	case CL_PLATFORM_ICD_SUFFIX_KHR:
		return answer_text("FAKE", size, value, size_ret);
	default:
		return CL_INVALID_VALUE;
	}
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p, cl_platform_info name, size_t size, void *value,
						 size_t *size_ret)
{
	return platform_info(p, name, size, value, size_ret);
}

void *clGetExtensionFunctionAddress(const char *name)
{
	cl_int (*fn)(cl_uint, cl_platform_id *, cl_uint *) = platform_ids;
	void *p = NULL;

	if (name == NULL || strcmp(name, "clIcdGetPlatformIDsKHR") != 0)
		return NULL;
	/* ISO C has no conversion from a function pointer to void *; the ICD interface needs one (POSIX allows it) */
	memcpy(&p, &fn, sizeof(p));
	return p;
}

static cl_int CL_API_CALL get_device_ids(cl_platform_id p, cl_device_type type, cl_uint num_entries,
					 cl_device_id *devices, cl_uint *num_devices)
{
	if (p != &platform)
		return CL_INVALID_PLATFORM;
	if (!(type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_DEFAULT)) && type != CL_DEVICE_TYPE_ALL)
		return CL_DEVICE_NOT_FOUND;
	if (num_entries == 0 && devices != NULL)
		return CL_INVALID_VALUE;
	if (num_devices != NULL)
		*num_devices = 1;
	if (devices != NULL)
		devices[0] = &device;
	return CL_SUCCESS;
}

static cl_int CL_API_CALL get_device_info(cl_device_id d, cl_device_info name, size_t size, void *value,
					  size_t *size_ret)
{
	cl_device_type type = CL_DEVICE_TYPE_GPU;
	cl_ulong ul;
	cl_uint u;
	size_t z;
	cl_device_pci_bus_info_khr pci = {.pci_domain = 0, .pci_bus = 0x65, .pci_device = 0, .pci_function = 0};

	if (d != &device)
		return CL_INVALID_DEVICE;
	switch (name) {
	case CL_DEVICE_TYPE:
		return answer(&type, sizeof(type), size, value, size_ret);
	case CL_DEVICE_NAME:
		return answer_text(NAME, size, value, size_ret);
	case CL_DEVICE_VENDOR:
		return answer_text("NVIDIA Corporation", size, value, size_ret);
	case CL_DEVICE_VERSION:
		return answer_text("OpenCL 3.0 fake", size, value, size_ret);
	case CL_DRIVER_VERSION:
		return answer_text("550.54.15", size, value, size_ret);
	case CL_DEVICE_EXTENSIONS:
		return answer_text("cl_khr_pci_bus_info cl_khr_device_uuid", size, value, size_ret);
	case CL_DEVICE_GLOBAL_MEM_SIZE:
		ul = 80ull << 30;
		return answer(&ul, sizeof(ul), size, value, size_ret);
	case CL_DEVICE_LOCAL_MEM_SIZE:
		ul = 48ull << 10;
		return answer(&ul, sizeof(ul), size, value, size_ret);
	case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
		ul = max_alloc();
		return answer(&ul, sizeof(ul), size, value, size_ret);
	case CL_DEVICE_MAX_COMPUTE_UNITS:
		u = 132;
		return answer(&u, sizeof(u), size, value, size_ret);
	case CL_DEVICE_MAX_CLOCK_FREQUENCY:
		u = 1980;
		return answer(&u, sizeof(u), size, value, size_ret);
	case CL_DEVICE_MAX_WORK_GROUP_SIZE:
		z = 1024;
		return answer(&z, sizeof(z), size, value, size_ret);
	case CL_DEVICE_PCI_BUS_INFO_KHR:
		return answer(&pci, sizeof(pci), size, value, size_ret);
	case CL_DEVICE_UUID_KHR:
		return answer(uuid, sizeof(uuid), size, value, size_ret);
	default:
		return CL_INVALID_VALUE;
	}
}

static cl_context CL_API_CALL create_context(const cl_context_properties *props, cl_uint n,
					     const cl_device_id *devices,
					     void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
					     void *user, cl_int *rc)
{
	struct _cl_context *c;

	(void)props;
	(void)notify;
	(void)user;
	if (n != 1 || devices == NULL || devices[0] != &device) {
		*rc = CL_INVALID_DEVICE;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	c->dispatch = &dispatch;
	*rc = c ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
	return c;
}

static cl_int CL_API_CALL release_context(cl_context c)
{
	free(c);
	return CL_SUCCESS;
}

static cl_command_queue CL_API_CALL create_queue(cl_context c, cl_device_id d, const cl_queue_properties *props,
						 cl_int *rc)
{
	struct _cl_command_queue *q;

	(void)c;
	(void)props;
	if (d != &device) {
		*rc = CL_INVALID_DEVICE;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	q->dispatch = &dispatch;
	*rc = CL_SUCCESS;
	return q;
}

static cl_int CL_API_CALL release_queue(cl_command_queue q)
{
	free(q);
	return CL_SUCCESS;
}

static cl_mem CL_API_CALL create_buffer(cl_context c, cl_mem_flags flags, size_t size, void *host, cl_int *rc)
{
	struct _cl_mem *m;

	const char *no_pinned = getenv("FAKE_CL_NO_PINNED");

	(void)c;
	(void)host;
	if ((flags & CL_MEM_ALLOC_HOST_PTR) && no_pinned != NULL && strcmp(no_pinned, "1") == 0) {
		*rc = CL_MEM_OBJECT_ALLOCATION_FAILURE;
		return NULL;
	}
	if (size == 0 || size > max_alloc()) {
		*rc = size == 0 ? CL_INVALID_BUFFER_SIZE : CL_MEM_OBJECT_ALLOCATION_FAILURE;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	m->data = m ? malloc(size) : NULL;
	if (m == NULL || m->data == NULL) {
		free(m);
		*rc = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	m->dispatch = &dispatch;
	m->size = size;
	*rc = CL_SUCCESS;
	return m;
}

static cl_int CL_API_CALL release_mem(cl_mem m)
{
	if (m != NULL)
		free(m->data);
	free(m);
	return CL_SUCCESS;
}

static void *CL_API_CALL map_buffer(cl_command_queue q, cl_mem m, cl_bool block, cl_map_flags flags, size_t off,
				     size_t n, cl_uint nwait, const cl_event *wait, cl_event *ev, cl_int *rc)
{
	(void)q;
	(void)block;
	(void)flags;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	if (off + n > m->size) {
		*rc = CL_INVALID_VALUE;
		return NULL;
	}
	*rc = CL_SUCCESS;
	return m->data + off;
}

static cl_int CL_API_CALL unmap_mem(cl_command_queue q, cl_mem m, void *p, cl_uint nwait, const cl_event *wait,
				    cl_event *ev)
{
	(void)q;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	return p >= (void *)m->data && p < (void *)(m->data + m->size) ? CL_SUCCESS : CL_INVALID_VALUE;
}

static cl_int CL_API_CALL write_buffer(cl_command_queue q, cl_mem m, cl_bool block, size_t off, size_t n,
				       const void *src, cl_uint nwait, const cl_event *wait, cl_event *ev)
{
	(void)q;
	(void)block;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	if (off + n > m->size)
		return CL_INVALID_VALUE;
	memcpy(m->data + off, src, n);
	return CL_SUCCESS;
}

static cl_int CL_API_CALL read_buffer(cl_command_queue q, cl_mem m, cl_bool block, size_t off, size_t n, void *dst,
				      cl_uint nwait, const cl_event *wait, cl_event *ev)
{
	(void)q;
	(void)block;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	if (off + n > m->size)
		return CL_INVALID_VALUE;
	memcpy(dst, m->data + off, n);
	return CL_SUCCESS;
}

/* A 2-D copy between a buffer and host memory (slices are not used by acceld). */
static cl_int rect(cl_mem m, bool to_buffer, const size_t *borigin, const size_t *horigin, const size_t *region,
		   size_t brow, size_t hrow, unsigned char *host)
{
	if (brow == 0)
		brow = region[0];
	if (hrow == 0)
		hrow = region[0];
	for (size_t r = 0; r < region[1]; r++) {
		size_t b = (borigin[1] + r) * brow + borigin[0];
		size_t h = (horigin[1] + r) * hrow + horigin[0];

		if (b + region[0] > m->size)
			return CL_INVALID_VALUE;
		if (to_buffer)
			memcpy(m->data + b, host + h, region[0]);
		else
			memcpy(host + h, m->data + b, region[0]);
	}
	return CL_SUCCESS;
}

static cl_int CL_API_CALL write_rect(cl_command_queue q, cl_mem m, cl_bool block, const size_t *borigin,
				     const size_t *horigin, const size_t *region, size_t brow, size_t bslice,
				     size_t hrow, size_t hslice, const void *src, cl_uint nwait, const cl_event *wait,
				     cl_event *ev)
{
	unsigned char *host;

	(void)q;
	(void)block;
	(void)bslice;
	(void)hslice;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	memcpy(&host, &src, sizeof(host)); /* read from, never written */
	return rect(m, true, borigin, horigin, region, brow, hrow, host);
}

static cl_int CL_API_CALL read_rect(cl_command_queue q, cl_mem m, cl_bool block, const size_t *borigin,
				    const size_t *horigin, const size_t *region, size_t brow, size_t bslice, size_t hrow,
				    size_t hslice, void *dst, cl_uint nwait, const cl_event *wait, cl_event *ev)
{
	(void)q;
	(void)block;
	(void)bslice;
	(void)hslice;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	return rect(m, false, borigin, horigin, region, brow, hrow, dst);
}

static cl_int CL_API_CALL fill_buffer(cl_command_queue q, cl_mem m, const void *pattern, size_t psize, size_t off,
				      size_t n, cl_uint nwait, const cl_event *wait, cl_event *ev)
{
	(void)q;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	if (psize == 0 || off + n > m->size || n % psize != 0)
		return CL_INVALID_VALUE;
	for (size_t i = 0; i < n; i += psize)
		memcpy(m->data + off + i, pattern, psize);
	return CL_SUCCESS;
}

static cl_int CL_API_CALL finish(cl_command_queue q)
{
	(void)q;
	return CL_SUCCESS;
}

static cl_program CL_API_CALL create_program(cl_context c, cl_uint n, const char **src, const size_t *len,
					     cl_int *rc)
{
	struct _cl_program *p;

	(void)c;
	(void)n;
	(void)src;
	(void)len;
	p = calloc(1, sizeof(*p));
	p->dispatch = &dispatch;
	*rc = CL_SUCCESS;
	return p;
}

static cl_int CL_API_CALL build_program(cl_program p, cl_uint n, const cl_device_id *devices, const char *opts,
					void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
	(void)p;
	(void)n;
	(void)devices;
	(void)opts;
	(void)notify;
	(void)user;
	return CL_SUCCESS;
}

static cl_int CL_API_CALL build_info(cl_program p, cl_device_id d, cl_program_build_info name, size_t size,
				     void *value, size_t *size_ret)
{
	(void)p;
	(void)d;
	(void)name;
	return answer_text("", size, value, size_ret);
}

static cl_int CL_API_CALL release_program(cl_program p)
{
	free(p);
	return CL_SUCCESS;
}

static cl_kernel CL_API_CALL create_kernel(cl_program p, const char *name, cl_int *rc)
{
	struct _cl_kernel *k;

	(void)p;
	for (int i = 0; i < K_COUNT; i++) {
		if (strcmp(name, kernel_names[i]) != 0)
			continue;
		k = calloc(1, sizeof(*k));
		k->dispatch = &dispatch;
		k->which = i;
		*rc = CL_SUCCESS;
		return k;
	}
	*rc = CL_INVALID_KERNEL_NAME;
	return NULL;
}

static cl_int CL_API_CALL release_kernel(cl_kernel k)
{
	free(k);
	return CL_SUCCESS;
}

static cl_int CL_API_CALL set_arg(cl_kernel k, cl_uint i, size_t size, const void *value)
{
	if (i >= MAX_ARGS || size > sizeof(k->args[0].bytes) || value == NULL)
		return CL_INVALID_ARG_INDEX;
	k->args[i].size = size;
	memcpy(k->args[i].bytes, value, size);
	return CL_SUCCESS;
}

/* --- the kernels, on the host --- */

static float *buf(const struct _cl_kernel *k, int i)
{
	cl_mem m;

	memcpy(&m, k->args[i].bytes, sizeof(m));
	return (float *)(void *)m->data;
}

static cl_ulong ulong_arg(const struct _cl_kernel *k, int i)
{
	cl_ulong v;

	memcpy(&v, k->args[i].bytes, sizeof(v));
	return v;
}

static int int_arg(const struct _cl_kernel *k, int i)
{
	cl_int v;

	memcpy(&v, k->args[i].bytes, sizeof(v));
	return v;
}

static float float_arg(const struct _cl_kernel *k, int i)
{
	float v;

	memcpy(&v, k->args[i].bytes, sizeof(v));
	return v;
}

static void sgemm(const struct _cl_kernel *k, bool wrong)
{
	int m = int_arg(k, 0), n = int_arg(k, 1), kk = int_arg(k, 2);
	float alpha = float_arg(k, 3);
	const float *a = buf(k, 4);
	int lda = int_arg(k, 5);
	const float *b = buf(k, 6);
	int ldb = int_arg(k, 7);
	float beta = float_arg(k, 8);
	const float *c = buf(k, 9);
	float *out = buf(k, 10);

	for (int i = 0; i < m; i++) {
		float *row = out + (size_t)i * n;

		for (int j = 0; j < n; j++)
			row[j] = 0.0f;
		for (int p = 0; p < kk; p++) {
			const float av = a[(size_t)i * lda + p];
			const float *brow = b + (size_t)p * ldb;

			for (int j = 0; j < n; j++)
				row[j] += av * brow[j];
		}
		for (int j = 0; j < n; j++) {
			row[j] = alpha * row[j] + (beta != 0.0f ? beta * c[(size_t)i * n + j] : 0.0f);
			if (wrong && ((size_t)i * n + j) % 16 == 0)
				row[j] += 1.0f;
		}
	}
}

static void vector(const struct _cl_kernel *k, bool wrong)
{
	size_t n = ulong_arg(k, 0);
	float s = float_arg(k, 1);
	const float *x = buf(k, 2), *y = buf(k, 3);
	float *out = buf(k, 4);

	for (size_t i = 0; i < n; i++) {
		out[i] = k->which == K_SAXPY ? s * x[i] + y[i] : x[i] + s * y[i];
		if (wrong && i % 16 == 0)
			out[i] += 1.0f;
	}
}

static void dot(const struct _cl_kernel *k, size_t groups, bool wrong)
{
	size_t n = ulong_arg(k, 0);
	const float *x = buf(k, 1), *y = buf(k, 2);
	float *partial = buf(k, 3);
	double sum = 0.0;

	for (size_t i = 0; i < n; i++)
		sum += (double)x[i] * y[i];
	for (size_t g = 0; g < groups; g++)
		partial[g] = 0.0f;
	partial[0] = (float)sum + (wrong ? 1.0f : 0.0f);
}

static void softmax(const struct _cl_kernel *k, size_t rows, bool wrong)
{
	size_t cols = ulong_arg(k, 0);
	const float *x = buf(k, 1);
	float *out = buf(k, 2);

	for (size_t r = 0; r < rows; r++) {
		const float *in = x + r * cols;
		float *o = out + r * cols;
		float m = in[0];
		double sum = 0.0;

		for (size_t j = 1; j < cols; j++)
			m = in[j] > m ? in[j] : m;
		for (size_t j = 0; j < cols; j++) {
			o[j] = expf(in[j] - m);
			sum += o[j];
		}
		for (size_t j = 0; j < cols; j++)
			o[j] = (float)(o[j] / sum) + (wrong && j % 16 == 0 ? 1.0f : 0.0f);
	}
}

static cl_uint uint_arg(const struct _cl_kernel *k, int i)
{
	cl_uint v;

	memcpy(&v, k->args[i].bytes, sizeof(v));
	return v;
}

/* exec_generate (count, key, dst) and exec_generate_rows (rows, cols, pitch, key, dst) */
static void generate(const struct _cl_kernel *k)
{
	bool rows = k->which == K_GENERATE_ROWS;
	cl_ulong r = rows ? ulong_arg(k, 0) : 1, c = rows ? ulong_arg(k, 1) : ulong_arg(k, 0);
	cl_ulong pitch = rows ? ulong_arg(k, 2) : c;
	cl_uint key = uint_arg(k, rows ? 3 : 1);
	float *dst = buf(k, rows ? 4 : 2);

	for (cl_ulong i = 0; i < r; i++)
		for (cl_ulong j = 0; j < c; j++)
			dst[i * pitch + j] = kernel_gen_value(key, i * c + j);
}

/* exec_gather (r0, rs, rows, c0, cs, cols, ncols, pitch, src, dst) over global items */
static void gather(const struct _cl_kernel *k, size_t items)
{
	struct kernel_sample g = {.r0 = ulong_arg(k, 0), .rs = ulong_arg(k, 1), .rows = ulong_arg(k, 2),
				  .c0 = ulong_arg(k, 3), .cs = ulong_arg(k, 4), .cols = ulong_arg(k, 5),
				  .ncols = ulong_arg(k, 6)};
	cl_ulong pitch = ulong_arg(k, 7);
	const float *src = buf(k, 8);
	float *dst = buf(k, 9);

	for (size_t j = 0; j < items; j++)
		dst[j] = src[kernel_sample_row(&g, j) * pitch + kernel_sample_col(&g, j)];
}

static void slow_down(void)
{
	const char *file = getenv("FAKE_CL_SLOW_FILE");
	unsigned long ms;
	struct timespec ts;

	if (file != NULL && *file != '\0') {
		if (access(file, F_OK) != 0)
			return;
		ms = env_ulong("FAKE_CL_SLOW_MS", 100);
	} else {
		ms = env_ulong("FAKE_CL_SLOW_MS", 0);
	}
	if (ms == 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

static cl_int CL_API_CALL enqueue_kernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *offset,
					 const size_t *global, const size_t *local, cl_uint nwait, const cl_event *wait,
					 cl_event *ev)
{
	bool wrong = env_ulong("FAKE_CL_WRONG", 0) != 0;
	size_t groups = local != NULL && local[0] > 0 ? global[0] / local[0] : 1;

	(void)q;
	(void)dims;
	(void)offset;
	(void)nwait;
	(void)wait;
	if (ev != NULL)
		*ev = NULL;
	switch (k->which) {
	case K_SGEMM:
		sgemm(k, wrong);
		break;
	case K_SAXPY:
	case K_TRIAD:
		vector(k, wrong);
		break;
	case K_DOT:
		dot(k, groups ? groups : 1, wrong);
		break;
	case K_SOFTMAX:
		softmax(k, groups, wrong);
		break;
	case K_GENERATE:
	case K_GENERATE_ROWS:
		generate(k);
		return CL_SUCCESS; /* the slowdown is the kernels' */
	case K_GATHER:
		gather(k, global[0]);
		return CL_SUCCESS;
	default:
		return CL_INVALID_KERNEL;
	}
	slow_down();
	return CL_SUCCESS;
}

__attribute__((constructor)) static void fill_dispatch(void)
{
	dispatch.clGetPlatformIDs = platform_ids;
	dispatch.clGetPlatformInfo = platform_info;
	dispatch.clGetDeviceIDs = get_device_ids;
	dispatch.clGetDeviceInfo = get_device_info;
	dispatch.clCreateContext = create_context;
	dispatch.clReleaseContext = release_context;
	dispatch.clCreateCommandQueueWithProperties = create_queue;
	dispatch.clReleaseCommandQueue = release_queue;
	dispatch.clCreateBuffer = create_buffer;
	dispatch.clReleaseMemObject = release_mem;
	dispatch.clEnqueueWriteBuffer = write_buffer;
	dispatch.clEnqueueReadBuffer = read_buffer;
	dispatch.clEnqueueWriteBufferRect = write_rect;
	dispatch.clEnqueueReadBufferRect = read_rect;
	dispatch.clEnqueueFillBuffer = fill_buffer;
	dispatch.clEnqueueMapBuffer = map_buffer;
	dispatch.clEnqueueUnmapMemObject = unmap_mem;
	dispatch.clFinish = finish;
	dispatch.clCreateProgramWithSource = create_program;
	dispatch.clBuildProgram = build_program;
	dispatch.clGetProgramBuildInfo = build_info;
	dispatch.clReleaseProgram = release_program;
	dispatch.clCreateKernel = create_kernel;
	dispatch.clReleaseKernel = release_kernel;
	dispatch.clSetKernelArg = set_arg;
	dispatch.clEnqueueNDRangeKernel = enqueue_kernel;
}
