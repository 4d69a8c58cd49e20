/*
 * select: which device a caller should use, and the environment that makes a framework use exactly that one.
 *
 * A preference picks the kind of device (auto = TPU > GPU > CPU, TPUs only when allowed), constraints exclude
 * devices (memory, a /run backend), and a policy ranks what is left: priority (the preference order, then the
 * registry order), fastest (measured throughput where the caller has some, else the peak figure), cheapest (price
 * per hour) or efficient (throughput per dollar). A kernel hint says which figure counts: a compute-bound kernel
 * (kernel_compute_bound) fp32 FLOP/s, a memory-bound one bandwidth.
 *
 * With a named preference (cpu, gpu, tpu) the policy ranks devices of that kind; when none is eligible the choice
 * falls back to the other kinds in the auto order and says so. With auto the policy ranks every eligible device;
 * priority then means the auto order. A pinned device is checked against the constraints and used as it is.
 */
#ifndef ACCELD_SELECT_H
#define ACCELD_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/config.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "select/envfmt.h"
#include "core/err.h"
#include "exec/kernel.h"

enum select_policy { SELECT_PRIORITY, SELECT_FASTEST, SELECT_CHEAPEST, SELECT_EFFICIENT };

enum select_format { SELECT_FORMAT_JSON, SELECT_FORMAT_ENV };

/* TPU environment: one chip (bounds 1,1,1) or every chip of the host (bounds left to the runtime). */
enum select_tpu_scope { SELECT_TPU_CHIP, SELECT_TPU_HOST };

#define SELECT_MAX_MIN_MEMORY INT64_MAX

struct select_request {
	int prefer;                   /* enum prefer */
	bool allow_tpu;
	enum select_policy policy;
	char device[DEVICE_ID_MAX];   /* pinned device id; "" none */
	uint64_t min_memory_bytes;    /* 0 = no constraint */
	bool executable;              /* needs a /run backend */
	int kernel;                   /* enum kernel_id: the work the device is for; -1 no hint */
	enum select_format format;
	enum select_tpu_scope tpu_scope;
};

/* The kernel whose figures a request's kernel hint (enum kernel_id, -1 none) weighs: without a hint, the one that
 * measures arithmetic (KERNEL_FIGURE_MATRIX). */
enum kernel_id select_kernel(int hint);

/*
 * What the caller knows of a device beyond detection: one measured throughput (gflops for compute-bound kernels,
 * gbytes_per_s for the others), or, with kernel NULL, the price in force (usd_per_hour: the price book's, its
 * overrides and the host's share included), which the cost policies then weigh instead of the built-in one.
 */
struct select_measured {
	const char *device_id;
	const char *kernel;           /* the kernel's name (kernel_name); NULL: an entry of price */
	double gflops;                /* NAN unknown */
	double gbytes_per_s;          /* NAN unknown */
	const char *source;           /* static: "check" (a recent health check, devcheck.h); NULL: finished jobs */
	double usd_per_hour;          /* with kernel NULL: the price in force; NAN unknown */
};

/*
 * Appends to m (room for cap entries) an entry of price for each device of devs whose usd[i] is known; returns how
 * many it added.
 */
size_t select_prices(const struct device *devs, const double *usd, size_t n, struct select_measured *m, size_t cap);

/* What became of one device. */
struct select_candidate {
	const struct device *dev;     /* borrowed from the device array */
	bool eligible;
	const char *excluded_by;      /* static: "allow_tpu", "min_memory_bytes", "executable", "device"; NULL */
	double score;                 /* the policy's figure; NAN when the device has none */
	const char *figure;           /* static: what score measures, e.g. "peak fp32 GFLOP/s" */
	const char *source;           /* static: "check", "measured", "peak", "price"; NULL without a figure */
	unsigned rank;                /* 1 = chosen; 0 when not ranked */
	char why[256];                /* why it was excluded or lost, or why it won */
};

struct select_result {
	const struct device *device;  /* the choice, borrowed from the device array; NULL when none */
	bool fell_back;
	const char *fallback_from;    /* static: the preferred kind ("tpu", "gpu", "cpu") when fell_back */
	char reason[512];             /* plain words: why this device */
	struct select_candidate *candidates; /* one per device, in the array's order; owned */
	size_t ncandidates;
	/*
	 * Every eligible device, best first (indices into candidates; owned): the chosen one, the rest of its kind as
	 * ranked, then, with a named preference, the other kinds in its fallback order, each ranked by the policy. A
	 * job placed by this selection falls back along it. Only the pinned device when one is pinned.
	 */
	size_t *order;
	size_t norder;
	struct envfmt env;            /* variables to export for the choice */
};

/* A request with the service's defaults: prefer and allow_tpu from cfg, policy priority, no constraints. */
void select_request_init(struct select_request *req, const struct config *cfg);

/*
 * Sets one request field from text (a query parameter or a command-line value); name is the parameter's name
 * (prefer, allow_tpu, policy, device, min_memory_bytes, executable, kernel, format, tpu_scope). Returns
 * ACCELD_OK, ACCELD_ENOTFOUND when name is not a field, or ACCELD_EINVAL with a message in err that names the
 * parameter, repeats the value and says what is accepted ("prefer: 'fpga' is not one of auto, cpu, gpu, tpu").
 */
enum acceld_err select_request_set(struct select_request *req, const char *name, const char *value, char *err,
				   size_t errsz);

/*
 * Sets one field from a JSON value (the bodies of POST /select and POST /run): string fields take strings, the
 * booleans booleans, min_memory_bytes a non-negative integer; null leaves the default. Returns ACCELD_OK,
 * ACCELD_ENOTFOUND when name is not a field, or ACCELD_EINVAL with a message in err and, when the JSON type is
 * wrong, *expected naming the type wanted ("a string"; NULL otherwise). The message does not name the field ("'fpga'
 * is not one of auto, cpu, gpu, tpu"): the caller names it by its JSONPath.
 */
enum acceld_err select_request_set_json(struct select_request *req, const char *name, json_t *value,
					const char **expected, char *err, size_t errsz);

/*
 * The values a field takes when they form a set, as a ", "-separated list ("auto, cpu, gpu, tpu"), for messages and
 * a problem's `accepted`; NULL when name is not a field or its values form no set (device, min_memory_bytes).
 */
const char *select_param_values(const char *name);

/* What a field takes, for a command line's message: its values as above, or a phrase where they form no set
 * (DEVICE_ID_SYNTAX); NULL when name is not a field. */
const char *select_param_accepted(const char *name);

/* The NULL-terminated list of field names. */
extern const char *const select_param_names[];

/*
 * Chooses a device among devs[0..n). measured (may be NULL, nmeasured 0) holds measured throughput; it is read
 * during the call only. The result is always filled (candidates and reason even on failure) and must be released
 * with select_result_release. Returns ACCELD_OK, ACCELD_ENOTFOUND when the pinned device does not exist, or
 * ACCELD_ECONFLICT when no device meets the constraints (reason says which constraint excluded what).
 */
enum acceld_err select_choose(const struct device *devs, size_t n, const struct select_request *req,
			      const struct select_measured *measured, size_t nmeasured, struct select_result *out);

void select_result_release(struct select_result *res);

/*
 * The variables that make frameworks use exactly dev, given every device of the host (devs, for the CPU count and
 * vendor ordinals): CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK, TPU_VISIBLE_CHIPS and bounds,
 * JAX_PLATFORMS, OMP_NUM_THREADS, XLA_PYTHON_CLIENT_PREALLOCATE.
 */
void select_env(const struct device *devs, size_t n, const struct device *dev, enum select_tpu_scope scope,
		struct envfmt *env);

/* The answer as /select gives it: device (as snap's document shows it; NULL: device_to_json's), policy, reason,
 * fell_back, fallback_from, candidates, env. */
json_t *select_result_to_json(const struct select_result *res, const struct select_request *req,
			      const struct detect_snapshot *snap);

/* Every candidate as a new JSON array (id, type, eligible, score, rank, excluded_by, why). */
json_t *select_candidates_json(const struct select_result *res);

/* The name of a policy, for answers: "priority". */
const char *select_policy_name(enum select_policy p);

#endif
