/*
 * batch: batch-size arithmetic for a device.
 *
 * base x factor (per device kind, from the configuration), rounded to the nearest power of two (ties up), aligned
 * (TPU: a multiple of 8 per TensorCore; GPU: a multiple of 8), then capped by what fits in memory when the caller
 * gives the model size and the bytes one sample needs:
 *
 *   max_batch = floor((memory x (1 - reserve) - state) / sample_bytes)
 *
 * where state is the model's memory: for inference params x the dtype's bytes (bf16, 2 B/param, by default) or
 * model_bytes; for mixed-precision Adam training 16 B/param (weights, gradients, fp32 master copy and two moments)
 * or, given only model_bytes, model_bytes x 8 (16 B over the 2 B of bf16 weights). Every product and sum is
 * checked for overflow. TPU answers also split the batch per chip and per core and give the host's global batch.
 */
#ifndef ACCELD_BATCH_H
#define ACCELD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/config.h"
#include "core/dtype.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "core/err.h"

enum batch_mode { BATCH_INFER, BATCH_TRAIN };


#define BATCH_MAX_BASE 1048576u             /* 2^20 */
#define BATCH_MAX_BYTES ((uint64_t)INT64_MAX) /* model_bytes, params, sample_bytes */
#define BATCH_MAX_RESERVE_PPM 900000u        /* reserve at most 0.9 */
#define BATCH_DEFAULT_RESERVE_PPM 100000u    /* memory kept back unless asked: 0.1 (plans keep the same) */

struct batch_request {
	char device[DEVICE_ID_MAX]; /* "" = the device /select would pick (the caller resolves it) */
	uint64_t base;             /* 1..BATCH_MAX_BASE, default 1 */
	uint64_t model_bytes;      /* 0 = not given */
	uint64_t params;           /* 0 = not given */
	enum dtype dtype;          /* with params (core/dtype.h); NONE = bf16 */
	uint64_t sample_bytes;     /* 0 = not given */
	enum batch_mode mode;
	unsigned reserve_ppm;      /* memory kept back, in millionths; default BATCH_DEFAULT_RESERVE_PPM (0.1) */
	unsigned factor[3];        /* indexed by enum device_type: cpu, gpu, tpu */
};

struct batch_step {
	const char *name;          /* static: "factor", "round", "align", "memory" */
	uint64_t input;
	uint64_t output;
	char text[384];            /* one sentence with the arithmetic */
};

struct batch_memory {
	bool applied;              /* the cap was computed */
	uint64_t memory_bytes;     /* the device's total memory (per chip for TPUs) */
	unsigned reserve_ppm;
	uint64_t usable_bytes;
	uint64_t state_bytes;
	const char *state_rule;    /* static: how state_bytes was reached */
	uint64_t sample_bytes;
	uint64_t max_batch_size;   /* valid when sample_bytes > 0 */
};

struct batch_result {
	const struct device *device;  /* borrowed */
	uint64_t factor;
	unsigned alignment;
	uint64_t batch_size;
	bool has_max;
	uint64_t max_batch_size;
	struct batch_memory memory;
	struct batch_step steps[4];
	size_t nsteps;
	bool tpu;                  /* the tpu_* fields below are filled */
	unsigned tpu_chips;        /* chips on the host; 0 unknown */
	unsigned tpu_cores_per_chip; /* 0 unknown */
	uint64_t batch_per_chip;
	uint64_t batch_per_core;   /* 0 when cores are unknown */
	uint64_t global_batch_size; /* 0 when chips are unknown */
	char detail[768];          /* why it is impossible (ACCELD_EUNPROCESSABLE), with the arithmetic */
};

/* A request with defaults: base 1, infer, reserve 0.1, the factors from cfg (128/4/1 without one). */
void batch_request_init(struct batch_request *req, const struct config *cfg);

/* The NULL-terminated list of parameter names: device, base, model_bytes, params, dtype, sample_bytes, mode,
 * reserve. */
extern const char *const batch_param_names[];

/*
 * The values a parameter takes when they form a set, as a ", "-separated list ("infer, train"), for a problem's
 * `accepted`; NULL when name is not a parameter or its values form no set (sizes, the device, reserve).
 */
const char *batch_param_values(const char *name);

/* What a parameter takes, for a command line's message: its values, or a phrase where they form no set ("an
 * integer from 1 to 1048576"); NULL when name is not a parameter. */
const char *batch_param_accepted(const char *name);

/*
 * Sets one request field from text. Returns ACCELD_OK, ACCELD_ENOTFOUND for an unknown name, or ACCELD_EINVAL
 * with a message in err that names the parameter, repeats the value and says what is accepted ("mode: 'serve' is
 * not one of infer, train").
 */
enum acceld_err batch_request_set(struct batch_request *req, const char *name, const char *value, char *err,
				  size_t errsz);

/*
 * Checks combinations: model_bytes and params exclude each other, dtype needs params. Returns ACCELD_OK or
 * ACCELD_EINVAL with a message in err and the offending parameter in *param (static).
 */
enum acceld_err batch_request_check(const struct batch_request *req, const char **param, char *err, size_t errsz);

/*
 * Computes the batch for device d (borrowed; out->device points at it). Returns ACCELD_OK, or
 * ACCELD_EUNPROCESSABLE when the model state does not fit or not one sample does, with the arithmetic in
 * out->detail (steps up to the failure stay filled).
 */
enum acceld_err batch_compute(const struct device *d, const struct batch_request *req, struct batch_result *out);

/* Nearest power of two to x (x >= 1), ties up; 0 when the answer would not fit in 64 bits. */
uint64_t batch_round_pow2(uint64_t x);

/* A reserve as a decimal ("0.1", "0", "0.25": one or two digits, then up to 6 decimals) into millionths, at most
 * 10^6. Returns 0, or -1 when malformed. /batch-config's reserve and /plan's read it alike. */
int batch_parse_ppm(const char *text, unsigned *out);

/* floor(bytes x (1 - ppm / 10^6)), exact for every 64-bit value. */
uint64_t batch_usable_bytes(uint64_t bytes, unsigned reserve_ppm);

/* The answer as /batch-config gives it (device, as snap's document shows it, NULL: device_to_json's; steps,
 * batch_size, max_batch_size, memory, tpu). */
json_t *batch_result_to_json(const struct batch_result *res, const struct batch_request *req,
			     const struct detect_snapshot *snap);

/* The steps so far as a new JSON array of {step, input, output, text}. */
json_t *batch_steps_json(const struct batch_result *res);

/* The memory step's figures as a new JSON object (for 422 answers too). */
json_t *batch_memory_json(const struct batch_memory *m);

const char *batch_mode_name(enum batch_mode m);
const char *batch_dtype_name(enum dtype d);

#endif
