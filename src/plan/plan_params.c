/* plan_params: GET/POST /plan's and `acceld plan`'s fields, presets, devices, environment and answer (plan_params.h). */
#include "plan/plan_params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "core/jsonval.h"
#include "core/mem.h"
#include "plan/plan_text.h"
#include "select/batch.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The presets: the shapes of their published configurations (Hugging Face config.json of each model; GPT-3 from
 * Brown et al. 2020, table 2.1). The counts they give (plan_params_from_shape) are the published ones for the
 * Llama and Mixtral models, exactly; GPT-3's leaves out its biases and learned positions (0.1 %).
 */
static const struct plan_preset presets[] = {
	{"llama-2-7b", {.layers = 32, .hidden = 4096, .heads = 32, .ffn = 11008, .gated_ffn = true, .vocab = 32000},
	 "meta-llama/Llama-2-7b-hf config.json"},
	{"llama-2-13b", {.layers = 40, .hidden = 5120, .heads = 40, .ffn = 13824, .gated_ffn = true, .vocab = 32000},
	 "meta-llama/Llama-2-13b-hf config.json"},
	{"llama-2-70b",
	 {.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .gated_ffn = true, .vocab = 32000},
	 "meta-llama/Llama-2-70b-hf config.json"},
	{"llama-3-8b",
	 {.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .gated_ffn = true, .vocab = 128256},
	 "meta-llama/Meta-Llama-3-8B config.json"},
	{"llama-3-70b",
	 {.layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .ffn = 28672, .gated_ffn = true, .vocab = 128256},
	 "meta-llama/Meta-Llama-3-70B config.json"},
	{"llama-3.1-405b",
	 {.layers = 126, .hidden = 16384, .heads = 128, .kv_heads = 8, .ffn = 53248, .gated_ffn = true,
	  .vocab = 128256},
	 "meta-llama/Llama-3.1-405B config.json"},
	{"mixtral-8x7b",
	 {.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .gated_ffn = true, .vocab = 32000,
	  .experts = 8, .experts_per_token = 2},
	 "mistralai/Mixtral-8x7B-v0.1 config.json"},
	{"gpt-3-175b", {.layers = 96, .hidden = 12288, .heads = 96, .vocab = 50257, .tied_embeddings = true},
	 "Brown et al. 2020, table 2.1 (GPT-3 175B)"},
};

#define PRESET_NAMES                                                                                                 \
	"llama-2-7b, llama-2-13b, llama-2-70b, llama-3-8b, llama-3-70b, llama-3.1-405b, mixtral-8x7b, gpt-3-175b"

const struct plan_preset *plan_presets(size_t *n)
{
	*n = COUNT(presets);
	return presets;
}

/*
 * The fields: JSON kind (s string, b boolean, i integer, n integer or string, r number), the set of values or a
 * phrase, and for counts the largest value (the smallest is 1). The order is plan_param_names'.
 */
static const struct field {
	const char *name;
	char kind;
	const char *values;
	const char *what;
	uint64_t max;
	bool shape; /* a model field a preset sets */
} fields[] = {
	{"model", 's', PRESET_NAMES, NULL, 0, false},
	{"params", 'n', NULL,
	 "a count from 1 to 1125899906842624, such as 7000000000, 7B or 6.7B (K, M, B, T: thousands to trillions)",
	 PLAN_MAX_PARAMS, true},
	{"layers", 'i', NULL, "an integer from 1 to 4096", PLAN_MAX_LAYERS, true},
	{"hidden", 'i', NULL, "an integer from 1 to 1048576", PLAN_MAX_HIDDEN, true},
	{"heads", 'i', NULL, "an integer from 1 to 8192", PLAN_MAX_HEADS, true},
	{"kv_heads", 'i', NULL, "an integer from 1 to 8192", PLAN_MAX_HEADS, true},
	{"head_dim", 'i', NULL, "an integer from 1 to 1048576", PLAN_MAX_HIDDEN, true},
	{"ffn", 'i', NULL, "an integer from 1 to 16777216", 16ull * PLAN_MAX_HIDDEN, true},
	{"gated_ffn", 'b', CONFIG_BOOL_VALUES, NULL, 0, true},
	{"vocab", 'i', NULL, "an integer from 1 to 16777216", PLAN_MAX_VOCAB, true},
	{"tied_embeddings", 'b', CONFIG_BOOL_VALUES, NULL, 0, true},
	{"experts", 'i', NULL, "an integer from 1 to 4096", PLAN_MAX_EXPERTS, true},
	{"experts_per_token", 'i', NULL, "an integer from 1 to 4096", PLAN_MAX_EXPERTS, true},
	{"dtype", 's', DTYPE_NAMES, NULL, 0, false},
	{"kv_dtype", 's', DTYPE_NAMES, NULL, 0, false},
	{"mode", 's', "infer, train", NULL, 0, false},
	{"optimizer", 's', "adam, adamw, sgd_momentum, sgd, adafactor", NULL, 0, false},
	{"mixed_precision", 'b', CONFIG_BOOL_VALUES, NULL, 0, false},
	{"zero", 'i', NULL, "1, 2 or 3 (ZeRO's stage: optimizer states, and gradients, and weights sharded over fsdp)", 3,
	 false},
	{"flash_attention", 'b', CONFIG_BOOL_VALUES, NULL, 0, false},
	{"remat", 's', "auto, none, selective, full", NULL, 0, false},
	{"seq_len", 'i', NULL, "an integer from 1 to 16777216", PLAN_MAX_SEQ, false},
	{"global_batch", 'i', NULL, "an integer from 1 to 16777216", PLAN_MAX_BATCH, false},
	{"per_device_batch", 'i', NULL, "an integer from 1 to 16777216", PLAN_MAX_BATCH, false},
	{"reserve", 'r', NULL, "a decimal from 0 to 0.9 with at most 6 decimals, such as 0.1", 0, false},
	{"devices", 's', NULL,
	 "a shape (H100x8, L4x4, tpu:v5p-128, v6e-8) or up to 64 device ids of one kind (gpu:0,gpu:1)", 0, false},
	{"hosts", 'i', NULL, "an integer from 1 to 4096", PLAN_PARAMS_MAX_HOSTS, false},
	{"memory_bytes", 'i', NULL, "a size from 1 byte to 1024TiB, such as 80GiB, 40GB or 85899345920 (" CONFIG_SIZE_UNITS
	 ")", PLAN_PARAMS_MAX_MEMORY, false},
	{"format", 's', "json, env", NULL, 0, false},
	{"k8s_service", 's', NULL, "a DNS label: 1 to 63 of a-z, 0-9 and '-', starting with a letter or digit", 0,
	 false},
	{"coordinator_port", 'i', NULL, "an integer from 1 to 65535", 65535, false},
};

const char *const plan_param_names[] = {
	"model",	 "params",	"layers",	   "hidden",	     "heads",	       "kv_heads",
	"head_dim",	 "ffn",		"gated_ffn",	   "vocab",	     "tied_embeddings", "experts",
	"experts_per_token", "dtype", "kv_dtype",	   "mode",	     "optimizer",       "mixed_precision",
	"zero",		 "flash_attention", "remat",	"seq_len",	   "global_batch",   "per_device_batch", "reserve",
	"devices",	 "hosts",	"memory_bytes",	   "format",	     "k8s_service",     "coordinator_port",
	NULL};

static const struct field *field_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < COUNT(fields); i++)
		if (strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

const char *plan_param_values(const char *name)
{
	const struct field *f = field_find(name);

	return f != NULL ? f->values : NULL;
}

const char *plan_param_accepted(const char *name)
{
	const struct field *f = field_find(name);

	if (f == NULL)
		return NULL;
	return f->values != NULL ? f->values : f->what;
}

void plan_params_init(struct plan_params *p)
{
	memset(p, 0, sizeof(*p));
	plan_request_init(&p->req);
	p->format = PLAN_FORMAT_JSON;
}

/* A count of parameters ("7000000000", "7B", "6.7B", "1.5T": config_parse_count) from 1 to PLAN_MAX_PARAMS. */
static int parse_params(const char *text, uint64_t *out)
{
	uint64_t v;

	if (config_parse_count(text, &v) != 0 || v == 0 || v > PLAN_MAX_PARAMS)
		return -1;
	*out = v;
	return 0;
}

/*
 * Whether text is a list of device ids rather than a shape: a comma, or one item written as an id is, right or
 * wrong: letters, a colon and digits or nothing ("gpu:0", "GPU:0", "xpu:1", "gpu:"), or cpu, gpu or tpu and digits
 * ("cpu0"). A shape has a model or a slice after its kind ("gpu:H100x8", "tpu:v5p-128").
 */
static bool is_id_list(const char *text)
{
	size_t letters, digits;

	if (strchr(text, ',') != NULL)
		return true;
	text += strspn(text, " \t");
	letters = strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	if (letters == 0)
		return false;
	if (text[letters] == ':') {
		digits = strspn(text + letters + 1, "0123456789");
		return text[letters + 1 + digits + strspn(text + letters + 1 + digits, " \t")] == '\0';
	}
	digits = strspn(text + letters, "0123456789");
	return letters == 3 && digits > 0 && text[letters + digits + strspn(text + letters + digits, " \t")] == '\0' &&
	       (strncasecmp(text, "cpu", 3) == 0 || strncasecmp(text, "gpu", 3) == 0 || strncasecmp(text, "tpu", 3) == 0);
}

/*
 * Splits a list of ids ("gpu:0, gpu:1") into ids[0..max), blanks around each dropped; returns how many, -1 with
 * the offending item in bad (an empty one, one too long), or -2 when there are more than max.
 */
static int split_ids(const char *text, char ids[][DEVICE_ID_MAX], size_t max, char *bad, size_t badsz)
{
	size_t n = 0;
	const char *p = text;

	for (;;) {
		size_t len = strcspn(p, ",");
		const char *item = p;
		size_t ilen = len;

		while (ilen > 0 && (*item == ' ' || *item == '\t')) {
			item++;
			ilen--;
		}
		while (ilen > 0 && (item[ilen - 1] == ' ' || item[ilen - 1] == '\t'))
			ilen--;
		snprintf(bad, badsz, "%.*s", (int)(ilen < 64 ? ilen : 64), item);
		if (n == max)
			return -2;
		if (ilen == 0 || ilen >= DEVICE_ID_MAX)
			return -1;
		memcpy(ids[n], item, ilen);
		ids[n][ilen] = '\0';
		n++;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	return (int)n;
}

/* A DNS label (RFC 1123): 1 to 63 of a-z, 0-9 and '-', starting and ending with a letter or digit. */
static bool dns_label(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

/* The devices field: a shape plan_devices_parse takes, or valid ids, none twice. err gets why, without the name. */
static bool set_devices(struct plan_params *p, const char *value, char *err, size_t errsz)
{
	char ids[PLAN_PARAMS_MAX_IDS][DEVICE_ID_MAX];
	char bad[72];
	struct plan_devices d;
	struct plan_devices_origin o;
	char why[256];
	int n;

	if (strlen(value) >= sizeof(p->devices)) {
		snprintf(err, errsz, "'%.64s...' is longer than %zu bytes", value, sizeof(p->devices) - 1);
		return false;
	}
	if (!is_id_list(value)) {
		enum acceld_err rc = plan_devices_parse(value, &d, &o, why, sizeof(why));

		/* a slice GCP does not offer is well written: plan_params_devices refuses it, listing the real ones */
		if (rc != ACCELD_OK && rc != ACCELD_EUNSUPPORTED) {
			snprintf(err, errsz, "%s", why);
			return false;
		}
	} else {
		n = split_ids(value, ids, PLAN_PARAMS_MAX_IDS, bad, sizeof(bad));
		if (n == -2) {
			snprintf(err, errsz, "more than %d device ids", PLAN_PARAMS_MAX_IDS);
			return false;
		}
		if (n < 0) {
			snprintf(err, errsz, "'%s' is not a device id (cpu:N, gpu:N or tpu:N)", bad);
			return false;
		}
		for (int i = 0; i < n; i++) {
			if (!device_id_valid(ids[i])) {
				snprintf(err, errsz, "'%s' is not a device id (cpu:N, gpu:N or tpu:N)", ids[i]);
				return false;
			}
			for (int j = 0; j < i; j++) {
				if (strcmp(ids[i], ids[j]) == 0) {
					snprintf(err, errsz, "'%s' is named twice", ids[i]);
					return false;
				}
			}
		}
	}
	memcpy(p->devices, value, strlen(value) + 1);
	return true;
}

/* Sets one field from text; err names the field when named ("mode: 'x' is not ..."), else starts at the value. */
static enum acceld_err set_field(struct plan_params *p, const char *name, const char *value, bool named, char *err,
				 size_t errsz)
{
	const struct field *f = field_find(name);
	struct plan_model *m = &p->req.model;
	char why[320] = "";
	uint64_t v = 0;
	bool b = false, ok = true;

	if (f == NULL) {
		snprintf(err, errsz, "unknown parameter '%.64s'", name);
		return ACCELD_ENOTFOUND;
	}
	if (f->kind == 'b') {
		ok = config_parse_bool(value, &b) == 0;
	} else if (strcmp(name, "memory_bytes") == 0) {
		ok = config_parse_size(value, &v) == 0 && v >= 1 && v <= f->max;
	} else if (strcmp(name, "params") == 0) {
		ok = parse_params(value, &v) == 0;
	} else if (f->kind == 'i') {
		ok = config_parse_u64(value, &v) == 0 && v >= 1 && v <= f->max;
	}
	if (ok && f->kind == 'b') {
		if (strcmp(name, "gated_ffn") == 0)
			m->gated_ffn = b;
		else if (strcmp(name, "tied_embeddings") == 0)
			m->tied_embeddings = b;
		else if (strcmp(name, "mixed_precision") == 0)
			p->req.mixed_precision = b;
		else
			p->req.flash_attention = b;
	} else if (ok && strcmp(name, "model") == 0) {
		ok = false;
		for (size_t i = 0; i < COUNT(presets) && !ok; i++)
			ok = strcmp(presets[i].name, value) == 0;
		if (ok)
			snprintf(p->model, sizeof(p->model), "%s", value);
	} else if (ok && strcmp(name, "params") == 0) {
		m->params = v;
	} else if (ok && strcmp(name, "layers") == 0) {
		m->layers = (unsigned)v;
	} else if (ok && strcmp(name, "hidden") == 0) {
		m->hidden = (unsigned)v;
	} else if (ok && strcmp(name, "heads") == 0) {
		m->heads = (unsigned)v;
	} else if (ok && strcmp(name, "kv_heads") == 0) {
		m->kv_heads = (unsigned)v;
	} else if (ok && strcmp(name, "head_dim") == 0) {
		m->head_dim = (unsigned)v;
	} else if (ok && strcmp(name, "ffn") == 0) {
		m->ffn = (unsigned)v;
	} else if (ok && strcmp(name, "vocab") == 0) {
		m->vocab = (unsigned)v;
	} else if (ok && strcmp(name, "experts") == 0) {
		m->experts = (unsigned)v;
	} else if (ok && strcmp(name, "experts_per_token") == 0) {
		m->experts_per_token = (unsigned)v;
	} else if (ok && strcmp(name, "dtype") == 0) {
		ok = plan_dtype_parse(value, &p->req.dtype) == 0;
	} else if (ok && strcmp(name, "kv_dtype") == 0) {
		ok = plan_dtype_parse(value, &p->req.kv_dtype) == 0;
	} else if (ok && strcmp(name, "mode") == 0) {
		ok = plan_mode_parse(value, &p->req.mode) == 0;
	} else if (ok && strcmp(name, "optimizer") == 0) {
		ok = plan_optimizer_parse(value, &p->req.optimizer) == 0;
	} else if (ok && strcmp(name, "remat") == 0) {
		ok = plan_remat_parse(value, &p->req.remat) == 0;
	} else if (ok && strcmp(name, "zero") == 0) {
		p->req.zero = (unsigned)v;
	} else if (ok && strcmp(name, "seq_len") == 0) {
		p->req.seq_len = (unsigned)v;
	} else if (ok && strcmp(name, "global_batch") == 0) {
		p->req.global_batch = v;
	} else if (ok && strcmp(name, "per_device_batch") == 0) {
		p->req.per_device_batch = v;
	} else if (ok && strcmp(name, "reserve") == 0) {
		unsigned ppm;

		ok = batch_parse_ppm(value, &ppm) == 0 && ppm <= PLAN_MAX_RESERVE_PPM;
		if (ok)
			p->req.reserve_ppm = ppm;
	} else if (ok && strcmp(name, "devices") == 0) {
		ok = set_devices(p, value, why, sizeof(why));
	} else if (ok && strcmp(name, "hosts") == 0) {
		p->hosts = (unsigned)v;
	} else if (ok && strcmp(name, "memory_bytes") == 0) {
		p->memory_bytes = v;
	} else if (ok && strcmp(name, "format") == 0) {
		ok = strcmp(value, "json") == 0 || strcmp(value, "env") == 0;
		if (ok)
			p->format = strcmp(value, "env") == 0 ? PLAN_FORMAT_ENV : PLAN_FORMAT_JSON;
	} else if (ok && strcmp(name, "k8s_service") == 0) {
		ok = dns_label(value);
		if (ok)
			snprintf(p->k8s_service, sizeof(p->k8s_service), "%s", value);
	} else if (ok && strcmp(name, "coordinator_port") == 0) {
		p->coordinator_port = (unsigned)v;
	}
	if (ok) {
		if (f->shape && p->shape_field == NULL)
			p->shape_field = f->name;
		return ACCELD_OK;
	}
	if (why[0] != '\0')
		snprintf(err, errsz, "%s%s%s", named ? name : "", named ? ": " : "", why);
	else
		snprintf(err, errsz, "%s%s'%.64s' is not %s%s", named ? name : "", named ? ": " : "", value,
			 f->values ? "one of " : "", f->values ? f->values : f->what);
	return ACCELD_EINVAL;
}

enum acceld_err plan_params_set(struct plan_params *p, const char *name, const char *value, char *err, size_t errsz)
{
	return set_field(p, name, value, true, err, errsz);
}

enum acceld_err plan_params_set_json(struct plan_params *p, const char *name, json_t *value, const char **expected,
				     char *err, size_t errsz)
{
	const struct field *f = field_find(name);
	char text[JSONVAL_REAL_MAX + 32];
	const char *s = text;

	*expected = NULL;
	if (f == NULL) {
		snprintf(err, errsz, "unknown field '%.64s'", name);
		return ACCELD_ENOTFOUND;
	}
	/* null leaves the default in place, as if the field were absent */
	if (json_is_null(value))
		return ACCELD_OK;
	if (f->kind == 's' && !json_is_string(value))
		*expected = "a string";
	else if (f->kind == 'b' && !json_is_boolean(value))
		*expected = "a boolean";
	else if (f->kind == 'i' && !json_is_integer(value))
		*expected = "an integer";
	else if (f->kind == 'n' && !json_is_integer(value) && !json_is_string(value))
		*expected = "an integer or a string such as \"70B\"";
	else if (f->kind == 'r' && !json_is_number(value))
		*expected = "a number";
	if (*expected != NULL) {
		snprintf(err, errsz, "expected %s", *expected);
		return ACCELD_EINVAL;
	}
	if (json_is_string(value)) {
		s = json_string_value(value);
		if (strlen(s) != json_string_length(value)) {
			snprintf(err, errsz, "the value holds a NUL character");
			return ACCELD_EINVAL;
		}
	} else if (json_is_boolean(value)) {
		s = json_is_true(value) ? "true" : "false";
	} else if (json_is_integer(value)) {
		snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
	} else {
		/* a reserve given as a JSON real: its shortest text, which the decimal parser then judges */
		jsonval_real_text(json_real_value(value), text);
	}
	return set_field(p, name, s, false, err, errsz);
}

#define FAIL(name, ...)                                                                                              \
	do {                                                                                                         \
		*param = (name);                                                                                     \
		snprintf(err, errsz, __VA_ARGS__);                                                                   \
		return ACCELD_EINVAL;                                                                                \
	} while (0)

const char *plan_params_missing(const struct plan_params *p)
{
	if (p->model[0] != '\0' || p->shape_field != NULL)
		return NULL;
	return "give model (a preset: " PRESET_NAMES "), params (a count such as 7B), or a shape: layers, hidden, "
	       "heads and vocab";
}

enum acceld_err plan_params_finish(struct plan_params *p, const char **param, char *err, size_t errsz)
{
	if (p->model[0] != '\0') {
		const struct plan_preset *pre = NULL;

		if (p->shape_field != NULL)
			FAIL(p->shape_field, "model %s sets the shape and the count; give model, or the count or shape "
			     "(params, layers, hidden, heads, ...), not both", p->model);
		for (size_t i = 0; i < COUNT(presets); i++)
			if (strcmp(presets[i].name, p->model) == 0)
				pre = &presets[i];
		if (pre != NULL)
			p->req.model = pre->model;
	}
	if (p->hosts > 1 && plan_params_source(p) == PLAN_SOURCE_SHAPE)
		FAIL("hosts", "a shape names its devices' count (H100x16 is two hosts of 8); hosts multiplies this "
		     "host's devices");
	return ACCELD_OK;
}

size_t plan_params_ids(const struct plan_params *p, char ids[][DEVICE_ID_MAX], size_t max)
{
	char bad[72];
	int n;

	if (p->devices[0] == '\0' || !is_id_list(p->devices))
		return 0;
	n = split_ids(p->devices, ids, max, bad, sizeof(bad));
	return n < 0 ? 0 : (size_t)n;
}

enum plan_source plan_params_source(const struct plan_params *p)
{
	if (p->devices[0] == '\0')
		return PLAN_SOURCE_HOST;
	return is_id_list(p->devices) ? PLAN_SOURCE_IDS : PLAN_SOURCE_SHAPE;
}

/* Copies of the devices p names by id (of one kind), TPU chips as chips of one host; *nout of them, or NULL. */
static struct device *named_devices(const struct plan_params *p, const struct device *devs, size_t n, size_t *nout,
				    const char **param, enum acceld_err *rc, char *why, size_t whysz)
{
	char ids[PLAN_PARAMS_MAX_IDS][DEVICE_ID_MAX];
	size_t nids = plan_params_ids(p, ids, PLAN_PARAMS_MAX_IDS);
	struct device *out = xcalloc(nids ? nids : 1, sizeof(*out));

	*param = "devices";
	for (size_t i = 0; i < nids; i++) {
		const struct device *d = NULL;

		for (size_t j = 0; j < n && d == NULL; j++)
			if (strcmp(devs[j].id, ids[i]) == 0)
				d = &devs[j];
		if (d == NULL) {
			snprintf(why, whysz, "no device %s on this host", ids[i]);
			*rc = ACCELD_ENOTFOUND;
			goto fail;
		}
		if (i > 0 && d->type != out[0].type) {
			snprintf(why, whysz, "%s and %s are of different kinds; a plan lays a model over devices of one "
				 "kind", out[0].id, d->id);
			*rc = ACCELD_EINVAL;
			goto fail;
		}
		out[i] = *d;
		/* a TPU chip named by id stands for itself, not for its slice */
		out[i].tpu.accelerator_type[0] = '\0';
		out[i].tpu.topology[0] = '\0';
	}
	*nout = nids;
	return out;
fail:
	free(out);
	return NULL;
}

static unsigned gcd(unsigned a, unsigned b)
{
	while (b != 0) {
		unsigned t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * The fast-link domain of GPUs named by id: of each NVLink domain of the host, the GPUs named in it (one alone where
 * the domain is unknown), and the greatest divisor those counts share, so that tensor groups of that size each sit
 * inside one domain (gpu:0 and gpu:2 of a board joined in pairs share none).
 */
static unsigned named_domain(const struct device *named, size_t n)
{
	unsigned g = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned same = 0;
		bool first = true;

		for (size_t j = 0; j < n; j++) {
			bool together = i == j || (named[i].gpu.nvlink_group != 0 && named[i].gpu.nvlink_domain > 1 &&
						   named[j].gpu.nvlink_group == named[i].gpu.nvlink_group);

			same += together;
			if (together && j < i)
				first = false;
		}
		if (first)
			g = gcd(g, same);
	}
	return g ? g : 1;
}

enum acceld_err plan_params_devices(const struct plan_params *p, const struct device *devs, size_t n,
				    struct plan_devices *out, struct plan_devices_origin *origin, const char **param,
				    char *why, size_t whysz)
{
	enum plan_source source = plan_params_source(p);
	enum acceld_err rc = ACCELD_OK;
	struct device *named = NULL;
	size_t nnamed = 0;
	unsigned hosts = p->hosts ? p->hosts : 1;
	char text[sizeof(origin->text)];

	*param = "devices";
	memset(out, 0, sizeof(*out));
	memset(origin, 0, sizeof(*origin));
	if (source == PLAN_SOURCE_SHAPE) {
		rc = plan_devices_parse(p->devices, out, origin, why, whysz);
		if (rc == ACCELD_EUNSUPPORTED)
			rc = ACCELD_EINVAL;
	} else if (source == PLAN_SOURCE_IDS) {
		named = named_devices(p, devs, n, &nnamed, param, &rc, why, whysz);
		if (named != NULL)
			rc = plan_devices_from_registry(named, nnamed, &named[0].type, out, origin, why, whysz);
		if (named != NULL && rc == ACCELD_OK && out->kind == PLAN_GPU) {
			out->fast_domain = named_domain(named, nnamed);
			plan_put(origin->text, sizeof(origin->text), "%u x %s named by id%s", out->count,
				 origin->model, plan_devices_link_words(out));
			if (out->fast_domain > 1 && out->fast_domain < out->count)
				plan_put(text, sizeof(text), "%s in groups of %u", origin->text, out->fast_domain);
			else
				plan_put(text, sizeof(text), "%s", origin->text);
			plan_put(origin->text, sizeof(origin->text), "%s", text);
		}
	} else {
		rc = plan_devices_from_registry(devs, n, NULL, out, origin, why, whysz);
	}
	free(named);
	if (rc == ACCELD_ENOTFOUND && source != PLAN_SOURCE_IDS) {
		/* this host's devices, whose memory is unknown: the request cannot be planned as it stands */
		rc = ACCELD_EUNPROCESSABLE;
	}
	if (rc == ACCELD_ENOTFOUND && out->count != 0)
		rc = ACCELD_EUNPROCESSABLE; /* named devices whose memory is unknown */
	if (rc == ACCELD_OK && p->memory_bytes != 0) {
		out->memory_bytes = p->memory_bytes;
		plan_put(text, sizeof(text), "%s; %llu bytes a device as given", origin->text,
			 (unsigned long long)p->memory_bytes);
		snprintf(origin->text, sizeof(origin->text), "%s", text);
	}
	if (rc == ACCELD_EUNPROCESSABLE && p->memory_bytes != 0 && out->count != 0) {
		out->memory_bytes = p->memory_bytes; /* the memory the host does not know, given */
		rc = ACCELD_OK;
	}
	if (rc != ACCELD_OK || hosts == 1)
		return rc;
	*param = "hosts";
	if (out->kind == PLAN_TPU && out->torus[0] != 0) {
		snprintf(why, whysz, "this host is a worker of a TPU slice whose hosts its type already counts; name a "
			 "larger slice (devices=tpu:v5p-256) instead");
		return ACCELD_EINVAL;
	}
	if ((uint64_t)out->count * hosts > PLAN_MAX_DEVICES) {
		snprintf(why, whysz, "%u hosts of %u devices pass %u devices", hosts, out->count, PLAN_MAX_DEVICES);
		return ACCELD_EINVAL;
	}
	out->per_host = out->count;
	out->count *= hosts;
	plan_put(text, sizeof(text), "%u hosts like this one (%s)", hosts, origin->text);
	snprintf(origin->text, sizeof(origin->text), "%s", text);
	return ACCELD_OK;
}

/* The process's environment, with the TPU worker id the registry holds (from the GCE metadata server) beneath. */
struct host_env {
	plan_getenv_fn get;
	void *ctx;
	char worker[16];
};

static const char *host_getenv(const char *name, void *ctx)
{
	struct host_env *h = ctx;
	const char *v = h->get(name, h->ctx);

	if ((v == NULL || v[0] == '\0') && strcmp(name, "TPU_WORKER_ID") == 0 && h->worker[0] != '\0')
		return h->worker;
	return v;
}

void plan_params_env(const struct plan_params *p, const struct device *devs, size_t n, unsigned hosts,
		     plan_getenv_fn get, void *ctx, struct plan_env *out)
{
	struct host_env h = {.get = get, .ctx = ctx};
	struct plan_env_opts opts = {.port = p->coordinator_port,
				     .service = p->k8s_service[0] ? p->k8s_service : NULL,
				     .processes = hosts};

	if (hosts <= 1) {
		memset(out, 0, sizeof(*out));
		out->source = PLAN_ENV_NONE;
		out->num_processes = 1;
		out->process_id = 0;
		snprintf(out->note, sizeof(out->note), "one host: a single process, which needs no coordinator");
		return;
	}
	for (size_t i = 0; i < n && h.worker[0] == '\0'; i++)
		if (devs[i].type == DEVICE_TPU && devs[i].tpu.worker_id >= 0)
			snprintf(h.worker, sizeof(h.worker), "%d", devs[i].tpu.worker_id);
	plan_env_jax(host_getenv, &h, &opts, out);
}

void plan_env_to_envfmt(const struct plan_env *env, struct envfmt *out)
{
	char num[24];

	envfmt_init(out);
	if (env->source == PLAN_ENV_NONE)
		return;
	if (env->coordinator[0] != '\0')
		envfmt_set(out, "JAX_COORDINATOR_ADDRESS", env->coordinator);
	if (env->num_processes > 0) {
		snprintf(num, sizeof(num), "%ld", env->num_processes);
		envfmt_set(out, "JAX_NUM_PROCESSES", num);
	}
	if (env->process_id >= 0) {
		snprintf(num, sizeof(num), "%ld", env->process_id);
		envfmt_set(out, "JAX_PROCESS_ID", num);
	}
}

json_t *plan_params_json(const struct plan_params *p, const struct plan_result *res,
			 const struct plan_devices_origin *origin, const struct plan_env *env)
{
	static const char *const sources[] = {"host", "ids", "shape"};
	json_t *doc = plan_json(res);
	json_t *dev = json_object_get(doc, "devices");
	json_t *model = json_object_get(doc, "model");

	json_object_set_new(model, "name", p->model[0] != '\0' ? json_string(p->model) : json_null());
	json_object_set_new(dev, "source", json_string(sources[plan_params_source(p)]));
	json_object_set_new(dev, "text", json_string(origin->text));
	if (env->source == PLAN_ENV_NONE && env->num_processes == 1) {
		/* one host: nothing to export, and nothing unknown */
		json_object_set_new(doc, "env", json_pack("{s:s, s:{}, s:[], s:s}", "source", "none", "env", "unknown",
							  "note", env->note));
	} else {
		json_object_set_new(doc, "env", plan_env_json(env));
	}
	return doc;
}
