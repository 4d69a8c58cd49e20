/*
 * libFuzzer harness: a plan request as GET /plan's query takes it (name=value&name=value, plan_params_set), the
 * fields together (plan_params_finish), a named shape's devices (plan_params_devices, no registry) and the plan
 * itself (plan_request_check, plan_compute, plan_params_json). A request the checks pass must be planned: fitting or
 * not, never a fault; what fits must fit.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_params p;
	struct plan_devices_origin origin;
	struct plan_result res;
	struct plan_env env = {.source = PLAN_ENV_NONE, .num_processes = 1};
	const char *param;
	char err[512];
	char *text, *kv;
	enum acceld_err rc;
	json_t *doc;

	if (size > 2048)
		return 0;
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	plan_params_init(&p);
	for (kv = text; kv != NULL;) {
		char *amp = strchr(kv, '&');
		char *eq;

		if (amp != NULL)
			*amp = '\0';
		eq = strchr(kv, '=');
		if (eq != NULL) {
			*eq = '\0';
			(void)plan_params_set(&p, kv, eq + 1, err, sizeof(err));
		}
		kv = amp != NULL ? amp + 1 : NULL;
	}
	free(text);
	/* this host has no devices here: only a shape can be planned for */
	if (plan_params_finish(&p, &param, err, sizeof(err)) != ACCELD_OK ||
	    plan_params_source(&p) != PLAN_SOURCE_SHAPE ||
	    plan_params_devices(&p, NULL, 0, &p.req.devices, &origin, &param, err, sizeof(err)) != ACCELD_OK ||
	    plan_request_check(&p.req, &param, err, sizeof(err)) != ACCELD_OK)
		return 0;
	rc = plan_compute(&p.req, &res);
	if (rc != ACCELD_OK && rc != ACCELD_EUNPROCESSABLE)
		abort(); /* a request the checks pass is planned */
	if (res.fits && (!res.has_memory || res.memory.total_bytes > res.memory.usable_bytes))
		abort(); /* what fits fits */
	doc = plan_params_json(&p, &res, &origin, &env);
	if (doc == NULL)
		abort();
	json_decref(doc);
	plan_result_free(&res);
	return 0;
}
