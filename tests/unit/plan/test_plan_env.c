/*
 * Unit tests for plan_env.c: a JAX job's environment from TPU workers and Kubernetes.
 */
#include <string.h>

#include "check_main.h"
#include "plan/plan.h"
#include "plan/plan_fixtures.h"

/* A fake environment: NAME=value pairs, NULL-terminated. */
static const char *fake_getenv(const char *name, void *ctx)
{
	const char *const *kv = ctx;

	for (size_t i = 0; kv[i]; i += 2)
		if (strcmp(kv[i], name) == 0)
			return kv[i + 1];
	return NULL;
}

START_TEST(env_tpu_workers)
{
	/* a v5p-32 slice's worker 2 (TPU VM or GKE TPU pod): the first host coordinates, on JAX's port 8476 */
	static const char *env[] = {"TPU_WORKER_HOSTNAMES", "t1v-n-0,t1v-n-1,t1v-n-2,t1v-n-3", "TPU_WORKER_ID",
					  "2", NULL};
	static const char *bad_id[] = {"TPU_WORKER_HOSTNAMES", "10.0.0.2,10.0.0.3", "TPU_WORKER_ID", "7", NULL};
	static const char *multi[] = {"TPU_WORKER_HOSTNAMES", "a,b", "TPU_WORKER_ID", "0",
					    "MEGASCALE_NUM_SLICES", "2", NULL};
	static const char *junk[] = {"TPU_WORKER_HOSTNAMES", "a,,b", "TPU_WORKER_ID", "0", NULL};
	struct plan_env e;
	json_t *doc;

	plan_env_jax(fake_getenv, env, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_TPU);
	ck_assert_str_eq(e.coordinator, "t1v-n-0:8476");
	ck_assert_int_eq(e.num_processes, 4);
	ck_assert_int_eq(e.process_id, 2);
	doc = plan_env_json(&e);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "source")), "tpu");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "JAX_PROCESS_ID")), "2");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "JAX_NUM_PROCESSES")), "4");
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "unknown")), 0);
	json_decref(doc);

	/* a worker id beyond the hosts stays unknown */
	plan_env_jax(fake_getenv, bad_id, &(struct plan_env_opts){.port = 1234}, &e);
	ck_assert_str_eq(e.coordinator, "10.0.0.2:1234");
	ck_assert_int_eq(e.num_processes, 2);
	ck_assert_int_eq(e.process_id, -1);
	doc = plan_env_json(&e);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "unknown"), 0)), "JAX_PROCESS_ID");
	json_decref(doc);

	/* multislice: not derived, not invented */
	plan_env_jax(fake_getenv, multi, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_TPU);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.num_processes, -1);
	ck_assert_msg(strstr(e.note, "multislice") != NULL, "%s", e.note);

	plan_env_jax(fake_getenv, junk, NULL, &e);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.process_id, -1);
}
END_TEST

START_TEST(env_kubernetes)
{
	/* a JobSet "train" with one replicated job "workers" of 4 pods: Kubernetes sets JOB_COMPLETION_INDEX, the pod
	 * is named <job>-<index>, and the manifest maps the jobset.sigs.k8s.io/jobset-name label to JOBSET_NAME */
	static const char *jobset[] = {"JOB_COMPLETION_INDEX", "3", "HOSTNAME", "train-workers-0-3",
					     "JOBSET_NAME", "train", NULL};
	static const char *plain[] = {"JOB_COMPLETION_INDEX", "1", "HOSTNAME", "pi-1", NULL};
	static const char *several[] = {"JOB_COMPLETION_INDEX", "1", "HOSTNAME", "train-workers-1-1",
					      "JOBSET_NAME", "train", "JOB_INDEX", "1", NULL};
	static const char *lws[] = {"LWS_LEADER_ADDRESS", "serve-0.serve.default", "LWS_GROUP_SIZE", "4",
					  "LWS_WORKER_INDEX", "2", NULL};
	static const char *preset[] = {"JAX_COORDINATOR_ADDRESS", "10.1.2.3:9999", "JAX_NUM_PROCESSES", "2",
					     "JAX_PROCESS_ID", "1", "TPU_WORKER_HOSTNAMES", "a,b", NULL};
	static const char *none[] = {"HOME", "/root", NULL};
	struct plan_env e;

	/* the process count is not in the pod: unknown unless the caller gives it */
	plan_env_jax(fake_getenv, jobset, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_K8S);
	ck_assert_str_eq(e.coordinator, "train-workers-0-0.train:8476");
	ck_assert_int_eq(e.process_id, 3);
	ck_assert_int_eq(e.num_processes, -1);
	plan_env_jax(fake_getenv, jobset, &(struct plan_env_opts){.processes = 4}, &e);
	ck_assert_int_eq(e.num_processes, 4);

	/* a plain indexed Job: no service unless the caller names it */
	plan_env_jax(fake_getenv, plain, NULL, &e);
	ck_assert_str_eq(e.coordinator, "");
	ck_assert_int_eq(e.process_id, 1);
	ck_assert_msg(strstr(e.note, "no headless service") != NULL, "%s", e.note);
	plan_env_jax(fake_getenv, plain, &(struct plan_env_opts){.service = "pi-svc", .processes = 2}, &e);
	ck_assert_str_eq(e.coordinator, "pi-0.pi-svc:8476");
	ck_assert_int_eq(e.num_processes, 2);

	/* several Jobs in a JobSet: ids span them; left unknown */
	plan_env_jax(fake_getenv, several, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_K8S);
	ck_assert_int_eq(e.process_id, -1);
	ck_assert_str_eq(e.coordinator, "");

	plan_env_jax(fake_getenv, lws, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_LWS);
	ck_assert_str_eq(e.coordinator, "serve-0.serve.default:8476");
	ck_assert_int_eq(e.num_processes, 4);
	ck_assert_int_eq(e.process_id, 2);

	/* the JAX_ variables already set win over the TPU environment */
	plan_env_jax(fake_getenv, preset, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_PRESET);
	ck_assert_str_eq(e.coordinator, "10.1.2.3:9999");
	ck_assert_int_eq(e.process_id, 1);

	plan_env_jax(fake_getenv, none, NULL, &e);
	ck_assert_int_eq(e.source, PLAN_ENV_NONE);
	ck_assert_int_eq(e.num_processes, -1);
	ck_assert_str_eq(plan_env_source_name(e.source), "none");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_env");
	TCase *tc = tcase_create("plan_env");

	tcase_add_test(tc, env_tpu_workers);
	tcase_add_test(tc, env_kubernetes);
	suite_add_tcase(s, tc);
	return s;
}
