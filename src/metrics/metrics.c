/*
 * metrics: the in-memory registry of counters, gauges and histograms, and the Prometheus text exposition.
 *
 * One mutex guards the registry; recording is a short linear search over a family's series (a few hundred at
 * most) and an add. Rendering copies nothing out of the device snapshot it is handed and reads /proc/self only, so
 * a scrape costs microseconds and waits on nothing but that mutex.
 */
#include "metrics/metrics.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "cost/pricebook.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "exec/kernel.h"
#include "core/jsonval.h"
#include "core/mem.h"
#include "core/version.h"

#define RENDER_MAX (64u << 20)
#define LABELS_MAX 3
#define BUCKETS_MAX 16
#define NUM_MAX 40
#define DEVICE_LABELS 8

enum kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };

struct series {
	char labels[LABELS_MAX][METRICS_LABEL_MAX];
	double value;                  /* counter or gauge */
	uint64_t buckets[BUCKETS_MAX]; /* histogram: observations in (bounds[i-1], bounds[i]]; cumulated on output */
	uint64_t count;
	double sum;
};

struct family {
	const char *name;
	const char *help;
	enum kind kind;
	const char *labels[LABELS_MAX];
	size_t nlabels;
	const double *bounds;
	size_t nbounds;
	struct series *series;
	size_t n;
	size_t cap;
};

/* Request latencies: from sub-millisecond answers (/livez) to a /run that waits seconds. */
static const double http_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				     0.1,    0.25,  0.5,    1,     2.5,  5,     10};
/* Jobs: a tiny vector kernel to a long matrix product bounded by its timeout. */
static const double job_bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

enum { F_HTTP_REQ, F_HTTP_DUR, F_JOBS, F_JOB_DUR, F_QUEUE, F_RUNNING, F_COUNT };

#define NB(a) (sizeof(a) / sizeof((a)[0]))

static const struct family templates[F_COUNT] = {
	[F_HTTP_REQ] = {.name = "acceld_http_requests_total",
			.help = "HTTP requests answered, by route pattern (handler), method and status code.",
			.kind = KIND_COUNTER,
			.labels = {"handler", "method", "code"},
			.nlabels = 3},
	[F_HTTP_DUR] = {.name = "acceld_http_request_duration_seconds",
			.help = "Time from the start of a request to its answer being queued, by route pattern.",
			.kind = KIND_HISTOGRAM,
			.labels = {"handler"},
			.nlabels = 1,
			.bounds = http_bounds,
			.nbounds = NB(http_bounds)},
	[F_JOBS] = {.name = "acceld_jobs_total",
		    .help = "Jobs finished, by kernel, device and outcome.",
		    .kind = KIND_COUNTER,
		    .labels = {"kernel", "device", "outcome"},
		    .nlabels = 3},
	[F_JOB_DUR] = {.name = "acceld_job_duration_seconds",
		       .help = "Time from job submission to completion, by kernel and device.",
		       .kind = KIND_HISTOGRAM,
		       .labels = {"kernel", "device"},
		       .nlabels = 2,
		       .bounds = job_bounds,
		       .nbounds = NB(job_bounds)},
	[F_QUEUE] = {.name = "acceld_job_queue_depth",
		     .help = "Jobs waiting in a device's queue.",
		     .kind = KIND_GAUGE,
		     .labels = {"device"},
		     .nlabels = 1},
	[F_RUNNING] = {.name = "acceld_jobs_running",
		       .help = "Jobs running on a device.",
		       .kind = KIND_GAUGE,
		       .labels = {"device"},
		       .nlabels = 1},
};

struct metrics {
	pthread_mutex_t mu;
	struct family fam[F_COUNT];
	bool store_set;
	struct metrics_store_stats store;
	double dropped_observations;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	pthread_mutex_init(&m->mu, NULL);
	memcpy(m->fam, templates, sizeof(templates));
	return m;
}

void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < F_COUNT; i++)
		free(m->fam[i].series);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* --- recording (called with m->mu held) --- */

/* The series of f with these label values, created when new; NULL when the family is full. */
static struct series *series_get(struct metrics *m, struct family *f, const char *const *values)
{
	char cut[LABELS_MAX][METRICS_LABEL_MAX];
	struct series *s;

	for (size_t j = 0; j < f->nlabels; j++)
		strlcpy_checked(cut[j], values[j] ? values[j] : "", sizeof(cut[j]));
	for (size_t i = 0; i < f->n; i++) {
		size_t j = 0;

		while (j < f->nlabels && strcmp(f->series[i].labels[j], cut[j]) == 0)
			j++;
		if (j == f->nlabels)
			return &f->series[i];
	}
	if (f->n == METRICS_MAX_SERIES) {
		m->dropped_observations += 1;
		return NULL;
	}
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 8;
		if (f->cap > METRICS_MAX_SERIES)
			f->cap = METRICS_MAX_SERIES;
		f->series = xrealloc(f->series, f->cap * sizeof(*f->series));
	}
	s = &f->series[f->n++];
	memset(s, 0, sizeof(*s));
	memcpy(s->labels, cut, sizeof(cut[0]) * f->nlabels);
	return s;
}

static void counter_add(struct metrics *m, struct family *f, const char *const *values, double v)
{
	struct series *s = series_get(m, f, values);

	if (s != NULL)
		s->value += v;
}

static void gauge_set(struct metrics *m, struct family *f, const char *const *values, double v)
{
	struct series *s = series_get(m, f, values);

	if (s != NULL)
		s->value = v;
}

static void histogram_observe(struct metrics *m, struct family *f, const char *const *values, double v)
{
	struct series *s = series_get(m, f, values);
	size_t i = 0;

	if (s == NULL)
		return;
	if (!isfinite(v) || v < 0) /* a clock step or a caller's slip must not poison the sum */
		v = 0;
	while (i < f->nbounds && v > f->bounds[i])
		i++;
	if (i < f->nbounds)
		s->buckets[i]++;
	s->count++;
	s->sum += v;
}

void metrics_http_observe(struct metrics *m, const char *handler, const char *method, int code, double seconds)
{
	char codetext[16];
	const char *req[3] = {handler, method, codetext};
	const char *dur[1] = {handler};

	if (m == NULL)
		return;
	if (code >= 100 && code <= 999) { /* by hand: this runs for every request */
		codetext[0] = (char)('0' + code / 100);
		codetext[1] = (char)('0' + code / 10 % 10);
		codetext[2] = (char)('0' + code % 10);
		codetext[3] = '\0';
	} else {
		snprintf(codetext, sizeof(codetext), "%d", code);
	}
	pthread_mutex_lock(&m->mu);
	counter_add(m, &m->fam[F_HTTP_REQ], req, 1);
	histogram_observe(m, &m->fam[F_HTTP_DUR], dur, seconds);
	pthread_mutex_unlock(&m->mu);
}

void metrics_http_hook(void *ctx, const char *method, const char *route, int status, double seconds)
{
	metrics_http_observe(ctx, route ? route : "unmatched", method ? method : "OTHER", status, seconds);
}

void metrics_job_observe(struct metrics *m, const char *kernel, const char *device, const char *outcome,
			 double seconds)
{
	const char *job[3] = {kernel, device, outcome};
	const char *dur[2] = {kernel, device};

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	counter_add(m, &m->fam[F_JOBS], job, 1);
	histogram_observe(m, &m->fam[F_JOB_DUR], dur, seconds);
	pthread_mutex_unlock(&m->mu);
}

void metrics_set_queue_depth(struct metrics *m, const char *device, unsigned queued, unsigned running)
{
	const char *dev[1] = {device};

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	gauge_set(m, &m->fam[F_QUEUE], dev, queued);
	gauge_set(m, &m->fam[F_RUNNING], dev, running);
	pthread_mutex_unlock(&m->mu);
}

void metrics_set_store_stats(struct metrics *m, const struct metrics_store_stats *st)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->store = *st;
	m->store_set = true;
	pthread_mutex_unlock(&m->mu);
}

/* --- text output --- */

struct out {
	struct buf b;
	bool full;
};

static void out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (buf_vprintf(&o->b, fmt, ap) != 0)
		o->full = true;
	va_end(ap);
}

static void out_bytes(struct out *o, const char *p, size_t n)
{
	if (buf_append(&o->b, p, n) != 0)
		o->full = true;
}

/*
 * Writes s escaped as the text format wants: backslash and newline always, the double quote inside label values.
 * Bytes that are not UTF-8 become U+FFFD, since the format (and Prometheus) takes UTF-8 only.
 */
static void out_escaped(struct out *o, const char *s, bool label)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = jsonval_utf8_len(p);

		if (n == 0) {
			out_bytes(o, "\xef\xbf\xbd", 3);
			p++;
		} else if (*p == '\\') {
			out_bytes(o, "\\\\", 2);
			p++;
		} else if (*p == '\n') {
			out_bytes(o, "\\n", 2);
			p++;
		} else if (*p == '"' && label) {
			out_bytes(o, "\\\"", 2);
			p++;
		} else {
			out_bytes(o, (const char *)p, n);
			p += n;
		}
	}
}

/* A float as the format reads it: integers without a point, others shortest-exact, never "nan". */
static void fmt_num(double v, char out[NUM_MAX])
{
	if (isnan(v)) {
		snprintf(out, NUM_MAX, "NaN");
	} else if (isinf(v)) {
		snprintf(out, NUM_MAX, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(out, NUM_MAX, "0");
	} else if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(out, NUM_MAX, "%.0f", v);
	} else {
		/* the shortest of 15, 16 or 17 digits that reads back as the same double */
		for (int digits = 15; digits <= 17; digits++) {
			snprintf(out, NUM_MAX, "%.*g", digits, v);
			if (strtod(out, NULL) == v)
				break;
		}
	}
}

static void header(struct out *o, const char *name, const char *type, const char *help)
{
	out_printf(o, "# HELP %s ", name);
	out_escaped(o, help, false);
	out_printf(o, "\n# TYPE %s %s\n", name, type);
}

/*
 * One sample line: name+suffix, the labels whose value is not empty (an empty value means "no label" to
 * Prometheus, so it is left out), an optional extra label (le), and the value.
 */
static void sample(struct out *o, const char *name, const char *suffix, const char *const *keys,
		   const char *const *vals, size_t n, const char *extra_key, const char *extra_val, double value)
{
	char num[NUM_MAX];
	bool open = false;

	out_printf(o, "%s%s", name, suffix);
	for (size_t i = 0; i < n; i++) {
		if (vals[i] == NULL || vals[i][0] == '\0')
			continue;
		out_printf(o, "%s%s=\"", open ? "," : "{", keys[i]);
		out_escaped(o, vals[i], true);
		out_bytes(o, "\"", 1);
		open = true;
	}
	if (extra_key != NULL) {
		out_printf(o, "%s%s=\"%s\"", open ? "," : "{", extra_key, extra_val);
		open = true;
	}
	fmt_num(value, num);
	out_printf(o, "%s %s\n", open ? "}" : "", num);
}

static void scalar(struct out *o, const char *name, const char *type, const char *help, double value)
{
	header(o, name, type, help);
	sample(o, name, "", NULL, NULL, 0, NULL, NULL, value);
}

static void render_family(struct out *o, const struct family *f)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};

	header(o, f->name, types[f->kind], f->help);
	for (size_t i = 0; i < f->n; i++) {
		const struct series *s = &f->series[i];
		const char *vals[LABELS_MAX];
		uint64_t cum = 0;

		for (size_t j = 0; j < f->nlabels; j++)
			vals[j] = s->labels[j];
		if (f->kind != KIND_HISTOGRAM) {
			sample(o, f->name, "", f->labels, vals, f->nlabels, NULL, NULL, s->value);
			continue;
		}
		for (size_t b = 0; b < f->nbounds; b++) {
			char le[NUM_MAX];

			cum += s->buckets[b];
			fmt_num(f->bounds[b], le);
			sample(o, f->name, "_bucket", f->labels, vals, f->nlabels, "le", le, (double)cum);
		}
		sample(o, f->name, "_bucket", f->labels, vals, f->nlabels, "le", "+Inf", (double)s->count);
		sample(o, f->name, "_sum", f->labels, vals, f->nlabels, NULL, NULL, s->sum);
		sample(o, f->name, "_count", f->labels, vals, f->nlabels, NULL, NULL, (double)s->count);
	}
}

static void render_registry(struct metrics *m, const struct metrics_view *v, struct out *o)
{
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < F_COUNT; i++)
		render_family(o, &m->fam[i]);
	scalar(o, "acceld_store_up", "gauge",
	       "1 when the database is open and its last write or check succeeded, else 0.",
	       v->store_open && (!m->store_set || m->store.up) ? 1 : 0);
	scalar(o, "acceld_store_write_backlog", "gauge", "Rows waiting to be written to the database.",
	       m->store_set ? (double)m->store.write_backlog : 0);
	scalar(o, "acceld_store_rows_written_total", "counter", "Rows written to the database.",
	       (double)m->store.rows_written);
	scalar(o, "acceld_store_dropped_samples_total", "counter",
	       "Telemetry samples dropped because the write backlog was full.", (double)m->store.samples_dropped);
	scalar(o, "acceld_store_dropped_records_total", "counter",
	       "Job records dropped because the write backlog was full.", (double)m->store.records_dropped);
	scalar(o, "acceld_store_write_errors_total", "counter", "Database write batches that failed.",
	       (double)m->store.write_errors);
	scalar(o, "acceld_store_commits_total", "counter", "Database transactions of queued writes committed.",
	       (double)m->store.commits);
	scalar(o, "acceld_store_confirmed_writes_total", "counter",
	       "Writes the API confirms (job results, prices) answered once durable (journaled or committed).",
	       (double)m->store.confirmed);
	scalar(o, "acceld_store_journaled_writes_total", "counter",
	       "Confirmed job records answered once written to the journal, before their commit.",
	       (double)m->store.journaled);
	scalar(o, "acceld_store_unconfirmed_writes_total", "counter",
	       "Writes the API confirms answered before they could be committed (recorded false).",
	       (double)m->store.unconfirmed);
	scalar(o, "acceld_metrics_dropped_observations_total", "counter",
	       "Observations dropped because their metric family reached its series limit.",
	       m->dropped_observations);
	pthread_mutex_unlock(&m->mu);
}

/* --- devices and probes, from the snapshot --- */

static bool known(double v)
{
	return isfinite(v) && v >= 0;
}

/* Per-device gauge family: one sample for each device where get() knows the value. */
static void device_family(struct out *o, const struct detect_snapshot *snap, const char *name, const char *type,
			  const char *help, bool (*get)(const struct device *d, double *v))
{
	static const char *const keys[] = {"device"};

	header(o, name, type, help);
	for (size_t i = 0; snap != NULL && i < snap->n; i++) {
		const struct device *d = &snap->devices[i];
		const char *vals[] = {d->id};
		double v;

		if (get(d, &v))
			sample(o, name, "", keys, vals, 1, NULL, NULL, v);
	}
}

static bool get_mem_total(const struct device *d, double *v)
{
	*v = (double)d->memory_total_bytes;
	return d->memory_total_bytes > 0;
}

static bool get_mem_available(const struct device *d, double *v)
{
	*v = (double)d->memory_available_bytes;
	return d->memory_available_bytes > 0;
}

static bool get_mem_used(const struct device *d, double *v)
{
	if (d->telemetry.memory_used_bytes > 0) {
		*v = (double)d->telemetry.memory_used_bytes;
		return true;
	}
	/* a CPU reports what is available; used is what the rest is */
	if (d->memory_total_bytes > 0 && d->memory_available_bytes > 0 &&
	    d->memory_available_bytes <= d->memory_total_bytes) {
		*v = (double)(d->memory_total_bytes - d->memory_available_bytes);
		return true;
	}
	return false;
}

static bool get_util(const struct device *d, double *v)
{
	*v = d->telemetry.utilization_ratio;
	return known(*v) && *v <= 1;
}

static bool get_temp(const struct device *d, double *v)
{
	*v = d->telemetry.temperature_celsius;
	return isfinite(*v);
}

static bool get_power(const struct device *d, double *v)
{
	*v = d->telemetry.power_watts;
	return known(*v);
}

static bool get_power_limit(const struct device *d, double *v)
{
	*v = d->telemetry.power_limit_watts;
	return known(*v) && *v > 0;
}

static bool get_energy(const struct device *d, double *v)
{
	*v = d->telemetry.energy_joules;
	return known(*v);
}

static bool get_sampled(const struct device *d, double *v)
{
	*v = (double)d->telemetry.sampled_at_ms / 1000.0;
	return d->telemetry.sampled_at_ms > 0;
}

static bool get_executable(const struct device *d, double *v)
{
	*v = d->executable ? 1 : 0;
	return true;
}

static void render_devices(struct out *o, const struct detect_snapshot *snap)
{
	static const char *const info_keys[DEVICE_LABELS] = {"device", "id", "type", "vendor", "model",
							     "accelerator_type", "uuid", "pci_bus_id"};
	static const char *const type_keys[] = {"type"};
	static const enum device_type types[] = {DEVICE_CPU, DEVICE_GPU, DEVICE_TPU};

	header(o, "acceld_device_info", "gauge",
	       "1 for every device acceld lists; labels name it (device and id are the same id).");
	for (size_t i = 0; snap != NULL && i < snap->n; i++) {
		const struct device *d = &snap->devices[i];
		const char *vals[DEVICE_LABELS] = {d->id,    d->id,		  device_type_name(d->type), d->vendor,
						   d->model, d->accelerator_type, d->uuid,		     d->pci_bus_id};

		sample(o, "acceld_device_info", "", info_keys, vals, DEVICE_LABELS, NULL, NULL, 1);
	}
	header(o, "acceld_devices", "gauge", "Devices listed, by type.");
	for (size_t t = 0; t < NB(types); t++) {
		const char *vals[] = {device_type_name(types[t])};
		unsigned count = 0;

		for (size_t i = 0; snap != NULL && i < snap->n; i++)
			count += snap->devices[i].type == types[t];
		sample(o, "acceld_devices", "", type_keys, vals, 1, NULL, NULL, count);
	}
	device_family(o, snap, "acceld_device_executable", "gauge", "1 when /run has a backend for the device.",
		      get_executable);
	device_family(o, snap, "acceld_device_memory_total_bytes", "gauge", "Device memory (host memory for a CPU).",
		      get_mem_total);
	device_family(o, snap, "acceld_device_memory_available_bytes", "gauge", "Device memory free to allocate.",
		      get_mem_available);
	device_family(o, snap, "acceld_device_memory_used_bytes", "gauge", "Device memory in use.", get_mem_used);
	device_family(o, snap, "acceld_device_utilization_ratio", "gauge", "Busy fraction of the device, 0 to 1.",
		      get_util);
	device_family(o, snap, "acceld_device_temperature_celsius", "gauge", "Device temperature.", get_temp);
	device_family(o, snap, "acceld_device_power_watts", "gauge", "Power drawn by the device.", get_power);
	device_family(o, snap, "acceld_device_power_limit_watts", "gauge", "Power limit of the device.",
		      get_power_limit);
	device_family(o, snap, "acceld_device_energy_joules_total", "counter",
		      "Energy used by the device since its driver loaded.", get_energy);
	device_family(o, snap, "acceld_device_telemetry_timestamp_seconds", "gauge",
		      "When the device's telemetry was last read, Unix time.", get_sampled);
	header(o, "acceld_device_snapshot_timestamp_seconds", "gauge", "When the device list was last built, Unix time.");
	if (snap != NULL && snap->taken_at_ms > 0)
		sample(o, "acceld_device_snapshot_timestamp_seconds", "", NULL, NULL, 0, NULL, NULL,
		       (double)snap->taken_at_ms / 1000.0);
}

/*
 * acceld_price_table_age_seconds{source}: how old each source of the built-in price tables is (sources.csv), from
 * its date (UTC midnight) to now. Seconds, not days: Prometheus names a time in its base unit (promtool refuses
 * "_days"); divide by 86400 for days.
 */
static void render_price_ages(struct out *o)
{
	static const char *const keys[] = {"source"};
	size_t n;
	const struct pricebook_source *t = pricebook_sources(&n);
	int64_t now = clock_real_ms();

	header(o, "acceld_price_table_age_seconds", "gauge",
	       "Seconds since the date of a built-in price source's figures (db/prices/sources.csv), by source.");
	for (size_t i = 0; i < n; i++) {
		const char *vals[] = {t[i].id};
		long days = clock_days_since(t[i].as_of, 0);

		/* days before the epoch is negative: the date's midnight is -days days after it */
		if (days != LONG_MIN)
			sample(o, "acceld_price_table_age_seconds", "", keys, vals, 1, NULL, NULL,
			       (double)now / 1000.0 + (double)days * 86400.0);
	}
}

/*
 * The host and the prices, labelled so that Prometheus can sum them over nodes: acceld_host_info (1, with the
 * cloud, instance type, region, zone and billing), acceld_host_price_usd_per_hour (the same labels, the applied
 * price) and acceld_device_price_usd_per_hour{device} (each device's applied share). Unknown prices are left out.
 */
static void render_prices(struct out *o, const struct metrics_view *v)
{
	static const char *const host_keys[] = {"cloud", "state", "instance_type", "region", "zone", "billing"};
	static const char *const price_keys[] = {"cloud", "instance_type", "region", "zone", "billing"};
	static const char *const dev_keys[] = {"device"};
	const struct metrics_host *h = v->host;
	const struct detect_snapshot *snap = v->devices;

	header(o, "acceld_host_info", "gauge",
	       "1; labels say which cloud VM the host is (cloud none: bare metal or not known) and how it is billed.");
	if (h != NULL) {
		const char *vals[] = {h->cloud, h->state, h->instance_type, h->region, h->zone, h->billing};

		sample(o, "acceld_host_info", "", host_keys, vals, NB(host_keys), NULL, NULL, 1);
	}
	header(o, "acceld_host_price_usd_per_hour", "gauge",
	       "What the whole host costs an hour as billed (Spot on a Spot host), USD; left out when unknown.");
	if (h != NULL && isfinite(h->usd_per_hour)) {
		const char *vals[] = {h->cloud, h->instance_type, h->region, h->zone, h->billing};

		sample(o, "acceld_host_price_usd_per_hour", "", price_keys, vals, NB(price_keys), NULL, NULL,
		       h->usd_per_hour);
	}
	header(o, "acceld_device_price_usd_per_hour", "gauge",
	       "What a device costs an hour as billed, USD: its share of the host price or its own; left out when "
	       "unknown.");
	for (size_t i = 0; snap != NULL && v->device_prices != NULL && i < snap->n; i++) {
		const char *vals[] = {snap->devices[i].id};

		if (isfinite(v->device_prices[i]))
			sample(o, "acceld_device_price_usd_per_hour", "", dev_keys, vals, 1, NULL, NULL,
			       v->device_prices[i]);
	}
	render_price_ages(o);
}

static void render_probes(struct out *o, const struct detect_snapshot *snap)
{
	static const char *const keys[] = {"probe"};
	size_t n = snap != NULL ? snap->nprobes : 0;

	header(o, "acceld_probe_success", "gauge", "1 when the probe ran without error in the last refresh, else 0.");
	for (size_t i = 0; i < n; i++) {
		const char *vals[] = {snap->probes[i].name};

		sample(o, "acceld_probe_success", "", keys, vals, 1, NULL, NULL, snap->probes[i].result.ok ? 1 : 0);
	}
	header(o, "acceld_probe_available", "gauge", "1 when the probe's source exists on this host, else 0.");
	for (size_t i = 0; i < n; i++) {
		const char *vals[] = {snap->probes[i].name};

		sample(o, "acceld_probe_available", "", keys, vals, 1, NULL, NULL,
		       snap->probes[i].result.available ? 1 : 0);
	}
	header(o, "acceld_probe_devices", "gauge", "Devices the probe found in the last refresh.");
	for (size_t i = 0; i < n; i++) {
		const char *vals[] = {snap->probes[i].name};

		sample(o, "acceld_probe_devices", "", keys, vals, 1, NULL, NULL, snap->probes[i].result.found);
	}
	header(o, "acceld_probe_duration_seconds", "gauge", "How long the probe took in the last refresh.");
	for (size_t i = 0; i < n; i++) {
		const char *vals[] = {snap->probes[i].name};
		double ms = snap->probes[i].result.duration_ms;

		if (known(ms))
			sample(o, "acceld_probe_duration_seconds", "", keys, vals, 1, NULL, NULL, ms / 1000.0);
	}
}

/* --- the process, from /proc/self --- */

/* The first two numbers of /proc/self/statm (pages); returns false when they cannot be read. */
static bool read_statm(unsigned long long *size, unsigned long long *resident)
{
	char line[256];
	char *end;
	FILE *f = fopen("/proc/self/statm", "re");
	bool ok = false;

	if (f == NULL)
		return false;
	if (fgets(line, sizeof(line), f) != NULL) {
		*size = strtoull(line, &end, 10);
		if (end != line && *end == ' ') {
			char *start = end + 1;

			*resident = strtoull(start, &end, 10);
			ok = end != start;
		}
	}
	fclose(f);
	return ok;
}

static long count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (dir == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return n > 0 ? n - 1 : 0; /* the directory's own descriptor */
}

static void render_process(struct out *o, const struct metrics_view *v)
{
	struct rusage ru;
	struct rlimit rl;
	unsigned long long size;
	unsigned long long resident;
	long page = sysconf(_SC_PAGESIZE);
	long fds = count_fds();
	bool statm;

	header(o, "acceld_process_start_time_seconds", "gauge", "Start time of the process, Unix time.");
	if (v->started_at_ms > 0)
		sample(o, "acceld_process_start_time_seconds", "", NULL, NULL, 0, NULL, NULL,
		       (double)v->started_at_ms / 1000.0);
	header(o, "acceld_process_cpu_seconds_total", "counter", "User and system CPU time of the process.");
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		sample(o, "acceld_process_cpu_seconds_total", "", NULL, NULL, 0, NULL, NULL,
		       (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			       (double)ru.ru_stime.tv_usec / 1e6);
	header(o, "acceld_process_open_fds", "gauge", "Open file descriptors.");
	if (fds >= 0)
		sample(o, "acceld_process_open_fds", "", NULL, NULL, 0, NULL, NULL, (double)fds);
	header(o, "acceld_process_max_fds", "gauge", "The limit on open file descriptors.");
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		sample(o, "acceld_process_max_fds", "", NULL, NULL, 0, NULL, NULL, (double)rl.rlim_cur);
	statm = page > 0 && read_statm(&size, &resident);
	header(o, "acceld_process_resident_memory_bytes", "gauge", "Resident set size.");
	if (statm)
		sample(o, "acceld_process_resident_memory_bytes", "", NULL, NULL, 0, NULL, NULL,
		       (double)resident * (double)page);
	header(o, "acceld_process_virtual_memory_bytes", "gauge", "Virtual memory size.");
	if (statm)
		sample(o, "acceld_process_virtual_memory_bytes", "", NULL, NULL, 0, NULL, NULL,
		       (double)size * (double)page);
}

/* --- connections, from the listeners' tables --- */

static void render_connections(struct out *o, const struct metrics_view *v)
{
	static const char *const keys[] = {"listener", "cause"};

	header(o, "acceld_http_connections", "gauge", "Connections open now, by listener.");
	for (size_t i = 0; i < v->nlisteners; i++)
		sample(o, "acceld_http_connections", "", keys, &v->listeners[i].name, 1, NULL, NULL,
		       v->listeners[i].conns.open);
	header(o, "acceld_http_connections_max", "gauge",
	       "Connections a listener keeps open at most (--max-connections on the main one).");
	for (size_t i = 0; i < v->nlisteners; i++)
		sample(o, "acceld_http_connections_max", "", keys, &v->listeners[i].name, 1, NULL, NULL,
		       v->listeners[i].conns.max);
	header(o, "acceld_http_connections_refused_total", "counter",
	       "New connections closed at once because a budget was full and no open connection could make room, "
	       "by listener and cause (limit: the listener's budget, per_ip: the client address's).");
	for (size_t i = 0; i < v->nlisteners; i++) {
		for (int r = 0; r < CONNS_REFUSED_COUNT; r++) {
			const char *vals[] = {v->listeners[i].name, conns_refusal_name((enum conns_refusal)r)};

			sample(o, "acceld_http_connections_refused_total", "", keys, vals, 2, NULL, NULL,
			       (double)v->listeners[i].conns.refused[r]);
		}
	}
	header(o, "acceld_http_connections_evicted_total", "counter",
	       "Open connections closed to make room for a new one, by listener and cause (idle_keepalive: answered "
	       "and idle since; incomplete_request: silent, or its request late).");
	for (size_t i = 0; i < v->nlisteners; i++) {
		for (int e = 0; e < CONNS_EVICTED_COUNT; e++) {
			const char *vals[] = {v->listeners[i].name, conns_eviction_name((enum conns_eviction)e)};

			sample(o, "acceld_http_connections_evicted_total", "", keys, vals, 2, NULL, NULL,
			       (double)v->listeners[i].conns.evicted[e]);
		}
	}
	header(o, "acceld_http_connections_timed_out_total", "counter",
	       "Connections closed because a request had not arrived whole within the idle timeout, by listener.");
	for (size_t i = 0; i < v->nlisteners; i++)
		sample(o, "acceld_http_connections_timed_out_total", "", keys, &v->listeners[i].name, 1, NULL, NULL,
		       (double)v->listeners[i].conns.timed_out);
}

/* --- worker processes (the backends that run out of the daemon) --- */

static void render_workers(struct out *o, const struct metrics_view *v)
{
	static const char *const keys[] = {"backend", "cause"};

	header(o, "acceld_worker_starts_total", "counter", "Worker processes started, by backend.");
	for (size_t i = 0; i < v->nworkers; i++)
		sample(o, "acceld_worker_starts_total", "", keys, &v->workers[i].backend, 1, NULL, NULL,
		       (double)v->workers[i].starts);
	header(o, "acceld_worker_exits_total", "counter",
	       "Worker processes ended, by backend and cause (idle, deadline, crash, start).");
	for (size_t i = 0; i < v->nworkers; i++)
		for (size_t c = 0; c < METRICS_WORKER_CAUSES && v->workers[i].causes[c] != NULL; c++) {
			const char *vals[] = {v->workers[i].backend, v->workers[i].causes[c]};

			sample(o, "acceld_worker_exits_total", "", keys, vals, 2, NULL, NULL,
			       (double)v->workers[i].exits[c]);
		}
}

/* --- health checks, from the check module's summaries --- */

static void render_checks(struct out *o, const struct metrics_view *v)
{
	static const char *const keys[] = {"device", "verdict"};
	static const char *const ratio_keys[] = {"device", "test"};
	static const char *const verdicts[] = {"pass", "warn", "fail"};
	const char *matrix = kernel_name(kernel_for_figure(KERNEL_FIGURE_MATRIX));
	const char *memory = kernel_name(kernel_for_figure(KERNEL_FIGURE_MEMORY));
	char name[96];
	char help[128];

	header(o, "acceld_device_check_verdict", "gauge",
	       "The verdict of the device's last health check: 1 for it, 0 for the other two.");
	for (size_t i = 0; i < v->nchecks; i++) {
		const struct metrics_check *c = &v->checks[i];

		for (size_t k = 0; c->verdict != NULL && k < 3; k++) {
			const char *vals[] = {c->device, verdicts[k]};

			sample(o, "acceld_device_check_verdict", "", keys, vals, 2, NULL, NULL,
			       strcmp(c->verdict, verdicts[k]) == 0 ? 1 : 0);
		}
	}
	/* the tests are named by their kernels (the kernel table's) */
	snprintf(name, sizeof(name), "acceld_device_check_%s_flops_per_second", matrix);
	snprintf(help, sizeof(help), "Matrix throughput (%s, FLOP/s) the last health check measured.", matrix);
	header(o, name, "gauge", help);
	for (size_t i = 0; i < v->nchecks; i++)
		if (known(v->checks[i].gflops))
			sample(o, name, "", keys, &v->checks[i].device, 1, NULL, NULL, v->checks[i].gflops * 1e9);
	snprintf(name, sizeof(name), "acceld_device_check_%s_bytes_per_second", memory);
	snprintf(help, sizeof(help), "Memory bandwidth (STREAM %s, bytes/s) the last health check measured.", memory);
	header(o, name, "gauge", help);
	for (size_t i = 0; i < v->nchecks; i++)
		if (known(v->checks[i].gbytes_per_s))
			sample(o, name, "", keys, &v->checks[i].device, 1, NULL, NULL, v->checks[i].gbytes_per_s * 1e9);
	header(o, "acceld_device_check_ratio", "gauge",
	       "Measured over expected (spec table or computed peak) in the last health check, by test.");
	for (size_t i = 0; i < v->nchecks; i++) {
		const char *sg[] = {v->checks[i].device, matrix};
		const char *tr[] = {v->checks[i].device, memory};

		if (known(v->checks[i].matrix_ratio))
			sample(o, "acceld_device_check_ratio", "", ratio_keys, sg, 2, NULL, NULL,
			       v->checks[i].matrix_ratio);
		if (known(v->checks[i].memory_ratio))
			sample(o, "acceld_device_check_ratio", "", ratio_keys, tr, 2, NULL, NULL,
			       v->checks[i].memory_ratio);
	}
	header(o, "acceld_device_check_timestamp_seconds", "gauge", "When the device's last health check ended.");
	for (size_t i = 0; i < v->nchecks; i++)
		if (v->checks[i].finished_ms > 0)
			sample(o, "acceld_device_check_timestamp_seconds", "", keys, &v->checks[i].device, 1, NULL, NULL,
			       (double)v->checks[i].finished_ms / 1000.0);
	header(o, "acceld_device_check_running", "gauge", "1 while a health check of the device runs.");
	for (size_t i = 0; i < v->nchecks; i++)
		sample(o, "acceld_device_check_running", "", keys, &v->checks[i].device, 1, NULL, NULL,
		       v->checks[i].running ? 1 : 0);
	header(o, "acceld_device_checks_total", "counter",
	       "Health checks finished since acceld started, by device and verdict.");
	for (size_t i = 0; i < v->nchecks; i++) {
		for (size_t k = 0; k < 3; k++) {
			const char *vals[] = {v->checks[i].device, verdicts[k]};

			sample(o, "acceld_device_checks_total", "", keys, vals, 2, NULL, NULL,
			       (double)v->checks[i].finished[k]);
		}
	}
}

enum acceld_err metrics_render(struct metrics *m, const struct metrics_view *view, char **out, size_t *len)
{
	static const char *const build_keys[] = {"version", "commit"};
	const char *build_vals[] = {version_string(), version_commit()};
	struct out o;

	buf_init(&o.b, RENDER_MAX);
	o.full = false;
	header(&o, "acceld_build_info", "gauge", "1, with the version and commit of the running build as labels.");
	sample(&o, "acceld_build_info", "", build_keys, build_vals, 2, NULL, NULL, 1);
	render_process(&o, view);
	scalar(&o, "acceld_http_requests_in_flight", "gauge", "Requests received and not answered yet.",
	       view->http_inflight);
	render_connections(&o, view);
	render_registry(m, view, &o);
	render_devices(&o, view->devices);
	render_prices(&o, view);
	render_checks(&o, view);
	render_workers(&o, view);
	render_probes(&o, view->devices);
	if (o.full) {
		buf_release(&o.b);
		return ACCELD_ENOMEM;
	}
	*out = buf_detach(&o.b, len);
	return ACCELD_OK;
}
