/* select: preference, constraints and policy -> the device to use, why, and the environment to export. */
#include "select/select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonval.h"
#include "core/mem.h"

/* auto order: TPU > GPU > CPU (device_type_rank) */
static const enum device_type auto_order[3] = {DEVICE_TPU, DEVICE_GPU, DEVICE_CPU};

static const char *type_upper(enum device_type t)
{
	switch (t) {
	case DEVICE_CPU:
		return "CPU";
	case DEVICE_GPU:
		return "GPU";
	case DEVICE_TPU:
		return "TPU";
	}
	return "device";
}

/* --- request fields --- */

static const char *const policy_names[] = {"priority", "fastest", "cheapest", "efficient"};
static const char *const format_names[] = {"json", "env"};
static const char *const scope_names[] = {"chip", "host"};
static const char *const prefer_names[] = {"auto", "cpu", "gpu", "tpu"};

const char *const select_param_names[] = {"prefer",	    "allow_tpu",  "policy", "device", "min_memory_bytes",
					  "executable", "kernel", "format", "tpu_scope", NULL};

/* What each field takes: a set of names (", "-separated), or, where the values form no set, a phrase. */
static const struct {
	const char *name;
	const char *values;
	const char *what;
} params[] = {
	{"prefer", "auto, cpu, gpu, tpu", NULL},
	{"allow_tpu", CONFIG_BOOL_VALUES, NULL},
	{"policy", "priority, fastest, cheapest, efficient", NULL},
	{"device", NULL, DEVICE_ID_SYNTAX},
	{"min_memory_bytes", NULL, "a size in bytes from 0 to 9223372036854775807, such as 17179869184, 16GiB or 16GB (" CONFIG_SIZE_UNITS ")"},
	{"executable", CONFIG_BOOL_VALUES, NULL},
	{"kernel", NULL, NULL}, /* the kernel table's names */
	{"format", "json, env", NULL},
	{"tpu_scope", "chip, host", NULL},
};

static int param_index(const char *name)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (strcmp(params[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *select_param_values(const char *name)
{
	int i = param_index(name);

	if (i < 0)
		return NULL;
	return strcmp(name, "kernel") == 0 ? kernel_names_text() : params[i].values;
}

const char *select_param_accepted(const char *name)
{
	int i = param_index(name);
	const char *values = select_param_values(name);

	if (values != NULL)
		return values;
	return i >= 0 ? params[i].what : NULL;
}

/* "one of auto, cpu, gpu, tpu", or the phrase of a field whose values form no set: what err says it is not. */
static void param_what(const char *name, char *out, size_t outsz)
{
	const char *values = select_param_values(name);
	int i = param_index(name);

	if (values != NULL)
		snprintf(out, outsz, "one of %s", values);
	else
		snprintf(out, outsz, "%s", i >= 0 && params[i].what ? params[i].what : "a valid value");
}

const char *select_policy_name(enum select_policy p)
{
	return (unsigned)p < 4 ? policy_names[p] : "priority";
}

void select_request_init(struct select_request *req, const struct config *cfg)
{
	memset(req, 0, sizeof(*req));
	req->prefer = cfg ? cfg->prefer : PREFER_AUTO;
	req->allow_tpu = cfg ? cfg->allow_tpu : true;
	req->policy = SELECT_PRIORITY;
	req->kernel = -1;
	req->format = SELECT_FORMAT_JSON;
	req->tpu_scope = SELECT_TPU_CHIP;
}

/* Index of text among names[0..n) (skipping empty names), or -1. */
static int name_index(const char *const *names, size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (names[i][0] != '\0' && strcmp(names[i], text) == 0)
			return (int)i;
	return -1;
}

/* Sets one field from text; err names the field ("prefer: 'x' is not ...") when named, else starts at the value. */
static enum acceld_err set_field(struct select_request *req, const char *name, const char *value, bool named,
				 char *err, size_t errsz)
{
	char what[160];
	int idx = 0;
	bool ok = true;

	if (param_index(name) < 0) {
		snprintf(err, errsz, "unknown parameter '%.64s'", name);
		return ACCELD_ENOTFOUND;
	}
	if (strcmp(name, "prefer") == 0) {
		idx = name_index(prefer_names, 4, value);
		ok = idx >= 0;
		if (ok)
			req->prefer = idx;
	} else if (strcmp(name, "allow_tpu") == 0) {
		ok = config_parse_bool(value, &req->allow_tpu) == 0;
	} else if (strcmp(name, "executable") == 0) {
		ok = config_parse_bool(value, &req->executable) == 0;
	} else if (strcmp(name, "policy") == 0) {
		idx = name_index(policy_names, 4, value);
		ok = idx >= 0;
		if (ok)
			req->policy = (enum select_policy)idx;
	} else if (strcmp(name, "kernel") == 0) {
		enum kernel_id k;

		ok = kernel_parse(value, &k);
		if (ok)
			req->kernel = (int)k;
	} else if (strcmp(name, "format") == 0) {
		idx = name_index(format_names, 2, value);
		ok = idx >= 0;
		if (ok)
			req->format = (enum select_format)idx;
	} else if (strcmp(name, "tpu_scope") == 0) {
		idx = name_index(scope_names, 2, value);
		ok = idx >= 0;
		if (ok)
			req->tpu_scope = (enum select_tpu_scope)idx;
	} else if (strcmp(name, "device") == 0) {
		ok = device_id_valid(value);
		if (ok)
			DEVICE_SET(req->device, value);
	} else if (strcmp(name, "min_memory_bytes") == 0) {
		uint64_t v;

		ok = config_parse_size(value, &v) == 0 && v <= (uint64_t)SELECT_MAX_MIN_MEMORY;
		if (ok)
			req->min_memory_bytes = v;
	}
	if (ok)
		return ACCELD_OK;
	param_what(name, what, sizeof(what));
	snprintf(err, errsz, "%s%s'%.64s' is not %s", named ? name : "", named ? ": " : "", value, what);
	return ACCELD_EINVAL;
}

enum acceld_err select_request_set(struct select_request *req, const char *name, const char *value, char *err,
				   size_t errsz)
{
	return set_field(req, name, value, true, err, errsz);
}

/* JSON types of the fields: s string, b boolean, z a size (an integer, or a string with a unit: "16GiB"). */
static char json_kind(const char *name)
{
	static const struct {
		const char *name;
		char kind;
	} kinds[] = {
		{"prefer", 's'},     {"allow_tpu", 'b'}, {"policy", 's'}, {"device", 's'},    {"min_memory_bytes", 'z'},
		{"executable", 'b'}, {"kernel", 's'},    {"format", 's'}, {"tpu_scope", 's'},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return kinds[i].kind;
	return 0;
}

enum acceld_err select_request_set_json(struct select_request *req, const char *name, json_t *value,
					const char **expected, char *err, size_t errsz)
{
	char text[64];
	const char *s = text;
	char kind = json_kind(name);

	*expected = NULL;
	if (kind == 0) {
		snprintf(err, errsz, "unknown field '%.64s'", name);
		return ACCELD_ENOTFOUND;
	}
	/* null leaves the default in place, as if the field were absent */
	if (json_is_null(value))
		return ACCELD_OK;
	if (kind == 's' && !json_is_string(value))
		*expected = "a string";
	else if (kind == 'b' && !json_is_boolean(value))
		*expected = "a boolean";
	else if (kind == 'z' && !json_is_integer(value) && !json_is_string(value))
		*expected = "an integer or a string with a unit, such as \"16GiB\"";
	if (*expected != NULL) {
		snprintf(err, errsz, "expected %s", *expected);
		return ACCELD_EINVAL;
	}
	if (kind == 's' || (kind == 'z' && json_is_string(value))) {
		s = json_string_value(value);
		if (strlen(s) != json_string_length(value)) {
			snprintf(err, errsz, "the value holds a NUL character");
			return ACCELD_EINVAL;
		}
	} else if (kind == 'b') {
		s = json_is_true(value) ? "true" : "false";
	} else {
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
	}
	return set_field(req, name, s, false, err, errsz);
}

/* --- figures --- */

enum kernel_id select_kernel(int hint)
{
	return hint >= 0 ? (enum kernel_id)hint : kernel_for_figure(KERNEL_FIGURE_MATRIX);
}

/* the kernel hint: no hint counts as compute-bound dense work */
static bool kernel_memory_bound(int k)
{
	return k >= 0 && !kernel_compute_bound((enum kernel_id)k);
}

static bool usable(double v)
{
	return isfinite(v) && v > 0;
}

static const struct select_measured *find_measured(const struct select_measured *m, size_t nm, const char *id,
						   const char *kernel)
{
	for (size_t i = 0; i < nm; i++)
		if (m[i].device_id && m[i].kernel && strcmp(m[i].device_id, id) == 0 &&
		    strcmp(m[i].kernel, kernel) == 0)
			return &m[i];
	return NULL;
}

/*
 * The throughput that counts for the kernel: measured when the caller has a figure for this device and kernel,
 * else the peak. Compute-bound work (or no hint) in GFLOP/s, memory-bound work in GB/s.
 */
static double throughput(const struct device *d, int k, const struct select_measured *m, size_t nm,
			 const char **figure, const char **source)
{
	const struct select_measured *hit;
	const char *kname = kernel_name(select_kernel(k));
	bool checked;

	hit = find_measured(m, nm, d->id, kname);
	*source = NULL;
	*figure = NULL;
	/* a health check measured the device on purpose; finished jobs measured it as they came */
	checked = hit != NULL && hit->source != NULL && strcmp(hit->source, "check") == 0;
	if (kernel_memory_bound(k)) {
		if (hit && usable(hit->gbytes_per_s)) {
			*figure = checked ? "GB/s measured by a health check" : "measured GB/s";
			*source = checked ? "check" : "measured";
			return hit->gbytes_per_s;
		}
		if (usable(d->peak.memory_gbytes_per_s)) {
			*figure = "peak memory bandwidth GB/s";
			*source = "peak";
			return d->peak.memory_gbytes_per_s;
		}
		return NAN;
	}
	if (hit && usable(hit->gflops)) {
		*figure = checked ? "GFLOP/s measured by a health check" : "measured GFLOP/s";
		*source = checked ? "check" : "measured";
		return hit->gflops;
	}
	/* without a hint, dense training is bf16 where the device has it; the matrix kernel is fp32 */
	if (k < 0 && usable(d->peak.bf16_tflops)) {
		*figure = "peak bf16 GFLOP/s";
		*source = "peak";
		return d->peak.bf16_tflops * 1000.0;
	}
	if (usable(d->peak.fp32_tflops)) {
		*figure = "peak fp32 GFLOP/s";
		*source = "peak";
		return d->peak.fp32_tflops * 1000.0;
	}
	return NAN;
}

size_t select_prices(const struct device *devs, const double *usd, size_t n, struct select_measured *m, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < cap; i++)
		if (isfinite(usd[i]))
			m[k++] = (struct select_measured){.device_id = devs[i].id, .gflops = NAN, .gbytes_per_s = NAN,
							  .usd_per_hour = usd[i]};
	return k;
}

/* The price in force of d: the caller's entry of price for it, else the built-in one. */
static double price_of(const struct device *d, const struct select_measured *m, size_t nm)
{
	for (size_t i = 0; i < nm; i++)
		if (m[i].kernel == NULL && m[i].device_id != NULL && strcmp(m[i].device_id, d->id) == 0 &&
		    isfinite(m[i].usd_per_hour))
			return m[i].usd_per_hour;
	return d->price.usd_per_hour;
}

static void score_candidate(struct select_candidate *c, const struct select_request *req,
			    const struct select_measured *m, size_t nm)
{
	const struct device *d = c->dev;
	double price = price_of(d, m, nm);
	double tp;
	const char *figure;
	const char *source;

	c->score = NAN;
	switch (req->policy) {
	case SELECT_PRIORITY:
		break;
	case SELECT_FASTEST:
		c->score = throughput(d, req->kernel, m, nm, &c->figure, &c->source);
		break;
	case SELECT_CHEAPEST:
		c->figure = "USD per hour";
		if (isfinite(price) && price >= 0) {
			c->score = price;
			c->source = "price";
		}
		break;
	case SELECT_EFFICIENT:
		tp = throughput(d, req->kernel, m, nm, &figure, &source);
		c->figure = kernel_memory_bound(req->kernel) ? "GB/s per USD/h" : "GFLOP/s per USD/h";
		/* a price of zero has no meaningful ratio; such devices go unranked rather than infinitely good */
		if (isfinite(tp) && isfinite(price) && price > 0) {
			c->score = tp / price;
			c->source = source;
		}
		break;
	}
	/* the figure its words say (6 significant digits, as describe_score writes it), not 332.28799999999995 */
	c->score = jsonval_round(c->score, 6);
}

/* --- constraints --- */

static void human_bytes(uint64_t b, char *out, size_t outsz)
{
	if (b >= (1ull << 30))
		snprintf(out, outsz, "%.1f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(out, outsz, "%.1f MiB", (double)b / (double)(1ull << 20));
	else
		snprintf(out, outsz, "%llu bytes", (unsigned long long)b);
}

/* Marks c excluded when a constraint rules its device out. */
static void check_constraints(struct select_candidate *c, const struct select_request *req)
{
	const struct device *d = c->dev;
	uint64_t mem = d->memory_available_bytes ? d->memory_available_bytes : d->memory_total_bytes;
	char have[32];
	char need[32];

	c->eligible = true;
	if (req->device[0] != '\0' && strcmp(req->device, d->id) != 0) {
		c->eligible = false;
		c->excluded_by = "device";
		snprintf(c->why, sizeof(c->why), "not the pinned device %s", req->device);
		return;
	}
	if (d->type == DEVICE_TPU && !req->allow_tpu) {
		c->eligible = false;
		c->excluded_by = "allow_tpu";
		snprintf(c->why, sizeof(c->why), "TPUs are not allowed (allow_tpu=false)");
		return;
	}
	if (req->min_memory_bytes > 0 && mem < req->min_memory_bytes) {
		c->eligible = false;
		c->excluded_by = "min_memory_bytes";
		human_bytes(req->min_memory_bytes, need, sizeof(need));
		if (mem == 0) {
			snprintf(c->why, sizeof(c->why), "memory size unknown; min_memory_bytes=%llu (%s) asked",
				 (unsigned long long)req->min_memory_bytes, need);
		} else {
			human_bytes(mem, have, sizeof(have));
			snprintf(c->why, sizeof(c->why), "has %llu bytes (%s) %s, min_memory_bytes=%llu (%s) asked",
				 (unsigned long long)mem, have, d->memory_available_bytes ? "available" : "in total",
				 (unsigned long long)req->min_memory_bytes, need);
		}
		return;
	}
	if (req->executable && !d->executable) {
		c->eligible = false;
		c->excluded_by = "executable";
		snprintf(c->why, sizeof(c->why), "no /run backend for this device (executable=true asked)");
	}
}

/* --- ranking --- */

/* True when candidate a ranks before b under the policy: better score, then known before unknown, then the auto
 * order, then the registry order (the array index). */
static bool ranks_before(const struct select_candidate *a, size_t ia, const struct select_candidate *b, size_t ib,
			 enum select_policy policy)
{
	bool ka = !isnan(a->score);
	bool kb = !isnan(b->score);
	unsigned ta = device_type_rank(a->dev->type);
	unsigned tb = device_type_rank(b->dev->type);

	if (policy != SELECT_PRIORITY) {
		if (ka != kb)
			return ka;
		if (ka && a->score != b->score)
			return policy == SELECT_CHEAPEST ? a->score < b->score : a->score > b->score;
	}
	if (ta != tb)
		return ta < tb;
	return ia < ib;
}

/* Sorts idx[0..n) (indices into cands) best first; n is small, so insertion sort. */
static void rank_pool(const struct select_candidate *cands, size_t *idx, size_t n, enum select_policy policy)
{
	for (size_t i = 1; i < n; i++) {
		size_t v = idx[i];
		size_t j = i;

		while (j > 0 && ranks_before(&cands[v], v, &cands[idx[j - 1]], idx[j - 1], policy)) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = v;
	}
}

static void describe_score(const struct select_candidate *c, char *out, size_t outsz)
{
	if (isnan(c->score))
		snprintf(out, outsz, "no %s known", c->figure ? c->figure : "figure");
	else
		snprintf(out, outsz, "%.6g %s", c->score, c->figure);
}

/* Writes "tpu:0, tpu:1 (executable); cpu:0 (min_memory_bytes)" style text: what each constraint excluded. */
static void exclusion_summary(const struct select_result *res, char *out, size_t outsz)
{
	static const char *const constraints[] = {"device", "allow_tpu", "min_memory_bytes", "executable"};
	size_t len = 0;

	out[0] = '\0';
	for (size_t k = 0; k < 4; k++) {
		size_t count = 0;

		for (size_t i = 0; i < res->ncandidates; i++) {
			const struct select_candidate *c = &res->candidates[i];

			if (c->eligible || c->excluded_by == NULL || strcmp(c->excluded_by, constraints[k]) != 0)
				continue;
			if (len < outsz)
				len += (size_t)snprintf(out + len, outsz - len, "%s%s", count ? ", " : (len ? "; " : ""),
							c->dev->id);
			count++;
		}
		if (count > 0 && len < outsz)
			len += (size_t)snprintf(out + len, outsz - len, " excluded by %s", constraints[k]);
	}
}

/* Why devices of the preferred kind were not used, for the fallback sentence. */
static void fallback_cause(const struct select_result *res, enum device_type want, char *out, size_t outsz)
{
	size_t present = 0;
	const char *by = NULL;
	bool mixed = false;

	for (size_t i = 0; i < res->ncandidates; i++) {
		const struct select_candidate *c = &res->candidates[i];

		if (c->dev->type != want)
			continue;
		present++;
		if (by != NULL && c->excluded_by != NULL && strcmp(by, c->excluded_by) != 0)
			mixed = true;
		if (by == NULL)
			by = c->excluded_by;
	}
	if (present == 0)
		snprintf(out, outsz, "no %s detected", type_upper(want));
	else if (by != NULL && strcmp(by, "allow_tpu") == 0)
		snprintf(out, outsz, "TPUs are not allowed (allow_tpu=false)");
	else if (by != NULL && !mixed)
		snprintf(out, outsz, "no %s meets the constraints (%zu excluded by %s)", type_upper(want), present, by);
	else
		snprintf(out, outsz, "no %s meets the constraints", type_upper(want));
}

static void fill_env(const struct device *devs, size_t n, const struct select_request *req,
		     struct select_result *res)
{
	envfmt_init(&res->env);
	if (res->device)
		select_env(devs, n, res->device, req->tpu_scope, &res->env);
}

enum acceld_err select_choose(const struct device *devs, size_t n, const struct select_request *req,
			      const struct select_measured *measured, size_t nmeasured, struct select_result *out)
{
	size_t *pool = NULL;
	size_t npool = 0;
	size_t neligible = 0;
	enum device_type tier = DEVICE_CPU;
	bool want_kind = req->prefer != PREFER_AUTO;
	enum device_type want = req->prefer == PREFER_CPU ? DEVICE_CPU
				: req->prefer == PREFER_GPU ? DEVICE_GPU
							    : DEVICE_TPU;
	const struct select_candidate *best;
	char score[96];
	char summary[256];
	enum device_type chain[3];
	size_t nchain = 0;
	size_t k;
	enum acceld_err rc = ACCELD_OK;

	memset(out, 0, sizeof(*out));
	envfmt_init(&out->env);
	out->candidates = xcalloc(n ? n : 1, sizeof(*out->candidates));
	out->order = xcalloc(n ? n : 1, sizeof(*out->order));
	/* the kinds in the order a named preference falls back through: the preferred one, then the auto order */
	chain[nchain++] = want;
	for (k = 0; k < 3; k++)
		if (auto_order[k] != want)
			chain[nchain++] = auto_order[k];
	out->ncandidates = n;
	pool = xcalloc(n ? n : 1, sizeof(*pool));

	for (size_t i = 0; i < n; i++) {
		struct select_candidate *c = &out->candidates[i];

		c->dev = &devs[i];
		check_constraints(c, req);
		score_candidate(c, req, measured, nmeasured);
		if (c->eligible)
			neligible++;
	}

	if (req->device[0] != '\0') {
		struct select_candidate *pinned = NULL;

		for (size_t i = 0; i < n && pinned == NULL; i++)
			if (strcmp(devs[i].id, req->device) == 0)
				pinned = &out->candidates[i];
		if (pinned == NULL) {
			snprintf(out->reason, sizeof(out->reason), "no device %s on this host (%zu devices detected)",
				 req->device, n);
			rc = ACCELD_ENOTFOUND;
			goto out;
		}
		if (!pinned->eligible) {
			snprintf(out->reason, sizeof(out->reason), "the pinned device %s is excluded by %s: %s",
				 req->device, pinned->excluded_by, pinned->why);
			rc = ACCELD_ECONFLICT;
			goto out;
		}
		pinned->rank = 1;
		out->device = pinned->dev;
		out->order[out->norder++] = (size_t)(pinned - out->candidates);
		snprintf(pinned->why, sizeof(pinned->why), "pinned by the request");
		snprintf(out->reason, sizeof(out->reason), "%s was pinned by the request (device=%s) and meets the "
			 "constraints", req->device, req->device);
		goto out;
	}

	if (neligible == 0) {
		exclusion_summary(out, summary, sizeof(summary));
		snprintf(out->reason, sizeof(out->reason), "no device meets the constraints: %s",
			 n ? summary : "no devices detected");
		rc = ACCELD_ECONFLICT;
		goto out;
	}

	/* the pool: every eligible device under auto, else the first kind in the fallback chain that has one */
	if (!want_kind) {
		for (size_t i = 0; i < n; i++)
			if (out->candidates[i].eligible)
				pool[npool++] = i;
	} else {
		for (k = 0; k < nchain && npool == 0; k++) {
			tier = chain[k];
			for (size_t i = 0; i < n; i++)
				if (out->candidates[i].eligible && devs[i].type == tier)
					pool[npool++] = i;
		}
		out->fell_back = tier != want;
		if (out->fell_back)
			out->fallback_from = device_type_name(want);
	}

	rank_pool(out->candidates, pool, npool, req->policy);
	for (size_t r = 0; r < npool; r++) {
		out->candidates[pool[r]].rank = (unsigned)r + 1;
		out->order[out->norder++] = pool[r];
	}
	/* the other eligible devices follow, kind by kind in the fallback chain, each kind ranked by the policy */
	for (; want_kind && k < nchain; k++) {
		size_t from = out->norder;

		for (size_t i = 0; i < n; i++)
			if (out->candidates[i].eligible && devs[i].type == chain[k])
				out->order[out->norder++] = i;
		rank_pool(out->candidates, out->order + from, out->norder - from, req->policy);
	}
	best = &out->candidates[pool[0]];
	out->device = best->dev;

	/* say why each eligible device did or did not win */
	for (size_t i = 0; i < n; i++) {
		struct select_candidate *c = &out->candidates[i];

		if (!c->eligible)
			continue;
		describe_score(c, score, sizeof(score));
		if (c == best)
			snprintf(c->why, sizeof(c->why), "chosen%s%s", req->policy == SELECT_PRIORITY ? "" : ": ",
				 req->policy == SELECT_PRIORITY ? "" : score);
		else if (c->rank == 0)
			snprintf(c->why, sizeof(c->why), "eligible, but prefer=%s and %s %s is eligible",
				 prefer_names[req->prefer], device_type_name(tier), best->dev->id);
		else if (req->policy == SELECT_PRIORITY)
			snprintf(c->why, sizeof(c->why), "ranked %u by the %s order", c->rank,
				 device_type_rank(c->dev->type) != device_type_rank(best->dev->type) ? "TPU > GPU > CPU" : "registry");
		else
			snprintf(c->why, sizeof(c->why), "ranked %u by %s: %s", c->rank,
				 select_policy_name(req->policy), score);
	}

	{
		char head[320] = "";
		char tail[320];

		if (out->fell_back) {
			fallback_cause(out, want, summary, sizeof(summary));
			snprintf(head, sizeof(head), "%.250s; fell back to %s", summary, best->dev->id);
		}
		describe_score(best, score, sizeof(score));
		if (req->policy == SELECT_PRIORITY)
			snprintf(tail, sizeof(tail), "%s is the first eligible %s%s", best->dev->id,
				 type_upper(best->dev->type),
				 want_kind ? "" : " in the auto order TPU > GPU > CPU");
		else
			snprintf(tail, sizeof(tail), "%s is the %s of %zu eligible %s%s (%s)", best->dev->id,
				 req->policy == SELECT_FASTEST	    ? "fastest"
				 : req->policy == SELECT_CHEAPEST ? "cheapest"
								  : "most efficient",
				 npool, want_kind ? type_upper(tier) : "device", npool == 1 ? "" : "s", score);
		snprintf(out->reason, sizeof(out->reason), "%.300s%s%.200s", head, head[0] ? "; " : "", tail);
	}

out:
	free(pool);
	fill_env(devs, n, req, out);
	return rc;
}

void select_result_release(struct select_result *res)
{
	free(res->candidates);
	free(res->order);
	res->order = NULL;
	res->norder = 0;
	res->candidates = NULL;
	res->ncandidates = 0;
	res->device = NULL;
}

/* --- environment --- */

static bool vendor_is(const struct device *d, const char *vendor)
{
	return strcasecmp(d->vendor, vendor) == 0;
}

/* The position of dev among the host's devices of its type and vendor (registry order = PCI order). */
static unsigned vendor_ordinal(const struct device *devs, size_t n, const struct device *dev)
{
	unsigned k = 0;

	for (size_t i = 0; i < n && &devs[i] != dev; i++)
		if (devs[i].type == dev->type && strcasecmp(devs[i].vendor, dev->vendor) == 0)
			k++;
	return k;
}

static unsigned host_threads(const struct device *devs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct device_cpu *c = &devs[i].cpu;

		if (devs[i].type != DEVICE_CPU)
			continue;
		/* a quota below one CPU still runs one thread */
		if (isfinite(c->effective_cpus) && c->effective_cpus > 0 && c->effective_cpus < 1e6)
			return c->effective_cpus < 1.0 ? 1u : (unsigned)floor(c->effective_cpus);
		if (c->pus > 0)
			return c->pus;
	}
	return 1;
}

static void tpu_env(const struct device *devs, size_t n, const struct device *dev, enum select_tpu_scope scope,
		    struct envfmt *env)
{
	char list[ENVFMT_VALUE_MAX];
	size_t len = 0;

	envfmt_set(env, "JAX_PLATFORMS", "tpu");
	envfmt_set(env, "PJRT_DEVICE", "TPU");
	if (scope == SELECT_TPU_HOST) {
		/* the whole host: every chip, bounds left to the runtime (it derives them from the topology) */
		for (size_t i = 0; i < n; i++) {
			if (devs[i].type != DEVICE_TPU || len >= sizeof(list))
				continue;
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u", len ? "," : "",
						devs[i].tpu.chip_index);
		}
		envfmt_set(env, "TPU_VISIBLE_CHIPS", list);
		return;
	}
	snprintf(list, sizeof(list), "%u", dev->tpu.chip_index);
	envfmt_set(env, "TPU_VISIBLE_CHIPS", list);
	envfmt_set(env, "TPU_CHIPS_PER_PROCESS_BOUNDS", "1,1,1");
	envfmt_set(env, "TPU_PROCESS_BOUNDS", "1,1,1");
	envfmt_set(env, "TPU_CHIPS_PER_HOST_BOUNDS", "1,1,1");
	envfmt_set(env, "TPU_HOST_BOUNDS", "1,1,1");
}

static void gpu_env(const struct device *devs, size_t n, const struct device *dev, struct envfmt *env)
{
	char ord[16];
	bool has_uuid = strncmp(dev->uuid, "GPU-", 4) == 0 || strncmp(dev->uuid, "MIG-", 4) == 0;

	snprintf(ord, sizeof(ord), "%u", vendor_ordinal(devs, n, dev));
	if (vendor_is(dev, "NVIDIA")) {
		if (has_uuid) {
			envfmt_set(env, "CUDA_VISIBLE_DEVICES", dev->uuid);
		} else {
			/* without a UUID, an ordinal only means this device when CUDA counts in PCI order too */
			envfmt_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
			envfmt_set(env, "CUDA_VISIBLE_DEVICES", ord);
		}
		envfmt_set(env, "JAX_PLATFORMS", "cuda");
	} else if (vendor_is(dev, "AMD")) {
		envfmt_set(env, "ROCR_VISIBLE_DEVICES", has_uuid ? dev->uuid : ord);
		/* ROCR leaves one device visible; HIP numbers what it sees from 0 */
		envfmt_set(env, "HIP_VISIBLE_DEVICES", "0");
		envfmt_set(env, "JAX_PLATFORMS", "rocm");
	} else if (vendor_is(dev, "Intel")) {
		envfmt_set(env, "ZE_AFFINITY_MASK", ord);
		/* the affinity mask leaves one Level Zero device, numbered 0 */
		envfmt_set(env, "ONEAPI_DEVICE_SELECTOR", "level_zero:0");
	}
}

void select_env(const struct device *devs, size_t n, const struct device *dev, enum select_tpu_scope scope,
		struct envfmt *env)
{
	char threads[16];

	switch (dev->type) {
	case DEVICE_TPU:
		tpu_env(devs, n, dev, scope, env);
		break;
	case DEVICE_GPU:
		gpu_env(devs, n, dev, env);
		break;
	case DEVICE_CPU:
		/* empty hides every CUDA (and HIP, which reads it too) device */
		envfmt_set(env, "CUDA_VISIBLE_DEVICES", "");
		envfmt_set(env, "JAX_PLATFORMS", "cpu");
		break;
	}
	snprintf(threads, sizeof(threads), "%u", host_threads(devs, n));
	envfmt_set(env, "OMP_NUM_THREADS", threads);
	envfmt_set(env, "XLA_PYTHON_CLIENT_PREALLOCATE", "false");
}

/* --- JSON --- */

json_t *select_candidates_json(const struct select_result *res)
{
	json_t *a = json_array();

	for (size_t i = 0; i < res->ncandidates; i++) {
		const struct select_candidate *c = &res->candidates[i];
		json_t *o = json_object();

		json_object_set_new(o, "id", json_string(c->dev->id));
		json_object_set_new(o, "type", json_string(device_type_name(c->dev->type)));
		if (c->dev->model[0])
			json_object_set_new(o, "model", json_string(c->dev->model));
		json_object_set_new(o, "eligible", json_boolean(c->eligible));
		json_object_set_new(o, "chosen", json_boolean(res->device == c->dev));
		if (c->rank > 0)
			json_object_set_new(o, "rank", json_integer(c->rank));
		if (!isnan(c->score))
			json_object_set_new(o, "score", json_real(c->score));
		if (c->figure)
			json_object_set_new(o, "figure", json_string(c->figure));
		if (c->source && !isnan(c->score))
			json_object_set_new(o, "source", json_string(c->source));
		if (c->excluded_by)
			json_object_set_new(o, "excluded_by", json_string(c->excluded_by));
		json_object_set_new(o, "why", json_string(c->why));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *select_result_to_json(const struct select_result *res, const struct select_request *req,
			      const struct detect_snapshot *snap)
{
	json_t *o = json_object();
	json_t *constraints = json_object();

	json_object_set_new(o, "device", res->device ? detect_device_doc(snap, res->device) : json_null());
	json_object_set_new(o, "policy", json_string(select_policy_name(req->policy)));
	json_object_set_new(o, "prefer", json_string(prefer_names[req->prefer & 3]));
	json_object_set_new(o, "allow_tpu", json_boolean(req->allow_tpu));
	json_object_set_new(o, "kernel",
			    req->kernel >= 0 ? json_string(kernel_name((enum kernel_id)req->kernel)) : json_null());
	if (req->device[0])
		json_object_set_new(constraints, "device", json_string(req->device));
	if (req->min_memory_bytes)
		json_object_set_new(constraints, "min_memory_bytes", json_integer((json_int_t)req->min_memory_bytes));
	json_object_set_new(constraints, "executable", json_boolean(req->executable));
	json_object_set_new(o, "constraints", constraints);
	json_object_set_new(o, "reason", json_string(res->reason));
	json_object_set_new(o, "fell_back", json_boolean(res->fell_back));
	json_object_set_new(o, "fallback_from", res->fallback_from ? json_string(res->fallback_from) : json_null());
	json_object_set_new(o, "candidates", select_candidates_json(res));
	json_object_set_new(o, "env", envfmt_to_json(&res->env));
	return o;
}
