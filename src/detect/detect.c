/*
 * detect: the device registry. A refresh runs the probes, merges what they saw into one entry per device, names
 * and orders the devices, fills table figures, and publishes a new immutable snapshot with its JSON already
 * written. Readers only take a reference under a short lock, so a refresh never blocks a request.
 */
#include "detect/detect.h"
#include "core/hwfile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/mem.h"
#include "detect/specs.h"

const struct probe_ops *const probe_builtin[] = {
	&probe_cpu_ops, &probe_opencl_ops, &probe_nvml_ops, &probe_sysfs_gpu_ops, &probe_tpu_ops, NULL,
};

#define ETAG_LEN 40

struct snap {
	struct detect_snapshot pub; /* first member: a snapshot pointer is a struct snap pointer */
	atomic_uint refs;
	struct device *devs;
	char **dev_json;
	size_t *dev_json_len;
	char (*dev_etag)[ETAG_LEN];
	struct detect_probe_status *probes;
	struct cloud_host host;     /* pub.host points here when the host is known */
	char *json;
};

struct detect {
	const struct config *cfg;
	const struct probe_ops **probes;
	size_t nprobes;
	void **states;
	struct probe_result *full_results; /* what each probe() said last time */
	bool *refresh_failing;             /* per probe: its telemetry refresh failed last time (logged once) */
	struct device_list devices;        /* the merged, named devices of the last refresh */
	detect_executable_fn executable;   /* who says which devices run jobs (under refresh_mu); NULL: the backends */
	struct cloud_host host;            /* what the host is (under refresh_mu) */
	bool host_known;                   /* detect_set_host has been called */
	void *executable_ctx;
	detect_decorate_fn decorate;       /* adds to each device of a snapshot (under refresh_mu); NULL none */
	detect_price_fn price;             /* prices the host (under refresh_mu); NULL: unpriced */
	detect_describe_fn describe;       /* adds to each device's document (under refresh_mu); NULL none */
	void *describe_ctx;
	void *price_ctx;
	void *decorate_ctx;
	uint64_t generation;
	pthread_mutex_t refresh_mu;        /* one refresh at a time */
	atomic_ullong full_started;  /* full refreshes begun (under refresh_mu) */
	atomic_ullong full_done;     /* the number of the last full refresh completed */
	pthread_mutex_t snap_mu;           /* guards current */
	struct snap *current;
	pthread_mutex_t thr_mu;
	pthread_cond_t thr_cv;
	bool thr_stop;
	bool thr_running;
	pthread_t thread;
};


static double ms_since(uint64_t t0)
{
	return (double)(clock_mono_ns() - t0) / 1e6;
}


/* --- merging --- */


#define FILL_STR(f)                                                                                               \
	do {                                                                                                      \
		if (dst->f[0] == '\0')                                                                            \
			DEVICE_SET(dst->f, src->f);                                                               \
	} while (0)
#define FILL_NUM(f)                                                                                               \
	do {                                                                                                      \
		if (isnan(dst->f))                                                                                \
			dst->f = src->f;                                                                          \
	} while (0)
#define FILL_ZERO(f)                                                                                              \
	do {                                                                                                      \
		if (dst->f == 0)                                                                                  \
			dst->f = src->f;                                                                          \
	} while (0)

/* Takes into dst what src knows and dst does not; the more trusted view becomes dst first. */
static void absorb(struct device *dst, const struct device *in)
{
	struct device tmp;
	const struct device *src = in;

	if (in->trust > dst->trust) {
		tmp = *dst;
		*dst = *in;
		src = &tmp;
	}
	FILL_STR(vendor);
	FILL_STR(model);
	FILL_STR(accelerator_type);
	FILL_STR(spec_key);
	FILL_STR(uuid);
	FILL_STR(pci_bus_id);
	if (dst->numa_node < 0)
		dst->numa_node = src->numa_node;
	FILL_ZERO(memory_total_bytes);
	FILL_ZERO(memory_available_bytes);
	FILL_ZERO(compute_units);
	FILL_ZERO(clock_mhz);
	dst->sources |= src->sources;
	if (dst->peak.source[0] == '\0') {
		FILL_NUM(peak.fp32_tflops);
		FILL_NUM(peak.bf16_tflops);
		FILL_NUM(peak.int8_tops);
		FILL_NUM(peak.memory_gbytes_per_s);
		FILL_STR(peak.source);
	}
	FILL_NUM(telemetry.utilization_ratio);
	FILL_NUM(telemetry.temperature_celsius);
	FILL_NUM(telemetry.power_watts);
	FILL_NUM(telemetry.power_limit_watts);
	FILL_NUM(telemetry.energy_joules);
	FILL_ZERO(telemetry.memory_used_bytes);
	FILL_NUM(telemetry.clock_mhz);
	FILL_NUM(telemetry.ecc_uncorrected);
	FILL_NUM(telemetry.ecc_corrected);
	if (dst->telemetry.retired_pages_pending < 0)
		dst->telemetry.retired_pages_pending = src->telemetry.retired_pages_pending;
	if (!dst->telemetry.throttle_known && src->telemetry.throttle_known) {
		dst->telemetry.throttle_known = true;
		dst->telemetry.throttle_reasons = src->telemetry.throttle_reasons;
	}
	if (src->telemetry.sampled_at_ms > dst->telemetry.sampled_at_ms)
		dst->telemetry.sampled_at_ms = src->telemetry.sampled_at_ms;
	if (isnan(dst->price.usd_per_hour) && isnan(dst->price.usd_per_hour_spot))
		dst->price = src->price;
	FILL_ZERO(cpu.packages);
	FILL_ZERO(cpu.cores);
	FILL_ZERO(cpu.pus);
	FILL_ZERO(cpu.numa_nodes);
	FILL_NUM(cpu.effective_cpus);
	FILL_NUM(cpu.quota_cpus);
	FILL_STR(cpu.cpuset);
	for (size_t i = 0; i < 4; i++)
		FILL_ZERO(cpu.cache_bytes[i]);
	FILL_STR(cpu.isa);
	FILL_STR(gpu.driver_version);
	FILL_STR(gpu.cuda_version);
	FILL_STR(gpu.compute_capability);
	if (dst->gpu.mig_mode < 0)
		dst->gpu.mig_mode = src->gpu.mig_mode;
	if (dst->gpu.cuda_ordinal < 0)
		dst->gpu.cuda_ordinal = src->gpu.cuda_ordinal;
	FILL_ZERO(gpu.clock_max_mhz);
	FILL_ZERO(gpu.memory_clock_mhz);
	FILL_ZERO(gpu.pci_device_id);
	FILL_ZERO(gpu.nvlink_domain);
	FILL_ZERO(gpu.nvlink_group);
	FILL_ZERO(gpu.slowdown_temperature_celsius);
	FILL_STR(gpu.driver);
	FILL_STR(tpu.generation);
	FILL_STR(tpu.accelerator_type);
	FILL_STR(tpu.topology);
	if (dst->tpu.worker_id < 0)
		dst->tpu.worker_id = src->tpu.worker_id;
	FILL_ZERO(tpu.chips);
	FILL_ZERO(tpu.cores_per_chip);
	FILL_STR(tpu.device_node);
	if (!dst->opencl.present && src->opencl.present)
		dst->opencl = src->opencl;
	/* a link is one view's reading, taken whole */
	if (dst->pcie.generation == 0 && dst->pcie.width == 0 && dst->pcie.max_generation == 0 &&
	    dst->pcie.max_width == 0)
		dst->pcie = src->pcie;
}

#undef FILL_STR
#undef FILL_NUM
#undef FILL_ZERO

static bool same_device(const struct device *a, const struct device *b)
{
	if (a->type != b->type)
		return false;
	if (a->pci_bus_id[0] != '\0' && strcmp(a->pci_bus_id, b->pci_bus_id) == 0)
		return true;
	return a->uuid[0] != '\0' && strcasecmp(a->uuid, b->uuid) == 0;
}

static bool opencl_only(const struct device *d)
{
	return (d->sources & SOURCE_OPENCL) && d->trust <= probe_opencl_ops.trust;
}

/*
 * An OpenCL GPU that gave no PCI bus id or UUID is the same card as a GPU another probe found when it is the only
 * such view of its vendor and that GPU is the only one of its vendor without an OpenCL view.
 */
static void merge_unaddressed(struct device_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct device *d = &l->v[i];
		size_t views = 0;
		size_t cands = 0;
		size_t cand = 0;

		if (d->type != DEVICE_GPU || !opencl_only(d) || d->pci_bus_id[0] != '\0')
			continue;
		for (size_t j = 0; j < l->n; j++) {
			const struct device *e = &l->v[j];

			if (e->type != DEVICE_GPU || strcasecmp(e->vendor, d->vendor) != 0)
				continue;
			if (opencl_only(e) && e->pci_bus_id[0] == '\0')
				views++;
			else if (!(e->sources & SOURCE_OPENCL)) {
				cands++;
				cand = j;
			}
		}
		if (views != 1 || cands != 1)
			continue;
		absorb(&l->v[cand], d);
		memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof(*l->v));
		l->n--;
		i--;
	}
}

struct order {
	const struct device *d;
	size_t seen; /* discovery order breaks ties, so devices without an address keep a stable place */
};

static int order_cmp(const void *pa, const void *pb)
{
	const struct order *a = pa;
	const struct order *b = pb;
	/* the registry lists kinds in enum order (CPUs, GPUs, TPUs) for stable ids; preference is device_type_rank's */
	int c = (int)a->d->type - (int)b->d->type;
	bool ha = a->d->pci_bus_id[0] != '\0';
	bool hb = b->d->pci_bus_id[0] != '\0';

	if (c != 0)
		return c;
	if (ha != hb)
		return ha ? -1 : 1;
	if (ha) {
		c = strcmp(a->d->pci_bus_id, b->d->pci_bus_id);
		if (c != 0)
			return c;
	}
	if (a->d->type == DEVICE_TPU && a->d->tpu.chip_index != b->d->tpu.chip_index)
		return a->d->tpu.chip_index < b->d->tpu.chip_index ? -1 : 1;
	return a->seen < b->seen ? -1 : a->seen > b->seen;
}

/* CPU vendor strings as CPUID gives them, in the short form the other devices use. */
static void short_vendor(struct device *d)
{
	if (strcmp(d->vendor, "GenuineIntel") == 0)
		DEVICE_SET(d->vendor, "Intel");
	else if (strcmp(d->vendor, "AuthenticAMD") == 0)
		DEVICE_SET(d->vendor, "AMD");
}

/* Turns the probes' raw views into the named device list out (which must be empty). */
static void merge_views(struct device_list *raw, struct device_list *out)
{
	struct device cpu;
	bool have_cpu = false;
	struct device_list tmp;
	struct order *ord;
	unsigned counters[3] = {0, 0, 0};

	device_list_init(&tmp);
	/* the host's CPUs are one device: the hwloc view first, every other CPU view (PoCL) folded into it */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < raw->n; i++) {
			struct device *d = &raw->v[i];
			bool primary = (d->sources & SOURCE_HWLOC) != 0;

			if (d->type != DEVICE_CPU || (pass == 0) != primary)
				continue;
			if (!have_cpu) {
				cpu = *d;
				have_cpu = true;
			} else {
				absorb(&cpu, d);
			}
		}
	}
	if (!have_cpu)
		device_init(&cpu, DEVICE_CPU);
	short_vendor(&cpu);
	device_list_add(&tmp, &cpu);

	for (size_t i = 0; i < raw->n; i++) {
		struct device *d = &raw->v[i];
		char bus[sizeof(d->pci_bus_id)];
		size_t j;

		if (d->type == DEVICE_CPU)
			continue;
		if (d->pci_bus_id[0] != '\0' && hwfile_pci_normalise(d->pci_bus_id, bus, sizeof(bus)) == 0)
			DEVICE_SET(d->pci_bus_id, bus);
		for (j = 1; j < tmp.n; j++)
			if (same_device(&tmp.v[j], d))
				break;
		if (j < tmp.n)
			absorb(&tmp.v[j], d);
		else
			device_list_add(&tmp, d);
	}
	merge_unaddressed(&tmp);

	ord = xcalloc(tmp.n, sizeof(*ord));
	for (size_t i = 0; i < tmp.n; i++)
		ord[i] = (struct order){.d = &tmp.v[i], .seen = i};
	qsort(ord, tmp.n, sizeof(*ord), order_cmp);
	for (size_t i = 0; i < tmp.n; i++) {
		struct device *d = device_list_add(out, ord[i].d);
		unsigned *c = &counters[d->type];

		snprintf(d->id, sizeof(d->id), "%s:%u", device_type_name(d->type), (*c)++);
		specs_apply(specs_for_device(d), d);
	}
	free(ord);
	device_list_release(&tmp);
}

/* --- snapshots --- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static void snap_free(struct snap *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->pub.n; i++)
		free(s->dev_json[i]);
	free(s->dev_json);
	free(s->dev_json_len);
	free(s->dev_etag);
	free(s->devs);
	free(s->probes);
	free(s->json);
	free(s);
}

static struct snap *snap_of(const struct detect_snapshot *pub)
{
	return (struct snap *)(uintptr_t)pub;
}

/* Builds a snapshot of det->devices with the given probe statuses; the caller holds refresh_mu. */
static struct snap *snap_build(struct detect *det, const struct probe_result *results, double refresh_ms,
			       bool full)
{
	struct snap *s = xcalloc(1, sizeof(*s));
	size_t n = det->devices.n;
	json_t *doc = json_object();
	json_t *devs = json_array();
	json_t *probes = json_array();
	json_t *host_doc = NULL;
	char when[CLOCK_RFC3339_LEN];

	atomic_init(&s->refs, 1);
	s->devs = xcalloc(n ? n : 1, sizeof(*s->devs));
	memcpy(s->devs, det->devices.v, n * sizeof(*s->devs));
	/* the executor says which devices run jobs (app.c asks it); without it, none does */
	for (size_t i = 0; i < n; i++) {
		s->devs[i].executable = det->executable && det->executable(det->executable_ctx, &s->devs[i]);
		if (det->decorate != NULL)
			det->decorate(det->decorate_ctx, &s->devs[i]);
	}
	s->dev_json = xcalloc(n ? n : 1, sizeof(*s->dev_json));
	s->dev_json_len = xcalloc(n ? n : 1, sizeof(*s->dev_json_len));
	s->dev_etag = xcalloc(n ? n : 1, sizeof(*s->dev_etag));
	/* the host's share of its price, where the host is known (the built-in table; overrides are cost.c's) */
	if (det->host_known) {
		s->host = det->host;
		s->pub.host = &s->host;
		s->pub.host_price = (struct detect_host_price){.usd_per_hour = NAN, .usd_per_hour_spot = NAN};
		host_doc = det->price ? det->price(det->price_ctx, &s->host, s->devs, n, &s->pub.host_price) : NULL;
	}
	s->probes = xcalloc(det->nprobes + 1, sizeof(*s->probes));
	s->pub.generation = ++det->generation;
	s->pub.taken_at_ms = clock_real_ms();
	s->pub.refresh_ms = refresh_ms;
	s->pub.full = full;

	for (size_t i = 0; i < n; i++) {
		json_t *dj = device_to_json(&s->devs[i]);

		if (det->describe != NULL)
			det->describe(det->describe_ctx, &s->devs[i], dj);
		s->dev_json[i] = jsonval_dumps(dj, JSON_COMPACT);
		if (s->dev_json[i] == NULL)
			s->dev_json[i] = xstrdup("{}");
		s->dev_json_len[i] = strlen(s->dev_json[i]);
		snprintf(s->dev_etag[i], ETAG_LEN, "\"d-%016llx\"",
			 (unsigned long long)fnv1a(s->dev_json[i], s->dev_json_len[i]));
		json_array_append_new(devs, dj);
	}
	for (size_t i = 0; i < det->nprobes; i++) {
		const struct probe_result *r = &results[i];

		s->probes[i] = (struct detect_probe_status){.name = det->probes[i]->name, .result = *r};
		json_array_append_new(probes, json_pack("{s:s, s:b, s:b, s:I, s:s, s:f}", "name",
							det->probes[i]->name, "ok", r->ok, "available",
							r->available, "found", (json_int_t)r->found, "why", r->why,
							"duration_ms", r->duration_ms));
	}
	if (det->host_known) {
		/* the metadata service is one more source: its failure is a note, never an error */
		struct probe_result r = {.ok = true,
					 .available = s->host.state == CLOUD_KNOWN || s->host.state == CLOUD_FAILED};

		snprintf(r.why, sizeof(r.why), "%s", s->host.note);
		s->probes[det->nprobes] = (struct detect_probe_status){.name = "cloud", .result = r};
		json_array_append_new(probes, json_pack("{s:s, s:b, s:b, s:I, s:s, s:f}", "name", "cloud", "ok", 1,
							"available", r.available, "found", (json_int_t)0, "why",
							r.why, "duration_ms", 0.0));
		if (host_doc != NULL)
			json_object_set_new(doc, "host", host_doc);
	}
	clock_rfc3339(s->pub.taken_at_ms, when);
	json_object_set_new(doc, "generation", json_integer((json_int_t)s->pub.generation));
	json_object_set_new(doc, "taken_at", json_string(when));
	json_object_set_new(doc, "devices", devs);
	json_object_set_new(doc, "probes", probes);
	s->json = jsonval_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (s->json == NULL)
		s->json = xstrdup("{}");
	s->pub.devices = s->devs;
	s->pub.n = n;
	s->pub.json = s->json;
	s->pub.json_len = strlen(s->json);
	snprintf(s->pub.etag, sizeof(s->pub.etag), "\"%llu-%016llx\"", (unsigned long long)s->pub.generation,
		 (unsigned long long)fnv1a(s->json, s->pub.json_len));
	s->pub.probes = s->probes;
	s->pub.nprobes = det->nprobes + (det->host_known ? 1 : 0);
	return s;
}

static void publish(struct detect *det, struct snap *s)
{
	struct snap *old;

	pthread_mutex_lock(&det->snap_mu);
	old = det->current;
	det->current = s;
	pthread_mutex_unlock(&det->snap_mu);
	if (old != NULL)
		detect_release(&old->pub);
}

/* --- refresh --- */

bool detect_same_hardware(const struct device *a, const struct device *b)
{
	return !(a->pci_bus_id[0] && b->pci_bus_id[0] && strcmp(a->pci_bus_id, b->pci_bus_id) != 0) &&
	       !(a->uuid[0] && b->uuid[0] && strcasecmp(a->uuid, b->uuid) != 0);
}

/* Logs, as msg at level, each device of from that in does not keep (same id, same hardware). */
static void log_missing(const struct device_list *from, const struct device_list *in, enum log_level level,
			const char *msg)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct device *d = &from->v[i];
		bool kept = false;

		for (size_t j = 0; j < in->n && !kept; j++)
			kept = strcmp(in->v[j].id, d->id) == 0 && detect_same_hardware(&in->v[j], d);
		if (!kept)
			log_fields(level, "detect", msg,
				   (struct log_field[]){LOG_S("device", d->id), LOG_S("pci_bus_id", d->pci_bus_id),
							LOG_S("uuid", d->uuid)},
				   3);
	}
}

static void run_full(struct detect *det)
{
	struct device_list raw;
	struct device_list merged;

	device_list_init(&raw);
	device_list_init(&merged);
	for (size_t i = 0; i < det->nprobes; i++) {
		struct probe_result r;
		size_t before = raw.n;
		uint64_t t0 = clock_mono_ns();

		memset(&r, 0, sizeof(r));
		det->probes[i]->probe(&det->states[i], det->cfg, &raw, &r);
		r.duration_ms = ms_since(t0);
		r.found = (unsigned)(raw.n - before);
		for (size_t k = before; k < raw.n; k++)
			raw.v[k].trust = det->probes[i]->trust;
		det->full_results[i] = r;
		if (!r.ok)
			log_fields(LOGL_WARN, "detect", "probe failed",
				   (struct log_field[]){LOG_S("probe", det->probes[i]->name), LOG_S("why", r.why)}, 2);
	}
	merge_views(&raw, &merged);
	device_list_release(&raw);
	/* a refresh that loses or gains devices says which (a GPU fallen off the bus, a driver unbound) */
	if (det->generation > 0) {
		log_missing(&det->devices, &merged, LOGL_WARN, "device gone");
		log_missing(&merged, &det->devices, LOGL_INFO, "device found");
	}
	device_list_release(&det->devices);
	det->devices = merged;
}

/* Telemetry only; a probe whose refresh fails shows it in the snapshot's status until it succeeds again. */
static void run_telemetry(struct detect *det, struct probe_result *results)
{
	for (size_t i = 0; i < det->nprobes; i++) {
		struct probe_result r;
		uint64_t t0 = clock_mono_ns();

		results[i] = det->full_results[i];
		if (det->probes[i]->refresh == NULL)
			continue;
		memset(&r, 0, sizeof(r));
		r.ok = true;
		det->probes[i]->refresh(&det->states[i], det->cfg, &det->devices, &r);
		if (!r.ok) {
			results[i].ok = false;
			snprintf(results[i].why, sizeof(results[i].why), "refresh: %.240s", r.why);
			results[i].duration_ms = ms_since(t0);
		}
		/* said once when it starts failing and once when it recovers, not at every tick */
		if (!r.ok != det->refresh_failing[i]) {
			det->refresh_failing[i] = !r.ok;
			if (r.ok)
				log_fields(LOGL_INFO, "detect", "telemetry refresh recovered",
					   (struct log_field[]){LOG_S("probe", det->probes[i]->name)}, 1);
			else
				log_fields(LOGL_WARN, "detect", "telemetry refresh failed",
					   (struct log_field[]){LOG_S("probe", det->probes[i]->name),
								LOG_S("why", r.why)},
					   2);
		}
	}
}

void detect_refresh(struct detect *det, bool full)
{
	uint64_t t0 = clock_mono_ns();
	struct probe_result *results = xcalloc(det->nprobes ? det->nprobes : 1, sizeof(*results));
	struct snap *s;
	size_t n;
	uint64_t generation;
	double refresh_ms;
	unsigned long long asked_at = atomic_load(&det->full_started);

	pthread_mutex_lock(&det->refresh_mu);
	/* callers that queued behind a full refresh begun after they asked share its result */
	if (full && atomic_load(&det->full_done) > asked_at) {
		pthread_mutex_unlock(&det->refresh_mu);
		free(results);
		return;
	}
	if (full) {
		atomic_store(&det->full_started, atomic_load(&det->full_started) + 1);
		run_full(det);
		memcpy(results, det->full_results, det->nprobes * sizeof(*results));
	} else {
		run_telemetry(det, results);
	}
	s = snap_build(det, results, ms_since(t0), full);
	/* read before publishing: once the lock is dropped a later refresh may replace and free s */
	n = s->pub.n;
	generation = s->pub.generation;
	refresh_ms = s->pub.refresh_ms;
	publish(det, s);
	if (full)
		atomic_store(&det->full_done, atomic_load(&det->full_started));
	pthread_mutex_unlock(&det->refresh_mu);
	if (full)
		log_fields(LOGL_DEBUG, "detect", "devices probed",
			   (struct log_field[]){LOG_I("devices", n), LOG_I("generation", generation),
						LOG_D("duration_ms", refresh_ms)},
			   3);
	free(results);
}

void detect_set_executable(struct detect *det, detect_executable_fn fn, void *ctx)
{
	pthread_mutex_lock(&det->refresh_mu);
	det->executable = fn;
	det->executable_ctx = ctx;
	pthread_mutex_unlock(&det->refresh_mu);
	detect_refresh(det, false);
}

void detect_set_host(struct detect *det, const struct cloud_host *host, detect_price_fn price, void *ctx)
{
	pthread_mutex_lock(&det->refresh_mu);
	det->host = *host;
	det->host_known = true;
	det->price = price;
	det->price_ctx = ctx;
	pthread_mutex_unlock(&det->refresh_mu);
	detect_refresh(det, false);
}

void detect_set_describe(struct detect *det, detect_describe_fn fn, void *ctx)
{
	pthread_mutex_lock(&det->refresh_mu);
	det->describe = fn;
	det->describe_ctx = ctx;
	pthread_mutex_unlock(&det->refresh_mu);
	detect_refresh(det, false);
}

void detect_set_decorate(struct detect *det, detect_decorate_fn fn, void *ctx)
{
	pthread_mutex_lock(&det->refresh_mu);
	det->decorate = fn;
	det->decorate_ctx = ctx;
	pthread_mutex_unlock(&det->refresh_mu);
	detect_refresh(det, false);
}

struct detect *detect_new(const struct config *cfg, const struct probe_ops *const *probes, size_t nprobes)
{
	struct detect *det = xcalloc(1, sizeof(*det));
	pthread_condattr_t ca;

	if (probes == NULL) {
		probes = probe_builtin;
		for (nprobes = 0; probe_builtin[nprobes] != NULL; nprobes++)
			;
	}
	det->cfg = cfg;
	det->nprobes = nprobes;
	det->probes = xcalloc(nprobes ? nprobes : 1, sizeof(*det->probes));
	for (size_t i = 0; i < nprobes; i++)
		det->probes[i] = probes[i];
	det->states = xcalloc(nprobes ? nprobes : 1, sizeof(*det->states));
	det->full_results = xcalloc(nprobes ? nprobes : 1, sizeof(*det->full_results));
	det->refresh_failing = xcalloc(nprobes ? nprobes : 1, sizeof(*det->refresh_failing));
	device_list_init(&det->devices);
	pthread_mutex_init(&det->refresh_mu, NULL);
	pthread_mutex_init(&det->snap_mu, NULL);
	pthread_mutex_init(&det->thr_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&det->thr_cv, &ca);
	pthread_condattr_destroy(&ca);
	detect_refresh(det, true);
	return det;
}

static void *refresher(void *arg)
{
	struct detect *det = arg;
	uint64_t tel_ns = det->cfg->telemetry_interval_ms * 1000000ull;
	uint64_t top_ns = det->cfg->topology_interval_ms * 1000000ull;
	uint64_t next_tel = clock_mono_ns() + tel_ns;
	uint64_t next_top = clock_mono_ns() + top_ns;

	for (;;) {
		uint64_t due = next_tel < next_top ? next_tel : next_top;
		struct timespec ts = clock_timespec_from_ns(due);
		bool stop;
		uint64_t now;

		pthread_mutex_lock(&det->thr_mu);
		while (!det->thr_stop && clock_mono_ns() < due)
			if (pthread_cond_timedwait(&det->thr_cv, &det->thr_mu, &ts) == ETIMEDOUT)
				break;
		stop = det->thr_stop;
		pthread_mutex_unlock(&det->thr_mu);
		if (stop)
			break;
		now = clock_mono_ns();
		if (now >= next_top) {
			detect_refresh(det, true);
			next_top = now + top_ns;
			next_tel = now + tel_ns;
		} else if (now >= next_tel) {
			detect_refresh(det, false);
			next_tel = now + tel_ns;
		}
	}
	return NULL;
}

enum acceld_err detect_start(struct detect *det)
{
	if (det->thr_running)
		return ACCELD_OK;
	det->thr_stop = false;
	if (pthread_create(&det->thread, NULL, refresher, det) != 0)
		return ACCELD_ENOMEM;
	det->thr_running = true;
	return ACCELD_OK;
}

void detect_free(struct detect *det)
{
	if (det == NULL)
		return;
	if (det->thr_running) {
		pthread_mutex_lock(&det->thr_mu);
		det->thr_stop = true;
		pthread_cond_signal(&det->thr_cv);
		pthread_mutex_unlock(&det->thr_mu);
		pthread_join(det->thread, NULL);
	}
	for (size_t i = 0; i < det->nprobes; i++)
		if (det->probes[i]->release != NULL && det->states[i] != NULL)
			det->probes[i]->release(det->states[i]);
	publish(det, NULL);
	device_list_release(&det->devices);
	pthread_cond_destroy(&det->thr_cv);
	pthread_mutex_destroy(&det->thr_mu);
	pthread_mutex_destroy(&det->snap_mu);
	pthread_mutex_destroy(&det->refresh_mu);
	free(det->full_results);
	free(det->refresh_failing);
	free(det->states);
	free(det->probes);
	free(det);
}

const struct detect_snapshot *detect_acquire(struct detect *det)
{
	struct snap *s;

	pthread_mutex_lock(&det->snap_mu);
	s = det->current;
	atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&det->snap_mu);
	return &s->pub;
}

void detect_release(const struct detect_snapshot *pub)
{
	struct snap *s;

	if (pub == NULL)
		return;
	s = snap_of(pub);
	if (atomic_fetch_sub(&s->refs, 1) == 1)
		snap_free(s);
}

static long find_index(const struct detect_snapshot *snap, const char *id)
{
	if (snap == NULL || id == NULL)
		return -1;
	for (size_t i = 0; i < snap->n; i++)
		if (strcmp(snap->devices[i].id, id) == 0)
			return (long)i;
	return -1;
}

const struct device *detect_find(const struct detect_snapshot *snap, const char *id)
{
	long i = find_index(snap, id);

	return i < 0 ? NULL : &snap->devices[i];
}

const char *detect_device_json(const struct detect_snapshot *snap, const char *id, size_t *len)
{
	long i = find_index(snap, id);

	if (i < 0)
		return NULL;
	if (len != NULL)
		*len = snap_of(snap)->dev_json_len[i];
	return snap_of(snap)->dev_json[i];
}

const char *detect_device_etag(const struct detect_snapshot *snap, const char *id)
{
	long i = find_index(snap, id);

	return i < 0 ? NULL : snap_of(snap)->dev_etag[i];
}

json_t *detect_device_doc(const struct detect_snapshot *snap, const struct device *dev)
{
	size_t len;
	const char *text = snap != NULL ? detect_device_json(snap, dev->id, &len) : NULL;
	json_t *doc = text != NULL ? json_loadb(text, len, 0, NULL) : NULL;

	return doc != NULL ? doc : device_to_json(dev);
}
