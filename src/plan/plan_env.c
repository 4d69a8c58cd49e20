/* plan_env: the environment each process of a multi-host JAX job needs (plan.h, plan_env_jax). */
#include "plan/plan_env.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/names.h"
#include "plan/plan_text.h"

static const char *const source_names[] = {"none", "preset", "tpu", "lws", "k8s"};

const char *plan_env_source_name(enum plan_env_source s)
{
	return names_at(source_names, sizeof(source_names) / sizeof(source_names[0]), s);
}

static const char *env_get(plan_getenv_fn get, void *ctx, const char *name)
{
	const char *v = get(name, ctx);

	return v && v[0] ? v : NULL;
}

/* A decimal from 0 to 10^6 - 1; -1 otherwise. */
static long env_index(const char *v)
{
	long n = 0;
	size_t len = v ? strspn(v, "0123456789") : 0;

	if (len == 0 || len > 6 || v[len] != '\0')
		return -1;
	for (size_t i = 0; i < len; i++)
		n = n * 10 + (v[i] - '0');
	return n;
}

/* A DNS name or IPv4 address: letters, digits, '-', '.', '_', 1 to 253 characters. */
static bool host_valid(const char *h, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = h[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '.' || ch == '_'))
			return false;
	}
	return true;
}

static void env_coordinator(struct plan_env *out, const char *host, size_t len, unsigned port)
{
	plan_put(out->coordinator, sizeof(out->coordinator), "%.*s:%u", (int)len, host, port);
}

static bool env_preset(plan_getenv_fn get, void *ctx, struct plan_env *out)
{
	const char *addr = env_get(get, ctx, "JAX_COORDINATOR_ADDRESS");
	const char *num = env_get(get, ctx, "JAX_NUM_PROCESSES");
	const char *id = env_get(get, ctx, "JAX_PROCESS_ID");
	const char *colon;
	long n, i;

	if (!addr || !num || !id)
		return false;
	colon = strrchr(addr, ':');
	n = env_index(num);
	i = env_index(id);
	if (colon == NULL || !host_valid(addr, (size_t)(colon - addr)) || env_index(colon + 1) <= 0 || n <= 0 ||
	    i < 0 || i >= n) {
		plan_put(out->note, sizeof(out->note), "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID are "
		    "set but malformed; left unknown");
		out->source = PLAN_ENV_PRESET;
		return true;
	}
	out->source = PLAN_ENV_PRESET;
	plan_put(out->coordinator, sizeof(out->coordinator), "%s", addr);
	out->num_processes = n;
	out->process_id = i;
	plan_put(out->note, sizeof(out->note), "the JAX_ variables were already set; kept as they are");
	return true;
}

/* TPU_WORKER_HOSTNAMES a,b,c and TPU_WORKER_ID: JAX's Cloud TPU cluster takes the first host as coordinator. */
static bool env_tpu(plan_getenv_fn get, void *ctx, unsigned port, struct plan_env *out)
{
	const char *hosts = env_get(get, ctx, "TPU_WORKER_HOSTNAMES");
	const char *worker = env_get(get, ctx, "TPU_WORKER_ID");
	const char *slices = env_get(get, ctx, "MEGASCALE_NUM_SLICES");
	const char *p, *first;
	size_t first_len;
	long n = 0, id;

	if (hosts == NULL)
		return false;
	out->source = PLAN_ENV_TPU;
	if (slices && env_index(slices) > 1) {
		plan_put(out->note, sizeof(out->note), "a multislice job (MEGASCALE_NUM_SLICES %.16s): the process count, "
		    "ids and coordinator span slices and are not derived here", slices);
		return true;
	}
	first = hosts;
	first_len = strcspn(hosts, ",");
	for (p = hosts;; p += strcspn(p, ",") + 1) {
		size_t len = strcspn(p, ",");
		size_t hl = len;
		const char *colon = memchr(p, ':', len);

		if (colon)
			hl = (size_t)(colon - p); /* a host:port entry: the host part */
		if (!host_valid(p, hl)) {
			plan_put(out->note, sizeof(out->note), "TPU_WORKER_HOSTNAMES entry %ld is not a host name; left "
			    "unknown", n);
			return true;
		}
		if (n == 0)
			first_len = hl;
		n++;
		if (p[len] == '\0')
			break;
	}
	env_coordinator(out, first, first_len, port);
	out->num_processes = n;
	id = worker ? env_index(worker) : -1;
	if (id >= 0 && id < n) {
		out->process_id = id;
		plan_put(out->note, sizeof(out->note), "TPU worker environment: %ld hosts in TPU_WORKER_HOSTNAMES, the "
		    "first as coordinator; TPU_WORKER_ID %ld", n, id);
	} else {
		plan_put(out->note, sizeof(out->note), "TPU worker environment: %ld hosts; TPU_WORKER_ID %s, so the "
		    "process id is unknown", n, worker ? "is malformed or beyond them" : "is not set");
	}
	return true;
}

/* LeaderWorkerSet: LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX (the leader is index 0). */
static bool env_lws(plan_getenv_fn get, void *ctx, unsigned port, struct plan_env *out)
{
	const char *leader = env_get(get, ctx, "LWS_LEADER_ADDRESS");
	const char *size = env_get(get, ctx, "LWS_GROUP_SIZE");
	const char *index = env_get(get, ctx, "LWS_WORKER_INDEX");
	long n = size ? env_index(size) : -1, i = index ? env_index(index) : -1;

	if (leader == NULL && size == NULL && index == NULL)
		return false;
	out->source = PLAN_ENV_LWS;
	if (leader && host_valid(leader, strlen(leader)))
		env_coordinator(out, leader, strlen(leader), port);
	if (n > 0)
		out->num_processes = n;
	if (i >= 0 && (n <= 0 || i < n))
		out->process_id = i;
	plan_put(out->note, sizeof(out->note), "LeaderWorkerSet: coordinator from LWS_LEADER_ADDRESS%s, count from "
	    "LWS_GROUP_SIZE%s, id from LWS_WORKER_INDEX%s", out->coordinator[0] ? "" : " (missing or malformed)",
	    out->num_processes > 0 ? "" : " (missing or malformed)",
	    out->process_id >= 0 ? "" : " (missing or malformed)");
	return true;
}

/*
 * An indexed Job: JOB_COMPLETION_INDEX is the process id; an indexed Job's pod is named <job>-<index> (HOSTNAME),
 * and with a headless service as its subdomain <job>-0.<service> reaches process 0 -- the address JAX's own
 * Kubernetes cluster detection builds for a Job in a JobSet, whose service is named after the JobSet.
 */
static bool env_k8s(plan_getenv_fn get, void *ctx, const struct plan_env_opts *opts, unsigned port,
		    struct plan_env *out)
{
	const char *index = env_get(get, ctx, "JOB_COMPLETION_INDEX");
	const char *host = env_get(get, ctx, "HOSTNAME");
	const char *jobset = env_get(get, ctx, "JOBSET_NAME");
	const char *job_index = env_get(get, ctx, "JOB_INDEX");
	const char *service = opts && opts->service && opts->service[0] ? opts->service : jobset;
	char suffix[24];
	long i;
	size_t hl, sl;

	if (index == NULL)
		return false;
	out->source = PLAN_ENV_K8S;
	i = env_index(index);
	if (i < 0) {
		plan_put(out->note, sizeof(out->note), "JOB_COMPLETION_INDEX '%.16s' is malformed; left unknown", index);
		return true;
	}
	if (job_index && env_index(job_index) != 0) {
		plan_put(out->note, sizeof(out->note), "a JobSet of several Jobs (JOB_INDEX %.16s): ids and the "
		    "coordinator span the Jobs and are not derived here", job_index);
		return true;
	}
	out->process_id = i;
	if (opts && opts->processes > 0 && i < opts->processes)
		out->num_processes = opts->processes;
	plan_put(suffix, sizeof(suffix), "-%ld", i);
	hl = host ? strlen(host) : 0;
	sl = strlen(suffix);
	if (host && hl > sl && strcmp(host + hl - sl, suffix) == 0 && host_valid(host, hl) && service &&
	    host_valid(service, strlen(service)))
		plan_put(out->coordinator, sizeof(out->coordinator), "%.*s-0.%s:%u", (int)(hl - sl), host, service, port);
	plan_put(out->note, sizeof(out->note), "Kubernetes indexed Job: id from JOB_COMPLETION_INDEX; coordinator %s; "
	    "process count %s", out->coordinator[0] ? (service == jobset ? "<job>-0.JOBSET_NAME" :
						      "<job>-0.<service>")
	    : !service ? "unknown (no headless service: give one, or JOBSET_NAME)"
		       : "unknown (HOSTNAME is not <job>-<index>)",
	    out->num_processes > 0 ? "from the plan" : "unknown (the Job's parallelism is not in the pod)");
	return true;
}

void plan_env_jax(plan_getenv_fn get, void *ctx, const struct plan_env_opts *opts, struct plan_env *out)
{
	unsigned port = opts && opts->port ? opts->port : PLAN_JAX_PORT;

	memset(out, 0, sizeof(*out));
	out->num_processes = -1;
	out->process_id = -1;
	if (env_preset(get, ctx, out) || env_tpu(get, ctx, port, out) || env_lws(get, ctx, port, out) ||
	    env_k8s(get, ctx, opts, port, out))
		return;
	out->source = PLAN_ENV_NONE;
	plan_put(out->note, sizeof(out->note), "no TPU worker, LeaderWorkerSet or Kubernetes indexed Job environment: "
	    "a single process, or set the JAX_ variables by hand");
}

json_t *plan_env_json(const struct plan_env *env)
{
	json_t *o = json_object(), *vars = json_object(), *unknown = json_array();
	char num[32];

	if (env->coordinator[0])
		json_object_set_new(vars, "JAX_COORDINATOR_ADDRESS", json_string(env->coordinator));
	else
		json_array_append_new(unknown, json_string("JAX_COORDINATOR_ADDRESS"));
	if (env->num_processes > 0) {
		plan_put(num, sizeof(num), "%ld", env->num_processes);
		json_object_set_new(vars, "JAX_NUM_PROCESSES", json_string(num));
	} else {
		json_array_append_new(unknown, json_string("JAX_NUM_PROCESSES"));
	}
	if (env->process_id >= 0) {
		plan_put(num, sizeof(num), "%ld", env->process_id);
		json_object_set_new(vars, "JAX_PROCESS_ID", json_string(num));
	} else {
		json_array_append_new(unknown, json_string("JAX_PROCESS_ID"));
	}
	json_object_set_new(o, "source", json_string(plan_env_source_name(env->source)));
	json_object_set_new(o, "env", vars);
	json_object_set_new(o, "unknown", unknown);
	json_object_set_new(o, "note", json_string(env->note));
	return o;
}

bool plan_env_known(const struct plan_env *env)
{
	return env->coordinator[0] != '\0' && env->num_processes > 0 && env->process_id >= 0;
}
