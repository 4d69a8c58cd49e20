/*
 * Unit tests of plan_params.c: GET /plan's fields from text and JSON (each limit, the units of params and
 * memory_bytes, what a refusal says and lists), the presets against their published parameter counts, what only the
 * fields together say, where the devices come from (a shape, ids, this host, times hosts, memory given), a
 * multi-host job's environment (the TPU worker id from the registry, the Kubernetes process count) and the
 * answer's document.
 */
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "plan/plan_params.h"

#define GIB (1024ull * 1024 * 1024)

static struct device devs[16];
static size_t ndevs;
static struct plan_params p;
static char err[512];

static struct device *add(enum device_type type, const char *model, uint64_t memory)
{
	struct device *d = &devs[ndevs];

	device_init(d, type);
	snprintf(d->id, sizeof(d->id), "%s:%zu", device_type_name(type), type == DEVICE_CPU ? 0 : ndevs - 1);
	DEVICE_SET(d->model, model);
	d->memory_total_bytes = memory;
	ndevs++;
	return d;
}

/* cpu:0 and n GPUs gpu:0.. of memory each, NVLink joining domain of them. */
static void gpu_host(unsigned n, const char *model, uint64_t memory, unsigned domain)
{
	ndevs = 0;
	add(DEVICE_CPU, "Test Xeon", 64 * GIB);
	for (unsigned i = 0; i < n; i++) {
		struct device *d = add(DEVICE_GPU, model, memory);

		d->gpu.nvlink_domain = domain;
		d->gpu.nvlink_group = domain > 1 ? i / domain + 1 : 0;
	}
}

/* cpu:0 and the four chips tpu:0..3 of a v5p-128 worker (its slice's type and topology as the registry has them). */
static void v5p_worker(int worker_id)
{
	ndevs = 0;
	add(DEVICE_CPU, "Test Xeon", 64 * GIB);
	for (int i = 0; i < 4; i++) {
		struct device *t = add(DEVICE_TPU, "TPU v5p", 95 * GIB);

		DEVICE_SET(t->tpu.accelerator_type, "v5p-128");
		DEVICE_SET(t->tpu.topology, "4x4x4");
		t->tpu.chips = 4;
		t->tpu.worker_id = worker_id;
	}
}

static void setup(void)
{
	plan_params_init(&p);
	err[0] = '\0';
}

static enum acceld_err set(const char *name, const char *value)
{
	return plan_params_set(&p, name, value, err, sizeof(err));
}

static enum acceld_err set_json(const char *name, const char *json, const char **expected)
{
	json_error_t e;
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	enum acceld_err rc;

	ck_assert_msg(v != NULL, "%s", e.text);
	rc = plan_params_set_json(&p, name, v, expected, err, sizeof(err));
	json_decref(v);
	return rc;
}

START_TEST(presets_give_the_published_counts)
{
	/* the parameter counts of the Hugging Face model cards (safetensors totals) */
	static const struct {
		const char *name;
		uint64_t params;
	} published[] = {
		{"llama-2-7b", 6738415616ull},	   {"llama-2-13b", 13015864320ull}, {"llama-2-70b", 68976648192ull},
		{"llama-3-8b", 8030261248ull},	   {"llama-3-70b", 70553706496ull}, {"llama-3.1-405b", 405853388800ull},
		{"mixtral-8x7b", 46702792704ull},
	};
	size_t n;
	const struct plan_preset *t = plan_presets(&n);
	uint64_t expert, active;

	ck_assert_uint_eq(n, 8);
	for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
		const struct plan_preset *pre = NULL;

		for (size_t j = 0; j < n; j++)
			if (strcmp(t[j].name, published[i].name) == 0)
				pre = &t[j];
		ck_assert_msg(pre != NULL, "%s", published[i].name);
		ck_assert_uint_eq(plan_params_from_shape(&pre->model, NULL, NULL), published[i].params);
		ck_assert_ptr_nonnull(strstr(pre->source, "config.json"));
	}
	/* GPT-3 175B (Brown et al. 2020) without its biases and positions: 174.6e9 */
	ck_assert_uint_eq(plan_params_from_shape(&t[n - 1].model, NULL, NULL), 174566105088ull);
	/* Mixtral: 2 of 8 experts a token, 12.9e9 active (the Mixtral paper's 13B) */
	plan_params_from_shape(&t[6].model, &expert, &active);
	ck_assert_uint_eq(active, 12879925248ull);
}
END_TEST

START_TEST(params_take_units)
{
	ck_assert_int_eq(set("params", "7000000000"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 7000000000ull);
	ck_assert_int_eq(set("params", "7B"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 7000000000ull);
	ck_assert_int_eq(set("params", "6.7b"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 6700000000ull);
	ck_assert_int_eq(set("params", "1.5T"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 1500000000000ull);
	ck_assert_int_eq(set("params", "125M"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 125000000ull);
	ck_assert_int_eq(set("params", "2.5k"), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 2500ull);
	ck_assert_int_eq(set("params", "1125899906842624"), ACCELD_OK);
	/* refused: past the limit, four decimals, decimals without a unit, zero, signs, two units, words */
	static const char *const bad[] = {"1125899906842625", "1126T", "6.7123B", "6.7", "0", "0B", "-7B", "+7B",
					  "7BB", "7 B", "seven", "", "7e9", "99999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(set("params", bad[i]) == ACCELD_EINVAL, "%s", bad[i]);
		ck_assert_msg(strncmp(err, "params: '", 9) == 0 && strstr(err, "such as 7000000000, 7B or 6.7B"), "%s",
			      err);
	}
}
END_TEST

START_TEST(every_field_has_a_limit)
{
	static const struct {
		const char *name;
		const char *ok;
		const char *bad;
	} cases[] = {
		{"layers", "4096", "4097"},	     {"hidden", "1048576", "1048577"}, {"heads", "8192", "8193"},
		{"kv_heads", "8", "0"},		     {"head_dim", "128", "-1"},	       {"ffn", "16777216", "16777217"},
		{"vocab", "16777216", "16777217"},   {"experts", "4096", "4097"},      {"experts_per_token", "2", "x"},
		{"seq_len", "16777216", "16777217"}, {"global_batch", "1", "16777217"},
		{"per_device_batch", "16777216", "0"}, {"reserve", "0.9", "0.95"},    {"hosts", "4096", "4097"},
		{"memory_bytes", "1024TiB", "1025TiB"}, {"coordinator_port", "65535", "65536"},
		{"k8s_service", "llama-train", "Llama"}, {"gated_ffn", "yes", "maybe"}, {"format", "env", "yaml"},
		{"model", "llama-3-8b", "llama-4"},  {"dtype", "fp8", "fp64"},	       {"kv_dtype", "int8", "int2"},
		{"mode", "train", "serve"},	     {"optimizer", "adamw", "lion"},   {"remat", "selective", "some"},
		{"devices", "H100x8", "H100x0"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char prefix[64];

		ck_assert_msg(set(cases[i].name, cases[i].ok) == ACCELD_OK, "%s=%s: %s", cases[i].name, cases[i].ok,
			      err);
		ck_assert_msg(set(cases[i].name, cases[i].bad) == ACCELD_EINVAL, "%s=%s", cases[i].name,
			      cases[i].bad);
		snprintf(prefix, sizeof(prefix), "%s: ", cases[i].name);
		ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s", err);
		ck_assert_ptr_nonnull(plan_param_accepted(cases[i].name));
	}
	ck_assert_int_eq(set("k8s_service", "a-very-long-service-name-that-is-far-longer-than-any-dns-label-may-be"),
			 ACCELD_EINVAL);
	ck_assert_uint_eq(p.coordinator_port, 65535);
	ck_assert_uint_eq(p.memory_bytes, 1ull << 50);
	ck_assert_uint_eq(p.req.reserve_ppm, 900000);
	ck_assert_int_eq(p.req.optimizer, PLAN_ADAM);
	ck_assert(p.req.model.gated_ffn);
	ck_assert_int_eq(set("colour", "red"), ACCELD_ENOTFOUND);
	/* where the values form a set, they are listed; elsewhere a phrase says what is taken */
	ck_assert_str_eq(plan_param_values("mode"), "infer, train");
	ck_assert_ptr_null(plan_param_values("layers"));
	ck_assert_str_eq(plan_param_accepted("layers"), "an integer from 1 to 4096");
	ck_assert_ptr_null(plan_param_accepted("colour"));
	ck_assert_int_eq(set("mode", "serve"), ACCELD_EINVAL);
	ck_assert_str_eq(err, "mode: 'serve' is not one of infer, train");
	/* every field is listed once, and each has a limit */
	for (size_t i = 0; plan_param_names[i] != NULL; i++)
		ck_assert_msg(plan_param_accepted(plan_param_names[i]) != NULL, "%s", plan_param_names[i]);
}
END_TEST

START_TEST(devices_a_shape_or_ids)
{
	char ids[PLAN_PARAMS_MAX_IDS][DEVICE_ID_MAX];
	char many[PLAN_PARAMS_DEVICES_MAX + 100];
	size_t len = 0;

	ck_assert_int_eq(set("devices", "tpu: v5p-128"), ACCELD_OK);
	ck_assert_int_eq(plan_params_source(&p), PLAN_SOURCE_SHAPE);
	ck_assert_uint_eq(plan_params_ids(&p, ids, PLAN_PARAMS_MAX_IDS), 0);
	ck_assert_int_eq(set("devices", "gpu: H100x8"), ACCELD_OK);
	ck_assert_int_eq(plan_params_source(&p), PLAN_SOURCE_SHAPE);
	ck_assert_int_eq(set("devices", "gpu:0, gpu:3"), ACCELD_OK);
	ck_assert_int_eq(plan_params_source(&p), PLAN_SOURCE_IDS);
	ck_assert_uint_eq(plan_params_ids(&p, ids, PLAN_PARAMS_MAX_IDS), 2);
	ck_assert_str_eq(ids[1], "gpu:3");
	ck_assert_int_eq(set("devices", "tpu:2"), ACCELD_OK);
	ck_assert_int_eq(plan_params_source(&p), PLAN_SOURCE_IDS);
	/* ids as the one rule for ids has them: the malformed ones are refused as ids, not as shapes */
	static const char *const malformed[] = {"cpu0", "xpu:0", "GPU:0", "gpu:1234567", "gpu:", "gpu:0,gpu1",
						"gpu:0,,gpu:1"};
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		ck_assert_msg(set("devices", malformed[i]) == ACCELD_EINVAL, "%s", malformed[i]);
		ck_assert_msg(strstr(err, "is not a device id (cpu:N, gpu:N or tpu:N)") != NULL, "%s: %s", malformed[i],
			      err);
	}
	ck_assert_int_eq(set("devices", "gpu:1,gpu:1"), ACCELD_EINVAL);
	ck_assert_str_eq(err, "devices: 'gpu:1' is named twice");
	ck_assert_int_eq(set("devices", "H999x8"), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "devices: the spec table has no GPU 'H999'"));
	ck_assert_int_eq(set("devices", "cpu"), ACCELD_EINVAL);
	/* at most 64 ids, and the text has a limit */
	for (int i = 0; i < 65; i++)
		len += (size_t)snprintf(many + len, sizeof(many) - len, "%sgpu:%d", i ? "," : "", i);
	ck_assert_int_eq(set("devices", many), ACCELD_EINVAL);
	ck_assert_str_eq(err, "devices: more than 64 device ids");
	memset(many, 'x', sizeof(many) - 1);
	many[sizeof(many) - 1] = '\0';
	ck_assert_int_eq(set("devices", many), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "longer than 511 bytes"));
}
END_TEST

START_TEST(json_types)
{
	const char *expected;

	ck_assert_int_eq(set_json("params", "70000000000", &expected), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 70000000000ull);
	ck_assert_int_eq(set_json("params", "\"70B\"", &expected), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.params, 70000000000ull);
	ck_assert_int_eq(set_json("params", "7.5", &expected), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(expected);
	ck_assert_int_eq(set_json("layers", "\"32\"", &expected), ACCELD_EINVAL);
	ck_assert_str_eq(expected, "an integer");
	ck_assert_str_eq(err, "expected an integer");
	ck_assert_int_eq(set_json("flash_attention", "1", &expected), ACCELD_EINVAL);
	ck_assert_str_eq(expected, "a boolean");
	ck_assert_int_eq(set_json("flash_attention", "true", &expected), ACCELD_OK);
	ck_assert(p.req.flash_attention);
	ck_assert_int_eq(set_json("mode", "[\"train\"]", &expected), ACCELD_EINVAL);
	ck_assert_str_eq(expected, "a string");
	/* a value refused is repeated, without the field's name (the caller names it by its JSONPath) */
	ck_assert_int_eq(set_json("layers", "0", &expected), ACCELD_EINVAL);
	ck_assert_ptr_null(expected);
	ck_assert_str_eq(err, "'0' is not an integer from 1 to 4096");
	ck_assert_int_eq(set_json("reserve", "0.25", &expected), ACCELD_OK);
	ck_assert_uint_eq(p.req.reserve_ppm, 250000);
	ck_assert_int_eq(set_json("reserve", "0", &expected), ACCELD_OK);
	ck_assert_uint_eq(p.req.reserve_ppm, 0);
	ck_assert_int_eq(set_json("reserve", "0.95", &expected), ACCELD_EINVAL);
	ck_assert_str_eq(err, "'0.95' is not a decimal from 0 to 0.9 with at most 6 decimals, such as 0.1");
	ck_assert_int_eq(set_json("reserve", "\"0.1\"", &expected), ACCELD_EINVAL);
	ck_assert_str_eq(expected, "a number");
	/* null leaves the default */
	ck_assert_int_eq(set_json("seq_len", "null", &expected), ACCELD_OK);
	ck_assert_uint_eq(p.req.seq_len, PLAN_DEFAULT_SEQ);
	ck_assert_int_eq(set_json("mode", "\"tr\\u0000ain\"", &expected), ACCELD_EINVAL);
	ck_assert_int_eq(set_json("colour", "1", &expected), ACCELD_ENOTFOUND);
}
END_TEST

START_TEST(fields_together)
{
	const char *param = NULL;

	ck_assert_int_eq(set("model", "llama-2-70b"), ACCELD_OK);
	ck_assert_int_eq(plan_params_finish(&p, &param, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(p.req.model.layers, 80);
	ck_assert_uint_eq(p.req.model.kv_heads, 8);

	/* a preset and a shape or count: the first of those given is named */
	plan_params_init(&p);
	ck_assert_int_eq(set("vocab", "32000"), ACCELD_OK);
	ck_assert_int_eq(set("model", "llama-2-7b"), ACCELD_OK);
	ck_assert_int_eq(set("params", "7B"), ACCELD_OK);
	ck_assert_int_eq(plan_params_finish(&p, &param, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "vocab");
	ck_assert_ptr_nonnull(strstr(err, "model llama-2-7b sets the shape"));

	/* hosts multiplies this host's devices, not a shape's */
	plan_params_init(&p);
	ck_assert_int_eq(set("devices", "H100x8"), ACCELD_OK);
	ck_assert_int_eq(set("hosts", "2"), ACCELD_OK);
	ck_assert_int_eq(plan_params_finish(&p, &param, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "hosts");
	ck_assert_ptr_nonnull(strstr(err, "H100x16"));
}
END_TEST

START_TEST(devices_from_the_host_ids_and_shapes)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	const char *param = NULL;
	char why[320];

	/* this host: eight H100s on one NVLink board */
	gpu_host(8, "NVIDIA H100 80GB HBM3", 80 * GIB, 8);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_GPU);
	ck_assert_uint_eq(d.count, 8);
	ck_assert_uint_eq(d.fast_domain, 8);
	/* two hosts like it: 16 GPUs, 8 a host, NVLink within each */
	ck_assert_int_eq(set("hosts", "2"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 16);
	ck_assert_uint_eq(d.per_host, 8);
	ck_assert_uint_eq(d.fast_domain, 8);
	ck_assert_ptr_nonnull(strstr(o.text, "2 hosts like this one"));
	/* two of them by id, with the memory a MIG slice would leave */
	plan_params_init(&p);
	ck_assert_int_eq(set("devices", "gpu:0,gpu:5"), ACCELD_OK);
	ck_assert_int_eq(set("memory_bytes", "40GiB"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 2);
	ck_assert_uint_eq(d.memory_bytes, 40 * GIB);
	ck_assert_ptr_nonnull(strstr(o.text, "as given"));
	/* half the board: tensor parallelism within the four named */
	ck_assert_int_eq(set("devices", "gpu:0,gpu:1,gpu:2,gpu:3"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 4);
	ck_assert_ptr_nonnull(strstr(o.text, "4 x NVIDIA H100 80GB HBM3 named by id, joined by NVLink"));
	/* GPUs bridged in pairs: two of one pair are joined, one of each pair are not */
	gpu_host(4, "NVIDIA A100-SXM4-40GB", 40 * GIB, 2);
	ck_assert_int_eq(set("devices", "gpu:0,gpu:1"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 2);
	ck_assert_int_eq(set("devices", "gpu:0,gpu:2"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 1);
	ck_assert_ptr_nonnull(strstr(o.text, "without NVLink between them"));
	ck_assert_int_eq(set("devices", "gpu:0,gpu:1,gpu:2,gpu:3"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 2);
	ck_assert_ptr_nonnull(strstr(o.text, "in groups of 2"));
	gpu_host(8, "NVIDIA H100 80GB HBM3", 80 * GIB, 8);
	/* an id of no device here; ids of two kinds */
	ck_assert_int_eq(set("devices", "gpu:0,gpu:9"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_ENOTFOUND);
	ck_assert_str_eq(why, "no device gpu:9 on this host");
	ck_assert_int_eq(set("devices", "gpu:0,cpu:0"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "devices");
	ck_assert_ptr_nonnull(strstr(why, "different kinds"));
	/* a shape, whatever the host holds */
	ck_assert_int_eq(set("devices", "tpu:v5p-128"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_TPU);
	ck_assert_uint_eq(d.count, 64);

	/* a v5p worker plans for its slice; hosts cannot multiply a slice, a chip named by id is itself */
	v5p_worker(3);
	plan_params_init(&p);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 64);
	ck_assert_uint_eq(d.per_host, 4);
	ck_assert_int_eq(set("hosts", "2"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_EINVAL);
	ck_assert_str_eq(param, "hosts");
	ck_assert_ptr_nonnull(strstr(why, "tpu:v5p-256"));
	plan_params_init(&p);
	ck_assert_int_eq(set("devices", "tpu:0,tpu:1"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 2);
	ck_assert_uint_eq(d.torus[0], 0);

	/* a device whose memory nobody knows cannot be planned for, unless memory_bytes says it */
	gpu_host(2, "Mystery GPU", 0, 1);
	plan_params_init(&p);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)),
			 ACCELD_EUNPROCESSABLE);
	ck_assert_ptr_nonnull(strstr(why, "memory of gpu:0 is unknown"));
	ck_assert_int_eq(set("memory_bytes", "24GB"), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &d, &o, &param, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.memory_bytes, 24000000000ull);
}
END_TEST

/* A fake environment: NAME=value pairs, NULL-terminated. */
static const char *fake_getenv(const char *name, void *ctx)
{
	const char **kv = ctx;

	for (size_t i = 0; kv[i]; i += 2)
		if (strcmp(kv[i], name) == 0)
			return kv[i + 1];
	return NULL;
}

START_TEST(environment_of_a_multi_host_job)
{
	static const char *none[] = {NULL};
	static const char *gke[] = {"TPU_WORKER_HOSTNAMES", "w-0,w-1,w-2,w-3", "TPU_WORKER_ID", "2", NULL};
	static const char *hostnames_only[] = {"TPU_WORKER_HOSTNAMES", "w-0,w-1,w-2,w-3", NULL};
	static const char *k8s[] = {"JOB_COMPLETION_INDEX", "1", "HOSTNAME", "train-1", NULL};
	struct plan_env env;
	struct envfmt e;

	/* one host: nothing to export, nothing unknown */
	v5p_worker(-1);
	plan_params_env(&p, devs, ndevs, 1, fake_getenv, none, &env);
	ck_assert_int_eq(env.source, PLAN_ENV_NONE);
	plan_env_to_envfmt(&env, &e);
	ck_assert_uint_eq(e.n, 0);

	plan_params_env(&p, devs, ndevs, 4, fake_getenv, gke, &env);
	ck_assert_str_eq(env.coordinator, "w-0:8476");
	ck_assert_int_eq(env.process_id, 2);
	/* the worker id from the GCE metadata server (the registry's) where the environment has none */
	v5p_worker(3);
	plan_params_env(&p, devs, ndevs, 4, fake_getenv, hostnames_only, &env);
	ck_assert_int_eq(env.process_id, 3);
	ck_assert_int_eq(env.num_processes, 4);
	plan_env_to_envfmt(&env, &e);
	ck_assert_uint_eq(e.n, 3);
	ck_assert_str_eq(envfmt_get(&e, "JAX_PROCESS_ID"), "3");
	/* the environment wins over the registry */
	plan_params_env(&p, devs, ndevs, 4, fake_getenv, gke, &env);
	ck_assert_int_eq(env.process_id, 2);

	/* an indexed Job: the process count is the plan's hosts; the service and port as given */
	ck_assert_int_eq(set("k8s_service", "llama"), ACCELD_OK);
	ck_assert_int_eq(set("coordinator_port", "1234"), ACCELD_OK);
	gpu_host(8, "NVIDIA H100 80GB HBM3", 80 * GIB, 8);
	plan_params_env(&p, devs, ndevs, 2, fake_getenv, k8s, &env);
	ck_assert_int_eq(env.source, PLAN_ENV_K8S);
	ck_assert_str_eq(env.coordinator, "train-0.llama:1234");
	ck_assert_int_eq(env.num_processes, 2);
	ck_assert_int_eq(env.process_id, 1);
}
END_TEST

START_TEST(the_answer_document)
{
	struct plan_devices_origin o;
	struct plan_result res;
	struct plan_env env;
	const char *param = NULL;
	char why[320];
	static const char *none[] = {NULL};
	json_t *doc;

	gpu_host(8, "NVIDIA H100 80GB HBM3", 80 * GIB, 8);
	ck_assert_int_eq(set("model", "llama-2-7b"), ACCELD_OK);
	ck_assert_int_eq(set("mode", "train"), ACCELD_OK);
	ck_assert_int_eq(plan_params_finish(&p, &param, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(plan_params_devices(&p, devs, ndevs, &p.req.devices, &o, &param, why, sizeof(why)),
			 ACCELD_OK);
	ck_assert_int_eq(plan_compute(&p.req, &res), ACCELD_OK);
	plan_params_env(&p, devs, ndevs, res.hosts, fake_getenv, none, &env);
	doc = plan_params_json(&p, &res, &o, &env);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "model"), "name")), "llama-2-7b");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "devices"), "source")), "host");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(doc, "devices"), "text")),
				     "joined by NVLink"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "reason")), "chosen"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "source")), "none");
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(doc, "env"), "unknown")), 0);
	json_decref(doc);
	plan_result_free(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_params");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, presets_give_the_published_counts);
	tcase_add_test(tc, params_take_units);
	tcase_add_test(tc, every_field_has_a_limit);
	tcase_add_test(tc, devices_a_shape_or_ids);
	tcase_add_test(tc, json_types);
	tcase_add_test(tc, fields_together);
	tcase_add_test(tc, devices_from_the_host_ids_and_shapes);
	tcase_add_test(tc, environment_of_a_multi_host_job);
	tcase_add_test(tc, the_answer_document);
	suite_add_tcase(s, tc);
	return s;
}
