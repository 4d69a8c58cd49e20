/* Unit tests for select.c: preferences, constraints, policies, fallbacks and the exported env, with
 * hosts built here (a TPU v6e-8 host, a host with two GPUs, a CPU-only host). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "exec/kernel.h"
#include "select/select.h"

#define GIB (1024ull * 1024ull * 1024ull)

static struct device devs[16];
static size_t ndevs;

static struct device *add(enum device_type t, const char *id)
{
	struct device *d = &devs[ndevs++];

	device_init(d, t);
	DEVICE_SET(d->id, id);
	return d;
}

static void add_cpu(double effective)
{
	struct device *d = add(DEVICE_CPU, "cpu:0");

	DEVICE_SET(d->vendor, "GenuineIntel");
	DEVICE_SET(d->model, "Test CPU");
	d->memory_total_bytes = 16 * GIB;
	d->cpu.pus = 4;
	d->cpu.effective_cpus = effective;
	d->executable = true;
}

/* cpu:0 and tpu:0..7 of a v6e-8 host: 32 GiB, 918 bf16 TFLOPS, 1638 GB/s, $2.70 per chip-hour, not executable. */
static void host_tpu(void)
{
	ndevs = 0;
	add_cpu(2.0);
	for (unsigned i = 0; i < 8; i++) {
		char id[DEVICE_ID_MAX];
		struct device *d;

		snprintf(id, sizeof(id), "tpu:%u", i);
		d = add(DEVICE_TPU, id);
		DEVICE_SET(d->vendor, "Google");
		DEVICE_SET(d->model, "TPU v6e");
		DEVICE_SET(d->tpu.generation, "v6e");
		DEVICE_SET(d->tpu.accelerator_type, "v6e-8");
		d->tpu.chips = 8;
		d->tpu.cores_per_chip = 1;
		d->tpu.chip_index = i;
		d->memory_total_bytes = 32 * GIB;
		d->peak.bf16_tflops = 918;
		d->peak.memory_gbytes_per_s = 1638;
		d->price.usd_per_hour = 2.70;
	}
}

static struct device *add_gpu(const char *id, const char *vendor, const char *model, const char *uuid,
			      uint64_t mem, double fp32, double bf16, double bw, double price)
{
	struct device *d = add(DEVICE_GPU, id);

	DEVICE_SET(d->vendor, vendor);
	DEVICE_SET(d->model, model);
	DEVICE_SET(d->uuid, uuid);
	d->memory_total_bytes = mem;
	d->peak.fp32_tflops = fp32;
	d->peak.bf16_tflops = bf16;
	d->peak.memory_gbytes_per_s = bw;
	d->price.usd_per_hour = price;
	d->executable = true;
	return d;
}

/* cpu:0, gpu:0 H100 80 GB ($10.98/h), gpu:1 L4 24 GB ($0.56/h). */
static void host_gpus(void)
{
	ndevs = 0;
	add_cpu(2.0);
	add_gpu("gpu:0", "NVIDIA", "NVIDIA H100 80GB HBM3", "GPU-11111111-2222-3333-4444-555555555555", 80 * GIB, 67,
		989, 3350, 10.98);
	add_gpu("gpu:1", "NVIDIA", "NVIDIA L4", "GPU-66666666-7777-8888-9999-000000000000", 24 * GIB, 30.3, 121, 300,
		0.56);
}

static void host_cpu(double effective)
{
	ndevs = 0;
	add_cpu(effective);
}

static struct select_request request(int prefer, enum select_policy policy)
{
	struct select_request r;

	select_request_init(&r, NULL);
	r.prefer = prefer;
	r.policy = policy;
	return r;
}

static const struct select_candidate *cand(const struct select_result *res, const char *id)
{
	for (size_t i = 0; i < res->ncandidates; i++)
		if (strcmp(res->candidates[i].dev->id, id) == 0)
			return &res->candidates[i];
	ck_abort_msg("no candidate %s", id);
	return NULL;
}

static const char *env_of(const struct select_result *res, const char *name)
{
	return envfmt_get(&res->env, name);
}

START_TEST(auto_prefers_tpu)
{
	struct select_request r = request(PREFER_AUTO, SELECT_PRIORITY);
	struct select_result res;

	host_tpu();
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "tpu:0");
	ck_assert(!res.fell_back);
	ck_assert_ptr_null(res.fallback_from);
	ck_assert_uint_eq(res.ncandidates, 9);
	ck_assert_uint_eq(cand(&res, "tpu:0")->rank, 1);
	ck_assert_uint_eq(cand(&res, "tpu:7")->rank, 8);
	ck_assert_uint_eq(cand(&res, "cpu:0")->rank, 9);
	ck_assert_msg(strstr(res.reason, "TPU > GPU > CPU") != NULL, "%s", res.reason);
	ck_assert_str_eq(env_of(&res, "TPU_VISIBLE_CHIPS"), "0");
	ck_assert_str_eq(env_of(&res, "TPU_CHIPS_PER_HOST_BOUNDS"), "1,1,1");
	ck_assert_str_eq(env_of(&res, "TPU_HOST_BOUNDS"), "1,1,1");
	ck_assert_str_eq(env_of(&res, "TPU_PROCESS_BOUNDS"), "1,1,1");
	ck_assert_str_eq(env_of(&res, "JAX_PLATFORMS"), "tpu");
	ck_assert_str_eq(env_of(&res, "XLA_PYTHON_CLIENT_PREALLOCATE"), "false");
	ck_assert_ptr_null(env_of(&res, "CUDA_VISIBLE_DEVICES"));
	select_result_release(&res);
}
END_TEST

START_TEST(tpu_host_scope_lists_every_chip)
{
	struct select_request r = request(PREFER_TPU, SELECT_PRIORITY);
	struct select_result res;

	host_tpu();
	r.tpu_scope = SELECT_TPU_HOST;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(env_of(&res, "TPU_VISIBLE_CHIPS"), "0,1,2,3,4,5,6,7");
	ck_assert_ptr_null(env_of(&res, "TPU_HOST_BOUNDS"));
	ck_assert_ptr_null(env_of(&res, "TPU_CHIPS_PER_HOST_BOUNDS"));
	select_result_release(&res);
}
END_TEST

START_TEST(allow_tpu_false_excludes_tpus)
{
	struct select_request r = request(PREFER_AUTO, SELECT_PRIORITY);
	struct select_result res;

	host_tpu();
	r.allow_tpu = false;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "cpu:0");
	ck_assert(!cand(&res, "tpu:3")->eligible);
	ck_assert_str_eq(cand(&res, "tpu:3")->excluded_by, "allow_tpu");
	select_result_release(&res);

	/* a named preference for TPUs falls back and says why */
	r.prefer = PREFER_TPU;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "cpu:0");
	ck_assert(res.fell_back);
	ck_assert_str_eq(res.fallback_from, "tpu");
	ck_assert_msg(strstr(res.reason, "TPUs are not allowed (allow_tpu=false); fell back to cpu:0") != NULL, "%s",
		      res.reason);
	select_result_release(&res);
}
END_TEST

START_TEST(prefer_tpu_falls_back_to_gpu)
{
	struct select_request r = request(PREFER_TPU, SELECT_PRIORITY);
	struct select_result res;

	host_gpus();
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert(res.fell_back);
	ck_assert_str_eq(res.fallback_from, "tpu");
	ck_assert_msg(strstr(res.reason, "no TPU detected; fell back to gpu:0") != NULL, "%s", res.reason);
	/* the CPU was eligible but the fallback chain reached GPUs first */
	ck_assert(cand(&res, "cpu:0")->eligible);
	ck_assert_uint_eq(cand(&res, "cpu:0")->rank, 0);
	ck_assert_msg(strstr(cand(&res, "cpu:0")->why, "gpu") != NULL, "%s", cand(&res, "cpu:0")->why);
	select_result_release(&res);
}
END_TEST

START_TEST(prefer_gpu_on_tpu_host_when_tpus_not_executable)
{
	struct select_request r = request(PREFER_TPU, SELECT_PRIORITY);
	struct select_result res;

	host_tpu();
	r.executable = true;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "cpu:0");
	ck_assert(res.fell_back);
	ck_assert_msg(strstr(res.reason, "no TPU meets the constraints (8 excluded by executable)") != NULL, "%s",
		      res.reason);
	ck_assert_str_eq(cand(&res, "tpu:0")->excluded_by, "executable");
	select_result_release(&res);
}
END_TEST

START_TEST(policy_fastest)
{
	struct select_request r = request(PREFER_GPU, SELECT_FASTEST);
	struct select_result res;

	host_gpus();
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert_double_eq_tol(cand(&res, "gpu:0")->score, 989000, 1e-6);
	ck_assert_str_eq(cand(&res, "gpu:0")->figure, "peak bf16 GFLOP/s");
	ck_assert_uint_eq(cand(&res, "gpu:1")->rank, 2);
	select_result_release(&res);

	/* sgemm counts fp32 */
	r.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_double_eq_tol(cand(&res, "gpu:1")->score, 30300, 1e-6);
	ck_assert_str_eq(cand(&res, "gpu:1")->figure, "peak fp32 GFLOP/s");
	select_result_release(&res);

	/* a memory-bound kernel counts bandwidth */
	r.kernel = KERNEL_TRIAD;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert_double_eq_tol(cand(&res, "gpu:0")->score, 3350, 1e-9);
	ck_assert_str_eq(cand(&res, "gpu:0")->figure, "peak memory bandwidth GB/s");
	select_result_release(&res);
}
END_TEST

START_TEST(policy_fastest_uses_measured)
{
	struct select_request r = request(PREFER_GPU, SELECT_FASTEST);
	struct select_result res;
	/* made-up history: the L4 measured faster on triad than the H100 */
	const struct select_measured m[] = {
		{"gpu:0", "triad", NAN, 900, NULL, NAN},
		{"gpu:1", "triad", NAN, 1200, NULL, NAN},
		{"gpu:1", "sgemm", 25000, NAN, NULL, NAN},
	};

	host_gpus();
	r.kernel = KERNEL_TRIAD;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, m, 3, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert_str_eq(cand(&res, "gpu:1")->source, "measured");
	ck_assert_double_eq_tol(cand(&res, "gpu:1")->score, 1200, 1e-9);
	select_result_release(&res);

	/* sgemm: measured for gpu:1 only; gpu:0 keeps its peak */
	r.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, m, 3, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert_str_eq(cand(&res, "gpu:0")->source, "peak");
	ck_assert_str_eq(cand(&res, "gpu:1")->source, "measured");
	select_result_release(&res);
}
END_TEST

START_TEST(policy_fastest_says_a_health_check_measured_it)
{
	struct select_request r = request(PREFER_GPU, SELECT_FASTEST);
	struct select_result res;
	/* a check's figure comes first, the jobs' after it: the first of a device and kernel counts */
	const struct select_measured m[] = {
		{"gpu:0", "sgemm", 700, NAN, "check", NAN},
		{"gpu:1", "sgemm", 900, NAN, "check", NAN},
		{"gpu:0", "sgemm", 60000, NAN, NULL, NAN},
	};

	host_gpus();
	r.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, m, 3, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert_str_eq(cand(&res, "gpu:0")->source, "check");
	ck_assert_str_eq(cand(&res, "gpu:0")->figure, "GFLOP/s measured by a health check");
	ck_assert_double_eq_tol(cand(&res, "gpu:0")->score, 700, 1e-9);
	ck_assert_msg(strstr(res.reason, "measured by a health check") != NULL, "%s", res.reason);
	select_result_release(&res);
}
END_TEST

START_TEST(policy_cheapest)
{
	struct select_request r = request(PREFER_GPU, SELECT_CHEAPEST);
	struct select_result res;

	host_gpus();
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert_double_eq_tol(cand(&res, "gpu:1")->score, 0.56, 1e-12);
	ck_assert_msg(strstr(res.reason, "cheapest") != NULL, "%s", res.reason);
	select_result_release(&res);

	/* auto ranks every kind: the CPU has no price, so it ranks after both GPUs */
	r.prefer = PREFER_AUTO;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert_uint_eq(cand(&res, "cpu:0")->rank, 3);
	ck_assert(isnan(cand(&res, "cpu:0")->score));
	select_result_release(&res);

	/* the prices in force (an override of the CPU, none for gpu:0) are the ones ranked, the built-in ones elsewhere */
	{
		double usd[16];
		struct select_measured m[16];
		size_t n;

		for (size_t i = 0; i < ndevs; i++)
			usd[i] = strcmp(devs[i].id, "cpu:0") == 0 ? 0.04 : NAN;
		n = select_prices(devs, usd, ndevs, m, 16);
		ck_assert_uint_eq(n, 1);
		ck_assert_ptr_null(m[0].kernel);
		ck_assert_int_eq(select_choose(devs, ndevs, &r, m, n, &res), ACCELD_OK);
		ck_assert_str_eq(res.device->id, "cpu:0");
		ck_assert_double_eq_tol(cand(&res, "cpu:0")->score, 0.04, 1e-12);
		ck_assert_double_eq_tol(cand(&res, "gpu:1")->score, 0.56, 1e-12);
		select_result_release(&res);
	}
}
END_TEST

START_TEST(policy_efficient)
{
	struct select_request r = request(PREFER_GPU, SELECT_EFFICIENT);
	struct select_result res;
	const struct select_measured m[] = {
		{"gpu:0", "sgemm", 60000, NAN, NULL, NAN},
		{"gpu:1", "sgemm", 2000, NAN, NULL, NAN},
	};

	host_gpus();
	/* peak bf16 per dollar: H100 989000/10.98 = 90073, L4 121000/0.56 = 216071 */
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert_double_eq_tol(cand(&res, "gpu:1")->score, 216071, 1e-6); /* 6 significant digits, as the text */
	select_result_release(&res);

	/* measured sgemm per dollar: H100 60000/10.98 = 5464, L4 2000/0.56 = 3571 */
	r.kernel = KERNEL_SGEMM;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, m, 2, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert_double_eq_tol(cand(&res, "gpu:0")->score, 5464.48, 1e-9); /* 60000 / 10.98 to 6 significant digits */
	ck_assert_str_eq(cand(&res, "gpu:0")->figure, "GFLOP/s per USD/h");
	select_result_release(&res);
}
END_TEST

START_TEST(min_memory_constraint)
{
	struct select_request r = request(PREFER_GPU, SELECT_CHEAPEST);
	struct select_result res;

	host_gpus();
	r.min_memory_bytes = 40 * GIB;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:0");
	ck_assert_str_eq(cand(&res, "gpu:1")->excluded_by, "min_memory_bytes");
	ck_assert_msg(strstr(cand(&res, "gpu:1")->why, "24.0 GiB") != NULL, "%s", cand(&res, "gpu:1")->why);
	select_result_release(&res);

	/* available memory counts where it is known */
	devs[1].memory_available_bytes = 10 * GIB;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ECONFLICT);
	ck_assert_ptr_null(res.device);
	ck_assert_msg(strstr(res.reason, "cpu:0, gpu:0, gpu:1 excluded by min_memory_bytes") != NULL, "%s",
		      res.reason);
	ck_assert_str_eq(res.env.n == 0 ? "empty" : "set", "empty");
	select_result_release(&res);
}
END_TEST

START_TEST(no_device_names_every_constraint)
{
	struct select_request r = request(PREFER_AUTO, SELECT_PRIORITY);
	struct select_result res;

	host_tpu();
	devs[0].executable = false;
	r.executable = true;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ECONFLICT);
	ck_assert_msg(strstr(res.reason, "cpu:0, tpu:0, tpu:1, tpu:2, tpu:3, tpu:4, tpu:5, tpu:6, tpu:7 excluded by "
					 "executable") != NULL,
		      "%s", res.reason);
	select_result_release(&res);

	r.allow_tpu = false;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ECONFLICT);
	ck_assert_msg(strstr(res.reason, "tpu:7 excluded by allow_tpu; cpu:0 excluded by executable") != NULL, "%s",
		      res.reason);
	select_result_release(&res);
}
END_TEST

START_TEST(pinned_device)
{
	struct select_request r = request(PREFER_TPU, SELECT_FASTEST);
	struct select_result res;

	host_gpus();
	DEVICE_SET(r.device, "gpu:1");
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "gpu:1");
	ck_assert(!res.fell_back);
	ck_assert_str_eq(cand(&res, "gpu:0")->excluded_by, "device");
	ck_assert_str_eq(env_of(&res, "CUDA_VISIBLE_DEVICES"), "GPU-66666666-7777-8888-9999-000000000000");
	ck_assert_str_eq(env_of(&res, "JAX_PLATFORMS"), "cuda");
	select_result_release(&res);

	DEVICE_SET(r.device, "gpu:9");
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ENOTFOUND);
	ck_assert_msg(strstr(res.reason, "gpu:9") != NULL, "%s", res.reason);
	select_result_release(&res);

	DEVICE_SET(r.device, "gpu:1");
	r.min_memory_bytes = 30 * GIB;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ECONFLICT);
	ck_assert_msg(strstr(res.reason, "excluded by min_memory_bytes") != NULL, "%s", res.reason);
	select_result_release(&res);

	host_tpu();
	r = request(PREFER_AUTO, SELECT_PRIORITY);
	r.allow_tpu = false;
	DEVICE_SET(r.device, "tpu:3");
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_ECONFLICT);
	ck_assert_msg(strstr(res.reason, "allow_tpu") != NULL, "%s", res.reason);
	select_result_release(&res);

	r.allow_tpu = true;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(env_of(&res, "TPU_VISIBLE_CHIPS"), "3");
	select_result_release(&res);
}
END_TEST

START_TEST(cpu_only_env)
{
	struct select_request r = request(PREFER_AUTO, SELECT_PRIORITY);
	struct select_result res;

	host_cpu(2.7);
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(res.device->id, "cpu:0");
	ck_assert_str_eq(env_of(&res, "CUDA_VISIBLE_DEVICES"), "");
	ck_assert_str_eq(env_of(&res, "JAX_PLATFORMS"), "cpu");
	ck_assert_str_eq(env_of(&res, "OMP_NUM_THREADS"), "2");
	select_result_release(&res);

	host_cpu(0.5);
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(env_of(&res, "OMP_NUM_THREADS"), "1");
	select_result_release(&res);

	/* unknown effective CPUs: the cpuset's hardware threads */
	host_cpu(NAN);
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert_str_eq(env_of(&res, "OMP_NUM_THREADS"), "4");
	select_result_release(&res);

	/* prefer gpu on a CPU-only host falls back */
	r.prefer = PREFER_GPU;
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	ck_assert(res.fell_back);
	ck_assert_str_eq(res.fallback_from, "gpu");
	ck_assert_msg(strstr(res.reason, "no GPU detected; fell back to cpu:0") != NULL, "%s", res.reason);
	select_result_release(&res);
}
END_TEST

START_TEST(vendor_env)
{
	struct envfmt env;

	ndevs = 0;
	add_cpu(8);
	add_gpu("gpu:0", "NVIDIA", "NVIDIA T4", "", 16 * GIB, 8.1, 65, 320, 0.35);
	add_gpu("gpu:1", "AMD", "MI300X", "", 192 * GIB, 163.4, 1307, 5300, NAN);
	add_gpu("gpu:2", "NVIDIA", "NVIDIA L4", "", 24 * GIB, 30.3, 121, 300, 0.56);
	add_gpu("gpu:3", "Intel", "Intel Data Center GPU Max", "", 64 * GIB, NAN, NAN, NAN, NAN);
	add_gpu("gpu:4", "AMD", "MI300X", "GPU-abcdef0123456789", 192 * GIB, 163.4, 1307, 5300, NAN);

	/* no UUID: the ordinal among NVIDIA GPUs in PCI order, and CUDA told to count that way */
	envfmt_init(&env);
	select_env(devs, ndevs, &devs[3], SELECT_TPU_CHIP, &env);
	ck_assert_str_eq(envfmt_get(&env, "CUDA_VISIBLE_DEVICES"), "1");
	ck_assert_str_eq(envfmt_get(&env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	ck_assert_str_eq(envfmt_get(&env, "OMP_NUM_THREADS"), "8");

	envfmt_init(&env);
	select_env(devs, ndevs, &devs[2], SELECT_TPU_CHIP, &env);
	ck_assert_str_eq(envfmt_get(&env, "ROCR_VISIBLE_DEVICES"), "0");
	ck_assert_str_eq(envfmt_get(&env, "HIP_VISIBLE_DEVICES"), "0");
	ck_assert_str_eq(envfmt_get(&env, "JAX_PLATFORMS"), "rocm");
	ck_assert_ptr_null(envfmt_get(&env, "CUDA_VISIBLE_DEVICES"));

	envfmt_init(&env);
	select_env(devs, ndevs, &devs[5], SELECT_TPU_CHIP, &env);
	ck_assert_str_eq(envfmt_get(&env, "ROCR_VISIBLE_DEVICES"), "GPU-abcdef0123456789");

	envfmt_init(&env);
	select_env(devs, ndevs, &devs[4], SELECT_TPU_CHIP, &env);
	ck_assert_str_eq(envfmt_get(&env, "ZE_AFFINITY_MASK"), "0");
	ck_assert_str_eq(envfmt_get(&env, "ONEAPI_DEVICE_SELECTOR"), "level_zero:0");
}
END_TEST

START_TEST(request_fields)
{
	struct select_request r;
	char err[256];

	select_request_init(&r, NULL);
	ck_assert_int_eq(select_request_set(&r, "prefer", "gpu", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(r.prefer, PREFER_GPU);
	ck_assert_int_eq(select_request_set(&r, "prefer", "fpga", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_str_eq(err, "prefer: 'fpga' is not one of auto, cpu, gpu, tpu");
	ck_assert_str_eq(select_param_values("prefer"), "auto, cpu, gpu, tpu");
	ck_assert_str_eq(select_param_values("kernel"), kernel_names_text());
	ck_assert_ptr_null(select_param_values("device"));
	ck_assert_int_eq(select_request_set(&r, "policy", "efficient", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(r.policy, SELECT_EFFICIENT);
	ck_assert_int_eq(select_request_set(&r, "policy", "", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "kernel", "sgemm", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&r, "kernel", "", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "allow_tpu", "no", err, sizeof(err)), ACCELD_OK);
	ck_assert(!r.allow_tpu);
	ck_assert_int_eq(select_request_set(&r, "executable", "maybe", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "min_memory_bytes", "16GiB", err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(r.min_memory_bytes, 16 * GIB);
	ck_assert_int_eq(select_request_set(&r, "min_memory_bytes", "9223372036854775807", err, sizeof(err)),
			 ACCELD_OK);
	ck_assert_int_eq(select_request_set(&r, "min_memory_bytes", "9223372036854775808", err, sizeof(err)),
			 ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "min_memory_bytes", "-1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "min_memory_bytes", "99999999999999999999999", err, sizeof(err)),
			 ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "device", "gpu:1", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&r, "device", "gpu:", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "device", "GPU:1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "device", "gpu:1'; rm -rf /", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "device", "xpu:1", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "device", "gpu:1234567", err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(select_request_set(&r, "format", "env", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&r, "tpu_scope", "host", err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(select_request_set(&r, "colour", "blue", err, sizeof(err)), ACCELD_ENOTFOUND);
}
END_TEST

START_TEST(result_json)
{
	struct select_request r = request(PREFER_GPU, SELECT_FASTEST);
	struct select_result res;
	json_t *doc;

	host_gpus();
	ck_assert_int_eq(select_choose(devs, ndevs, &r, NULL, 0, &res), ACCELD_OK);
	doc = select_result_to_json(&res, &r, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "device"), "id")), "gpu:0");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "policy")), "fastest");
	ck_assert(json_is_false(json_object_get(doc, "fell_back")));
	ck_assert(json_is_null(json_object_get(doc, "fallback_from")));
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "candidates")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "env"), "CUDA_VISIBLE_DEVICES")),
			 "GPU-11111111-2222-3333-4444-555555555555");
	json_decref(doc);
	select_result_release(&res);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("select");
	TCase *tc = tcase_create("select");

	tcase_add_test(tc, auto_prefers_tpu);
	tcase_add_test(tc, tpu_host_scope_lists_every_chip);
	tcase_add_test(tc, allow_tpu_false_excludes_tpus);
	tcase_add_test(tc, prefer_tpu_falls_back_to_gpu);
	tcase_add_test(tc, prefer_gpu_on_tpu_host_when_tpus_not_executable);
	tcase_add_test(tc, policy_fastest);
	tcase_add_test(tc, policy_fastest_uses_measured);
	tcase_add_test(tc, policy_fastest_says_a_health_check_measured_it);
	tcase_add_test(tc, policy_cheapest);
	tcase_add_test(tc, policy_efficient);
	tcase_add_test(tc, min_memory_constraint);
	tcase_add_test(tc, no_device_names_every_constraint);
	tcase_add_test(tc, pinned_device);
	tcase_add_test(tc, cpu_only_env);
	tcase_add_test(tc, vendor_env);
	tcase_add_test(tc, request_fields);
	tcase_add_test(tc, result_json);
	suite_add_tcase(s, tc);
	return s;
}
