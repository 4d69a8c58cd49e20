/* Unit tests for probe_nvml.c against the fake libnvidia-ml (tests/fakes/nvml.c). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "detect/probe.h"

#define GIB (1024ull * 1024 * 1024)

static char lib_path[512];
static struct config cfg;

static void setup(void)
{
	const char *build = getenv("ACCELD_BUILD");
	static const char *vars[] = {"FAKE_NVML_INIT_FAIL", "FAKE_NVML_COUNT", "FAKE_NVML_COUNT_FAIL",
				     "FAKE_NVML_FAIL", "FAKE_NVML_FAIL_GPU", "FAKE_NVML_FAIL_AFTER",
				     "FAKE_NVML_UTIL", "FAKE_NVML_MIG", "FAKE_NVML_NOT_SUPPORTED",
				     "FAKE_NVML_PADDED", "FAKE_NVML_THROTTLE", "FAKE_NVML_ECC",
				     "FAKE_NVML_RETIRED_PENDING", "CUDA_VISIBLE_DEVICES", "FAKE_NVML_HGX",
				     "FAKE_NVML_NVLINK"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	snprintf(lib_path, sizeof(lib_path), "%s/fakes/libnvml.so", build && *build ? build : "build");
	memset(&cfg, 0, sizeof(cfg));
	cfg.nvml_library = lib_path;
	cfg.sysfs_root = (char *)"tests/fixtures/none/sys";
}

/* Runs the probe once with a fresh state; the caller releases state and list. */
static void run(void **state, struct device_list *out, struct probe_result *res)
{
	*state = NULL;
	device_list_init(out);
	memset(res, 0, sizeof(*res));
	probe_nvml_ops.probe(state, &cfg, out, res);
}

static void done(void *state, struct device_list *out)
{
	probe_nvml_ops.release(state);
	device_list_release(out);
}

static const struct device *by_model(const struct device_list *l, const char *model)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].model, model) == 0)
			return &l->v[i];
	return NULL;
}

START_TEST(two_gpus)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h, *l;

	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(res.available);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_uint_eq(out.n, 2);
	ck_assert_str_eq(res.why, "");
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	l = by_model(&out, "NVIDIA L4");
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(h->type, DEVICE_GPU);
	ck_assert_str_eq(h->vendor, "NVIDIA");
	ck_assert_uint_eq(h->sources, SOURCE_NVML);
	ck_assert_str_eq(h->uuid, "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
	ck_assert_str_eq(h->pci_bus_id, "0000:65:00.0");
	ck_assert_str_eq(l->pci_bus_id, "0000:ca:00.0");
	/* a real H100's figures (tests/gpu/README.md, "Runs"): 81559 MiB, 480 of them reserved, which are not free */
	ck_assert_uint_eq(h->memory_total_bytes, 85520809984ull);
	ck_assert_uint_eq(l->memory_total_bytes, 24 * GIB);
	ck_assert_uint_eq(h->memory_available_bytes, 85520809984ull - 85520809984ull / 4 - (480ull << 20));
	ck_assert_uint_eq(h->telemetry.memory_used_bytes, 85520809984ull / 4);
	ck_assert_double_eq_tol(h->telemetry.utilization_ratio, 0.5, 1e-9);
	ck_assert_double_eq_tol(l->telemetry.utilization_ratio, 0.1, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.temperature_celsius, 41, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.power_watts, 312.0, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.power_limit_watts, 700.0, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.energy_joules, 123456.789, 1e-6);
	ck_assert(h->telemetry.sampled_at_ms > 0);
	ck_assert_str_eq(h->gpu.compute_capability, "9.0");
	ck_assert_str_eq(l->gpu.compute_capability, "8.9");
	ck_assert_int_eq(h->gpu.mig_mode, 0);
	ck_assert_str_eq(h->gpu.driver_version, "550.54.15");
	ck_assert_str_eq(h->gpu.cuda_version, "12.4");
	ck_assert_str_eq(h->gpu.driver, "nvidia");
	ck_assert_uint_eq(h->gpu.pci_device_id, 0x2330);
	ck_assert_uint_eq(h->gpu.clock_max_mhz, 1980);
	ck_assert_uint_eq(h->clock_mhz, 1980);
	ck_assert_uint_eq(h->gpu.memory_clock_mhz, 2619);
	ck_assert_int_eq(h->numa_node, 0);
	ck_assert_int_eq(l->numa_node, 1);
	/* ids and the spec table are the registry's business */
	ck_assert_str_eq(h->id, "");
	ck_assert(isnan(h->peak.bf16_tflops));
	done(st, &out);
}
END_TEST

START_TEST(pcie_links)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h, *l;

	run(&st, &out, &res);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	l = by_model(&out, "NVIDIA L4");
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(l);
	/* an idle H100 runs its link at Gen1; the rate a transfer can reach is its Gen5 x16's */
	ck_assert_uint_eq(h->pcie.generation, 1);
	ck_assert_uint_eq(h->pcie.width, 16);
	ck_assert_uint_eq(h->pcie.max_generation, 5);
	ck_assert_uint_eq(h->pcie.max_width, 16);
	ck_assert_double_eq_tol(device_pcie_gbytes_per_s(&h->pcie), 63.015, 1e-3);
	ck_assert_uint_eq(l->pcie.max_generation, 4);
	done(st, &out);

	/* a T4 in an x8 slot: the width it trained at, not the card's widest */
	setenv("FAKE_NVML_COUNT", "4", 1);
	run(&st, &out, &res);
	h = by_model(&out, "Tesla T4");
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(h->pcie.width, 8);
	ck_assert_uint_eq(h->pcie.max_width, 16);
	ck_assert_double_eq_tol(device_pcie_gbytes_per_s(&h->pcie), 7.877, 1e-3);
	done(st, &out);

	/* failing calls leave the link unknown on that GPU, noted; the others keep theirs */
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_FAIL", "pcie", 1);
	run(&st, &out, &res);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	l = by_model(&out, "NVIDIA L4");
	ck_assert_uint_eq(l->pcie.generation, 0);
	ck_assert_uint_eq(l->pcie.max_generation, 0);
	ck_assert(isnan(device_pcie_gbytes_per_s(&l->pcie)));
	ck_assert_ptr_nonnull(strstr(res.why, "gpu 1 pcie generation: "));
	ck_assert_uint_eq(h->pcie.max_generation, 5);
	done(st, &out);

	/* "not supported" is silent */
	unsetenv("FAKE_NVML_FAIL");
	setenv("FAKE_NVML_NOT_SUPPORTED", "pcie", 1);
	run(&st, &out, &res);
	ck_assert_uint_eq(out.v[0].pcie.max_generation, 0);
	ck_assert_str_eq(res.why, "");
	done(st, &out);
}
END_TEST

START_TEST(prefers_v2_symbols)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	void *lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	long (*calls)(const char *);
	void *sym;

	ck_assert_ptr_nonnull(lib);
	sym = dlsym(lib, "fake_nvml_calls");
	ck_assert_ptr_nonnull(sym);
	memcpy(&calls, &sym, sizeof(calls));
	run(&st, &out, &res);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_int_eq(calls("nvmlInit_v2"), 1);
	ck_assert_int_eq(calls("nvmlInit"), 0);
	ck_assert_int_eq(calls("nvmlDeviceGetCount_v2"), 1);
	ck_assert_int_eq(calls("nvmlDeviceGetCount"), 0);
	ck_assert_int_eq(calls("nvmlDeviceGetHandleByIndex"), 0);
	ck_assert_int_eq(calls("nvmlDeviceGetMemoryInfo_v2"), 2);
	ck_assert_int_eq(calls("nvmlDeviceGetMemoryInfo"), 0);
	ck_assert_int_eq(calls("nvmlDeviceGetPciInfo_v3"), 2);
	done(st, &out);
	ck_assert_int_eq(calls("nvmlShutdown"), 1);
	dlclose(lib);
}
END_TEST

START_TEST(failing_calls_keep_the_rest)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h, *l;

	setenv("FAKE_NVML_FAIL", "temperature,power", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	l = by_model(&out, "NVIDIA L4");
	ck_assert_ptr_nonnull(l);
	ck_assert(isnan(l->telemetry.temperature_celsius));
	ck_assert(isnan(l->telemetry.power_watts));
	ck_assert_double_eq_tol(l->telemetry.power_limit_watts, 72.0, 1e-9);
	ck_assert_uint_eq(l->memory_total_bytes, 24 * GIB);
	ck_assert_double_eq_tol(h->telemetry.temperature_celsius, 41, 1e-9);
	ck_assert_ptr_nonnull(strstr(res.why, "gpu 1 temperature: Unknown Error"));
	ck_assert_ptr_nonnull(strstr(res.why, "gpu 1 power: Unknown Error"));
	done(st, &out);
}
END_TEST

START_TEST(not_supported_is_silent)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_NOT_SUPPORTED", "energy,numa", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_str_eq(res.why, "");
	ck_assert(isnan(out.v[0].telemetry.energy_joules));
	/* numa falls back to sysfs, which this tree lacks */
	ck_assert_int_eq(out.v[0].numa_node, -1);
	done(st, &out);
}
END_TEST

START_TEST(handle_failure_drops_one_gpu)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_FAIL", "handle", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 1);
	ck_assert_str_eq(out.v[0].model, "NVIDIA H100 80GB HBM3");
	ck_assert_ptr_nonnull(strstr(res.why, "gpu 1 handle"));
	done(st, &out);
}
END_TEST

START_TEST(fails_in_the_middle_of_a_probe)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h, *l;

	/* GPU 0 takes 26 calls (handle, 13 static, 12 telemetry); GPU 1 gets 5 before the GPU is "lost" */
	setenv("FAKE_NVML_FAIL_AFTER", "31", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	l = by_model(&out, "NVIDIA L4");
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(l);
	ck_assert_double_eq_tol(h->telemetry.energy_joules, 123456.789, 1e-6);
	ck_assert_str_eq(l->uuid, "GPU-89a1c3e0-1111-2222-3333-444455556666");
	ck_assert_str_eq(l->pci_bus_id, "0000:ca:00.0");
	ck_assert_uint_eq(l->memory_total_bytes, 0);
	ck_assert(isnan(l->telemetry.temperature_celsius));
	ck_assert_ptr_nonnull(strstr(res.why, "GPU is lost"));
	done(st, &out);
}
END_TEST

START_TEST(refresh_updates_telemetry)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 2);
	setenv("FAKE_NVML_UTIL", "90", 1);
	memset(&res, 0, sizeof(res));
	res.ok = true;
	probe_nvml_ops.refresh(&st, &cfg, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_double_eq_tol(out.v[0].telemetry.utilization_ratio, 0.9, 1e-9);
	ck_assert_double_eq_tol(out.v[1].telemetry.utilization_ratio, 0.9, 1e-9);
	done(st, &out);
}
END_TEST

START_TEST(refresh_failing_keeps_last_values)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 2);
	setenv("FAKE_NVML_FAIL_AFTER", "1", 1);
	setenv("FAKE_NVML_UTIL", "90", 1);
	memset(&res, 0, sizeof(res));
	res.ok = true;
	probe_nvml_ops.refresh(&st, &cfg, &out, &res);
	ck_assert(!res.ok);
	ck_assert_ptr_nonnull(strstr(res.why, "GPU is lost"));
	ck_assert_double_eq_tol(out.v[0].telemetry.utilization_ratio, 0.5, 1e-9);
	ck_assert_uint_eq(out.v[0].memory_total_bytes, 85520809984ull);
	done(st, &out);
}
END_TEST

START_TEST(health_of_a_healthy_gpu)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h;

	run(&st, &out, &res);
	ck_assert(res.ok);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	ck_assert_ptr_nonnull(h);
	ck_assert_double_eq_tol(h->telemetry.clock_mhz, 1980, 1e-9);
	ck_assert(h->telemetry.throttle_known);
	ck_assert_uint_eq(h->telemetry.throttle_reasons, 0);
	ck_assert_double_eq_tol(h->telemetry.ecc_uncorrected, 0, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.ecc_corrected, 0, 1e-9);
	ck_assert_int_eq(h->telemetry.retired_pages_pending, 0);
	ck_assert_uint_eq(h->gpu.slowdown_temperature_celsius, 87);
	done(st, &out);
}
END_TEST

START_TEST(health_of_a_throttled_gpu_with_ecc_errors)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h;
	char text[128];

	setenv("FAKE_NVML_THROTTLE", "thermal", 1);
	setenv("FAKE_NVML_ECC", "3", 1);
	setenv("FAKE_NVML_RETIRED_PENDING", "1", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	ck_assert_ptr_nonnull(h);
	ck_assert_double_eq_tol(h->telemetry.temperature_celsius, 92, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.clock_mhz, 1188, 1e-9);
	ck_assert_uint_eq(h->telemetry.throttle_reasons, DEVICE_THROTTLE_SW_THERMAL | DEVICE_THROTTLE_HW_THERMAL);
	ck_assert(h->telemetry.throttle_reasons & DEVICE_THROTTLE_HARMFUL);
	device_throttle_text(h->telemetry.throttle_reasons, text, sizeof(text));
	ck_assert_str_eq(text, "sw_thermal, hw_thermal");
	ck_assert_double_eq_tol(h->telemetry.ecc_uncorrected, 3, 1e-9);
	ck_assert_double_eq_tol(h->telemetry.ecc_corrected, 6, 1e-9);
	ck_assert_int_eq(h->telemetry.retired_pages_pending, 1);
	done(st, &out);

	/* a power cap holds the clock down too, but is no fault */
	setenv("FAKE_NVML_THROTTLE", "power", 1);
	run(&st, &out, &res);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	ck_assert_uint_eq(h->telemetry.throttle_reasons, DEVICE_THROTTLE_SW_POWER_CAP);
	ck_assert(!(h->telemetry.throttle_reasons & DEVICE_THROTTLE_HARMFUL));
	done(st, &out);
}
END_TEST

START_TEST(health_not_supported_stays_unknown)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h;
	json_t *doc;

	setenv("FAKE_NVML_NOT_SUPPORTED", "ecc,retired,remap,throttle,clock_now,threshold", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_str_eq(res.why, "");
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	ck_assert(isnan(h->telemetry.ecc_uncorrected));
	ck_assert(isnan(h->telemetry.clock_mhz));
	ck_assert(!h->telemetry.throttle_known);
	ck_assert_int_eq(h->telemetry.retired_pages_pending, -1);
	ck_assert_uint_eq(h->gpu.slowdown_temperature_celsius, 0);
	doc = device_to_json(h);
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "telemetry"), "ecc_errors"));
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "telemetry"), "throttle_reasons"));
	ck_assert_ptr_null(json_object_get(json_object_get(doc, "telemetry"), "retired_pages_pending"));
	json_decref(doc);
	done(st, &out);
}
END_TEST

START_TEST(refresh_without_probe)
{
	void *st = NULL;
	struct device_list out;
	struct probe_result res;

	device_list_init(&out);
	memset(&res, 0, sizeof(res));
	probe_nvml_ops.refresh(&st, &cfg, &out, &res);
	ck_assert(res.ok);
	ck_assert(!res.available);
	ck_assert_uint_eq(res.found, 0);
}
END_TEST

START_TEST(init_failure)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_INIT_FAIL", "1", 1);
	run(&st, &out, &res);
	ck_assert(!res.ok);
	ck_assert(res.available);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_ptr_nonnull(strstr(res.why, "nvmlInit: Driver Not Loaded"));
	/* the next probe tries again */
	unsetenv("FAKE_NVML_INIT_FAIL");
	memset(&res, 0, sizeof(res));
	probe_nvml_ops.probe(&st, &cfg, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 2);
	done(st, &out);
}
END_TEST

START_TEST(count_failure)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_COUNT_FAIL", "1", 1);
	run(&st, &out, &res);
	ck_assert(!res.ok);
	ck_assert(res.available);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_ptr_nonnull(strstr(res.why, "nvmlDeviceGetCount"));
	done(st, &out);
}
END_TEST

START_TEST(no_gpus)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_COUNT", "0", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(res.available);
	ck_assert_uint_eq(out.n, 0);
	done(st, &out);
}
END_TEST

START_TEST(library_missing)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	cfg.nvml_library = (char *)"/nonexistent/libnvidia-ml.so.1";
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(!res.available);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_ptr_nonnull(strstr(res.why, "NVML not loaded"));
	done(st, &out);
}
END_TEST

START_TEST(library_without_nvml)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	cfg.nvml_library = (char *)"libm.so.6";
	run(&st, &out, &res);
	ck_assert(!res.ok);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_ptr_nonnull(strstr(res.why, "lacks nvmlInit"));
	done(st, &out);
}
END_TEST

/* Runs the probe with CUDA_VISIBLE_DEVICES=value and returns the models found, comma-separated. */
static void visible(const char *value, char *models, size_t size, struct probe_result *res)
{
	void *st;
	struct device_list out;

	setenv("CUDA_VISIBLE_DEVICES", value, 1);
	run(&st, &out, res);
	models[0] = '\0';
	for (size_t i = 0; i < out.n; i++) {
		size_t len = strlen(models);

		snprintf(models + len, size - len, "%s%s", i ? "," : "", out.v[i].model);
	}
	done(st, &out);
}

START_TEST(cuda_visible_devices)
{
	char m[256];
	struct probe_result res;

	setenv("FAKE_NVML_COUNT", "3", 1);
	visible("", m, sizeof(m), &res);
	ck_assert_str_eq(m, "");
	ck_assert(res.ok);
	visible("1", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA L4");
	visible("2,0", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA A100-SXM4-40GB,NVIDIA H100 80GB HBM3");
	visible("0,7,1", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA H100 80GB HBM3");
	ck_assert_ptr_nonnull(strstr(res.why, "CUDA_VISIBLE_DEVICES entry 1"));
	visible("GPU-89a1", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA L4");
	visible("gpu-5e3c0c9a-aaaa-bbbb-cccc-ddddeeeeffff", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA A100-SXM4-40GB");
	/* two UUIDs start GPU-89: ambiguous, so the list ends before it */
	visible("GPU-89", m, sizeof(m), &res);
	ck_assert_str_eq(m, "");
	visible("0,0", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA H100 80GB HBM3");
	visible("-1,0", m, sizeof(m), &res);
	ck_assert_str_eq(m, "");
	visible(" 1 , 0 ", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA L4,NVIDIA H100 80GB HBM3");
}
END_TEST

/* "L4=0,H100=1": each GPU's CUDA ordinal, its place in CUDA_VISIBLE_DEVICES (PCI order when unset). */
static void ordinals(const char *value, char *text, size_t size)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	if (value != NULL)
		setenv("CUDA_VISIBLE_DEVICES", value, 1);
	else
		unsetenv("CUDA_VISIBLE_DEVICES");
	run(&st, &out, &res);
	text[0] = '\0';
	for (size_t i = 0; i < out.n; i++) {
		size_t len = strlen(text);

		snprintf(text + len, size - len, "%s%s=%d", i ? "," : "", out.v[i].pci_bus_id, out.v[i].gpu.cuda_ordinal);
	}
	done(st, &out);
}

/* The ordinal the PJRT backend finds a GPU by is where CUDA counts it: in list order, a failed handle counted too */
START_TEST(cuda_ordinals_follow_the_list)
{
	char t[256];

	setenv("FAKE_NVML_COUNT", "3", 1);
	ordinals(NULL, t, sizeof(t));
	ck_assert_str_eq(t, "0000:65:00.0=0,0000:ca:00.0=1,0000:07:00.0=2");
	ordinals("2,0", t, sizeof(t));
	ck_assert_str_eq(t, "0000:07:00.0=0,0000:65:00.0=1");
	ordinals("GPU-89a1,GPU-8932", t, sizeof(t));
	ck_assert_str_eq(t, "0000:ca:00.0=0,0000:65:00.0=1");
	/* a listed GPU whose handle fails is still CUDA's ordinal 0: the next one is 1 */
	setenv("FAKE_NVML_FAIL", "handle", 1);
	setenv("FAKE_NVML_FAIL_GPU", "1", 1);
	ordinals("1,0", t, sizeof(t));
	ck_assert_str_eq(t, "0000:65:00.0=1");
	unsetenv("FAKE_NVML_FAIL");
	unsetenv("FAKE_NVML_FAIL_GPU");
	/* a MIG instance is counted where it is listed */
	setenv("FAKE_NVML_MIG", "1", 1);
	ordinals("1,MIG-bbbb2222", t, sizeof(t));
	ck_assert_str_eq(t, "0000:ca:00.0=0,0000:65:00.0=1");
}
END_TEST

/* "1/8 1/8 ...": each GPU's NVLink domain number and size, in GPU order. */
static void nvlink(char *text, size_t size)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	run(&st, &out, &res);
	text[0] = '\0';
	for (size_t i = 0; i < out.n; i++) {
		size_t len = strlen(text);

		snprintf(text + len, size - len, "%s%u/%u", i ? " " : "", out.v[i].gpu.nvlink_group,
			 out.v[i].gpu.nvlink_domain);
	}
	done(st, &out);
}

/* NVLink domains from NVML's P2P status: one board of eight on an NVSwitch, bridged pairs, PCIe only, unknown. */
START_TEST(nvlink_domains)
{
	char t[128];

	setenv("FAKE_NVML_HGX", "8", 1);
	setenv("FAKE_NVML_NVLINK", "all", 1);
	nvlink(t, sizeof(t));
	ck_assert_str_eq(t, "1/8 1/8 1/8 1/8 1/8 1/8 1/8 1/8");
	setenv("FAKE_NVML_NVLINK", "pairs", 1);
	nvlink(t, sizeof(t));
	ck_assert_str_eq(t, "1/2 1/2 2/2 2/2 3/2 3/2 4/2 4/2");
	/* hidden GPUs are not in a domain: CUDA_VISIBLE_DEVICES=1,2,3 splits the first pair */
	setenv("CUDA_VISIBLE_DEVICES", "1,2,3", 1);
	nvlink(t, sizeof(t));
	ck_assert_str_eq(t, "1/1 2/2 2/2");
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("FAKE_NVML_NVLINK");
	nvlink(t, sizeof(t));
	ck_assert_str_eq(t, "1/1 2/1 3/1 4/1 5/1 6/1 7/1 8/1");
	/* the driver will not say: unknown, never a guess */
	setenv("FAKE_NVML_NOT_SUPPORTED", "p2p", 1);
	nvlink(t, sizeof(t));
	ck_assert_str_eq(t, "0/0 0/0 0/0 0/0 0/0 0/0 0/0 0/0");
}
END_TEST

START_TEST(cuda_visible_mig)
{
	char m[256];
	struct probe_result res;

	setenv("FAKE_NVML_MIG", "1", 1);
	visible("MIG-bbbb2222", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA H100 80GB HBM3");
	visible("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA H100 80GB HBM3");
	visible("MIG-cccc", m, sizeof(m), &res);
	ck_assert_str_eq(m, "");
}
END_TEST

START_TEST(padded_strings_are_trimmed)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *h;
	char m[256];

	/* the driver hands out names, UUIDs and its version with blanks around them */
	setenv("FAKE_NVML_PADDED", "1", 1);
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(out.n, 2);
	h = by_model(&out, "NVIDIA H100 80GB HBM3");
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(by_model(&out, "NVIDIA L4"));
	ck_assert_str_eq(h->uuid, "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
	ck_assert_str_eq(h->gpu.driver_version, "550.54.15");
	/* the trimmed UUID finds the GPU again for telemetry */
	memset(&res, 0, sizeof(res));
	probe_nvml_ops.refresh(&st, &cfg, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	done(st, &out);
	/* and MIG instance UUIDs match CUDA_VISIBLE_DEVICES */
	setenv("FAKE_NVML_MIG", "1", 1);
	visible("MIG-bbbb2222", m, sizeof(m), &res);
	ck_assert_str_eq(m, "NVIDIA H100 80GB HBM3");
}
END_TEST

START_TEST(mig_mode_reported)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	setenv("FAKE_NVML_MIG", "1", 1);
	run(&st, &out, &res);
	ck_assert_int_eq(by_model(&out, "NVIDIA H100 80GB HBM3")->gpu.mig_mode, 1);
	ck_assert_int_eq(by_model(&out, "NVIDIA L4")->gpu.mig_mode, 0);
	done(st, &out);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe_nvml");
	TCase *tc = tcase_create("nvml");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, two_gpus);
	tcase_add_test(tc, pcie_links);
	tcase_add_test(tc, prefers_v2_symbols);
	tcase_add_test(tc, failing_calls_keep_the_rest);
	tcase_add_test(tc, not_supported_is_silent);
	tcase_add_test(tc, handle_failure_drops_one_gpu);
	tcase_add_test(tc, fails_in_the_middle_of_a_probe);
	tcase_add_test(tc, refresh_updates_telemetry);
	tcase_add_test(tc, refresh_failing_keeps_last_values);
	tcase_add_test(tc, refresh_without_probe);
	tcase_add_test(tc, health_of_a_healthy_gpu);
	tcase_add_test(tc, health_of_a_throttled_gpu_with_ecc_errors);
	tcase_add_test(tc, health_not_supported_stays_unknown);
	tcase_add_test(tc, init_failure);
	tcase_add_test(tc, count_failure);
	tcase_add_test(tc, no_gpus);
	tcase_add_test(tc, library_missing);
	tcase_add_test(tc, library_without_nvml);
	tcase_add_test(tc, cuda_visible_devices);
	tcase_add_test(tc, cuda_visible_mig);
	tcase_add_test(tc, cuda_ordinals_follow_the_list);
	tcase_add_test(tc, nvlink_domains);
	tcase_add_test(tc, mig_mode_reported);
	tcase_add_test(tc, padded_strings_are_trimmed);
	suite_add_tcase(s, tc);
	return s;
}
