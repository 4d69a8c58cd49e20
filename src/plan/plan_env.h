/* plan_env: the environment each process of a multi-host JAX job needs, read from the pod or VM it runs on. */
#ifndef ACCELD_PLAN_ENV_H
#define ACCELD_PLAN_ENV_H

#include <stdbool.h>

#include <jansson.h>

#include "plan/plan_types.h"

/*
 * The environment of one process of a multi-host JAX job: JAX_COORDINATOR_ADDRESS (host:port), JAX_NUM_PROCESSES
 * and JAX_PROCESS_ID, from the first source that is present:
 *
 *   preset  the three JAX_ variables already set (kept as they are)
 *   tpu     a TPU VM or GKE TPU pod: TPU_WORKER_HOSTNAMES (comma list; the coordinator is the first host) and
 *           TPU_WORKER_ID, as JAX's Cloud TPU and GKE TPU cluster detection read them
 *   lws     a LeaderWorkerSet pod: LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX, which LWS sets itself
 *   k8s     a Kubernetes indexed Job, alone or in a JobSet: JOB_COMPLETION_INDEX (set by Kubernetes) is the
 *           process id; the pod's HOSTNAME is <job>-<index>, so the coordinator is <job>-0.<service>, the service
 *           being the caller's headless service or JOBSET_NAME (a JobSet's pods' subdomain defaults to its name,
 *           mapped into JOBSET_NAME from the jobset.sigs.k8s.io/jobset-name label by the pod's env); the process
 *           count is not in a pod's environment and comes from the caller (the plan's host count)
 *
 * What cannot be read stays unknown (empty, or -1) with the reason in note; nothing is invented.
 */
typedef const char *(*plan_getenv_fn)(const char *name, void *ctx);

enum plan_env_source { PLAN_ENV_NONE, PLAN_ENV_PRESET, PLAN_ENV_TPU, PLAN_ENV_LWS, PLAN_ENV_K8S };

struct plan_env_opts {
	unsigned port;              /* 0 = PLAN_JAX_PORT */
	const char *service;        /* k8s: the headless service (pod subdomain); NULL = JOBSET_NAME */
	long processes;             /* k8s: the process count when known (the hosts of the plan); <= 0 unknown */
};

struct plan_env {
	enum plan_env_source source;
	char coordinator[PLAN_TEXT_MAX]; /* "" unknown */
	long num_processes;              /* -1 unknown */
	long process_id;                 /* -1 unknown */
	char note[PLAN_TEXT_MAX];        /* where each value came from, or why it is unknown */
};

/* Reads the environment through get (never NULL; ctx passed along); opts may be NULL. Always fills out. */
void plan_env_jax(plan_getenv_fn get, void *ctx, const struct plan_env_opts *opts, struct plan_env *out);

/* {"source", "env": {NAME: value} for the known values, "unknown": [NAME...], "note"} as a new JSON object. */
json_t *plan_env_json(const struct plan_env *env);

const char *plan_env_source_name(enum plan_env_source s);

/* Whether env knows all three: the coordinator, the process count and this process's id (what `eval` of the
 * export lines needs to join a multi-host job). */
bool plan_env_known(const struct plan_env *env);

#endif
