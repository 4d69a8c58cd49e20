/*
 * api_run: POST /run, GET /run, GET /run/{id}, DELETE /run/{id}.
 *
 * POST parses and checks the request (every field, every inline number, with the JSON path of what is wrong), hands
 * it to the executor and answers: 202 with Location when wait is false, otherwise later, through a deferred answer
 * that the executor completes, so no HTTP thread waits for a queue or a long kernel. A tiny job on an idle device
 * runs inline, on this thread, and completes the deferred answer before the handler returns, so the connection is
 * answered at once instead of being suspended and resumed (see EXEC_INLINE_MAX_BYTES). A job whose optimistic
 * estimate already exceeds its timeout is refused up front with 422 WOULD_TIME_OUT (nothing was waited for, so 504
 * would mislead); one that overruns is answered 504 TIMED_OUT.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "app.h"
#include "core/clock.h"
#include "core/config.h"
#include "detect/detect.h"
#include "exec/exec.h"
#include "exec/jobdoc.h"
#include "exec/kernel.h"
#include "select/place.h"
#include "select/select.h"
#include "store/store.h"

#define MAX_SIZE (1ull << 40) /* n, m, k beyond this are refused before any arithmetic */
#define PAGE_DEFAULT 20
#define PAGE_MAX 100

static const char *const run_fields[] = {"kernel", "device", "prefer", "policy", "allow_tpu", "min_memory_bytes",
					 "fallback", "backend", "alpha", "beta", "s", "n", "m", "k", "precision",
					 "inputs", "generate", "return", "verify", "wait", "timeout_ms", NULL};

static bool is_nan_text(const char *s)
{
	static const char *const names[] = {"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity",
					    "+infinity"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i]) == 0)
			return true;
	return false;
}

/* A string field that must be one of names (", "-separated): the 400s say which value was sent. */
static bool one_of(json_t *v, const char *path, const char *names, struct http_resp *resp)
{
	if (!json_is_string(v)) {
		http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected a string, one of %s", names);
		return http_resp_accepted(resp, names);
	}
	http_resp_bad_value(resp, path, "'%.64s' is not one of %s", json_string_value(v), names);
	return http_resp_accepted(resp, names);
}

/* A float32 value: a JSON number within float32's range; NaN and Infinity are refused however they are written. */
static bool get_float(json_t *v, const char *path, float *out, struct http_resp *resp)
{
	double d;

	if (json_is_string(v)) {
		if (is_nan_text(json_string_value(v)))
			return http_resp_bad_field(resp, REASON_NOT_A_NUMBER, path, "'%.16s' is not accepted; give "
						   "a finite number", json_string_value(v));
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected a number, got a string");
	}
	if (!json_is_number(v))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected a number");
	d = json_number_value(v);
	if (!isfinite(d) || fabs(d) > FLT_MAX)
		return http_resp_bad_field(resp, REASON_OUT_OF_RANGE, path,
					   "%g is outside the float32 range (|x| <= %g)", d, (double)FLT_MAX);
	*out = (float)d;
	return true;
}

static bool get_size(json_t *v, const char *path, uint64_t *out, struct http_resp *resp)
{
	json_int_t i;

	if (!json_is_integer(v))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected an integer");
	i = json_integer_value(v);
	if (i < 1 || (uint64_t)i > MAX_SIZE)
		return http_resp_bad_field(resp, REASON_OUT_OF_RANGE, path,
					   "%" JSON_INTEGER_FORMAT " is not an integer from 1 to %llu", i,
					   (unsigned long long)MAX_SIZE);
	*out = (uint64_t)i;
	return true;
}

static bool get_bool(json_t *v, const char *path, bool *out, struct http_resp *resp)
{
	if (!json_is_boolean(v))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected true or false");
	*out = json_is_true(v);
	return true;
}

/* Fills dst[0..count) from a JSON array of numbers; path names the array. */
static bool fill_numbers(json_t *arr, const char *path, float *dst, struct http_resp *resp)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v) {
		char p[96];

		snprintf(p, sizeof(p), "%s[%zu]", path, i);
		if (!get_float(v, p, &dst[i], resp))
			return false;
	}
	return true;
}

/*
 * An inline matrix: an array of rows (shape taken from it) or a flat array. *rows and *cols are the expected
 * shape (0 = unknown, to be inferred); on success they hold the shape and *out a new array.
 */
static bool parse_matrix(json_t *v, const char *path, uint64_t *rows, uint64_t *cols, bool vector, uint64_t cap,
			 float **out, struct http_resp *resp)
{
	size_t n;
	float *data = NULL;

	if (!json_is_array(v))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, path, "expected an array of numbers%s",
					   vector ? "" : " or of rows");
	n = json_array_size(v);
	if (n == 0)
		return http_resp_bad_field(resp, REASON_LENGTH_MISMATCH, path, "the array is empty");
	if (!vector && json_is_array(json_array_get(v, 0))) {
		size_t ncols = json_array_size(json_array_get(v, 0));
		size_t r;
		json_t *row;

		if (*rows && n != *rows)
			return http_resp_bad_field(resp, n > *rows ? REASON_TOO_MANY_ELEMENTS : REASON_LENGTH_MISMATCH,
						   path, "has %zu rows, expected %llu", n, (unsigned long long)*rows);
		if (*cols && ncols != *cols)
			return http_resp_bad_field(resp, ncols > *cols ? REASON_TOO_MANY_ELEMENTS
									: REASON_LENGTH_MISMATCH,
						   path, "rows have %zu columns, expected %llu", ncols,
						   (unsigned long long)*cols);
		if (ncols == 0)
			return http_resp_bad_field(resp, REASON_LENGTH_MISMATCH, path, "the rows are empty");
		if ((double)n * (double)ncols > (double)cap)
			return http_resp_bad_field(resp, REASON_TOO_MANY_ELEMENTS, path,
						   "more than %llu elements inline", (unsigned long long)cap);
		data = malloc(n * ncols * sizeof(float));
		if (data == NULL)
			return http_resp_bad_field(resp, REASON_TOO_MANY_ELEMENTS, path,
						   "cannot hold the inline matrix");
		json_array_foreach(v, r, row) {
			char p[96];

			snprintf(p, sizeof(p), "%s[%zu]", path, r);
			if (!json_is_array(row)) {
				free(data);
				return http_resp_bad_field(resp, REASON_INVALID_TYPE, p,
							   "expected a row (an array of numbers)");
			}
			if (json_array_size(row) != ncols) {
				free(data);
				return http_resp_bad_field(resp, REASON_ROW_LENGTH_MISMATCH, p,
							   "has %zu elements; row 0 has %zu", json_array_size(row),
							   ncols);
			}
			if (!fill_numbers(row, p, data + r * ncols, resp)) {
				free(data);
				return false;
			}
		}
		*rows = n;
		*cols = ncols;
		*out = data;
		return true;
	}
	/* flat: the shape must be known (vectors: rows is 1 and cols the length) */
	if (vector) {
		*rows = 1;
		if (*cols == 0)
			*cols = n;
	} else if (*rows == 0 && *cols != 0 && n % *cols == 0) {
		*rows = n / *cols;
	} else if (*rows == 0 || *cols == 0) {
		return http_resp_bad_field(resp, REASON_MISSING_FIELD, path,
					   "a flat matrix needs its shape: give m, n and k (or rows of numbers)");
	}
	if ((double)*rows * (double)*cols != (double)n)
		return http_resp_bad_field(resp, (double)n > (double)*rows * (double)*cols ? REASON_TOO_MANY_ELEMENTS
											 : REASON_LENGTH_MISMATCH,
					   path, "has %zu elements, expected %llu", n,
					   (unsigned long long)(*rows * *cols));
	if (n > cap)
		return http_resp_bad_field(resp, REASON_TOO_MANY_ELEMENTS, path, "more than %llu elements inline",
					   (unsigned long long)cap);
	data = malloc(n * sizeof(float));
	if (data == NULL)
		return http_resp_bad_field(resp, REASON_TOO_MANY_ELEMENTS, path, "cannot hold the inline array");
	if (!fill_numbers(v, path, data, resp)) {
		free(data);
		return false;
	}
	*out = data;
	return true;
}

/* Parses inline inputs into req (sizes inferred and checked against those given). */
static bool parse_inputs(json_t *inputs, struct exec_request *req, uint64_t cap, struct http_resp *resp)
{
	const char *const *names = kernel_inputs(req->kernel);
	struct kernel_shape *sh = &req->shape;
	const char *key;
	json_t *v;
	char path[64];
	char list[32] = "";

	for (size_t i = 0, n = 0; names[i]; i++)
		n += (size_t)snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0, "%s%s", i ? ", " : "",
				      names[i]);
	if (!json_is_object(inputs))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.inputs", "expected an object such as {\"%s\": "
					   "[...]}", names[0]);
	json_object_foreach(inputs, key, v) {
		bool known = false;

		for (size_t i = 0; names[i]; i++)
			known = known || strcmp(names[i], key) == 0;
		if (!known) {
			snprintf(path, sizeof(path), "$.inputs.%.40s", key);
			http_resp_bad_field(resp, REASON_UNKNOWN_FIELD, path, "%s takes inputs %s",
					    kernel_name(req->kernel), list);
			return http_resp_accepted(resp, list);
		}
	}
	for (size_t i = 0; names[i]; i++) {
		const char *dims;
		uint64_t one = 0;
		bool ok;

		v = json_object_get(inputs, names[i]);
		snprintf(path, sizeof(path), "$.inputs.%s", names[i]);
		if (v == NULL) {
			if (kernel_input_optional(req->kernel, (unsigned)i))
				continue; /* an optional input defaults to zeros */
			return http_resp_bad_field(resp, REASON_MISSING_FIELD, path, "the input is missing");
		}
		/* its shape from the kernel's table: a vector of one size, or a matrix of two */
		dims = kernel_input_dims(req->kernel, (unsigned)i);
		if (strlen(dims) == 1)
			ok = parse_matrix(v, path, &one, kernel_size_of(sh, dims[0]), true, cap, &req->inputs[i], resp);
		else
			ok = parse_matrix(v, path, kernel_size_of(sh, dims[0]), kernel_size_of(sh, dims[1]), false, cap,
					  &req->inputs[i], resp);
		if (!ok)
			return false;
	}
	req->has_inputs = true;
	return true;
}

/*
 * The placement fields that selection takes (select_request_set_json): prefer, policy, allow_tpu, min_memory_bytes;
 * the device, when one is named, is already there.
 */
static bool parse_placement(json_t *body, struct select_request *sreq, struct http_resp *resp)
{
	static const char *const fields[] = {"prefer", "policy", "allow_tpu", "min_memory_bytes"};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *v = json_object_get(body, fields[i]);
		const char *expected;
		char err[256];

		if (v == NULL || select_request_set_json(sreq, fields[i], v, &expected, err, sizeof(err)) == ACCELD_OK)
			continue;
		return http_resp_bad_member(resp, fields[i], expected, select_param_values(fields[i]), err);
	}
	return true;
}

/* The pinned device: a string that api_device_check accepts. */
static bool parse_device(struct app *app, json_t *body, struct select_request *sreq, struct http_resp *resp)
{
	json_t *v = json_object_get(body, "device");
	char err[256];

	if (v == NULL)
		return true;
	if (!json_is_string(v))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.device",
					   "expected a string, " DEVICE_ID_SYNTAX);
	if (!api_device_check(app, "$.device", json_string_value(v), API_DEVICE_PRESENT, resp))
		return false;
	if (select_request_set(sreq, "device", json_string_value(v), err, sizeof(err)) != ACCELD_OK)
		return http_resp_bad_field(resp, REASON_INVALID_VALUE, "$.device", "%s", err);
	if (json_object_get(body, "prefer"))
		return http_resp_bad_field(resp, REASON_CONFLICTING_FIELDS, "$.prefer",
					   "give either device or prefer, not both");
	return true;
}

/* generate: {seed}, the inputs drawn from a seed. */
static bool parse_generate(json_t *generate, struct exec_request *req, struct http_resp *resp)
{
	const char *key;
	json_t *v;
	json_t *seed;

	if (!json_is_object(generate))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.generate", "expected an object such as "
					   "{\"seed\": 1}");
	json_object_foreach(generate, key, v) {
		char path[64];

		if (strcmp(key, "seed") == 0)
			continue;
		snprintf(path, sizeof(path), "$.generate.%.40s", key);
		http_resp_bad_field(resp, REASON_UNKNOWN_FIELD, path, "unknown field; accepted: seed");
		return http_resp_accepted(resp, "seed");
	}
	seed = json_object_get(generate, "seed");
	if (seed == NULL)
		return true;
	if (!json_is_integer(seed))
		return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.generate.seed",
					   "expected a non-negative integer");
	if (json_integer_value(seed) < 0)
		return http_resp_bad_field(resp, REASON_INVALID_VALUE, "$.generate.seed",
					   "%" JSON_INTEGER_FORMAT " is not a non-negative integer",
					   json_integer_value(seed));
	req->seed = (uint64_t)json_integer_value(seed);
	return true;
}

/*
 * Parses a POST /run body into req (the job), sreq (where it may go; its device is the pinned one) and the answer
 * options; false when resp holds the 400 (or the 404 of an unknown device).
 */
static bool parse_run(struct app *app, json_t *body, struct exec_request *req, struct select_request *sreq,
		      bool *wait, struct http_resp *resp)
{
	const struct config *cfg = &app->cfg;
	json_t *v;
	json_t *inputs;
	json_t *generate;
	bool fallback;
	char names[128];

	*wait = true;
	v = json_object_get(body, "kernel");
	if (v == NULL) {
		http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.kernel", "name a kernel: one of %s",
				    kernel_names_text());
		return http_resp_accepted(resp, kernel_names_text());
	}
	if (!json_is_string(v) || !kernel_parse(json_string_value(v), &req->kernel))
		return one_of(v, "$.kernel", kernel_names_text(), resp);
	/* fields that mean nothing for this kernel are refused rather than ignored */
	{
		static const struct {
			const char *field;
			unsigned param;
		} applies[] = {
			{"alpha", KERNEL_PARAM_ALPHA}, {"beta", KERNEL_PARAM_BETA}, {"s", KERNEL_PARAM_SCALE},
			{"m", KERNEL_PARAM_M},         {"k", KERNEL_PARAM_K},           {"precision", KERNEL_PARAM_PRECISION},
		};

		for (size_t i = 0; i < sizeof(applies) / sizeof(applies[0]); i++) {
			char path[32];

			if (!json_object_get(body, applies[i].field) || (kernel_params(req->kernel) & applies[i].param))
				continue;
			snprintf(path, sizeof(path), "$.%s", applies[i].field);
			return http_resp_bad_field(resp, REASON_NOT_APPLICABLE, path,
						   "%s takes no '%s' (its sizes: %s)", kernel_name(req->kernel),
						   applies[i].field, kernel_sizes_text(req->kernel));
		}
	}
	if (!parse_device(app, body, sreq, resp) || !parse_placement(body, sreq, resp))
		return false;
	/* by default a job named to a device stays there, one placed by preference may fall back */
	fallback = sreq->device[0] == '\0';
	if ((v = json_object_get(body, "fallback")) != NULL && !get_bool(v, "$.fallback", &fallback, resp))
		return false;
	req->fallback = fallback;
	v = json_object_get(body, "backend");
	if (v != NULL && (!json_is_string(v) || backend_find(backend_builtin, json_string_value(v)) == NULL)) {
		backend_names(backend_builtin, names, sizeof(names));
		return one_of(v, "$.backend", names, resp);
	}
	if (v != NULL)
		snprintf(req->backend, sizeof(req->backend), "%s", json_string_value(v));
	if ((v = json_object_get(body, "alpha")) != NULL && !get_float(v, "$.alpha", &req->alpha, resp))
		return false;
	if ((v = json_object_get(body, "beta")) != NULL && !get_float(v, "$.beta", &req->beta, resp))
		return false;
	if ((v = json_object_get(body, "s")) != NULL && !get_float(v, "$.s", &req->scale, resp))
		return false;
	if ((v = json_object_get(body, "n")) != NULL && !get_size(v, "$.n", &req->shape.n, resp))
		return false;
	if ((v = json_object_get(body, "m")) != NULL && !get_size(v, "$.m", &req->shape.m, resp))
		return false;
	if ((v = json_object_get(body, "k")) != NULL && !get_size(v, "$.k", &req->shape.k, resp))
		return false;
	v = json_object_get(body, "precision");
	if (v != NULL && (!json_is_string(v) || !kernel_precision_parse(json_string_value(v), &req->precision)))
		return one_of(v, "$.precision", KERNEL_PRECISION_NAMES, resp);
	if ((v = json_object_get(body, "verify")) != NULL && !get_bool(v, "$.verify", &req->verify, resp))
		return false;
	if ((v = json_object_get(body, "wait")) != NULL && !get_bool(v, "$.wait", wait, resp))
		return false;
	v = json_object_get(body, "return");
	if (v != NULL) {
		if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0)
			req->full = true;
		else if (!(json_is_string(v) && strcmp(json_string_value(v), "summary") == 0))
			return one_of(v, "$.return", "summary, full", resp);
	}
	v = json_object_get(body, "timeout_ms");
	if (v != NULL) {
		if (!json_is_integer(v))
			return http_resp_bad_field(resp, REASON_INVALID_TYPE, "$.timeout_ms",
						   "expected an integer number of milliseconds");
		if (json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > cfg->exec_max_timeout_ms)
			return http_resp_bad_field(resp, REASON_OUT_OF_RANGE, "$.timeout_ms", "%" JSON_INTEGER_FORMAT
						   " is not an integer from 1 to %llu (ACCELD_EXEC_MAX_TIMEOUT)",
						   json_integer_value(v), (unsigned long long)cfg->exec_max_timeout_ms);
		req->timeout_ms = (uint64_t)json_integer_value(v);
	}
	inputs = json_object_get(body, "inputs");
	generate = json_object_get(body, "generate");
	if (inputs && generate)
		return http_resp_bad_field(resp, REASON_CONFLICTING_FIELDS, "$.generate",
					   "give either inputs or generate, not both");
	if (generate != NULL && !parse_generate(generate, req, resp))
		return false;
	if (inputs != NULL)
		return parse_inputs(inputs, req, cfg->exec_max_elements, resp);
	/* generated inputs: the sizes must be given, each the kernel's own (kernel_sizes_text) */
	if (req->shape.n == 0)
		return http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.n", "%s takes %s (or inline inputs)",
					   kernel_name(req->kernel), kernel_sizes_text(req->kernel));
	if ((kernel_params(req->kernel) & KERNEL_PARAM_M) && req->shape.m == 0)
		return http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.m", "%s takes %s", kernel_name(req->kernel),
					   kernel_sizes_text(req->kernel));
	if ((kernel_params(req->kernel) & KERNEL_PARAM_K) && req->shape.k == 0)
		return http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.k", "%s takes %s", kernel_name(req->kernel),
					   kernel_sizes_text(req->kernel));
	return true;
}

/* The answer for a final job: 200 with the job, or a problem (the job's own reason and status) with the job. */
static void answer_job(struct exec_job *job, struct http_resp *resp)
{
	json_t *doc = exec_job_json(job);
	enum exec_state state = exec_job_state(job);
	enum reason reason;
	char detail[640];
	json_t *p;

	if (state == EXEC_SUCCEEDED) {
		http_resp_json(resp, 200, doc);
		return;
	}
	reason = exec_job_error(job, detail, sizeof(detail));
	p = http_resp_problem(resp, reason, "job %s (%s): %s", exec_job_id(job), exec_state_name(state), detail);
	json_object_set_new(p, "job", doc);
}

static void on_job_done(void *arg, struct exec_job *job)
{
	struct http_deferred *d = arg;
	struct http_resp resp;

	http_resp_init(&resp, http_deferred_request_id(d));
	answer_job(job, &resp);
	http_deferred_finish(d, &resp);
}

/* The problem for a refused job; pinned is the device the request named ("" none), which an UNKNOWN_DEVICE names. */
static void refusal_answer(const struct exec_refusal *why, const char *pinned, struct http_resp *resp)
{
	json_t *p = http_resp_problem(resp, why->reason, "%s", why->detail);

	if (why->extra)
		json_object_update(p, why->extra);
	if (why->reason == REASON_UNKNOWN_DEVICE && pinned[0] != '\0' && json_object_get(p, "device") == NULL)
		json_object_set_new(p, "device", json_string(pinned));
	if (why->err == ACCELD_EBUSY)
		http_resp_header(resp, "Retry-After", "1");
}

struct chooser {
	struct app *app;
	const struct detect_snapshot *snap;
};

static enum acceld_err choose(void *ctx, const struct select_request *sreq, struct select_result *res)
{
	struct chooser *c = ctx;

	return app_select(c->app, c->snap, sreq, res);
}

/* Ranks the devices the job may go to by the selection of /select on the devices detection sees now; fills why on
 * refusal. */
static enum acceld_err rank_devices_now(struct app *app, const struct select_request *sreq,
					struct exec_request *r, struct exec_refusal *why)
{
	struct chooser c = {.app = app, .snap = detect_acquire(app->detect)};
	enum acceld_err rc = place_rank_devices(choose, &c, sreq, r, why);

	detect_release(c.snap);
	return rc;
}

void api_run_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	struct exec_request r;
	struct select_request sreq;
	struct exec_refusal why = {.err = ACCELD_OK};
	struct exec_job *job = NULL;
	struct http_deferred *d = NULL;
	bool wait;
	enum acceld_err rc;

	if (!http_req_check_query_body(req, resp, allowed, run_fields) || !http_req_check_body(req, resp, run_fields))
		return;
	exec_request_init(&r);
	select_request_init(&sreq, &app->cfg);
	if (!parse_run(app, req->json, &r, &sreq, &wait, resp))
		goto out;
	rc = rank_devices_now(app, &sreq, &r, &why);
	if (rc != ACCELD_OK) {
		refusal_answer(&why, sreq.device, resp);
		json_decref(why.extra);
		goto out;
	}
	if (wait)
		d = http_resp_defer(resp);
	rc = exec_submit(app->exec, &r, wait ? on_job_done : NULL, d, &job, &why);
	if (rc != ACCELD_OK) {
		if (d != NULL) {
			struct http_resp now;

			http_resp_init(&now, http_deferred_request_id(d));
			refusal_answer(&why, sreq.device, &now);
			http_deferred_finish(d, &now);
		} else {
			refusal_answer(&why, sreq.device, resp);
		}
		json_decref(why.extra);
		goto out;
	}
	if (!wait) {
		char loc[64];

		snprintf(loc, sizeof(loc), "/run/%s", exec_job_id(job));
		http_resp_json(resp, 202, exec_job_json(job));
		http_resp_header(resp, "Location", loc);
	}
out:
	exec_job_unref(job);
	exec_request_release(&r);
}

void api_run_list(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"state", "page_size", "page_token", NULL};
	const char *state = http_req_query(req, "state");
	const char *size = http_req_query(req, "page_size");
	const char *token = http_req_query(req, "page_token");
	enum exec_state st;
	uint64_t page = PAGE_DEFAULT;
	uint64_t after = 0;
	json_t *doc;

	if (!http_req_check_query(req, resp, allowed))
		return;
	if (state != NULL && !exec_state_parse(state, &st)) {
		http_resp_bad_value(resp, "state", "'%.64s' is not one of %s", state, exec_state_names_text());
		http_resp_accepted(resp, exec_state_names_text());
		return;
	}
	if (size != NULL && (config_parse_u64(size, &page) != 0 || page < 1 || page > PAGE_MAX)) {
		http_resp_bad_value(resp, "page_size", "'%.64s' is not an integer from 1 to %d", size, PAGE_MAX);
		return;
	}
	if (token != NULL && (config_parse_u64(token, &after) != 0 || after == 0)) {
		http_resp_bad_value(resp, "page_token", "'%.64s' is not the next_page_token of a previous page", token);
		return;
	}
	doc = exec_list_json(app->exec, state ? (int)st : -1, (unsigned)page, after);
	http_resp_json(resp, 200, doc);
}

/*
 * A job no longer in memory (an earlier run of acceld, or pushed out of the recent ones) as the history keeps it,
 * its fraction of peak against the peak it was measured against then, whatever the device's peak is now.
 */
static json_t *stored_job_json(const struct store_job *j)
{
	struct jobdoc d;
	json_t *doc;

	jobdoc_init(&d);
	d.id = j->id;
	d.state = j->state;
	if (!kernel_parse(j->kernel, &d.kernel))
		d.kernel = KERNEL_COUNT;
	d.shape = (struct kernel_shape){.m = j->m, .n = j->n, .k = j->k};
	d.device = j->device;
	d.backend = j->backend;
	d.source = "history";
	d.trigger = j->trigger;
	d.check_id = j->check_id;
	d.created_ms = j->submitted_ms;
	d.started_ms = j->started_ms;
	d.finished_ms = j->finished_ms;
	d.queued_ms = j->queued_ms;
	d.transfer_ms = j->transfer_ms;
	d.kernel_ms = j->kernel_ms;
	d.total_ms = j->total_ms;
	d.flops = j->flops;
	d.bytes = j->bytes;
	d.peak_gflops = j->peak_gflops;
	d.peak_gbps = j->peak_gbytes_per_s;
	d.cost_usd = j->cost_usd;
	if (j->error[0] || j->reason[0]) {
		d.error_reason = j->reason[0] ? j->reason : reason_name(REASON_DEVICE_FAILURE);
		d.error_detail = j->error;
	}
	doc = jobdoc_json(&d);
	json_object_set_new(doc, "recorded", json_true());
	return doc;
}

void api_run_get(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	struct exec_job *job;
	struct store_job stored;

	if (!http_req_check_query(req, resp, allowed))
		return;
	job = exec_get(app->exec, req->params[0]);
	if (job == NULL && app->store != NULL && store_job_get(app->store, req->params[0], &stored) == ACCELD_OK) {
		http_resp_json(resp, 200, stored_job_json(&stored));
		return;
	}
	if (job == NULL) {
		http_resp_problem(resp, REASON_JOB_NOT_FOUND, "no job '%.64s' among the recent jobs or in the history",
				  req->params[0]);
		return;
	}
	http_resp_json(resp, 200, exec_job_json(job));
	exec_job_unref(job);
}

/* The answer of a DELETE that cancelled nothing: 404, or 409 naming the job's state. */
static void api_run_delete_refused(struct app *app, struct http_req *req, enum acceld_err rc, struct http_resp *resp)
{
	struct exec_job *job;

	if (rc == ACCELD_ENOTFOUND) {
		http_resp_problem(resp, REASON_JOB_NOT_FOUND, "no job '%.64s' among the recent jobs", req->params[0]);
		return;
	}
	job = exec_get(app->exec, req->params[0]);
	if (rc == ACCELD_ECONFLICT) {
		json_t *p = http_resp_problem(resp, REASON_NOT_CANCELLABLE,
					      "job '%.64s' is %s; only queued jobs can be cancelled", req->params[0],
					      job ? exec_state_name(exec_job_state(job)) : "gone");

		if (job)
			json_object_set_new(p, "job", exec_job_json(job));
		exec_job_unref(job);
		return;
	}
	if (job != NULL)
		http_resp_json(resp, 200, exec_job_json(job));
	else
		http_resp_bytes(resp, 204, NULL, NULL, 0);
	exec_job_unref(job);
}

/* DELETE's answer once the cancellation is recorded: 200 with the cancelled job. */
static void on_cancel_recorded(void *arg, struct exec_job *job)
{
	struct http_deferred *d = arg;
	struct http_resp resp;

	http_resp_init(&resp, http_deferred_request_id(d));
	http_resp_json(&resp, 200, exec_job_json(job));
	http_deferred_finish(d, &resp);
}

void api_run_delete(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	enum acceld_err rc;
	struct http_deferred *d;

	if (!http_req_check_query(req, resp, allowed))
		return;
	/* the answer waits for the cancellation's record; it comes before this returns when the commit is ours */
	d = http_resp_defer(resp);
	rc = exec_cancel(app->exec, req->params[0], on_cancel_recorded, d);
	if (rc == ACCELD_OK)
		return;
	{
		struct http_resp now;

		http_resp_init(&now, http_deferred_request_id(d));
		api_run_delete_refused(app, req, rc, &now);
		http_deferred_finish(d, &now);
	}
}
