/* jobparams: the fields of a job request, as POST /run's body and `acceld run`'s flags take them (jobparams.h). */
#include "exec/jobparams.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "exec/backend.h"
#include "exec/kernel.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define A_COUNT "a positive integer"
#define A_FLOAT "a finite float32 number"

/* The order is the one messages list the fields in ("accepted: kernel, device, ..."). */
const struct jobparam jobparams_table[] = {
	{"kernel", JOBPARAM_KERNEL, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"device", JOBPARAM_DEVICE, 0, "--device", false, DEVICE_ID_SYNTAX, "--device ID",
	 "this device (cpu:0, gpu:1) and no other; default: the best, falling back", 0, false},
	{"prefer", JOBPARAM_PLACEMENT, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"policy", JOBPARAM_PLACEMENT, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"allow_tpu", JOBPARAM_PLACEMENT, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"min_memory_bytes", JOBPARAM_PLACEMENT, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"fallback", JOBPARAM_BOOL, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"backend", JOBPARAM_BACKEND, 0, "--backend", false, NULL, "--backend NAME",
	 "native, opencl or pjrt (default: the device's first)", 0, false},
	{"alpha", JOBPARAM_FLOAT, KERNEL_PARAM_ALPHA, "--alpha", false, A_FLOAT, "--alpha A, --beta B", "%s",
	 KERNEL_PARAM_ALPHA | KERNEL_PARAM_BETA, false},
	{"beta", JOBPARAM_FLOAT, KERNEL_PARAM_BETA, "--beta", false, A_FLOAT, NULL, NULL, 0, false},
	{"s", JOBPARAM_FLOAT, KERNEL_PARAM_SCALE, "--s", false, A_FLOAT, "--s S", "%s", KERNEL_PARAM_SCALE, false},
	{"n", JOBPARAM_SIZE, 0, "--n", false, A_COUNT, NULL, NULL, 0, false},
	{"m", JOBPARAM_SIZE, KERNEL_PARAM_M, "--m", false, A_COUNT, NULL, NULL, 0, false},
	{"k", JOBPARAM_SIZE, KERNEL_PARAM_K, "--k", false, A_COUNT, NULL, NULL, 0, false},
	{"precision", JOBPARAM_PRECISION, KERNEL_PARAM_PRECISION, "--precision", false, KERNEL_PRECISION_NAMES,
	 "--precision P", "%s's products: highest (float32, the default), tf32 or bf16", KERNEL_PARAM_PRECISION, true},
	{"inputs", JOBPARAM_INPUTS, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"generate", JOBPARAM_GENERATE, 0, "--seed", false, "an integer from 0 to 18446744073709551615", "--seed S",
	 "the seed of the generated inputs (the same seed, the same inputs)", 0, false},
	{"return", JOBPARAM_RETURN, 0, "--full", true, NULL, "--full", "keep the whole output (printed with --json)", 0,
	 false},
	{"verify", JOBPARAM_VERIFY, 0, "--verify", true, NULL, "--verify",
	 "check a sample of the result against a reference; exit 1 when it is wrong", 0, false},
	{"wait", JOBPARAM_BOOL, 0, NULL, false, NULL, NULL, NULL, 0, false},
	{"timeout_ms", JOBPARAM_TIMEOUT, 0, "--timeout-ms", false, "a positive integer of milliseconds",
	 "--timeout-ms T", "the job's timeout in milliseconds (default: --exec-default-timeout)", 0, false},
};

_Static_assert(COUNT(jobparams_table) <= JOBPARAMS_MAX, "JOBPARAMS_MAX is too small");

const size_t jobparams_count = COUNT(jobparams_table);

static const char *field_names[COUNT(jobparams_table) + 1];

static void names_make(void)
{
	for (size_t i = 0; i < COUNT(jobparams_table); i++)
		field_names[i] = jobparams_table[i].name;
}

const char *const *jobparams_names(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, names_make);
	return field_names;
}

const struct jobparam *jobparams_field(const char *name)
{
	for (size_t i = 0; name != NULL && i < COUNT(jobparams_table); i++)
		if (strcmp(jobparams_table[i].name, name) == 0)
			return &jobparams_table[i];
	return NULL;
}

const struct jobparam *jobparams_flag(const char *flag)
{
	for (size_t i = 0; flag != NULL && i < COUNT(jobparams_table); i++)
		if (jobparams_table[i].flag != NULL && strcmp(jobparams_table[i].flag, flag) == 0)
			return &jobparams_table[i];
	return NULL;
}

void jobparams_init(struct jobparams *p)
{
	memset(p, 0, sizeof(*p));
	exec_request_init(&p->req);
	p->wait = true;
}

/* The float a FLOAT field sets. */
static float *float_of(struct jobparams *p, const struct jobparam *f)
{
	switch (f->kernel_param) {
	case KERNEL_PARAM_ALPHA:
		return &p->req.alpha;
	case KERNEL_PARAM_BETA:
		return &p->req.beta;
	default:
		return &p->req.scale;
	}
}

/* The bool a BOOL field sets. */
static bool *bool_of(struct jobparams *p, const struct jobparam *f)
{
	if (strcmp(f->name, "fallback") == 0) {
		p->fallback_given = true;
		return &p->req.fallback;
	}
	return strcmp(f->name, "wait") == 0 ? &p->wait : &p->req.verify;
}

static bool refuse(struct jobparams_refusal *why, enum reason reason, const char *accepted, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool refuse(struct jobparams_refusal *why, enum reason reason, const char *accepted, const char *fmt, ...)
{
	va_list ap;

	why->reason = reason;
	snprintf(why->accepted, sizeof(why->accepted), "%s", accepted != NULL ? accepted : "");
	va_start(ap, fmt);
	vsnprintf(why->detail, sizeof(why->detail), fmt, ap);
	va_end(ap);
	return false;
}

/* A string that must be one of names (", "-separated): the refusal says which value was sent. */
static bool one_of(json_t *v, const char *names, struct jobparams_refusal *why)
{
	if (!json_is_string(v))
		return refuse(why, REASON_INVALID_TYPE, names, "expected a string, one of %s", names);
	return refuse(why, REASON_INVALID_VALUE, names, "'%.64s' is not one of %s", json_string_value(v), names);
}

static bool is_nan_text(const char *s)
{
	static const char *const names[] = {"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity",
					    "+infinity"};

	for (size_t i = 0; i < COUNT(names); i++)
		if (strcasecmp(s, names[i]) == 0)
			return true;
	return false;
}

bool jobparams_json_float(json_t *v, float *out, struct jobparams_refusal *why)
{
	double d;

	if (json_is_string(v)) {
		if (is_nan_text(json_string_value(v)))
			return refuse(why, REASON_NOT_A_NUMBER, NULL, "'%.16s' is not accepted; give a finite number",
				      json_string_value(v));
		return refuse(why, REASON_INVALID_TYPE, NULL, "expected a number, got a string");
	}
	if (!json_is_number(v))
		return refuse(why, REASON_INVALID_TYPE, NULL, "expected a number");
	d = json_number_value(v);
	if (!isfinite(d) || fabs(d) > FLT_MAX)
		return refuse(why, REASON_INVALID_VALUE, NULL, "%g is outside the float32 range (|x| <= %g)", d,
			      (double)FLT_MAX);
	*out = (float)d;
	return true;
}

/* An integer from 1 to max (0: the size limit), with the phrase of what it counts. */
static bool json_count(json_t *v, uint64_t max, const char *type, const char *limit, uint64_t *out,
		       struct jobparams_refusal *why)
{
	json_int_t i;

	if (!json_is_integer(v))
		return refuse(why, REASON_INVALID_TYPE, NULL, "%s", type);
	i = json_integer_value(v);
	if (i < 1 || (uint64_t)i > max)
		return refuse(why, REASON_INVALID_VALUE, NULL,
			      "%" JSON_INTEGER_FORMAT " is not an integer from 1 to %llu%s", i, (unsigned long long)max,
			      limit);
	*out = (uint64_t)i;
	return true;
}

/* generate: {seed}, the inputs drawn from a seed. */
static bool json_generate(json_t *generate, uint64_t *seed, struct jobparams_refusal *why)
{
	const char *key;
	json_t *v;

	if (!json_is_object(generate))
		return refuse(why, REASON_INVALID_TYPE, NULL, "expected an object such as {\"seed\": 1}");
	json_object_foreach(generate, key, v) {
		if (strcmp(key, "seed") == 0)
			continue;
		snprintf(why->subpath, sizeof(why->subpath), ".%.40s", key);
		return refuse(why, REASON_UNKNOWN_FIELD, "seed", "unknown field; accepted: seed");
	}
	v = json_object_get(generate, "seed");
	if (v == NULL)
		return true;
	snprintf(why->subpath, sizeof(why->subpath), ".seed");
	if (!json_is_integer(v))
		return refuse(why, REASON_INVALID_TYPE, NULL, "expected a non-negative integer");
	if (json_integer_value(v) < 0)
		return refuse(why, REASON_INVALID_VALUE, NULL, "%" JSON_INTEGER_FORMAT " is not a non-negative integer",
			      json_integer_value(v));
	*seed = (uint64_t)json_integer_value(v);
	why->subpath[0] = '\0';
	return true;
}

bool jobparams_set_json(struct jobparams *p, const struct jobparam *f, json_t *v, struct jobparams_refusal *why)
{
	char names[128];

	why->detail[0] = '\0';
	why->accepted[0] = '\0';
	why->subpath[0] = '\0';
	switch (f->kind) {
	case JOBPARAM_KERNEL:
		if (!json_is_string(v) || !kernel_parse(json_string_value(v), &p->req.kernel))
			return one_of(v, kernel_names_text(), why);
		return true;
	case JOBPARAM_BOOL:
		if (!json_is_boolean(v))
			return refuse(why, REASON_INVALID_TYPE, NULL, "expected true or false");
		*bool_of(p, f) = json_is_true(v);
		return true;
	case JOBPARAM_BACKEND:
		if (!json_is_string(v) || backend_find(backend_builtin, json_string_value(v)) == NULL) {
			backend_names(backend_builtin, names, sizeof(names));
			return one_of(v, names, why);
		}
		snprintf(p->req.backend, sizeof(p->req.backend), "%s", json_string_value(v));
		return true;
	case JOBPARAM_FLOAT:
		return jobparams_json_float(v, float_of(p, f), why);
	case JOBPARAM_SIZE:
		return json_count(v, JOBPARAMS_MAX_SIZE, "expected an integer", "",
				  kernel_size_of(&p->req.shape, f->name[0]), why);
	case JOBPARAM_PRECISION:
		if (!json_is_string(v) || !kernel_precision_parse(json_string_value(v), &p->req.precision))
			return one_of(v, KERNEL_PRECISION_NAMES, why);
		return true;
	case JOBPARAM_GENERATE:
		return json_generate(v, &p->req.seed, why);
	case JOBPARAM_RETURN:
		if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0)
			p->req.full = true;
		else if (!(json_is_string(v) && strcmp(json_string_value(v), "summary") == 0))
			return one_of(v, "summary, full", why);
		return true;
	case JOBPARAM_VERIFY:
		if (json_is_boolean(v)) {
			p->req.verify = json_is_true(v);
			p->req.verify_full = false;
		} else if (json_is_string(v) && strcmp(json_string_value(v), "full") == 0) {
			p->req.verify = p->req.verify_full = true;
		} else {
			return refuse(why, json_is_string(v) ? REASON_INVALID_VALUE : REASON_INVALID_TYPE, "true, false, full",
				      "expected true (a sample), false or \"full\" (every element)");
		}
		return true;
	case JOBPARAM_TIMEOUT:
		return json_count(v, p->max_timeout_ms > 0 ? p->max_timeout_ms : UINT64_MAX,
				  "expected an integer number of milliseconds", " (ACCELD_EXEC_MAX_TIMEOUT)",
				  &p->req.timeout_ms, why);
	case JOBPARAM_DEVICE:
	case JOBPARAM_PLACEMENT:
	case JOBPARAM_INPUTS:
		break;
	}
	return false;
}

static int text_count(const char *text, uint64_t *out)
{
	return config_parse_u64(text, out) == 0 && *out > 0 ? 0 : -1;
}

static int text_float(const char *text, float *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(text, &end);
	if (errno != 0 || end == text || *end != '\0' || !isfinite(d) || fabs(d) > FLT_MAX)
		return -1;
	*out = (float)d;
	return 0;
}

int jobparams_set_text(struct jobparams *p, const struct jobparam *f, const char *text)
{
	switch (f->kind) {
	case JOBPARAM_BOOL:
		*bool_of(p, f) = true;
		return 0;
	case JOBPARAM_RETURN:
		p->req.full = true;
		return 0;
	case JOBPARAM_VERIFY:
		p->req.verify = true;
		return 0;
	case JOBPARAM_BACKEND:
		if (backend_find(backend_builtin, text) == NULL)
			return -1;
		snprintf(p->req.backend, sizeof(p->req.backend), "%s", text);
		return 0;
	case JOBPARAM_FLOAT:
		return text_float(text, float_of(p, f));
	case JOBPARAM_SIZE:
		return text_count(text, kernel_size_of(&p->req.shape, f->name[0]));
	case JOBPARAM_PRECISION:
		return kernel_precision_parse(text, &p->req.precision) ? 0 : -1;
	case JOBPARAM_GENERATE:
		return config_parse_u64(text, &p->req.seed);
	case JOBPARAM_TIMEOUT:
		return text_count(text, &p->req.timeout_ms);
	case JOBPARAM_KERNEL:
	case JOBPARAM_DEVICE:
	case JOBPARAM_PLACEMENT:
	case JOBPARAM_INPUTS:
		break;
	}
	return -1;
}

void jobparams_help(FILE *out)
{
	for (int switches = 0; switches < 2; switches++) {
		for (size_t i = 0; i < COUNT(jobparams_table); i++) {
			const struct jobparam *f = &jobparams_table[i];
			char words[160] = "";
			char text[256];
			const char *at;

			if (f->usage == NULL || f->flag_switch != (switches == 1))
				continue;
			if (f->help_kernels != 0 && f->help_names)
				kernel_names_join(f->help_kernels, " and ", words, sizeof(words));
			else if (f->help_kernels != 0)
				kernel_param_owners(f->help_kernels, words, sizeof(words));
			/* the help's one %s takes the kernels' words */
			at = strstr(f->help, "%s");
			if (at != NULL)
				snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - f->help), f->help, words, at + 2);
			else
				snprintf(text, sizeof(text), "%s", f->help);
			fprintf(out, "  %-19s %s\n", f->usage, text);
		}
	}
}
