/*
 * backend: what a backend of the executor is, and the list of the built-in ones.
 *
 * A backend runs one kernel at a time on one device: the native CPU code (exec_cpu.c), PJRT (exec_pjrt.c), OpenCL
 * (exec_opencl.c), all in exec/backend/. It is an ops struct that says which devices it serves and how much it is
 * preferred (rank); the executor (exec/) gives each device a worker thread and, for each job, the default backend
 * of the device or the one the job names, and knows nothing of any backend by name. A new backend is one file with
 * its ops and one line in backend_builtin (backend.c). Backends include this header, never exec.h.
 */
#ifndef ACCELD_BACKEND_H
#define ACCELD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "detect/device.h"
#include "core/err.h"
#include "exec/kernel.h"
#include "core/reason.h"

struct config;

/* The host memory a run's transfers used: pinned (page-locked: the device's DMA reads and writes it directly) or
 * pageable (the driver stages it); unknown when the run moved no data of the host's (its inputs made on the device,
 * its output left there) or the backend does not say. */
enum backend_memory { BACKEND_MEMORY_UNKNOWN, BACKEND_MEMORY_PAGEABLE, BACKEND_MEMORY_PINNED };

/* "pageable", "pinned"; NULL for unknown. */
const char *backend_memory_name(enum backend_memory m);

/* What a backend measured of one run. */
struct backend_timing {
	double transfer_ms; /* host <-> device copies; 0 for native: upload_ms + download_ms */
	uint64_t transfer_bytes; /* the bytes those copies moved, both ways: upload_bytes + download_bytes */
	double upload_ms;   /* host to device: the inputs the host gave */
	uint64_t upload_bytes;
	double download_ms; /* device to host: the output asked for, the sample */
	uint64_t download_bytes;
	enum backend_memory transfer_memory; /* the host memory those transfers used */
	double generate_ms; /* making generated inputs on the device (kernel_work.generate); 0 none */
	double kernel_ms;
	bool kernel_device_clock; /* kernel_ms from the device's own clock (OpenCL event profiling), else the host's */
	double compile_ms;  /* building the program for this run; 0 when it came from a cache, NAN: no programs */
	int cached;         /* 1: the program came from the backend's cache, 0: built for this run, -1: no programs */
};

struct backend_ops {
	const char *name;        /* "native", "opencl": the name jobs and answers use */
	const char *serves_what; /* the devices it serves, for messages: "CPUs" */
	int rank;                /* among the backends that serve a device, the lowest rank is its default */
	/* Whether the backend can run jobs on dev (as detection describes it). */
	bool (*serves)(const struct device *dev);
	/*
	 * May be NULL. Process-wide preparation from the configuration, before any worker starts and before other
	 * threads exist (environment variables, libraries loaded once).
	 */
	void (*prepare)(const struct config *cfg);
	/*
	 * May be NULL. Whether dev can take a run of this kernel and shape at all (its largest allocation, its
	 * memory): ACCELD_OK, or an error with its reason and a detail. Called under the executor's lock: quick, no
	 * I/O.
	 */
	enum acceld_err (*admit)(const struct device *dev, enum kernel_id k, const struct kernel_shape *s,
				 enum reason *reason, char *detail, size_t detailsz);
	/*
	 * May be NULL. Told of each device the backend serves, in device order, before any worker starts (so before
	 * any open): a backend whose runtime serves several devices at once learns all of them first.
	 */
	void (*attach)(const struct device *dev);
	/*
	 * May be NULL. What the backend knows of dev, for the device's document (GET /devices) under the backend's
	 * name: a new object, or NULL when it has nothing to say of dev. A backend's own facts live here, not in
	 * struct device: a new backend is one file and one line in backend_builtin.
	 */
	json_t *(*describe)(const struct device *dev);
	/*
	 * Prepares the backend for dev (threads, context, programs); runs on the device's worker thread when it
	 * starts. *state is the backend's own. Returns ACCELD_OK, or an error with a message in err.
	 */
	enum acceld_err (*open)(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz);
	/*
	 * Runs one kernel (struct kernel_work in kernel.h); ACCELD_EDEVICE (or ACCELD_ENOMEM) when the device failed,
	 * with a message in err. A backend keeps one function per kernel, in a table indexed by enum kernel_id.
	 */
	enum acceld_err (*run)(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
			       size_t errsz);
	void (*close)(void *state);
	/*
	 * true: run may also be called from the thread that submits a tiny job (see EXEC_INLINE_MAX_BYTES in exec.h)
	 * while the device has nothing queued or running, concurrently with later calls from the worker, and such a
	 * call never waits for another one. The native backend qualifies (tiny jobs run serially on the calling
	 * thread); a backend with one queue (OpenCL) does not. Such a backend is also where tiny jobs go rather than
	 * paying another backend's launch.
	 */
	bool inline_tiny;
	/*
	 * true (OpenCL, PJRT): the backend's device has memory of its own and run honours kernel_work's generate (inputs made on the
	 * device), out NULL (the output stays there) and the sample (gathered there). false: the executor hands it
	 * every input and an output on the host and takes the sample from that output itself.
	 */
	bool on_device;
	/*
	 * May be NULL (1.0). The fraction of dev's spec peak (FP32 for compute-bound kernels, memory bandwidth for the
	 * others) that this backend reaches on a healthy device of its kind, measured, with where it was measured in
	 * *source: what a health check expects of the device through this backend.
	 */
	double (*reference)(const struct device *dev, enum kernel_id k, const char **source);
	/* May be NULL (every kernel). Whether the backend has a function that runs kernel k. */
	bool (*runs)(enum kernel_id k);
	/*
	 * May be NULL. Adds the libraries the backend loads at run time to out, {name: version} ("openblas": "0.3.21";
	 * "unknown" when it could not be told): GET /version's libraries.
	 */
	void (*libraries)(json_t *out);
	/*
	 * May be NULL (describe stands). As describe, after loading what the backend runs on (a plugin), so that what
	 * loading it said is known too: for `acceld report -v`, in a command's own process; the service never calls it.
	 */
	json_t *(*inspect)(const struct device *dev);
	/*
	 * May be NULL (nothing learnt). What the backend learnt in this process that another one should know (what
	 * loading a plugin said): when it changed since *since, writes it to buf (at most bufsz bytes), sets *since
	 * and returns its length; 0 otherwise. learn takes such bytes (from the same binary) into this process's
	 * records. A worker (worker_proxy.c) sends its facts with each answer; the daemon learns them.
	 */
	size_t (*facts)(uint64_t *since, void *buf, size_t bufsz);
	void (*learn)(const void *buf, size_t len);
};

/* One buffer of a kernel_work: exactly one of in and out is set (the address of its pointer in the work). */
struct backend_buffer {
	const float **in;
	float **out;
	size_t bytes;
};

#define BACKEND_WORK_BUFFERS_MAX (KERNEL_MAX_INPUTS + 2) /* the inputs, the output, its sample */

/*
 * Every buffer a run of w's kernel and sizes may have, in a fixed order, whether its pointer is set or NULL (an
 * input left out): the one list of a work item's buffers, which the worker proxy places in shared memory. Returns
 * how many (at most BACKEND_WORK_BUFFERS_MAX).
 */
size_t backend_work_buffers(struct kernel_work *w, struct backend_buffer *out);

/* Whether ops runs kernel k (its runs, or every kernel when it has none). */
bool backend_runs(const struct backend_ops *ops, enum kernel_id k);

/* The fraction of dev's spec peak that ops reaches for kernel k on a healthy device (1.0 when it says none). */
double backend_reference(const struct backend_ops *ops, const struct device *dev, enum kernel_id k,
			 const char **source);

extern const struct backend_ops backend_native; /* exec_cpu.c */
extern const struct backend_ops backend_opencl; /* exec_opencl.c */
extern const struct backend_ops backend_pjrt;   /* exec_pjrt.c: what a worker process runs */
extern const struct backend_ops backend_pjrt_proxy; /* worker_proxy.c: "pjrt" in the daemon, in a worker process */
extern const struct backend_ops backend_opencl_proxy; /* worker_proxy.c: "opencl", in a worker but on PoCL's CPU */

/* The built-in backends, NULL-terminated: the only list of them. */
extern const struct backend_ops *const backend_builtin[];

/* The backend of list (NULL-terminated) called name; NULL when none is. */
const struct backend_ops *backend_find(const struct backend_ops *const *list, const char *name);

/* The default backend of dev among list: the lowest rank of those that serve it; NULL when none does. */
const struct backend_ops *backend_default(const struct backend_ops *const *list, const struct device *dev);

/* "native serves CPUs; opencl serves devices with an OpenCL view": what each backend of list runs on. */
void backend_describe(const struct backend_ops *const *list, char *out, size_t outsz);

/* "native, opencl": the names of list, for messages. */
void backend_names(const struct backend_ops *const *list, char *out, size_t outsz);

/*
 * Adds to a device's document what the backends of list say of it: "backends", the names of those that serve it (a
 * job's `backend` takes one), the default first, and each one's describe under its name. detect_describe_fn-shaped
 * for the registry (ctx: the list; NULL: backend_builtin).
 */
void backend_describe_device(void *list, const struct device *dev, json_t *doc);

/* Whether a backend of list serves dev (detect_executable_fn-shaped; ctx: the list, NULL: backend_builtin). */
bool backend_serves_any(void *list, const struct device *dev);

/* Adds what every backend of list (NULL: backend_builtin) loads at run time to out, {name: version}. */
void backend_libraries(const struct backend_ops *const *list, json_t *out);

/* Calls every built-in backend's prepare with cfg; once per process, before other threads start. */
void backend_prepare_all(const struct config *cfg);

#endif
