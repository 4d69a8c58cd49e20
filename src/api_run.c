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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"
#include "app.h"
#include "clock.h"
#include "config.h"
#include "exec.h"
#include "log.h"
#include "store.h"

#define MAX_SIZE (1ull << 40) /* n, m, k beyond this are refused before any arithmetic */
#define PAGE_DEFAULT 20
#define PAGE_MAX 100

static const char *const run_fields[] = {"kernel", "device", "prefer", "fallback", "backend", "alpha", "beta",
					 "s", "n", "m", "k", "inputs", "generate", "return", "verify", "wait",
					 "timeout_ms", NULL};

/* A 400 naming the JSON path; returns false so callers can `return bad(...)`. */
static bool bad(struct http_resp *resp, enum reason reason, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool bad(struct http_resp *resp, enum reason reason, const char *path, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	json_t *doc;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	doc = http_resp_problem(resp, reason, "%s: %s", path, detail);
	json_object_set_new(doc, "path", json_string(path));
	return false;
}

static bool is_nan_text(const char *s)
{
	static const char *const names[] = {"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity",
					    "+infinity"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i]) == 0)
			return true;
	return false;
}

/* A float32 value: a JSON number within float32's range; NaN and Infinity are refused however they are written. */
static bool get_float(json_t *v, const char *path, float *out, struct http_resp *resp)
{
	double d;

	if (json_is_string(v)) {
		if (is_nan_text(json_string_value(v)))
			return bad(resp, REASON_NOT_A_NUMBER, path, "NaN and Infinity are not accepted; give a finite number");
		return bad(resp, REASON_INVALID_TYPE, path, "expected a number, got a string");
	}
	if (!json_is_number(v))
		return bad(resp, REASON_INVALID_TYPE, path, "expected a number");
	d = json_number_value(v);
	if (!isfinite(d) || fabs(d) > FLT_MAX)
		return bad(resp, REASON_OUT_OF_RANGE, path, "%g is outside the float32 range (|x| <= %g)", d, (double)FLT_MAX);
	*out = (float)d;
	return true;
}

static bool get_size(json_t *v, const char *path, uint64_t *out, struct http_resp *resp)
{
	json_int_t i;

	if (!json_is_integer(v))
		return bad(resp, REASON_INVALID_TYPE, path, "expected an integer");
	i = json_integer_value(v);
	if (i < 1 || (uint64_t)i > MAX_SIZE)
		return bad(resp, REASON_OUT_OF_RANGE, path, "expected an integer from 1 to %llu", (unsigned long long)MAX_SIZE);
	*out = (uint64_t)i;
	return true;
}

static bool get_bool(json_t *v, const char *path, bool *out, struct http_resp *resp)
{
	if (!json_is_boolean(v))
		return bad(resp, REASON_INVALID_TYPE, path, "expected true or false");
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
		return bad(resp, REASON_INVALID_TYPE, path, "expected an array of numbers%s", vector ? "" : " or of rows");
	n = json_array_size(v);
	if (n == 0)
		return bad(resp, REASON_LENGTH_MISMATCH, path, "the array is empty");
	if (!vector && json_is_array(json_array_get(v, 0))) {
		size_t ncols = json_array_size(json_array_get(v, 0));
		size_t r;
		json_t *row;

		if (*rows && n != *rows)
			return bad(resp, n > *rows ? REASON_TOO_MANY_ELEMENTS : REASON_LENGTH_MISMATCH, path,
				   "has %zu rows, expected %llu", n, (unsigned long long)*rows);
		if (*cols && ncols != *cols)
			return bad(resp, ncols > *cols ? REASON_TOO_MANY_ELEMENTS : REASON_LENGTH_MISMATCH, path,
				   "rows have %zu columns, expected %llu", ncols, (unsigned long long)*cols);
		if (ncols == 0)
			return bad(resp, REASON_LENGTH_MISMATCH, path, "the rows are empty");
		if ((double)n * (double)ncols > (double)cap)
			return bad(resp, REASON_TOO_MANY_ELEMENTS, path, "more than %llu elements inline",
				   (unsigned long long)cap);
		data = malloc(n * ncols * sizeof(float));
		if (data == NULL)
			return bad(resp, REASON_TOO_MANY_ELEMENTS, path, "cannot hold the inline matrix");
		json_array_foreach(v, r, row) {
			char p[96];

			snprintf(p, sizeof(p), "%s[%zu]", path, r);
			if (!json_is_array(row)) {
				free(data);
				return bad(resp, REASON_INVALID_TYPE, p, "expected a row (an array of numbers)");
			}
			if (json_array_size(row) != ncols) {
				free(data);
				return bad(resp, REASON_ROW_LENGTH_MISMATCH, p, "has %zu elements; row 0 has %zu",
					   json_array_size(row), ncols);
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
		return bad(resp, REASON_MISSING_FIELD, path, "a flat matrix needs its shape: give m, n and k (or rows of numbers)");
	}
	if ((double)*rows * (double)*cols != (double)n)
		return bad(resp, (double)n > (double)*rows * (double)*cols ? REASON_TOO_MANY_ELEMENTS : REASON_LENGTH_MISMATCH, path,
			   "has %zu elements, expected %llu", n, (unsigned long long)(*rows * *cols));
	if (n > cap)
		return bad(resp, REASON_TOO_MANY_ELEMENTS, path, "more than %llu elements inline", (unsigned long long)cap);
	data = malloc(n * sizeof(float));
	if (data == NULL)
		return bad(resp, REASON_TOO_MANY_ELEMENTS, path, "cannot hold the inline array");
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
	const char *const *names = exec_kernel_inputs(req->kernel);
	const char *key;
	json_t *v;
	char path[64];

	if (!json_is_object(inputs))
		return bad(resp, REASON_INVALID_TYPE, "inputs", "expected an object");
	json_object_foreach(inputs, key, v) {
		bool known = false;

		for (size_t i = 0; names[i]; i++)
			known = known || strcmp(names[i], key) == 0;
		if (!known) {
			snprintf(path, sizeof(path), "inputs.%.40s", key);
			return bad(resp, REASON_UNKNOWN_FIELD, path, "%s takes inputs %s%s%s%s%s", exec_kernel_name(req->kernel),
				   names[0], names[1] ? ", " : "", names[1] ? names[1] : "", names[1] && names[2] ? ", " : "",
				   names[1] && names[2] ? names[2] : "");
		}
	}
	for (size_t i = 0; names[i]; i++) {
		v = json_object_get(inputs, names[i]);
		snprintf(path, sizeof(path), "inputs.%s", names[i]);
		if (v == NULL) {
			if (req->kernel == EXEC_SGEMM && i == 2)
				continue; /* C defaults to zeros */
			return bad(resp, REASON_MISSING_FIELD, path, "the input is missing");
		}
		switch (req->kernel) {
		case EXEC_SAXPY:
		case EXEC_TRIAD:
		case EXEC_DOT: {
			uint64_t one = 0;

			if (!parse_matrix(v, path, &one, &req->n, true, cap, &req->inputs[i], resp))
				return false;
			break;
		}
		case EXEC_SGEMM: {
			uint64_t *r = i == 0 ? &req->m : i == 1 ? &req->k : &req->m;
			uint64_t *c = i == 0 ? &req->k : &req->n;

			if (!parse_matrix(v, path, r, c, false, cap, &req->inputs[i], resp))
				return false;
			break;
		}
		case EXEC_SOFTMAX:
		case EXEC_KERNEL_COUNT:
			if (!parse_matrix(v, path, &req->m, &req->n, false, cap, &req->inputs[i], resp))
				return false;
			break;
		}
	}
	req->has_inputs = true;
	return true;
}

/* Parses a POST /run body into req and the answer options; false when resp holds the 400. */
static bool parse_run(json_t *body, const struct config *cfg, struct exec_request *req, bool *wait,
		      struct http_resp *resp)
{
	const char *key;
	json_t *v;
	json_t *inputs;
	json_t *generate;

	*wait = true;
	if (!json_is_object(body))
		return bad(resp, REASON_INVALID_TYPE, "$", "the body must be a JSON object");
	json_object_foreach(body, key, v) {
		bool known = false;

		for (size_t i = 0; run_fields[i]; i++)
			known = known || strcmp(run_fields[i], key) == 0;
		if (!known)
			return bad(resp, REASON_UNKNOWN_FIELD, key, "unknown field; accepted: kernel, device, prefer, fallback, "
				   "backend, alpha, beta, s, n, m, k, inputs, generate, return, verify, wait, timeout_ms");
	}
	v = json_object_get(body, "kernel");
	if (v == NULL)
		return bad(resp, REASON_MISSING_FIELD, "kernel", "name a kernel: saxpy, triad, dot, sgemm or softmax");
	if (!json_is_string(v) || exec_kernel_parse(json_string_value(v), &req->kernel) != 0)
		return bad(resp, REASON_INVALID_VALUE, "kernel", "expected one of saxpy, triad, dot, sgemm, softmax");
	/* fields that mean nothing for this kernel are refused rather than ignored */
	{
		static const struct {
			const char *field;
			unsigned kernels; /* bit per enum exec_kernel */
		} applies[] = {
			{"alpha", 1u << EXEC_SAXPY | 1u << EXEC_SGEMM},
			{"beta", 1u << EXEC_SGEMM},
			{"s", 1u << EXEC_TRIAD},
			{"m", 1u << EXEC_SGEMM | 1u << EXEC_SOFTMAX},
			{"k", 1u << EXEC_SGEMM},
		};

		for (size_t i = 0; i < sizeof(applies) / sizeof(applies[0]); i++)
			if (json_object_get(body, applies[i].field) && !(applies[i].kernels & (1u << req->kernel)))
				return bad(resp, REASON_NOT_APPLICABLE, applies[i].field, "%s takes no '%s'",
					   exec_kernel_name(req->kernel), applies[i].field);
	}
	v = json_object_get(body, "device");
	if (v != NULL) {
		if (!json_is_string(v) || strlen(json_string_value(v)) == 0 ||
		    strlen(json_string_value(v)) >= sizeof(req->device))
			return bad(resp, REASON_INVALID_VALUE, "device", "expected a device id such as cpu:0 or gpu:1");
		snprintf(req->device, sizeof(req->device), "%s", json_string_value(v));
		if (json_object_get(body, "prefer"))
			return bad(resp, REASON_CONFLICTING_FIELDS, "prefer", "give either device or prefer, not both");
	}
	req->prefer = cfg->prefer;
	v = json_object_get(body, "prefer");
	if (v != NULL) {
		static const char *const names[] = {"auto", "cpu", "gpu", "tpu"};
		int found = -1;

		for (int i = 0; i < 4 && json_is_string(v); i++)
			if (strcmp(json_string_value(v), names[i]) == 0)
				found = i;
		if (found < 0)
			return bad(resp, REASON_INVALID_VALUE, "prefer", "expected one of auto, cpu, gpu, tpu");
		req->prefer = found;
	}
	v = json_object_get(body, "fallback");
	if (v != NULL) {
		bool b = false;

		if (!get_bool(v, "fallback", &b, resp))
			return false;
		req->fallback = b;
	}
	v = json_object_get(body, "backend");
	if (v != NULL) {
		if (json_is_string(v) && strcmp(json_string_value(v), "native") == 0)
			req->backend = EXEC_BACKEND_NATIVE;
		else if (json_is_string(v) && strcmp(json_string_value(v), "opencl") == 0)
			req->backend = EXEC_BACKEND_OPENCL;
		else
			return bad(resp, REASON_INVALID_VALUE, "backend", "expected native or opencl");
	}
	if ((v = json_object_get(body, "alpha")) != NULL && !get_float(v, "alpha", &req->alpha, resp))
		return false;
	if ((v = json_object_get(body, "beta")) != NULL && !get_float(v, "beta", &req->beta, resp))
		return false;
	if ((v = json_object_get(body, "s")) != NULL && !get_float(v, "s", &req->s, resp))
		return false;
	if ((v = json_object_get(body, "n")) != NULL && !get_size(v, "n", &req->n, resp))
		return false;
	if ((v = json_object_get(body, "m")) != NULL && !get_size(v, "m", &req->m, resp))
		return false;
	if ((v = json_object_get(body, "k")) != NULL && !get_size(v, "k", &req->k, resp))
		return false;
	if ((v = json_object_get(body, "verify")) != NULL && !get_bool(v, "verify", &req->verify, resp))
		return false;
	if ((v = json_object_get(body, "wait")) != NULL && !get_bool(v, "wait", wait, resp))
		return false;
	v = json_object_get(body, "return");
	if (v != NULL) {
		if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0)
			req->full = true;
		else if (!(json_is_string(v) && strcmp(json_string_value(v), "summary") == 0))
			return bad(resp, REASON_INVALID_VALUE, "return", "expected summary or full");
	}
	v = json_object_get(body, "timeout_ms");
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    (uint64_t)json_integer_value(v) > cfg->exec_max_timeout_ms)
			return bad(resp, REASON_OUT_OF_RANGE, "timeout_ms", "expected an integer from 1 to %llu (ACCELD_EXEC_MAX_TIMEOUT)",
				   (unsigned long long)cfg->exec_max_timeout_ms);
		req->timeout_ms = (uint64_t)json_integer_value(v);
	}
	inputs = json_object_get(body, "inputs");
	generate = json_object_get(body, "generate");
	if (inputs && generate)
		return bad(resp, REASON_CONFLICTING_FIELDS, "generate", "give either inputs or generate, not both");
	if (generate != NULL) {
		json_t *seed;

		if (!json_is_object(generate))
			return bad(resp, REASON_INVALID_TYPE, "generate", "expected an object such as {\"seed\": 1}");
		json_object_foreach(generate, key, v)
			if (strcmp(key, "seed") != 0)
				return bad(resp, REASON_UNKNOWN_FIELD, "generate", "unknown field '%.40s'; accepted: seed", key);
		seed = json_object_get(generate, "seed");
		if (seed != NULL) {
			if (!json_is_integer(seed) || json_integer_value(seed) < 0)
				return bad(resp, REASON_INVALID_VALUE, "generate.seed", "expected a non-negative integer");
			req->seed = (uint64_t)json_integer_value(seed);
		}
	}
	if (inputs != NULL)
		return parse_inputs(inputs, req, cfg->exec_max_elements, resp);
	/* generated inputs: the sizes must be given */
	if (req->n == 0)
		return bad(resp, REASON_MISSING_FIELD, "n", "give n (or inline inputs)");
	if ((req->kernel == EXEC_SGEMM || req->kernel == EXEC_SOFTMAX) && req->m == 0)
		return bad(resp, REASON_MISSING_FIELD, "m", "%s needs m", exec_kernel_name(req->kernel));
	if (req->kernel == EXEC_SGEMM && req->k == 0)
		return bad(resp, REASON_MISSING_FIELD, "k", "sgemm needs k");
	return true;
}

/* The answer for a final job: 200 with the job, or a problem with the job attached. */
static void answer_job(struct exec_job *job, struct http_resp *resp)
{
	json_t *doc = exec_job_json(job);
	char detail[640];
	enum acceld_err err;
	json_t *p;

	switch (exec_job_state(job)) {
	case EXEC_SUCCEEDED:
		http_resp_json(resp, 200, doc);
		return;
	case EXEC_TIMED_OUT:
		exec_job_error(job, detail, sizeof(detail));
		p = http_resp_problem(resp, REASON_TIMED_OUT, "job %s %s", exec_job_id(job), detail);
		break;
	case EXEC_CANCELLED:
		err = exec_job_error(job, detail, sizeof(detail));
		p = http_resp_problem(resp, err == ACCELD_EUNAVAILABLE ? REASON_SHUTTING_DOWN : REASON_CANCELLED,
				      "job %s: %s", exec_job_id(job), detail);
		break;
	default:
		err = exec_job_error(job, detail, sizeof(detail));
		p = http_resp_error(resp, err == ACCELD_OK ? ACCELD_EDEVICE : err, "job %s failed: %s", exec_job_id(job),
				    detail);
		break;
	}
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

/* The executor names its refusal's reason; one the reason table lacks is answered as the error's own reason. */
static void refusal_answer(const struct exec_refusal *why, struct http_resp *resp)
{
	enum reason reason = acceld_err_to_reason(why->err);
	json_t *p;

	if (!reason_parse(why->reason, &reason))
		log_msg(LOGL_WARN, "api", "refusal reason %s is not in the reason table; answering %s", why->reason,
			reason_name(reason));
	p = http_resp_problem(resp, reason, "%s", why->detail);

	if (why->extra)
		json_object_update(p, why->extra);
	if (why->err == ACCELD_EBUSY)
		http_resp_header(resp, "Retry-After", "1");
}

void api_run_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	struct exec_request r;
	struct exec_refusal why;
	struct exec_job *job = NULL;
	struct http_deferred *d = NULL;
	bool wait;
	enum acceld_err rc;

	if (!http_req_check_query(req, resp, allowed))
		return;
	exec_request_init(&r);
	if (!parse_run(req->json, &app->cfg, &r, &wait, resp))
		goto out;
	if (wait)
		d = http_resp_defer(resp);
	rc = exec_submit(app->exec, &r, wait ? on_job_done : NULL, d, &job, &why);
	if (rc != ACCELD_OK) {
		if (d != NULL) {
			struct http_resp now;

			http_resp_init(&now, http_deferred_request_id(d));
			refusal_answer(&why, &now);
			http_deferred_finish(d, &now);
		} else {
			refusal_answer(&why, resp);
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
	if (state != NULL && exec_state_parse(state, &st) != 0) {
		http_resp_bad_param(resp, "state",
				    "state must be one of queued, running, succeeded, failed, timed_out, cancelled");
		return;
	}
	if (size != NULL && (config_parse_u64(size, &page) != 0 || page < 1 || page > PAGE_MAX)) {
		http_resp_bad_param(resp, "page_size", "page_size must be an integer from 1 to %d", PAGE_MAX);
		return;
	}
	if (token != NULL && (config_parse_u64(token, &after) != 0 || after == 0)) {
		http_resp_bad_param(resp, "page_token", "page_token must be the next_page_token of a previous page");
		return;
	}
	doc = exec_list_json(app->exec, state ? (int)st : -1, (unsigned)page, after);
	http_resp_json(resp, 200, doc);
}

static void set_time(json_t *o, const char *key, int64_t ms)
{
	char t[CLOCK_RFC3339_LEN];

	if (ms <= 0)
		return;
	clock_rfc3339(ms, t);
	json_object_set_new(o, key, json_string(t));
}

static void set_num(json_t *o, const char *key, double v)
{
	if (isfinite(v))
		json_object_set_new(o, key, json_real(v));
}

/* A job no longer in memory (an earlier run of acceld, or pushed out of the recent ones) as the history keeps it. */
static json_t *stored_job_json(const struct store_job *j)
{
	/* the store says "timeout" where the API says "timed_out" */
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", j->id, "state",
			      strcmp(j->state, "timeout") == 0 ? "timed_out" : j->state, "kernel", j->kernel, "device",
			      j->device, "source", "history");
	json_t *sizes = json_object();
	json_t *timing = json_object();

	if (j->backend[0])
		json_object_set_new(o, "backend", json_string(j->backend));
	if (j->m)
		json_object_set_new(sizes, "m", json_integer((json_int_t)j->m));
	json_object_set_new(sizes, "n", json_integer((json_int_t)j->n));
	if (j->k)
		json_object_set_new(sizes, "k", json_integer((json_int_t)j->k));
	json_object_set_new(o, "sizes", sizes);
	set_time(o, "created_at", j->submitted_ms);
	set_time(o, "started_at", j->started_ms);
	set_time(o, "finished_at", j->finished_ms);
	set_num(timing, "kernel_ms", j->kernel_ms);
	set_num(timing, "total_ms", j->total_ms);
	json_object_set_new(o, "timing", timing);
	set_num(o, "cost_usd", j->cost_usd);
	if (j->error[0]) {
		static const char *const reasons[][2] = {
			{"interrupted", "INTERRUPTED"}, {"timeout", "TIMED_OUT"}, {"cancelled", "CANCELLED"}};
		const char *reason = "FAILED";

		for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
			if (strcmp(j->state, reasons[i][0]) == 0)
				reason = reasons[i][1];
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "reason", reason, "detail", j->error));
	}
	return o;
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

void api_run_delete(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	enum acceld_err rc;
	struct exec_job *job;

	if (!http_req_check_query(req, resp, allowed))
		return;
	rc = exec_cancel(app->exec, req->params[0]);
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
