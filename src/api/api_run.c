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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/mem.h"
#include "detect/detect.h"
#include "exec/exec.h"
#include "exec/jobdoc.h"
#include "exec/jobparams.h"
#include "exec/kernel.h"
#include "select/place.h"
#include "select/select.h"
#include "store/store.h"

#define PAGE_DEFAULT 20
#define PAGE_MAX 100

/* A refused field's problem: its JSONPath, the reason and detail jobparams gave, and what it accepts. */
static bool refused(const struct jobparam *f, const struct jobparams_refusal *why, struct http_resp *resp)
{
	char path[96];

	snprintf(path, sizeof(path), "$.%s%s", f->name, why->subpath);
	http_resp_bad_field(resp, why->reason, path, "%s", why->detail);
	if (why->accepted[0] != '\0')
		http_resp_accepted(resp, why->accepted);
	return false;
}

/* One inline number: a float32 as the float fields take it. */
static bool get_float(json_t *v, const char *path, float *out, struct http_resp *resp)
{
	struct jobparams_refusal why;

	if (!jobparams_json_float(v, out, &why))
		return http_resp_bad_field(resp, why.reason, path, "%s", why.detail);
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
 * The placement fields that selection takes (select_request_set_json; jobparams' JOBPARAM_PLACEMENT rows); the
 * device, when one is named, is already there.
 */
static bool parse_placement(json_t *body, struct select_request *sreq, struct http_resp *resp)
{
	for (size_t i = 0; i < jobparams_count; i++) {
		const char *name = jobparams_table[i].name;
		json_t *v = json_object_get(body, name);
		const char *expected;
		char err[256];

		if (jobparams_table[i].kind != JOBPARAM_PLACEMENT || v == NULL ||
		    select_request_set_json(sreq, name, v, &expected, err, sizeof(err)) == ACCELD_OK)
			continue;
		return http_resp_bad_member(resp, name, expected, select_param_values(name), err);
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

/*
 * Parses a POST /run body into p (the job and the answer's options) and sreq (where it may go; its device is the
 * pinned one), field by field as jobparams' table lists them; false when resp holds the 400 (or the 404 of an
 * unknown device).
 */
static bool parse_run(struct app *app, json_t *body, struct jobparams *p, struct select_request *sreq,
		      struct http_resp *resp)
{
	struct exec_request *req = &p->req;
	struct jobparams_refusal why;
	json_t *v;
	json_t *inputs;
	json_t *generate;

	p->max_timeout_ms = app->cfg.exec_max_timeout_ms;
	v = json_object_get(body, "kernel");
	if (v == NULL) {
		http_resp_bad_field(resp, REASON_MISSING_FIELD, "$.kernel", "name a kernel: one of %s",
				    kernel_names_text());
		return http_resp_accepted(resp, kernel_names_text());
	}
	if (!jobparams_set_json(p, jobparams_field("kernel"), v, &why))
		return refused(jobparams_field("kernel"), &why, resp);
	/* fields that mean nothing for this kernel are refused rather than ignored */
	for (size_t i = 0; i < jobparams_count; i++) {
		const struct jobparam *f = &jobparams_table[i];
		char path[32];

		if (f->kernel_param == 0 || !json_object_get(body, f->name) ||
		    (kernel_params(req->kernel) & f->kernel_param))
			continue;
		snprintf(path, sizeof(path), "$.%s", f->name);
		return http_resp_bad_field(resp, REASON_NOT_APPLICABLE, path, "%s takes no '%s' (its sizes: %s)",
					   kernel_name(req->kernel), f->name, kernel_sizes_text(req->kernel));
	}
	if (!parse_device(app, body, sreq, resp) || !parse_placement(body, sreq, resp))
		return false;
	for (size_t i = 0; i < jobparams_count; i++) {
		const struct jobparam *f = &jobparams_table[i];

		/* the kernel is set, device and placement are selection's, inputs and generate come last */
		if (f->kind == JOBPARAM_KERNEL || f->kind == JOBPARAM_DEVICE || f->kind == JOBPARAM_PLACEMENT ||
		    f->kind == JOBPARAM_INPUTS || f->kind == JOBPARAM_GENERATE)
			continue;
		v = json_object_get(body, f->name);
		if (v != NULL && !jobparams_set_json(p, f, v, &why))
			return refused(f, &why, resp);
	}
	/* by default a job named to a device stays there, one placed by preference may fall back */
	if (!p->fallback_given)
		req->fallback = sreq->device[0] == '\0';
	inputs = json_object_get(body, "inputs");
	generate = json_object_get(body, "generate");
	if (inputs && generate)
		return http_resp_bad_field(resp, REASON_CONFLICTING_FIELDS, "$.generate",
					   "give either inputs or generate, not both");
	if (generate != NULL && !jobparams_set_json(p, jobparams_field("generate"), generate, &why))
		return refused(jobparams_field("generate"), &why, resp);
	if (inputs != NULL)
		return parse_inputs(inputs, req, app->cfg.exec_max_elements, resp);
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
static void refusal_answer(const struct refusal *why, const char *pinned, struct http_resp *resp)
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
					struct exec_request *r, struct refusal *why)
{
	struct chooser c = {.app = app, .snap = detect_acquire(app->detect)};
	enum acceld_err rc = place_rank_devices(choose, &c, sreq, r, why);

	detect_release(c.snap);
	return rc;
}

void api_run_post(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {NULL};
	struct jobparams p;
	struct exec_request *r = &p.req;
	struct select_request sreq;
	struct refusal why = {.err = ACCELD_OK};
	struct exec_job *job = NULL;
	struct http_deferred *d = NULL;
	bool wait;
	enum acceld_err rc;

	if (!http_req_check_query_body(req, resp, allowed, jobparams_names()) ||
	    !http_req_check_body(req, resp, jobparams_names()))
		return;
	jobparams_init(&p);
	select_request_init(&sreq, &app->cfg);
	if (!parse_run(app, req->json, &p, &sreq, resp))
		goto out;
	wait = p.wait;
	rc = rank_devices_now(app, &sreq, r, &why);
	if (rc != ACCELD_OK) {
		refusal_answer(&why, sreq.device, resp);
		refusal_release(&why);
		goto out;
	}
	if (wait)
		d = http_resp_defer(resp);
	rc = exec_submit(app->exec, r, wait ? on_job_done : NULL, d, &job, &why);
	if (rc != ACCELD_OK) {
		if (d != NULL) {
			struct http_resp now;

			http_resp_init(&now, http_deferred_request_id(d));
			refusal_answer(&why, sreq.device, &now);
			http_deferred_finish(d, &now);
		} else {
			refusal_answer(&why, sreq.device, resp);
		}
		refusal_release(&why);
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
	exec_request_release(r);
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
	d.compile_ms = j->setup_ms;
	d.generate_ms = j->generate_ms;
	d.verify_ms = j->verify_ms;
	d.transfer_bytes = j->transfer_bytes;
	d.upload_ms = j->upload_ms;
	d.upload_bytes = j->upload_bytes;
	d.download_ms = j->download_ms;
	d.download_bytes = j->download_bytes;
	d.transfer_memory = j->transfer_memory;
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

/* A page token of the history: "h<submitted ms>.<id>" of the last job listed. */
static bool history_token(const char *token, int64_t *before_ms, char *id, size_t idsz)
{
	uint64_t ms;
	const char *sep = token[0] == 'h' ? strchr(token, '.') : NULL;
	char digits[24];

	if (sep == NULL || (size_t)(sep - token - 1) >= sizeof(digits) || strlen(sep + 1) >= idsz || sep[1] == '\0')
		return false;
	snprintf(digits, sizeof(digits), "%.*s", (int)(sep - token - 1), token + 1);
	if (config_parse_u64(digits, &ms) != 0 || ms == 0 || ms > INT64_MAX)
		return false;
	*before_ms = (int64_t)ms;
	snprintf(id, idsz, "%s", sep + 1);
	return true;
}

/*
 * Fills what is left of a page of GET /run from the history, newest first, before (before_ms, before_id): the jobs
 * of an earlier run of acceld, or pushed out of the recent ones. A history that cannot be read leaves the page as
 * it is.
 */
static void list_history(struct app *app, const char *state, int64_t before_ms, const char *before_id,
			 unsigned room, json_t *doc)
{
	json_t *arr = json_object_get(doc, "jobs");
	struct store_job *jobs;
	size_t n = 0;

	if (app->store == NULL || room == 0)
		return;
	jobs = xcalloc(room + 1, sizeof(*jobs));
	/* one more than the room says whether another page follows */
	if (store_jobs_recent(app->store, state, before_ms, before_id, jobs, room + 1, &n) == ACCELD_OK) {
		for (size_t i = 0; i < n && i < room; i++)
			json_array_append_new(arr, stored_job_json(&jobs[i]));
		if (n > room) {
			char tok[96];

			snprintf(tok, sizeof(tok), "h%lld.%s", (long long)jobs[room - 1].submitted_ms, jobs[room - 1].id);
			json_object_set_new(doc, "next_page_token", json_string(tok));
		}
	}
	free(jobs);
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
	int64_t before_ms = 0;
	char before_id[64] = "";
	bool from_history = false;
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
	if (token != NULL) {
		from_history = history_token(token, &before_ms, before_id, sizeof(before_id));
		if (!from_history && (config_parse_u64(token, &after) != 0 || after == 0)) {
			http_resp_bad_value(resp, "page_token", "'%.64s' is not the next_page_token of a previous page",
					    token);
			return;
		}
	}
	if (from_history) {
		doc = json_pack("{s:[]}", "jobs");
		list_history(app, state, before_ms, before_id, (unsigned)page, doc);
	} else {
		doc = exec_list_json(app->exec, state ? (int)st : -1, (unsigned)page, after);
		/* the jobs in memory are listed: the page goes on with the history's, before the oldest held */
		if (json_object_get(doc, "next_page_token") == NULL) {
			size_t listed = json_array_size(json_object_get(doc, "jobs"));

			if (!exec_oldest_job(app->exec, &before_ms, before_id, sizeof(before_id)))
				before_ms = 0;
			else if (before_ms <= 0)
				before_ms = 1; /* a held job of unknown time: nothing of the history is newer */
			list_history(app, state, before_ms, before_id, (unsigned)(page - listed), doc);
		}
	}
	http_resp_json(resp, 200, doc);
}


/* 404 JOB_NOT_FOUND naming the job asked for (`job`), as UNKNOWN_DEVICE names its `device`. */
static void job_not_found(struct http_resp *resp, const char *id, const char *where)
{
	json_t *doc = http_resp_problem(resp, REASON_JOB_NOT_FOUND, "no job '%.64s' %s", id, where);

	if (doc != NULL)
		json_object_set_new(doc, "job", json_stringn(id, strnlen(id, 64)));
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
		job_not_found(resp, req->params[0], "among the recent jobs or in the history");
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
		job_not_found(resp, req->params[0], "among the recent jobs");
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
