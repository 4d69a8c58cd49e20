/*
 * plan_params: a plan request as GET /plan (the query), POST /plan (a JSON object) and `acceld plan` (flags) take
 * it: the one table of its fields, what each takes and its limit; the model presets; where the devices come from
 * (this host's registry, device ids, or a named shape); a multi-host job's environment; and the answer's document.
 * The arithmetic is plan.c's, the shapes plan_devices.c's.
 *
 * Fields (each with a limit): model (a preset) or params (a count: 7000000000, 7B, 6.7B) or a transformer's shape
 * (layers, hidden, heads, kv_heads, head_dim, ffn, gated_ffn, vocab, tied_embeddings, experts, experts_per_token);
 * dtype, kv_dtype, mode, optimizer, mixed_precision, flash_attention, remat, seq_len, global_batch or
 * per_device_batch, reserve; devices (a shape or ids), hosts (this many hosts like this one), memory_bytes (each
 * device's memory instead of its own); format (json or env), k8s_service and coordinator_port (a multi-host job's
 * coordinator).
 */
#ifndef ACCELD_PLAN_PARAMS_H
#define ACCELD_PLAN_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "detect/device.h"
#include "select/envfmt.h"
#include "plan/plan.h"
#include "plan/plan_devices.h"

#define PLAN_PARAMS_DEVICES_MAX 512   /* bytes of the devices text: a shape, or ids */
#define PLAN_PARAMS_MAX_IDS 64        /* device ids in one request */
#define PLAN_PARAMS_MAX_HOSTS 4096u
#define PLAN_PARAMS_MAX_MEMORY (1ull << 50) /* 1024 TiB a device */
#define PLAN_PARAMS_SERVICE_MAX 64    /* a DNS label: 63 characters */

enum plan_format { PLAN_FORMAT_JSON, PLAN_FORMAT_ENV };

/* Where the devices of a plan come from. */
enum plan_source { PLAN_SOURCE_HOST, PLAN_SOURCE_IDS, PLAN_SOURCE_SHAPE };

struct plan_params {
	struct plan_request req;                  /* the model and settings; req.devices by plan_params_devices */
	char model[32];                           /* a preset's name; "" none */
	char devices[PLAN_PARAMS_DEVICES_MAX];    /* "" this host's; a shape ("H100x8"); ids ("gpu:0,gpu:1") */
	unsigned hosts;                           /* hosts like this one; 0 not given (1) */
	uint64_t memory_bytes;                    /* each device's memory; 0 its own */
	enum plan_format format;
	char k8s_service[PLAN_PARAMS_SERVICE_MAX]; /* a Kubernetes indexed Job's headless service; "" JOBSET_NAME */
	unsigned coordinator_port;                /* 0 = PLAN_JAX_PORT */
	const char *shape_field;                  /* the first of params and the shape's fields given (static); NULL */
};

/* The NULL-terminated list of field names, in the order help and `accepted` list them. */
extern const char *const plan_param_names[];

/*
 * The values a field takes when they form a set, as a ", "-separated list ("infer, train"), for a problem's
 * `accepted`; NULL when name is not a field or its values form no set (counts, sizes, devices).
 */
const char *plan_param_values(const char *name);

/* What a field takes, for a command line's message: its values as above, or a phrase ("an integer from 1 to
 * 4096"); NULL when name is not a field. */
const char *plan_param_accepted(const char *name);

/* Defaults (plan_request_init's), no model, this host's devices, format json. */
void plan_params_init(struct plan_params *p);

/*
 * Sets one field from text (a query parameter, a flag). Returns ACCELD_OK, ACCELD_ENOTFOUND when name is not a
 * field, or ACCELD_EINVAL with a message in err that names the field, repeats the value and says what is accepted
 * ("mode: 'serve' is not one of infer, train").
 */
enum acceld_err plan_params_set(struct plan_params *p, const char *name, const char *value, char *err, size_t errsz);

/*
 * Sets one field from a JSON value (POST /plan): names take strings, switches booleans, counts integers (params
 * also a string such as "70B"), reserve a number; null leaves the default. Returns as plan_params_set, with
 * *expected naming the JSON type wanted when the type is wrong ("an integer"; NULL otherwise); the message does not
 * name the field ("'serve' is not one of infer, train"): the caller names it by its JSONPath.
 */
enum acceld_err plan_params_set_json(struct plan_params *p, const char *name, json_t *value, const char **expected,
				     char *err, size_t errsz);

/* Why no model was given (a message naming model, params and the shape), or NULL when one was: a missing field,
 * which GET /plan answers as MISSING_PARAMETER and POST /plan as MISSING_FIELD, both naming model. */
const char *plan_params_missing(const struct plan_params *p);

/*
 * After the fields: applies the model preset and checks what only the fields together say (a preset with a shape
 * or params, hosts with a shape). Returns ACCELD_OK, or ACCELD_EINVAL with the field in *param (static) and a
 * message in err that does not repeat it.
 */
enum acceld_err plan_params_finish(struct plan_params *p, const char **param, char *err, size_t errsz);

/*
 * The device ids p->devices lists (each as written, valid: plan_params_set checked them) into ids; returns how
 * many, 0 when devices is a shape or empty.
 */
size_t plan_params_ids(const struct plan_params *p, char ids[][DEVICE_ID_MAX], size_t max);

/* Where p's devices come from. */
enum plan_source plan_params_source(const struct plan_params *p);

/*
 * The devices to plan for into out (and in words into origin): a named shape; the devices whose ids p lists (of
 * one kind; TPU chips named by id are planned as these chips of one host); or this host's (plan_devices.h),
 * times p->hosts, each with p->memory_bytes when given. devs[0..n) is the registry, read during the call only.
 * Returns ACCELD_OK; ACCELD_ENOTFOUND when an id is no device here; ACCELD_EINVAL for devices or hosts that do not
 * go together, ACCELD_EUNPROCESSABLE when a device's memory is unknown; each with the field in *param (static) and
 * a message in why.
 */
enum acceld_err plan_params_devices(const struct plan_params *p, const struct device *devs, size_t n,
				    struct plan_devices *out, struct plan_devices_origin *origin, const char **param,
				    char *why, size_t whysz);

/*
 * The environment of this host's process in a job over hosts hosts (plan_env_jax): nothing to set for one host;
 * otherwise from get (the process's environment; ctx passed along), TPU_WORKER_ID falling back to the worker id
 * the registry read from the GCE metadata server, the Kubernetes process count being hosts.
 */
void plan_params_env(const struct plan_params *p, const struct device *devs, size_t n, unsigned hosts,
		     plan_getenv_fn get, void *ctx, struct plan_env *out);

/* The known variables of env as an envfmt (for format=env's export lines). */
void plan_env_to_envfmt(const struct plan_env *env, struct envfmt *out);

/*
 * The answer of GET /plan as a new JSON object: plan_json's document, with model.name (a preset's), devices.source
 * ("host", "ids" or "shape") and devices.text (what was planned for, in words), and env (plan_env_json).
 */
json_t *plan_params_json(const struct plan_params *p, const struct plan_result *res,
			 const struct plan_devices_origin *origin, const struct plan_env *env);

/* A model preset: its name, its shape as its published configuration gives it, and where that is. */
struct plan_preset {
	const char *name;
	struct plan_model model;
	const char *source;
};

/* The preset table and its length. */
const struct plan_preset *plan_presets(size_t *n);

#endif
