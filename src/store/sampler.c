/* sampler: periodic utilization, memory, temperature and power samples of every device, handed to the store. */
#include "store/sampler.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detect/cgroup.h"
#include "core/clock.h"
#include "core/hwfile.h"
#include "core/log.h"
#include "core/mem.h"

#define SAMPLER_MAX_DEVICES 256

struct sampler {
	struct sampler_opts o;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;

	/* tick state (one tick at a time: the thread, or a test) */
	struct sampler_cpu_times host_prev;
	bool host_prev_ok;
	uint64_t cg_prev_usec;
	bool cg_prev_ok;
	int64_t prev_ms;            /* wall clock of the previous reading */
	struct cgroup cg;
	struct store_sample last[SAMPLER_MAX_DEVICES];
	size_t nlast;
};

int sampler_read_proc_stat(const char *proc_root, struct sampler_cpu_times *out)
{
	char path[HWFILE_PATH_MAX];
	char line[512];
	unsigned long long v[8] = {0};
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/stat", proc_root);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	/* cpu  user nice system idle iowait irq softirq steal (guest time is already inside user) */
	n = sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &v[6], &v[7]);
	if (n < 4)
		return -1;
	out->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	out->total = out->busy + v[3] + v[4];
	return 0;
}

int sampler_read_meminfo(const char *proc_root, uint64_t *used_bytes)
{
	char path[HWFILE_PATH_MAX];
	char line[256];
	unsigned long long total = 0, avail = 0;
	bool have_total = false, have_avail = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meminfo", proc_root);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "MemTotal: %llu kB", &total) == 1)
			have_total = true;
		else if (sscanf(line, "MemAvailable: %llu kB", &avail) == 1)
			have_avail = true;
	}
	fclose(f);
	if (!have_total || !have_avail || avail > total)
		return -1;
	*used_bytes = (uint64_t)(total - avail) * 1024u;
	return 0;
}

/* Whether the CPU device is limited below the host (a quota or a smaller cpuset), so the cgroup is the truth. */
static bool cpu_limited(const struct device *cpu, unsigned host_cpus)
{
	if (isfinite(cpu->cpu.quota_cpus))
		return true;
	return isfinite(cpu->cpu.effective_cpus) && host_cpus > 0 && cpu->cpu.effective_cpus < (double)host_cpus;
}

/* CPUs listed in /proc/stat ("cpuN" lines): the host's count. */
static unsigned host_cpu_count(const char *proc_root)
{
	char path[HWFILE_PATH_MAX];
	char line[512];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/stat", proc_root);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9')
			n++;
	fclose(f);
	return n;
}

static void sample_cpu(struct sampler *s, const struct device *d, struct store_sample *x, int64_t now_ms)
{
	struct sampler_cpu_times t;
	uint64_t usec, mem;
	unsigned host = host_cpu_count(s->o.cfg->proc_root);
	bool limited;

	cgroup_find(&s->cg, s->o.cfg->sysfs_root, s->o.cfg->proc_root); /* each tick: the process may have moved */
	limited = cgroup_mode(&s->cg) != NULL && cpu_limited(d, host);

	if (limited && cgroup_cpu_usage_usec(&s->cg, &usec) == 0) {
		double cpus = isfinite(d->cpu.quota_cpus) ? d->cpu.quota_cpus : d->cpu.effective_cpus;

		if (isfinite(d->cpu.effective_cpus) && d->cpu.effective_cpus < cpus)
			cpus = d->cpu.effective_cpus;
		if (s->cg_prev_ok && usec >= s->cg_prev_usec && now_ms > s->prev_ms && cpus > 0) {
			double ratio =
				(double)(usec - s->cg_prev_usec) / ((double)(now_ms - s->prev_ms) * 1000.0 * cpus);

			x->utilization_ratio = ratio > 1 ? 1 : ratio;
		}
		x->source = STORE_SRC_CGROUP;
		s->cg_prev_usec = usec;
		s->cg_prev_ok = true;
		if (cgroup_memory_usage(&s->cg, &mem, NULL) == 0)
			x->memory_used_bytes = (double)mem;
	} else if (sampler_read_proc_stat(s->o.cfg->proc_root, &t) == 0) {
		if (s->host_prev_ok && t.total > s->host_prev.total && t.busy >= s->host_prev.busy)
			x->utilization_ratio =
				(double)(t.busy - s->host_prev.busy) / (double)(t.total - s->host_prev.total);
		x->source = STORE_SRC_PROC_STAT;
		s->host_prev = t;
		s->host_prev_ok = true;
	}
	if (!isfinite(x->memory_used_bytes) && sampler_read_meminfo(s->o.cfg->proc_root, &mem) == 0)
		x->memory_used_bytes = (double)mem;
}

static void sample_accelerator(struct sampler *s, const struct device *d, struct store_sample *x, uint64_t window)
{
	const struct device_telemetry *t = &d->telemetry;

	if (t->sampled_at_ms > 0) {
		x->utilization_ratio = t->utilization_ratio;
		x->temperature_celsius = t->temperature_celsius;
		x->power_watts = t->power_watts;
		if (t->memory_used_bytes > 0)
			x->memory_used_bytes = (double)t->memory_used_bytes;
		else if (d->memory_total_bytes > 0 && d->memory_available_bytes > 0 &&
			 d->memory_available_bytes <= d->memory_total_bytes)
			x->memory_used_bytes = (double)(d->memory_total_bytes - d->memory_available_bytes);
		if (isfinite(x->utilization_ratio) || isfinite(x->memory_used_bytes) ||
		    isfinite(x->temperature_celsius) || isfinite(x->power_watts))
			x->source = STORE_SRC_DEVICE;
	}
	if (!isfinite(x->utilization_ratio) && s->o.busy != NULL) {
		double busy = s->o.busy(s->o.busy_ctx, d->id, window);

		if (isfinite(busy)) {
			x->utilization_ratio = busy < 0 ? 0 : busy > 1 ? 1 : busy;
			if (x->source == STORE_SRC_NONE)
				x->source = STORE_SRC_EXECUTOR;
		}
	}
}

void sampler_tick(struct sampler *s, int64_t now_ms)
{
	void *token = NULL;
	size_t n = 0;
	const struct device *devs = s->o.devices.acquire(s->o.devices.ctx, &n, &token);
	uint64_t interval = s->o.cfg->sample_interval_ms;
	uint64_t dt = interval;

	/* the time a sample stands for: since the last tick, within reason (a suspended host is not "present") */
	if (s->prev_ms > 0 && now_ms > s->prev_ms) {
		dt = (uint64_t)(now_ms - s->prev_ms);
		if (dt > 2 * interval)
			dt = interval;
	}
	if (n > SAMPLER_MAX_DEVICES)
		n = SAMPLER_MAX_DEVICES;
	for (size_t i = 0; i < n; i++) {
		struct store_sample *x = &s->last[i];

		*x = (struct store_sample){.ts_ms = now_ms, .dt_ms = (uint32_t)dt, .source = STORE_SRC_NONE,
					   .utilization_ratio = NAN, .memory_used_bytes = NAN,
					   .temperature_celsius = NAN, .power_watts = NAN};
		snprintf(x->device, sizeof(x->device), "%s", devs[i].id);
		if (devs[i].type == DEVICE_CPU)
			sample_cpu(s, &devs[i], x, now_ms);
		else
			sample_accelerator(s, &devs[i], x, dt);
	}
	s->nlast = n;
	s->prev_ms = now_ms;
	if (s->o.store != NULL && n > 0) {
		store_devices_seen(s->o.store, devs, n, now_ms);
		store_add_samples(s->o.store, s->last, n);
	}
	s->o.devices.release(s->o.devices.ctx, token);
}

const struct store_sample *sampler_last(const struct sampler *s, size_t *n)
{
	*n = s->nlast;
	return s->last;
}

/* Takes the first CPU readings so the first tick has something to compare with. */
static void prime(struct sampler *s)
{
	uint64_t usec;

	cgroup_find(&s->cg, s->o.cfg->sysfs_root, s->o.cfg->proc_root);
	s->host_prev_ok = sampler_read_proc_stat(s->o.cfg->proc_root, &s->host_prev) == 0;
	s->cg_prev_ok = cgroup_cpu_usage_usec(&s->cg, &usec) == 0;
	if (s->cg_prev_ok)
		s->cg_prev_usec = usec;
	s->prev_ms = clock_real_ms();
}

struct sampler *sampler_new(const struct sampler_opts *opts)
{
	struct sampler *s = xcalloc(1, sizeof(*s));

	s->o = *opts;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	prime(s);
	return s;
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	uint64_t interval = s->o.cfg->sample_interval_ms;

	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct timespec ts = clock_deadline(CLOCK_REALTIME, interval * 1000000ull);

		pthread_cond_timedwait(&s->cond, &s->mu, &ts);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->mu);
		sampler_tick(s, clock_real_ms());
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

enum acceld_err sampler_start(struct sampler *s)
{
	if (s->started)
		return ACCELD_OK;
	if (pthread_create(&s->thread, NULL, sampler_main, s) != 0)
		return ACCELD_ENOMEM;
	s->started = true;
	log_fields(LOGL_INFO, "sampler", "sampling",
		   (struct log_field[]){LOG_I("interval_ms", s->o.cfg->sample_interval_ms),
					LOG_S("cgroup", cgroup_dir(&s->cg, CGROUP_CPUACCT))},
		   2);
	return ACCELD_OK;
}

void sampler_free(struct sampler *s)
{
	if (s == NULL)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
