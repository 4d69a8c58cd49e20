/*
 * exec_opencl: the OpenCL backend (backend_opencl in backend.h): GPUs, and PoCL's CPU device, which CI uses to
 * test this path.
 *
 * One exec_ocl per worker: its own context, command queue, program (built once when it opens) and cl_kernel
 * objects, since clSetKernelArg on one kernel is not thread-safe, and a small pool of device buffers reused across
 * jobs. Errors carry the OpenCL error name and, for a failed build, the build log.
 *
 * PoCL reads POCL_CACHE_DIR when OpenCL is first used, and hangs in a child forked after that: set the cache folder
 * (exec_opencl_set_cache_dir) before any OpenCL call, and never fork afterwards.
 */
#ifndef ACCELD_EXEC_OPENCL_H
#define ACCELD_EXEC_OPENCL_H

#include <stddef.h>
#include <stdint.h>

#include "detect/device.h"
#include "core/err.h"
#include "exec/backend.h"

struct exec_ocl;

/*
 * Creates the folder (and its parents) and sets POCL_CACHE_DIR to it unless the environment already names one.
 * Call before the first OpenCL call of the process and before other threads start. dir NULL or "" does nothing.
 */
void exec_opencl_set_cache_dir(const char *dir);

/*
 * Opens the OpenCL device described by dev->opencl (platform and device index, checked against the name; when they
 * disagree the device is found by name), builds the program and creates the kernels. Returns ACCELD_OK, or
 * ACCELD_EUNSUPPORTED when the device has no OpenCL view, or ACCELD_EDEVICE with the error name and build log
 * in err.
 */
enum acceld_err exec_ocl_open(const struct device *dev, struct exec_ocl **out, char *err, size_t errsz);
void exec_ocl_close(struct exec_ocl *ocl); /* NULL allowed */

/* Runs one kernel on the device: inputs are copied in, the output copied back. */
enum acceld_err exec_ocl_run(struct exec_ocl *ocl, struct kernel_work *w, struct backend_timing *t, char *err,
			     size_t errsz);

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"); "CL_UNKNOWN_ERROR" for others. */
const char *exec_ocl_error_name(int code);

/* Bytes of device buffers the pool holds now (for tests). */
uint64_t exec_ocl_pool_bytes(const struct exec_ocl *ocl);

/* How many device buffers the backend has created since it opened (its pool reuses them), for tests. */
uint64_t exec_ocl_buffers_made(const struct exec_ocl *ocl);

/* Pinned staging buffers made (CL_MEM_ALLOC_HOST_PTR, mapped), for tests: none on a CPU device. */
uint64_t exec_ocl_stages_made(const struct exec_ocl *ocl);

#endif
