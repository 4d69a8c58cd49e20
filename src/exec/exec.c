/*
 * exec: the executor's life cycle (start, stop, free), its names and options, and its devices: which run jobs, with
 * which backend, how loaded and how busy.
 *
 * The executor's other parts are admission (exec_admit.c), the workers and the reaper (exec_worker.c), jobs with the
 * ring of recent jobs and the queues (exec_job.c) and a job as JSON (jobjson.c); exec_int.h holds what they share and
 * the locking rules. The backends are known only through their ops (backend.h); the data around a run (inputs,
 * summaries, verification) is jobdata's.
 */
#include "exec/exec.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"
#include "core/names.h"
#include "core/pool.h"
#include "exec/exec_int.h"

/* --- names --- */

static const char *const state_names[EXEC_STATE_COUNT] = {"queued", "running", "succeeded", "failed", "timed_out",
							  "cancelled", "interrupted"};

const char *exec_state_name(enum exec_state s)
{
	return names_at(state_names, EXEC_STATE_COUNT, s);
}

bool exec_state_parse(const char *name, enum exec_state *out)
{
	int i = names_find(state_names, EXEC_STATE_COUNT, name);

	if (i < 0)
		return false;
	*out = (enum exec_state)i;
	return true;
}

const char *exec_state_names_text(void)
{
	return "queued, running, succeeded, failed, timed_out, cancelled, interrupted";
}

void exec_request_init(struct exec_request *req)
{
	memset(req, 0, sizeof(*req));
	req->alpha = 1.0f;
	req->beta = 0.0f;
	req->scale = 1.0f;
	req->seed = 1;
	snprintf(req->trigger, sizeof(req->trigger), "api");
}

void exec_request_add_device(struct exec_request *req, const char *id)
{
	if (req->ndevices < EXEC_CHAIN_MAX)
		snprintf(req->devices[req->ndevices++], sizeof(req->devices[0]), "%s", id);
}

void exec_request_release(struct exec_request *req)
{
	for (int i = 0; i < KERNEL_MAX_INPUTS; i++) {
		free(req->inputs[i]);
		req->inputs[i] = NULL;
	}
}

void exec_opts_from_config(const struct config *cfg, struct exec_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->max_elements = cfg->exec_max_elements;
	opts->queue_depth = cfg->exec_queue_depth;
	opts->default_timeout_ms = cfg->exec_default_timeout_ms;
	opts->max_timeout_ms = cfg->exec_max_timeout_ms;
	opts->recent = cfg->exec_recent_jobs;
}

/* --- devices and their backends --- */

int exec_worker_backend_index(const struct worker *w, const struct backend_ops *ops)
{
	for (unsigned i = 0; i < w->nbe; i++)
		if (w->be[i].ops == ops)
			return (int)i;
	return -1;
}

int exec_worker_default_index(const struct worker *w)
{
	int best = -1;

	for (unsigned i = 0; i < w->nbe; i++)
		if (!atomic_load(&w->be[i].failed) && (best < 0 || w->be[i].ops->rank < w->be[best].ops->rank))
			best = (int)i;
	return best;
}

const struct backend_ops *exec_worker_default(const struct worker *w)
{
	int b = w->started ? exec_worker_default_index(w) : -1;

	return b >= 0 ? w->be[b].ops : NULL;
}

size_t exec_device_index(const struct exec *ex, const char *id)
{
	size_t d;

	for (d = 0; d < ex->ndevices; d++)
		if (strcmp(ex->devices[d].id, id) == 0)
			break;
	return d;
}

const struct device *exec_device(const struct exec *ex, const char *id)
{
	size_t d = exec_device_index(ex, id);

	return d < ex->ndevices && exec_worker_default(&ex->workers[d]) != NULL ? &ex->workers[d].dev : NULL;
}

const char *exec_device_backend(const struct exec *ex, const char *id)
{
	size_t d = exec_device_index(ex, id);
	const struct backend_ops *ops = d < ex->ndevices ? exec_worker_default(&ex->workers[d]) : NULL;

	return ops ? ops->name : NULL;
}

const struct backend_ops *exec_device_backend_ops(const struct exec *ex, const char *id, const char *backend)
{
	size_t d = exec_device_index(ex, id);
	const struct worker *w = d < ex->ndevices ? &ex->workers[d] : NULL;

	if (w == NULL || backend == NULL || backend[0] == '\0')
		return w != NULL ? exec_worker_default(w) : NULL;
	for (unsigned i = 0; i < w->nbe; i++)
		if (strcmp(w->be[i].ops->name, backend) == 0)
			return w->be[i].ops;
	return NULL;
}

/* The worker of a device id, or NULL; ex->mu held. */
static struct worker *worker_of(struct exec *ex, const char *device_id)
{
	size_t d = exec_device_index(ex, device_id);

	return d < ex->ndevices ? &ex->workers[d] : NULL;
}

enum acceld_err exec_device_load(struct exec *ex, const char *device_id, unsigned *queued, unsigned *running)
{
	struct worker *w;
	enum acceld_err rc = ACCELD_ENOTFOUND;

	pthread_mutex_lock(&ex->mu);
	w = worker_of(ex, device_id);
	if (w != NULL) {
		*queued = w->qlen;
		*running = (w->running != NULL) + w->inline_running;
		rc = ACCELD_OK;
	}
	pthread_mutex_unlock(&ex->mu);
	return rc;
}

double exec_busy_fraction(struct exec *ex, const char *device_id, uint64_t window_ms)
{
	struct worker *w;
	uint64_t now = clock_mono_ns();
	double frac = NAN;

	pthread_mutex_lock(&ex->mu);
	w = worker_of(ex, device_id);
	if (w != NULL && exec_worker_default(w) == NULL)
		w = NULL; /* a device with no backend is never busy with our jobs: say nothing */
	if (w != NULL) {
		uint64_t busy = w->busy_ns + (w->running != NULL ? now - w->run_start_ns : 0);
		uint64_t span = w->seen_at_ns ? now - w->seen_at_ns : window_ms * 1000000u;

		if (span > 0)
			frac = (double)(busy - w->seen_busy_ns) / (double)span;
		if (w->seen_at_ns == 0) /* first call: only the running job can be counted */
			frac = w->running != NULL ? 1.0 : 0.0;
		w->seen_busy_ns = busy;
		w->seen_at_ns = now;
	}
	pthread_mutex_unlock(&ex->mu);
	if (frac > 1.0)
		frac = 1.0;
	return frac;
}

/* --- life cycle --- */

static unsigned cpu_threads(const struct exec_opts *opts, const struct device *d)
{
	if (opts->cpu_threads)
		return opts->cpu_threads;
	if (!isnan(d->cpu.effective_cpus) && d->cpu.effective_cpus >= 1.0)
		return (unsigned)floor(d->cpu.effective_cpus);
	if (d->cpu.pus > 0 && d->cpu.pus < pool_usable_cpus())
		return d->cpu.pus;
	return pool_usable_cpus();
}

/* The backends of ex that serve w's device. */
static void worker_backends(struct exec *ex, struct worker *w)
{
	for (size_t b = 0; ex->backends[b] != NULL && w->nbe < EXEC_BACKENDS_MAX; b++) {
		if (!ex->backends[b]->serves(&w->dev))
			continue;
		if (ex->backends[b]->attach != NULL)
			ex->backends[b]->attach(&w->dev);
		atomic_init(&w->be[w->nbe].failed, false);
		w->be[w->nbe++].ops = ex->backends[b];
	}
}

static int start_thread(const struct exec *ex, pthread_t *t, void *(*fn)(void *), void *arg)
{
	return ex->opts.thread_create ? ex->opts.thread_create(t, fn, arg) : pthread_create(t, NULL, fn, arg);
}

static bool opts_valid(const struct exec_opts *o)
{
	return o->max_elements > 0 && o->queue_depth > 0 && o->default_timeout_ms > 0 && o->max_timeout_ms > 0 &&
	       o->recent > 0 && (o->ndevices == 0 || o->devices != NULL);
}

enum acceld_err exec_new(const struct exec_opts *opts, struct exec **out)
{
	struct exec *ex;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!opts_valid(opts))
		return ACCELD_EINVAL;
	ex = xcalloc(1, sizeof(*ex));
	ex->opts = *opts;
	ex->backends = opts->backends ? opts->backends : backend_builtin;
	if (getrandom(&ex->salt, sizeof(ex->salt), 0) != sizeof(ex->salt))
		ex->salt = clock_mono_ns();
	pthread_mutex_init(&ex->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ex->reaper_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&ex->final_cv, NULL);
	ex->ring_cap = ex->opts.recent;
	ex->ring = xcalloc(ex->ring_cap, sizeof(ex->ring[0]));
	ex->ndevices = opts->ndevices;
	ex->devices = xcalloc(opts->ndevices ? opts->ndevices : 1, sizeof(struct device));
	if (opts->ndevices)
		memcpy(ex->devices, opts->devices, opts->ndevices * sizeof(struct device));
	ex->workers = xcalloc(opts->ndevices ? opts->ndevices : 1, sizeof(struct worker));
	ex->host = pool_new(0);
	ex->serial = pool_new(1);
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		w->ex = ex;
		w->index = d;
		w->dev = ex->devices[d];
		w->threads = w->dev.type == DEVICE_CPU ? cpu_threads(opts, &w->dev) : 1;
		pthread_cond_init(&w->cv, NULL);
		w->queue = xcalloc(ex->opts.queue_depth, sizeof(w->queue[0]));
		worker_backends(ex, w);
	}
	/* every backend knows all of its devices before any worker opens one */
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		if (w->nbe == 0)
			continue;
		rc = start_thread(ex, &w->thread, exec_worker_main, w);
		if (rc == 0) {
			w->started = true;
			continue;
		}
		log_fields(LOGL_ERROR, "exec", "cannot start the worker thread of a device; it runs no jobs",
			   (struct log_field[]){LOG_S("device", w->dev.id), LOG_S("error", strerror(rc))}, 2);
	}
	rc = start_thread(ex, &ex->reaper, exec_reaper_main, ex);
	if (rc != 0) {
		log_fields(LOGL_ERROR, "exec", "cannot start the thread that enforces job deadlines; no job runs",
			   (struct log_field[]){LOG_S("error", strerror(rc))}, 1);
		exec_free(ex);
		return ACCELD_EUNAVAILABLE;
	}
	ex->reaper_started = true;
	*out = ex;
	return ACCELD_OK;
}

bool exec_stop(struct exec *ex, uint64_t wait_ms)
{
	struct exec_job **cancelled;
	size_t ncancelled = 0;
	size_t cap = 0;
	uint64_t deadline = clock_mono_ns() + wait_ms * 1000000u;
	bool busy = true;

	pthread_mutex_lock(&ex->mu);
	ex->stop = true;
	for (size_t d = 0; d < ex->ndevices; d++)
		cap += ex->workers[d].qlen;
	cancelled = xcalloc(cap ? cap : 1, sizeof(cancelled[0]));
	for (size_t d = 0; d < ex->ndevices; d++) {
		struct worker *w = &ex->workers[d];

		while (w->qlen > 0) {
			struct exec_job *j = w->queue[0];

			exec_queue_remove(w, 0);
			exec_job_set_final(j, EXEC_CANCELLED, REASON_SHUTTING_DOWN,
					   "the executor stopped before the job ran");
			cancelled[ncancelled++] = j;
		}
		pthread_cond_broadcast(&w->cv);
	}
	pthread_cond_broadcast(&ex->reaper_cv);
	pthread_mutex_unlock(&ex->mu);
	for (size_t i = 0; i < ncancelled; i++) {
		exec_job_finished(ex, cancelled[i], false);
		exec_job_unref(cancelled[i]);
	}
	free(cancelled);
	/* a running kernel cannot be interrupted: wait for it, but only so long */
	pthread_mutex_lock(&ex->mu);
	while (busy) {
		struct timespec tick;

		busy = false;
		for (size_t d = 0; d < ex->ndevices; d++)
			busy = busy || ex->workers[d].running != NULL || ex->workers[d].inline_running > 0;
		if (!busy || clock_mono_ns() >= deadline)
			break;
		tick = clock_deadline(CLOCK_REALTIME, 10 * 1000 * 1000); /* final_cv runs on the default clock */
		pthread_cond_timedwait(&ex->final_cv, &ex->mu, &tick);
	}
	pthread_mutex_unlock(&ex->mu);
	return !busy;
}

void exec_free(struct exec *ex)
{
	if (ex == NULL)
		return;
	exec_stop(ex, UINT64_MAX / 2000000u);
	for (size_t d = 0; d < ex->ndevices; d++) {
		if (ex->workers[d].started)
			pthread_join(ex->workers[d].thread, NULL);
		pthread_cond_destroy(&ex->workers[d].cv);
		free(ex->workers[d].queue);
	}
	if (ex->reaper_started)
		pthread_join(ex->reaper, NULL);
	/* records not answered yet will call exec_job_recorded: wait for them (the store answers within seconds) */
	pthread_mutex_lock(&ex->mu);
	for (int tries = 0; ex->unconfirmed > 0 && tries < 500; tries++) {
		struct timespec tick = clock_deadline(CLOCK_REALTIME, 10 * 1000 * 1000);

		pthread_cond_timedwait(&ex->final_cv, &ex->mu, &tick);
	}
	if (ex->unconfirmed > 0) {
		pthread_mutex_unlock(&ex->mu);
		log_fields(LOGL_WARN, "exec", "job records still unanswered; the executor is left allocated",
			   (struct log_field[]){LOG_I("records", ex->unconfirmed)}, 1);
		return;
	}
	pthread_mutex_unlock(&ex->mu);
	for (unsigned i = 0; i < ex->ring_len; i++)
		exec_job_unref(exec_ring_at(ex, i));
	pool_free(ex->host);
	pool_free(ex->serial);
	pthread_cond_destroy(&ex->final_cv);
	pthread_cond_destroy(&ex->reaper_cv);
	pthread_mutex_destroy(&ex->mu);
	free(ex->ring);
	free(ex->workers);
	free(ex->devices);
	free(ex);
}
