/*
 * devcheck: health checks of devices run as executor jobs, their verdicts, and the figures they feed back. This file
 * is the module: its life cycle, a run's thread, the figures for the rest of acceld and the periodic checks; a
 * check's document, the tests it runs and the judging rules live beside it (devcheck_int.h names the parts).
 *
 * One mutex (c->mu) guards the module: the recent checks, the per-device summaries and every field of a run that a
 * reader may see. A run's thread computes on its own copies and publishes them under the mutex; callbacks (the
 * device view, the history, the change notice) and executor calls are made with it released.
 */
#include "check/devcheck_int.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "exec/backend.h"
#include "core/clock.h"
#include "core/config.h"
#include "exec/exec.h"
#include "exec/kernel.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"
#include "select/select.h"

/* --- settings --- */

void devcheck_settings_from_config(const struct config *cfg, struct devcheck_settings *out)
{
	*out = (struct devcheck_settings){
		.long_ms = cfg->check_long_ms,
		.warn_percent = cfg->check_warn_percent,
		.fail_percent = cfg->check_fail_percent,
		.throttle_percent = cfg->check_throttle_percent,
		.clock_percent = cfg->check_clock_percent,
		.max_age_ms = cfg->check_max_age_ms,
		.interval_ms = cfg->check_interval_ms,
		.max_elements = cfg->exec_max_elements,
		.matrix_budget_ms = 2000,
		.memory_budget_ms = 1600,
		.transfer_budget_ms = 1500,
		.transfer_bytes = cfg->check_transfer_bytes,
		.transfer_percent = cfg->check_transfer_percent,
		.max_reps = 5,
	};
}

void devcheck_request_init(struct devcheck_request *req)
{
	memset(req, 0, sizeof(*req));
	req->level = DEVCHECK_QUICK;
	snprintf(req->trigger, sizeof(req->trigger), "api");
}

void devcheck_words(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;
	int n;
	size_t end;

	va_start(ap, fmt);
	n = vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n < outsz || outsz < 4)
		return;
	/* too long: end at the last whole word that leaves room for "..." */
	end = outsz - 4;
	while (end > 0 && out[end] != ' ')
		end--;
	memcpy(out + end, "...", 4);
}

/* --- the state of a run --- */

static struct devstate *devstate_of(struct devcheck *c, const char *id, bool create)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (strcmp(c->devs[i].s.device, id) == 0)
			return &c->devs[i];
	if (!create || c->ndevs == DEVICES_MAX)
		return NULL;
	memset(&c->devs[c->ndevs], 0, sizeof(c->devs[0]));
	snprintf(c->devs[c->ndevs].s.device, sizeof(c->devs[0].s.device), "%s", id);
	c->devs[c->ndevs].s.gflops = NAN;
	c->devs[c->ndevs].s.gbytes_per_s = NAN;
	c->devs[c->ndevs].s.matrix_ratio = NAN;
	c->devs[c->ndevs].s.memory_ratio = NAN;
	return &c->devs[c->ndevs++];
}

void devcheck_test_init(struct devcheck_test *t, const char *name, const char *kind, const char *unit)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->kind = kind;
	t->unit = unit;
	t->best = NAN;
	t->median = NAN;
	t->expected = NAN;
	t->first = NAN;
	t->last = NAN;
	t->upload = NAN;
	t->download = NAN;
	t->link = NAN;
}

void devcheck_run_ref(struct devcheck_run *run)
{
	atomic_fetch_add(&run->refs, 1);
}

void devcheck_run_unref(struct devcheck_run *run)
{
	if (run == NULL || atomic_fetch_sub(&run->refs, 1) != 1)
		return;
	free(run);
}

const char *devcheck_run_id(const struct devcheck_run *run)
{
	return run->id;
}

const char *devcheck_run_device(const struct devcheck_run *run)
{
	return run->device;
}

enum devcheck_state devcheck_run_state(struct devcheck_run *run)
{
	enum devcheck_state s;

	pthread_mutex_lock(&run->c->mu);
	s = run->state;
	pthread_mutex_unlock(&run->c->mu);
	return s;
}

bool devcheck_run_verdict(struct devcheck_run *run, enum devcheck_verdict *out)
{
	bool has;

	pthread_mutex_lock(&run->c->mu);
	has = devcheck_state_judged(run->state) && run->has_verdict;
	if (has)
		*out = run->verdict;
	pthread_mutex_unlock(&run->c->mu);
	return has;
}

void devcheck_run_wait(struct devcheck_run *run)
{
	struct devcheck *c = run->c;

	pthread_mutex_lock(&c->mu);
	while (!run->ended && run->state != DEVCHECK_INTERRUPTED)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

/* --- the run's thread --- */

/* Records the document (if a history is wired) as it is, or in state when that is not DEVCHECK_QUEUED; call without
 * c->mu. */
static void record_in(struct devcheck_run *run, enum devcheck_state state)
{
	struct devcheck *c = run->c;
	json_t *doc;

	if (c->opts.record == NULL)
		return;
	doc = state == DEVCHECK_QUEUED ? devcheck_run_json(run) : devcheck_run_json_in(run, state);
	c->opts.record(c->opts.record_ctx, doc);
	json_decref(doc);
}

static void record(struct devcheck_run *run)
{
	record_in(run, DEVCHECK_QUEUED);
}

static void changed(struct devcheck *c, const char *device)
{
	if (c->opts.changed != NULL)
		c->opts.changed(c->opts.changed_ctx, device);
}

/* The check's verdict (devcheck_judge), under the mutex: readers may see the run. */
static void judge(struct devcheck_run *run)
{
	pthread_mutex_lock(&run->c->mu);
	devcheck_judge(&run->c->opts.settings, run);
	pthread_mutex_unlock(&run->c->mu);
}

/* The peak that expected figures come from: what detection gave the device before any check's overlay. */
static void expected_basis(struct devcheck_run *run, const struct device *dev, struct device_peak *out)
{
	struct devstate *ds;

	pthread_mutex_lock(&run->c->mu);
	ds = devstate_of(run->c, run->device, false);
	*out = ds != NULL && ds->has_basis ? ds->basis : dev->peak;
	pthread_mutex_unlock(&run->c->mu);
}

/* Updates the device's summary with a run that ends in state at finished_ms; c->mu held. */
static void summarise_device(struct devcheck *c, const struct devcheck_run *run, enum devcheck_state state,
			     int64_t finished_ms)
{
	struct devstate *ds = devstate_of(c, run->device, true);

	if (ds == NULL)
		return;
	if (strcmp(ds->running_id, run->id) == 0)
		ds->running_id[0] = '\0';
	ds->known = true;
	snprintf(ds->s.id, sizeof(ds->s.id), "%s", run->id);
	ds->s.level = run->req.level;
	ds->s.state = state;
	ds->s.has_verdict = devcheck_state_judged(state) && run->has_verdict;
	ds->s.verdict = run->verdict;
	ds->s.finished_ms = finished_ms;
	ds->s.matrix_ratio = devcheck_usable(run->matrix.expected) && run->matrix.wrong == 0
				    ? run->matrix.best / run->matrix.expected
				    : NAN;
	ds->s.memory_ratio = devcheck_usable(run->memory.expected) && run->memory.wrong == 0
				    ? run->memory.best / run->memory.expected
				    : NAN;
	/* figures only from runs the reference confirmed */
	if (run->matrix.wrong == 0 && devcheck_usable(run->matrix.best)) {
		ds->s.gflops = run->matrix.best;
		ds->s.figures_ms = finished_ms;
	}
	if (run->memory.wrong == 0 && devcheck_usable(run->memory.best)) {
		ds->s.gbytes_per_s = run->memory.best;
		ds->s.figures_ms = finished_ms;
	}
	if (ds->s.has_verdict)
		ds->s.finished[run->verdict]++;
}

/* Ends a run: final state, summary, history, the waiter; the thread's last touch of the module. */
static void finish(struct devcheck_run *run, enum devcheck_state state)
{
	struct devcheck *c = run->c;
	bool record_now;
	devcheck_done_fn done;
	void *arg;
	enum devcheck_state final;
	const char *verdict;
	char rule[sizeof(run->rule)];
	int64_t now = clock_real_ms();

	/*
	 * The device's summary and snapshot first, the run's state after: whoever sees the run end (GET
	 * /devices/{id}/checks/{check}, the waiter) then finds it in GET /devices too. A run devcheck_stop interrupted
	 * has its summary already; one it interrupts in between keeps the stop's words.
	 */
	pthread_mutex_lock(&c->mu);
	if (run->state != DEVCHECK_INTERRUPTED)
		summarise_device(c, run, state, now);
	pthread_mutex_unlock(&c->mu);
	changed(c, run->device);
	pthread_mutex_lock(&c->mu);
	if (run->state != DEVCHECK_INTERRUPTED) {
		run->state = state;
		run->finished_ms = now;
	}
	record_now = !run->final_recorded;
	run->final_recorded = true;
	final = run->state;
	verdict = devcheck_state_judged(final) && run->has_verdict ? devcheck_verdict_name(run->verdict) : "";
	snprintf(rule, sizeof(rule), "%s", final == DEVCHECK_SUCCEEDED ? run->rule : run->error);
	pthread_mutex_unlock(&c->mu);
	if (record_now)
		record(run);
	log_fields(strcmp(verdict, "pass") == 0 ? LOGL_INFO : LOGL_WARN, "check", "check finished",
		   (struct log_field[]){LOG_S("id", run->id), LOG_S("device", run->device),
					LOG_S("level", devcheck_level_name(run->req.level)),
					LOG_S("state", devcheck_state_name(final)), LOG_S("verdict", verdict),
					LOG_S("rule", rule)},
		   6);
	pthread_mutex_lock(&c->mu);
	done = run->done;
	arg = run->done_arg;
	run->done = NULL;
	pthread_mutex_unlock(&c->mu);
	if (done != NULL)
		done(arg, run);
	pthread_mutex_lock(&c->mu);
	run->ended = true;
	c->threads--;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	devcheck_run_unref(run); /* the thread's reference */
}

/* A test's expected figure: the spec peak, times what a healthy device reaches through the backend. c->mu held. */
static void expect_one(struct devcheck_test *t, double peak, const char *peak_source, const struct backend_ops *ops,
		       double fraction, const char *why)
{
	t->expected = devcheck_usable(peak) ? peak * fraction : NAN;
	if (why == NULL)
		snprintf(t->expected_source, sizeof(t->expected_source), "%s", peak_source);
	else
		devcheck_words(t->expected_source, sizeof(t->expected_source), "%s; x %.2f, what %s reaches (%s)",
			       peak_source, fraction, ops->name, why);
}

static void expect(struct devcheck_run *run, const struct device *dev, const struct device_peak *basis)
{
	const struct backend_ops *ops = exec_device_backend_ops(run->c->opts.exec, run->device, run->req.backend);
	const char *matrix_why = NULL;
	const char *memory_why = NULL;
	double matrix = backend_reference(ops, dev, MATRIX_KERNEL, &matrix_why);
	double memory = backend_reference(ops, dev, MEMORY_KERNEL, &memory_why);

	pthread_mutex_lock(&run->c->mu);
	expect_one(&run->matrix, basis->fp32_tflops * 1000.0, basis->source, ops, matrix, matrix_why);
	expect_one(&run->memory, basis->memory_gbytes_per_s, basis->source, ops, memory, memory_why);
	pthread_mutex_unlock(&run->c->mu);
}

static void *run_main(void *arg)
{
	struct devcheck_run *run = arg;
	struct devcheck *c = run->c;
	struct device dev;
	struct device_peak basis;
	bool queued;

	/*
	 * The device shows the check before the check shows itself running, and the history has it running before
	 * anyone can see it so: a crash after a client saw "running" finds it there, to mark interrupted.
	 */
	changed(c, run->device);
	pthread_mutex_lock(&c->mu);
	queued = run->state == DEVCHECK_QUEUED;
	if (queued) {
		run->started_ms = clock_real_ms();
		run->started_ns = clock_mono_ns();
	}
	pthread_mutex_unlock(&c->mu);
	record_in(run, queued ? DEVCHECK_RUNNING : DEVCHECK_QUEUED);
	pthread_mutex_lock(&c->mu);
	if (run->state == DEVCHECK_QUEUED)
		run->state = DEVCHECK_RUNNING;
	pthread_mutex_unlock(&c->mu);
	if (!devcheck_run_sample(run, true, &dev)) {
		pthread_mutex_lock(&c->mu);
		run->has_error = true;
		run->error_reason = REASON_UNKNOWN_DEVICE;
		snprintf(run->error, sizeof(run->error), "%s is gone", run->device);
		pthread_mutex_unlock(&c->mu);
		judge(run);
		finish(run, DEVCHECK_FAILED);
		return NULL;
	}
	expected_basis(run, &dev, &basis);
	pthread_mutex_lock(&c->mu);
	DEVICE_SET(run->model, dev.model);
	DEVICE_SET(run->type, device_type_name(dev.type));
	pthread_mutex_unlock(&c->mu);
	expect(run, &dev, &basis);
	devcheck_test_matrix(run, &dev, c->opts.settings.matrix_budget_ms);
	if (!devcheck_run_stopping(run))
		devcheck_test_memory(run, &dev, c->opts.settings.memory_budget_ms);
	if (run->has_transfer && !devcheck_run_stopping(run))
		devcheck_test_transfer(run, &dev, c->opts.settings.transfer_budget_ms);
	if (run->req.level == DEVCHECK_LONG && !devcheck_run_stopping(run))
		devcheck_test_sustained(run, run->sustained_ms);
	devcheck_run_sample(run, true, NULL);
	if (devcheck_run_stopping(run)) {
		finish(run, DEVCHECK_INTERRUPTED);
		return NULL;
	}
	judge(run);
	finish(run, DEVCHECK_SUCCEEDED);
	return NULL;
}

/* --- the module --- */

void devcheck_stop(struct devcheck *c)
{
	struct devcheck_run *interrupted[RECENT_MAX];
	size_t n = 0;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	for (unsigned i = 0; i < c->nrecent; i++) {
		struct devcheck_run *run = c->recent[i];

		if (run->ended || (run->state != DEVCHECK_QUEUED && run->state != DEVCHECK_RUNNING))
			continue;
		run->stop = true;
		run->state = DEVCHECK_INTERRUPTED;
		run->finished_ms = clock_real_ms();
		run->has_error = true;
		run->error_reason = REASON_INTERRUPTED;
		snprintf(run->error, sizeof(run->error), "acceld stopped before the check finished");
		run->final_recorded = true;
		summarise_device(c, run, run->state, run->finished_ms);
		devcheck_run_ref(run);
		interrupted[n++] = run;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < n; i++) {
		log_fields(LOGL_WARN, "check", "check interrupted",
			   (struct log_field[]){LOG_S("id", interrupted[i]->id), LOG_S("device", interrupted[i]->device)},
			   2);
		record(interrupted[i]);
		devcheck_run_unref(interrupted[i]);
	}
}

static void *scheduler_main(void *arg);

enum acceld_err devcheck_new(const struct devcheck_opts *opts, struct devcheck **out)
{
	struct devcheck *c;

	*out = NULL;
	if (opts->exec == NULL || opts->device == NULL || (opts->settings.interval_ms > 0 && opts->list == NULL))
		return ACCELD_EINVAL;
	c = xcalloc(1, sizeof(*c));
	c->opts = *opts;
	if (c->opts.settings.max_reps == 0)
		c->opts.settings.max_reps = 5;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (getrandom(&c->salt, sizeof(c->salt), 0) != sizeof(c->salt))
		c->salt = clock_mono_ns();
	if (c->opts.settings.interval_ms > 0) {
		if (pthread_create(&c->scheduler, NULL, scheduler_main, c) == 0)
			c->scheduler_started = true;
		else
			log_msg(LOGL_ERROR, "check", "cannot start the periodic check thread; checks run on request only");
	}
	*out = c;
	return ACCELD_OK;
}

void devcheck_free(struct devcheck *c)
{
	if (c == NULL)
		return;
	devcheck_stop(c);
	if (c->scheduler_started)
		pthread_join(c->scheduler, NULL);
	pthread_mutex_lock(&c->mu);
	while (c->threads > 0)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < c->nrecent; i++)
		devcheck_run_unref(c->recent[i]);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Time-ordered ids: milliseconds, then a mixed sequence number. */
static void make_id(struct devcheck *c, int64_t now_ms, char out[DEVCHECK_ID_MAX])
{
	uint64_t z = c->salt + ++c->seq * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	snprintf(out, DEVCHECK_ID_MAX, "chk-%011llx%04x", (unsigned long long)now_ms & 0xfffffffffffull,
		 (unsigned)(z & 0xffffu));
}

static void recent_add(struct devcheck *c, struct devcheck_run *run)
{
	struct devcheck_run *old = NULL;

	devcheck_run_ref(run);
	if (c->nrecent == RECENT_MAX) {
		/* the oldest that has ended makes room; running ones are never dropped */
		unsigned drop = RECENT_MAX;

		for (unsigned i = 0; i < c->nrecent && drop == RECENT_MAX; i++)
			if (c->recent[i]->ended)
				drop = i;
		if (drop == RECENT_MAX)
			drop = 0;
		old = c->recent[drop];
		memmove(&c->recent[drop], &c->recent[drop + 1], (c->nrecent - drop - 1) * sizeof(c->recent[0]));
		c->nrecent--;
	}
	c->recent[c->nrecent++] = run;
	devcheck_run_unref(old);
}

enum acceld_err devcheck_start(struct devcheck *c, const char *device_id, const struct devcheck_request *req,
			    devcheck_done_fn done, void *arg, struct devcheck_run **out, struct refusal *why)
{
	struct devcheck_run *run = NULL;
	struct devstate *ds;
	struct device dev;
	const struct device *mine;
	pthread_t thread;
	pthread_attr_t attr;
	int rc;

	memset(why, 0, sizeof(*why));
	if (out != NULL)
		*out = NULL;
	if (!c->opts.device(c->opts.device_ctx, device_id, false, &dev)) {
		refusal_set(why, ACCELD_ENOTFOUND, REASON_UNKNOWN_DEVICE, "no device '%s' (see GET /devices)", device_id);
		return why->err;
	}
	mine = exec_device(c->opts.exec, device_id);
	if (mine == NULL) {
		refusal_set(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED,
		       "%s cannot be checked: no backend of acceld runs jobs on it (executable is false)", device_id);
		return why->err;
	}
	if (req->backend[0] != '\0') {
		const struct backend_ops *ops = backend_find(backend_builtin, req->backend);

		if (ops == NULL || !ops->serves(mine)) {
			refusal_set(why, ACCELD_EUNSUPPORTED, REASON_UNSUPPORTED, "the %s backend does not run jobs on %s",
			       req->backend, device_id);
			return why->err;
		}
	}
	run = xcalloc(1, sizeof(*run));
	atomic_init(&run->refs, 1);
	run->c = c;
	run->req = *req;
	run->state = DEVCHECK_QUEUED;
	run->done = done;
	run->done_arg = arg;
	run->sustained_ms = req->duration_ms ? req->duration_ms : c->opts.settings.long_ms;
	snprintf(run->device, sizeof(run->device), "%s", device_id);
	if (req->backend[0] != '\0')
		snprintf(run->backend, sizeof(run->backend), "%s", req->backend);
	else if (exec_device_backend(c->opts.exec, device_id) != NULL)
		snprintf(run->backend, sizeof(run->backend), "%s", exec_device_backend(c->opts.exec, device_id));
	devcheck_test_init(&run->matrix, kernel_name(MATRIX_KERNEL), "matrix", "GFLOP/s");
	devcheck_test_init(&run->memory, kernel_name(MEMORY_KERNEL), "memory", "GB/s");
	devcheck_test_init(&run->sustained, "sustained", "sustained", "GFLOP/s");
	devcheck_test_init(&run->telemetry, "telemetry", "telemetry", NULL);
	devcheck_test_init(&run->transfer, "transfer", "transfer", "GB/s");
	/* a CPU has no link to the host: its check has no transfer test */
	run->has_transfer = mine->type != DEVICE_CPU;
	run->transfer.budget_ms = (double)c->opts.settings.transfer_budget_ms;
	run->matrix.budget_ms = (double)c->opts.settings.matrix_budget_ms;
	run->memory.budget_ms = (double)c->opts.settings.memory_budget_ms;
	run->sustained.budget_ms = (double)run->sustained_ms;
	devcheck_tel_init(&run->tel);
	for (unsigned i = 0; i < BUCKETS; i++)
		run->buckets[i].temp = run->buckets[i].power = run->buckets[i].clock = NAN;

	pthread_mutex_lock(&c->mu);
	if (c->stopping) {
		pthread_mutex_unlock(&c->mu);
		free(run);
		refusal_set(why, ACCELD_EUNAVAILABLE, REASON_SHUTTING_DOWN, "acceld is stopping and starts no checks");
		return why->err;
	}
	ds = devstate_of(c, device_id, true);
	if (ds == NULL) {
		pthread_mutex_unlock(&c->mu);
		free(run);
		refusal_set(why, ACCELD_EBUSY, REASON_BUSY, "checks of more than %d devices are not kept", DEVICES_MAX);
		return why->err;
	}
	if (ds->running_id[0] != '\0') {
		refusal_set(why, ACCELD_ECONFLICT, REASON_CHECK_RUNNING, "check %s of %s is running; one check per device at a "
		       "time (see GET /devices/%s/checks/%s)", ds->running_id, device_id, device_id, ds->running_id);
		pthread_mutex_unlock(&c->mu);
		free(run);
		return why->err;
	}
	run->created_ms = clock_real_ms();
	make_id(c, run->created_ms, run->id);
	run->seed = c->seq * 1000003u + 1;
	snprintf(ds->running_id, sizeof(ds->running_id), "%s", run->id);
	recent_add(c, run);
	devcheck_run_ref(run); /* the thread's */
	c->threads++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&thread, &attr, run_main, run);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		c->threads--;
		ds->running_id[0] = '\0';
		run->state = DEVCHECK_INTERRUPTED;
		run->ended = true;
		pthread_mutex_unlock(&c->mu);
		devcheck_run_unref(run); /* the thread's */
		devcheck_run_unref(run); /* the creation reference; the ring keeps its own */
		refusal_set(why, ACCELD_EUNAVAILABLE, REASON_UNAVAILABLE, "cannot start the check's thread: %s", strerror(rc));
		return why->err;
	}
	if (out != NULL) {
		devcheck_run_ref(run);
		*out = run;
	}
	pthread_mutex_unlock(&c->mu);
	log_fields(LOGL_INFO, "check", "check started",
		   (struct log_field[]){LOG_S("id", run->id), LOG_S("device", device_id),
					LOG_S("level", devcheck_level_name(req->level)), LOG_S("trigger", req->trigger)},
		   4);
	devcheck_run_unref(run); /* the creation reference; the ring, the thread and *out hold theirs */
	return ACCELD_OK;
}

struct devcheck_run *devcheck_get(struct devcheck *c, const char *id)
{
	struct devcheck_run *found = NULL;

	pthread_mutex_lock(&c->mu);
	for (unsigned i = 0; i < c->nrecent && found == NULL; i++) {
		if (strcmp(c->recent[i]->id, id) == 0) {
			found = c->recent[i];
			devcheck_run_ref(found);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

bool devcheck_running_id(struct devcheck *c, const char *device_id, char id[DEVCHECK_ID_MAX])
{
	struct devstate *ds;
	bool running = false;

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device_id, false);
	if (ds != NULL && ds->running_id[0] != '\0') {
		snprintf(id, DEVCHECK_ID_MAX, "%s", ds->running_id);
		running = true;
	}
	pthread_mutex_unlock(&c->mu);
	return running;
}

json_t *devcheck_list_json(struct devcheck *c, const char *device_id, unsigned page_size, const char *after)
{
	json_t *doc = json_object();
	json_t *arr = json_array();
	struct devcheck_run *picked[RECENT_MAX];
	unsigned n = 0;
	bool skipping = after != NULL && after[0] != '\0';
	bool more = false;

	pthread_mutex_lock(&c->mu);
	for (unsigned k = c->nrecent; k-- > 0;) {
		struct devcheck_run *run = c->recent[k];

		if (strcmp(run->device, device_id) != 0)
			continue;
		if (skipping) {
			skipping = strcmp(run->id, after) != 0;
			continue;
		}
		if (n == page_size) {
			more = true;
			break;
		}
		devcheck_run_ref(run);
		picked[n++] = run;
	}
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < n; i++) {
		json_array_append_new(arr, devcheck_run_json(picked[i]));
		devcheck_run_unref(picked[i]);
	}
	if (skipping) { /* the token named no check of the device */
		json_decref(arr);
		json_decref(doc);
		return NULL;
	}
	json_object_set_new(doc, "checks", arr);
	if (more && n > 0)
		json_object_set_new(doc, "next_page_token", json_string(devcheck_run_id(picked[n - 1])));
	return doc;
}

/* --- figures for the rest of acceld --- */

void devcheck_seed(struct devcheck *c, const json_t *doc)
{
	const char *id = json_string_value(json_object_get(doc, "id"));
	const char *device = json_string_value(json_object_get(doc, "device"));
	const char *state = json_string_value(json_object_get(doc, "state"));
	const char *finished = json_string_value(json_object_get(doc, "finished_at"));
	const char *verdict = json_string_value(json_object_get(doc, "verdict"));
	const char *level = json_string_value(json_object_get(doc, "level"));
	json_t *measured = json_object_get(doc, "measured");
	json_t *tests = json_object_get(doc, "tests");
	struct devstate *ds;
	int64_t finished_ms;
	enum devcheck_verdict v;
	enum devcheck_level l = DEVCHECK_QUICK;
	enum devcheck_state st;
	size_t i;
	json_t *t;

	if (id == NULL || device == NULL || state == NULL || finished == NULL ||
	    clock_parse_rfc3339(finished, &finished_ms) != 0 || !devcheck_state_parse(state, &st) ||
	    (!devcheck_state_judged(st) && st != DEVCHECK_INTERRUPTED))
		return;
	devcheck_level_parse(level, &l);
	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device, true);
	if (ds == NULL || (ds->known && ds->s.finished_ms >= finished_ms)) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	ds->known = true;
	snprintf(ds->s.id, sizeof(ds->s.id), "%s", id);
	ds->s.level = l;
	ds->s.state = st;
	ds->s.has_verdict = devcheck_state_judged(st) && devcheck_verdict_parse(verdict, &v);
	if (ds->s.has_verdict)
		ds->s.verdict = v;
	ds->s.finished_ms = finished_ms;
	if (json_is_number(json_object_get(measured, "gflops"))) {
		ds->s.gflops = json_number_value(json_object_get(measured, "gflops"));
		ds->s.figures_ms = finished_ms;
	}
	if (json_is_number(json_object_get(measured, "gbytes_per_s"))) {
		ds->s.gbytes_per_s = json_number_value(json_object_get(measured, "gbytes_per_s"));
		ds->s.figures_ms = finished_ms;
	}
	json_array_foreach(tests, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		json_t *ratio = json_object_get(t, "ratio");

		if (name != NULL && json_is_number(ratio) && strcmp(name, kernel_name(MATRIX_KERNEL)) == 0)
			ds->s.matrix_ratio = json_number_value(ratio);
		else if (name != NULL && json_is_number(ratio) && strcmp(name, kernel_name(MEMORY_KERNEL)) == 0)
			ds->s.memory_ratio = json_number_value(ratio);
	}
	pthread_mutex_unlock(&c->mu);
}

size_t devcheck_summaries(struct devcheck *c, struct devcheck_summary *out, size_t cap)
{
	size_t n = 0;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndevs && n < cap; i++) {
		if (!c->devs[i].known && c->devs[i].running_id[0] == '\0')
			continue;
		out[n] = c->devs[i].s;
		snprintf(out[n].running_id, sizeof(out[n].running_id), "%s", c->devs[i].running_id);
		n++;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

bool devcheck_summary_of(struct devcheck *c, const char *device_id, struct devcheck_summary *out)
{
	struct devstate *ds;
	bool found = false;

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, device_id, false);
	if (ds != NULL && (ds->known || ds->running_id[0] != '\0')) {
		*out = ds->s;
		snprintf(out->running_id, sizeof(out->running_id), "%s", ds->running_id);
		found = true;
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

void devcheck_apply(struct devcheck *c, struct device *dev)
{
	struct devstate *ds;
	struct device_check *dc = &dev->check;
	char when[CLOCK_RFC3339_LEN];
	char before[sizeof(dev->peak.source)];

	pthread_mutex_lock(&c->mu);
	ds = devstate_of(c, dev->id, true);
	if (ds == NULL) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	/* what detection gave the device is the basis of the next check's expected figures */
	ds->has_basis = true;
	ds->basis = dev->peak;
	snprintf(dc->running_id, sizeof(dc->running_id), "%s", ds->running_id);
	if (ds->known) {
		snprintf(dc->state, sizeof(dc->state), "%s", devcheck_state_name(ds->s.state));
		snprintf(dc->id, sizeof(dc->id), "%s", ds->s.id);
		snprintf(dc->level, sizeof(dc->level), "%s", devcheck_level_name(ds->s.level));
		snprintf(dc->verdict, sizeof(dc->verdict), "%s", ds->s.has_verdict ? devcheck_verdict_name(ds->s.verdict) : "");
		dc->gflops = ds->s.gflops;
		dc->gbytes_per_s = ds->s.gbytes_per_s;
		dc->finished_ms = ds->s.finished_ms;
	}
	/* a CPU's peak is an estimate: a check's verified figures are better, and say so */
	if (ds->known && dev->type == DEVICE_CPU && ds->s.figures_ms > 0 &&
	    (devcheck_usable(ds->s.gflops) || devcheck_usable(ds->s.gbytes_per_s))) {
		snprintf(before, sizeof(before), "%s", dev->peak.source);
		if (devcheck_usable(ds->s.gflops))
			dev->peak.fp32_tflops = ds->s.gflops / 1000.0;
		if (devcheck_usable(ds->s.gbytes_per_s))
			dev->peak.memory_gbytes_per_s = ds->s.gbytes_per_s;
		clock_rfc3339(ds->s.figures_ms, when);
		devcheck_words(dev->peak.source, sizeof(dev->peak.source),
			       "measured by health check %s at %s (%s %.1f GFLOP/s, %s %.1f GB/s); replaces: %s",
			       ds->s.id, when, kernel_name(MATRIX_KERNEL), ds->s.gflops, kernel_name(MEMORY_KERNEL),
			       ds->s.gbytes_per_s, before);
	}
	pthread_mutex_unlock(&c->mu);
}

size_t devcheck_measured(struct devcheck *c, int64_t now_ms, struct select_measured *out, char (*ids)[DEVICE_ID_MAX],
		      size_t cap)
{
	size_t n = 0;
	size_t nid = 0;

	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->ndevs; i++) {
		const struct devcheck_summary *s = &c->devs[i].s;

		if (!c->devs[i].known || s->figures_ms == 0 || c->opts.settings.max_age_ms == 0 ||
		    now_ms - s->figures_ms > (int64_t)c->opts.settings.max_age_ms || nid == cap)
			continue;
		snprintf(ids[nid], DEVICE_ID_MAX, "%s", s->device);
		if (devcheck_usable(s->gflops) && n < cap)
			out[n++] = (struct select_measured){.device_id = ids[nid], .kernel = kernel_name(MATRIX_KERNEL),
							    .gflops = s->gflops, .gbytes_per_s = NAN, .source = "check"};
		/* the memory test's bandwidth stands for every memory-bound kernel */
		for (unsigned k = 0; devcheck_usable(s->gbytes_per_s) && k < KERNEL_COUNT && n < cap; k++)
			if (!kernel_compute_bound((enum kernel_id)k))
				out[n++] = (struct select_measured){.device_id = ids[nid],
								    .kernel = kernel_name((enum kernel_id)k),
								    .gflops = NAN, .gbytes_per_s = s->gbytes_per_s,
								    .source = "check"};
		nid++;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* --- periodic checks --- */

/* Waits up to ms, or until stop; returns false when stopping. */
static bool scheduler_sleep(struct devcheck *c, uint64_t ms)
{
	struct timespec until = clock_deadline(CLOCK_REALTIME, ms * 1000000ull);
	bool go;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
			break;
	go = !c->stopping;
	pthread_mutex_unlock(&c->mu);
	return go;
}

/* Every interval: a quick check of each device with no job queued or running, one device at a time. */
static void *scheduler_main(void *arg)
{
	struct devcheck *c = arg;
	char (*ids)[DEVICE_ID_MAX] = xcalloc(DEVICES_MAX, DEVICE_ID_MAX);

	while (scheduler_sleep(c, c->opts.settings.interval_ms)) {
		size_t n = c->opts.list(c->opts.list_ctx, ids, DEVICES_MAX);

		for (size_t i = 0; i < n; i++) {
			struct devcheck_request req;
			struct refusal why;
			struct devcheck_run *run = NULL;
			unsigned queued = 0;
			unsigned running = 0;

			if (exec_device(c->opts.exec, ids[i]) == NULL ||
			    exec_device_load(c->opts.exec, ids[i], &queued, &running) != ACCELD_OK || queued + running > 0)
				continue;
			devcheck_request_init(&req);
			snprintf(req.trigger, sizeof(req.trigger), "schedule");
			if (devcheck_start(c, ids[i], &req, NULL, NULL, &run, &why) != ACCELD_OK)
				continue;
			devcheck_run_wait(run);
			devcheck_run_unref(run);
		}
	}
	free(ids);
	return NULL;
}
