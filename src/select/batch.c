/* batch: base x factor, power-of-two rounding, alignment and the memory cap, each step explained. */
#include "select/batch.h"

#include <stdio.h>
#include <string.h>

#define PPM 1000000u

static const char *const mode_names[] = {"infer", "train"};

const char *const batch_param_names[] = {"device", "base", "model_bytes", "params", "dtype",
					 "sample_bytes", "mode", "reserve", NULL};

/* What each parameter takes: a set of names (", "-separated), or, where the values form no set, a phrase. */
static const struct {
	const char *name;
	const char *values;
	const char *what;
} params[] = {
	{"device", NULL, DEVICE_ID_SYNTAX},
	{"base", NULL, "an integer from 1 to 1048576"},
	{"model_bytes", NULL, "a size from 1 byte, such as 14000000000, 14GB or 13GiB (" CONFIG_SIZE_UNITS ")"},
	{"params", NULL, "a count from 1, such as 7000000000, 7B or 6.7B (" CONFIG_COUNT_UNITS ")"},
	{"dtype", DTYPE_NAMES, NULL},
	{"sample_bytes", NULL, "a size from 1 byte, such as 1048576, 1MiB or 1MB (" CONFIG_SIZE_UNITS ")"},
	{"mode", "infer, train", NULL},
	{"reserve", NULL, "a decimal from 0 to 0.9 with at most 6 decimals, such as 0.1"},
};

static int param_index(const char *name)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (strcmp(params[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *batch_param_values(const char *name)
{
	int i = param_index(name);

	return i >= 0 ? params[i].values : NULL;
}

const char *batch_param_accepted(const char *name)
{
	int i = param_index(name);

	if (i < 0)
		return NULL;
	return params[i].values ? params[i].values : params[i].what;
}

const char *batch_mode_name(enum batch_mode m)
{
	return (unsigned)m < 2 ? mode_names[m] : "infer";
}

const char *batch_dtype_name(enum dtype d)
{
	return d == DTYPE_NONE ? "bf16" : dtype_name(d); /* not given: bf16, as a plan assumes */
}

void batch_request_init(struct batch_request *req, const struct config *cfg)
{
	memset(req, 0, sizeof(*req));
	req->base = 1;
	req->mode = BATCH_INFER;
	req->reserve_ppm = BATCH_DEFAULT_RESERVE_PPM;
	req->factor[DEVICE_CPU] = cfg ? cfg->cpu_batch_factor : 1;
	req->factor[DEVICE_GPU] = cfg ? cfg->gpu_batch_factor : 4;
	req->factor[DEVICE_TPU] = cfg ? cfg->tpu_batch_factor : 128;
}

/* "0.1", "0", "0.25", "1": digits, optionally a point and 1..6 decimals, as millionths. */
int batch_parse_ppm(const char *text, unsigned *out)
{
	size_t whole = strspn(text, "0123456789");
	uint64_t v = 0;
	uint64_t frac = 0;
	size_t nfrac;
	const char *p;

	if (whole == 0 || whole > 2)
		return -1;
	for (size_t i = 0; i < whole; i++)
		v = v * 10 + (uint64_t)(text[i] - '0');
	p = text + whole;
	if (*p == '.') {
		p++;
		nfrac = strspn(p, "0123456789");
		if (nfrac == 0 || nfrac > 6 || p[nfrac] != '\0')
			return -1;
		for (size_t i = 0; i < 6; i++)
			frac = frac * 10 + (i < nfrac ? (uint64_t)(p[i] - '0') : 0);
	} else if (*p != '\0') {
		return -1;
	}
	v = v * PPM + frac;
	if (v > PPM)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A count (7B), or a size with a unit (14GB) when sized, from 1 to max. */
static int parse_count(const char *text, bool sized, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if ((sized ? config_parse_size(text, &v) : config_parse_count(text, &v)) != 0 || v < 1 || v > max)
		return -1;
	*out = v;
	return 0;
}

enum acceld_err batch_request_set(struct batch_request *req, const char *name, const char *value, char *err,
				  size_t errsz)
{
	int at = param_index(name);
	bool ok = false;

	if (at < 0) {
		snprintf(err, errsz, "unknown parameter '%.64s'", name);
		return ACCELD_ENOTFOUND;
	}
	if (strcmp(name, "device") == 0) {
		ok = device_id_valid(value);
		if (ok)
			DEVICE_SET(req->device, value);
	} else if (strcmp(name, "base") == 0) {
		ok = parse_count(value, false, BATCH_MAX_BASE, &req->base) == 0;
	} else if (strcmp(name, "model_bytes") == 0) {
		ok = parse_count(value, true, BATCH_MAX_BYTES, &req->model_bytes) == 0;
	} else if (strcmp(name, "params") == 0) {
		ok = parse_count(value, false, BATCH_MAX_BYTES, &req->params) == 0;
	} else if (strcmp(name, "sample_bytes") == 0) {
		ok = parse_count(value, true, BATCH_MAX_BYTES, &req->sample_bytes) == 0;
	} else if (strcmp(name, "dtype") == 0) {
		ok = dtype_parse(value, &req->dtype);
	} else if (strcmp(name, "mode") == 0) {
		for (size_t i = 0; i < 2 && !ok; i++) {
			ok = strcmp(value, mode_names[i]) == 0;
			if (ok)
				req->mode = (enum batch_mode)i;
		}
	} else if (strcmp(name, "reserve") == 0) {
		unsigned ppm;

		ok = batch_parse_ppm(value, &ppm) == 0 && ppm <= BATCH_MAX_RESERVE_PPM;
		if (ok)
			req->reserve_ppm = ppm;
	}
	if (ok)
		return ACCELD_OK;
	if (params[at].values != NULL)
		snprintf(err, errsz, "%s: '%.64s' is not one of %s", name, value, params[at].values);
	else
		snprintf(err, errsz, "%s: '%.64s' is not %s", name, value, params[at].what);
	return ACCELD_EINVAL;
}

enum acceld_err batch_request_check(const struct batch_request *req, const char **param, char *err, size_t errsz)
{
	if (req->model_bytes && req->params) {
		*param = "model_bytes";
		snprintf(err, errsz, "give model_bytes or params (with dtype), not both");
		return ACCELD_EINVAL;
	}
	if (req->dtype != DTYPE_NONE && req->params == 0) {
		*param = "dtype";
		snprintf(err, errsz, "dtype applies to params; give params with it (model_bytes is already in bytes)");
		return ACCELD_EINVAL;
	}
	return ACCELD_OK;
}

uint64_t batch_round_pow2(uint64_t x)
{
	uint64_t p;

	if (x <= 1)
		return 1;
	p = 1ull << (63 - __builtin_clzll(x));
	if (p == x)
		return x;
	/* x - p < 2p - x  <=>  x - p < p - (x - p); ties go up */
	if (x - p < p - (x - p))
		return p;
	return p == (1ull << 63) ? 0 : p * 2;
}

uint64_t batch_usable_bytes(uint64_t bytes, unsigned reserve_ppm)
{
	uint64_t keep = PPM - (reserve_ppm > PPM ? PPM : reserve_ppm);

	/* split so no product exceeds 64 bits: (q*10^6 + r) * keep / 10^6 = q*keep + r*keep/10^6 */
	return (bytes / PPM) * keep + ((bytes % PPM) * keep) / PPM;
}

static struct batch_step *add_step(struct batch_result *out, const char *name, uint64_t in, uint64_t outv)
{
	struct batch_step *s = &out->steps[out->nsteps++];

	s->name = name;
	s->input = in;
	s->output = outv;
	s->text[0] = '\0';
	return s;
}

static void fmt_reserve(unsigned ppm, char *out, size_t outsz)
{
	size_t len;

	snprintf(out, outsz, "%u.%06u", ppm / PPM, ppm % PPM);
	len = strlen(out);
	while (len > 3 && out[len - 1] == '0')
		out[--len] = '\0';
}

static unsigned alignment_for(const struct device *d)
{
	switch (d->type) {
	case DEVICE_TPU:
		return 8u * (d->tpu.cores_per_chip ? d->tpu.cores_per_chip : 1u);
	case DEVICE_GPU:
		return 8;
	case DEVICE_CPU:
		break;
	}
	return 1;
}

/* The model state in bytes; returns false when it does not fit in 64 bits. */
static bool model_state(const struct batch_request *req, uint64_t *state, const char **rule)
{
	if (req->params) {
		if (req->mode == BATCH_TRAIN) {
			*rule = "params x 16 bytes (mixed-precision Adam: weights, gradients, fp32 master, 2 moments)";
			return !__builtin_mul_overflow(req->params, (uint64_t)16, state);
		}
		unsigned bits = req->dtype == DTYPE_NONE ? 16 : dtype_bits(req->dtype);

		*rule = bits == 32 ? "params x 4 bytes (32-bit weights)"
			: bits == 8 ? "params x 1 byte (8-bit weights)"
			: bits == 4 ? "params x 0.5 byte (4-bit weights)"
				    : "params x 2 bytes (16-bit weights)";
		if (__builtin_mul_overflow(req->params, (uint64_t)bits, state))
			return false;
		*state = (*state + 7) / 8;
		return true;
	}
	if (req->model_bytes) {
		if (req->mode == BATCH_TRAIN) {
			*rule = "model_bytes x 8 (16 B/param training state over 2 B/param weights)";
			return !__builtin_mul_overflow(req->model_bytes, (uint64_t)8, state);
		}
		*rule = "model_bytes (the weights)";
		*state = req->model_bytes;
		return true;
	}
	*rule = "no model given";
	*state = 0;
	return true;
}

/* The memory step: the cap and, when the model or a sample cannot fit, the 422 detail. */
static enum acceld_err memory_step(const struct device *d, const struct batch_request *req, uint64_t batch,
				   struct batch_result *out)
{
	struct batch_memory *m = &out->memory;
	struct batch_step *s;
	char reserve[16];
	uint64_t left;
	uint64_t capped;
	bool have_model = req->params || req->model_bytes;

	if (!have_model && req->sample_bytes == 0) {
		s = add_step(out, "memory", batch, batch);
		snprintf(s->text, sizeof(s->text), "no cap: give model_bytes or params, and sample_bytes, to cap the "
			 "batch by memory");
		out->batch_size = batch;
		return ACCELD_OK;
	}
	if (d->memory_total_bytes == 0) {
		s = add_step(out, "memory", batch, batch);
		snprintf(s->text, sizeof(s->text), "no cap: the memory size of %s is unknown", d->id);
		out->batch_size = batch;
		return ACCELD_OK;
	}
	m->applied = true;
	m->memory_bytes = d->memory_total_bytes;
	m->reserve_ppm = req->reserve_ppm;
	m->usable_bytes = batch_usable_bytes(m->memory_bytes, req->reserve_ppm);
	m->sample_bytes = req->sample_bytes;
	fmt_reserve(req->reserve_ppm, reserve, sizeof(reserve));
	if (!model_state(req, &m->state_bytes, &m->state_rule)) {
		snprintf(out->detail, sizeof(out->detail),
			 "the %s state of %llu %s (%s) exceeds 2^64 bytes, far beyond the %llu bytes of %s",
			 batch_mode_name(req->mode), (unsigned long long)(req->params ? req->params : req->model_bytes),
			 req->params ? "params" : "model bytes", m->state_rule, (unsigned long long)m->memory_bytes,
			 d->id);
		return ACCELD_EUNPROCESSABLE;
	}
	if (m->state_bytes > m->usable_bytes) {
		snprintf(out->detail, sizeof(out->detail),
			 "the model does not fit: %s state = %s = %llu bytes, but %s has %llu bytes x (1 - %s reserve) = "
			 "%llu usable bytes (%llu bytes short)",
			 batch_mode_name(req->mode), m->state_rule, (unsigned long long)m->state_bytes, d->id,
			 (unsigned long long)m->memory_bytes, reserve, (unsigned long long)m->usable_bytes,
			 (unsigned long long)(m->state_bytes - m->usable_bytes));
		return ACCELD_EUNPROCESSABLE;
	}
	left = m->usable_bytes - m->state_bytes;
	if (req->sample_bytes == 0) {
		s = add_step(out, "memory", batch, batch);
		snprintf(s->text, sizeof(s->text), "the model state (%llu bytes) fits in %llu usable bytes "
			 "(%llu x (1 - %s)); no cap without sample_bytes",
			 (unsigned long long)m->state_bytes, (unsigned long long)m->usable_bytes,
			 (unsigned long long)m->memory_bytes, reserve);
		out->batch_size = batch;
		return ACCELD_OK;
	}
	m->max_batch_size = left / req->sample_bytes;
	if (m->max_batch_size == 0) {
		snprintf(out->detail, sizeof(out->detail),
			 "not one sample fits: (%llu bytes x (1 - %s) - %llu bytes of state) / %llu bytes per sample = "
			 "%llu / %llu < 1",
			 (unsigned long long)m->memory_bytes, reserve, (unsigned long long)m->state_bytes,
			 (unsigned long long)req->sample_bytes, (unsigned long long)left,
			 (unsigned long long)req->sample_bytes);
		return ACCELD_EUNPROCESSABLE;
	}
	out->has_max = true;
	out->max_batch_size = m->max_batch_size;
	capped = batch;
	if (batch > m->max_batch_size) {
		/* keep the alignment while capping; below one aligned step the cap itself is the best there is */
		capped = m->max_batch_size / out->alignment * out->alignment;
		if (capped == 0)
			capped = m->max_batch_size;
	}
	s = add_step(out, "memory", batch, capped);
	snprintf(s->text, sizeof(s->text),
		 "max batch = floor((%llu x (1 - %s) - %llu) / %llu) = %llu; %s",
		 (unsigned long long)m->memory_bytes, reserve, (unsigned long long)m->state_bytes,
		 (unsigned long long)req->sample_bytes, (unsigned long long)m->max_batch_size,
		 capped == batch			? "the batch fits"
		 : capped % out->alignment == 0 ? "capped to the largest aligned batch that fits"
						: "capped to what fits (below one aligned step)");
	out->batch_size = capped;
	return ACCELD_OK;
}

enum acceld_err batch_compute(const struct device *d, const struct batch_request *req, struct batch_result *out)
{
	struct batch_step *s;
	uint64_t x;
	uint64_t rounded;
	uint64_t aligned;
	enum acceld_err rc;

	memset(out, 0, sizeof(*out));
	out->device = d;
	out->factor = req->factor[d->type] ? req->factor[d->type] : 1;
	out->alignment = alignment_for(d);

	if (__builtin_mul_overflow(req->base, out->factor, &x)) {
		snprintf(out->detail, sizeof(out->detail), "base %llu x factor %llu overflows 64 bits",
			 (unsigned long long)req->base, (unsigned long long)out->factor);
		return ACCELD_EUNPROCESSABLE;
	}
	s = add_step(out, "factor", req->base, x);
	snprintf(s->text, sizeof(s->text), "base %llu x %s factor %llu = %llu", (unsigned long long)req->base,
		 device_type_name(d->type), (unsigned long long)out->factor, (unsigned long long)x);

	rounded = batch_round_pow2(x);
	if (rounded == 0) {
		snprintf(out->detail, sizeof(out->detail), "%llu rounds to 2^64, beyond 64 bits",
			 (unsigned long long)x);
		return ACCELD_EUNPROCESSABLE;
	}
	s = add_step(out, "round", x, rounded);
	snprintf(s->text, sizeof(s->text), "%llu %s", (unsigned long long)x,
		 rounded == x ? "is already a power of two" : "rounded to the nearest power of two (ties up)");
	if (rounded != x)
		snprintf(s->text + strlen(s->text), sizeof(s->text) - strlen(s->text), ": %llu",
			 (unsigned long long)rounded);

	aligned = (rounded + out->alignment - 1) / out->alignment * out->alignment;
	s = add_step(out, "align", rounded, aligned);
	if (d->type == DEVICE_TPU)
		snprintf(s->text, sizeof(s->text), "TPU: a multiple of 8 per TensorCore (%u cores per chip -> %u): "
			 "%llu%s%s", d->tpu.cores_per_chip ? d->tpu.cores_per_chip : 1, out->alignment,
			 (unsigned long long)aligned, aligned == rounded ? " already is" : "",
			 aligned / (d->tpu.cores_per_chip ? d->tpu.cores_per_chip : 1) < 128
				 ? "; 128 per core keeps the matrix units busiest"
				 : "");
	else if (d->type == DEVICE_GPU)
		snprintf(s->text, sizeof(s->text), "GPU: a multiple of 8 for tensor cores: %llu%s",
			 (unsigned long long)aligned, aligned == rounded ? " already is" : "");
	else
		snprintf(s->text, sizeof(s->text), "CPU: no alignment needed");

	rc = memory_step(d, req, aligned, out);
	if (rc != ACCELD_OK)
		return rc;

	if (d->type == DEVICE_TPU) {
		out->tpu = true;
		out->tpu_chips = d->tpu.chips;
		out->tpu_cores_per_chip = d->tpu.cores_per_chip;
		out->batch_per_chip = out->batch_size;
		if (d->tpu.cores_per_chip)
			out->batch_per_core = out->batch_size / d->tpu.cores_per_chip;
		if (d->tpu.chips && __builtin_mul_overflow(out->batch_size, (uint64_t)d->tpu.chips,
							   &out->global_batch_size))
			out->global_batch_size = 0;
	}
	return ACCELD_OK;
}

json_t *batch_memory_json(const struct batch_memory *m)
{
	char reserve[16];

	if (!m->applied)
		return json_null();
	fmt_reserve(m->reserve_ppm, reserve, sizeof(reserve));
	return json_pack("{s:I, s:f, s:I, s:I, s:s, s:o, s:o}", "memory_bytes", (json_int_t)m->memory_bytes,
			 "reserve", (double)m->reserve_ppm / PPM, "usable_bytes", (json_int_t)m->usable_bytes,
			 "state_bytes", (json_int_t)m->state_bytes, "state_rule", m->state_rule, "sample_bytes",
			 m->sample_bytes ? json_integer((json_int_t)m->sample_bytes) : json_null(), "max_batch_size",
			 m->sample_bytes && m->max_batch_size ? json_integer((json_int_t)m->max_batch_size)
							      : json_null());
}

json_t *batch_steps_json(const struct batch_result *res)
{
	json_t *a = json_array();

	for (size_t i = 0; i < res->nsteps; i++)
		json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:s}", "step", res->steps[i].name, "input",
						   (json_int_t)res->steps[i].input, "output",
						   (json_int_t)res->steps[i].output, "text", res->steps[i].text));
	return a;
}

json_t *batch_result_to_json(const struct batch_result *res, const struct batch_request *req,
			     const struct detect_snapshot *snap)
{
	json_t *o = json_object();
	json_t *model = json_object();

	json_object_set_new(o, "device", detect_device_doc(snap, res->device));
	json_object_set_new(o, "mode", json_string(batch_mode_name(req->mode)));
	json_object_set_new(o, "base", json_integer((json_int_t)req->base));
	json_object_set_new(o, "factor", json_integer((json_int_t)res->factor));
	json_object_set_new(o, "alignment", json_integer(res->alignment));
	json_object_set_new(o, "batch_size", json_integer((json_int_t)res->batch_size));
	json_object_set_new(o, "max_batch_size",
			    res->has_max ? json_integer((json_int_t)res->max_batch_size) : json_null());
	if (req->params) {
		json_object_set_new(model, "params", json_integer((json_int_t)req->params));
		json_object_set_new(model, "dtype", json_string(batch_dtype_name(req->dtype)));
	}
	if (req->model_bytes)
		json_object_set_new(model, "model_bytes", json_integer((json_int_t)req->model_bytes));
	if (req->sample_bytes)
		json_object_set_new(model, "sample_bytes", json_integer((json_int_t)req->sample_bytes));
	json_object_set_new(o, "model", model);
	json_object_set_new(o, "memory", batch_memory_json(&res->memory));
	if (res->tpu) {
		json_t *t = json_object();

		if (res->tpu_chips)
			json_object_set_new(t, "chips", json_integer(res->tpu_chips));
		if (res->tpu_cores_per_chip)
			json_object_set_new(t, "cores_per_chip", json_integer(res->tpu_cores_per_chip));
		json_object_set_new(t, "batch_per_chip", json_integer((json_int_t)res->batch_per_chip));
		if (res->batch_per_core)
			json_object_set_new(t, "batch_per_core", json_integer((json_int_t)res->batch_per_core));
		if (res->global_batch_size)
			json_object_set_new(t, "global_batch_size", json_integer((json_int_t)res->global_batch_size));
		json_object_set_new(o, "tpu", t);
	}
	json_object_set_new(o, "steps", batch_steps_json(res));
	return o;
}
