/*
 * Unit tests of plan_devices.c: the devices a plan is made for, from a registry of hand-built devices (a v6e-8 host,
 * a v5p slice worker, eight H100s on an NVSwitch board, four L4s without NVLink, a CPU-only host, mixed GPUs) and
 * from the shapes a caller names (H100x8, tpu:v5p-128, ...), with the spec table's memory.
 */
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "plan/plan_devices.h"

#define GIB (1024ull * 1024 * 1024)

static struct device devs[16];
static size_t ndevs;

static struct device *add(enum device_type type, const char *model, uint64_t memory)
{
	struct device *d = &devs[ndevs];

	device_init(d, type);
	snprintf(d->id, sizeof(d->id), "%s:%zu", device_type_name(type), ndevs);
	DEVICE_SET(d->model, model);
	d->memory_total_bytes = memory;
	ndevs++;
	return d;
}

static void host_cpu(void)
{
	ndevs = 0;
	add(DEVICE_CPU, "Test Xeon", 64 * GIB);
}

START_TEST(named_gpu_shapes)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char err[256];

	ck_assert_int_eq(plan_devices_parse("H100x8", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_GPU);
	ck_assert_uint_eq(d.count, 8);
	ck_assert_uint_eq(d.per_host, 8);
	ck_assert_uint_eq(d.fast_domain, 8);
	ck_assert_uint_eq(d.memory_bytes, 80 * GIB);
	ck_assert_str_eq(o.model, "H100");
	ck_assert_int_eq(plan_devices_parse("8 x H100", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 8);
	/* two boards: eight a host, tensor parallelism inside each */
	ck_assert_int_eq(plan_devices_parse("gpu:H100x16", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.per_host, 8);
	ck_assert_uint_eq(d.fast_domain, 8);
	/* PCIe cards: one host, no fast links */
	ck_assert_int_eq(plan_devices_parse("L4x4", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 1);
	ck_assert_uint_eq(d.per_host, 4);
	ck_assert_uint_eq(d.memory_bytes, 24 * GIB);
	ck_assert_int_eq(plan_devices_parse("h100-pcie x2", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 1);
	ck_assert_int_eq(plan_devices_parse("MI300Xx8", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.memory_bytes, 192 * GIB);
	ck_assert_uint_eq(d.fast_domain, 8);
}
END_TEST

START_TEST(named_tpu_slices)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char err[256];

	/* v5p counts TensorCores: v5p-128 is 64 chips, four a host, a 4x4x4 torus */
	ck_assert_int_eq(plan_devices_parse("tpu:v5p-128", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_TPU);
	ck_assert_uint_eq(d.count, 64);
	ck_assert_uint_eq(d.per_host, 4);
	ck_assert_uint_eq(d.torus[0], 4);
	ck_assert_uint_eq(d.torus[1], 4);
	ck_assert_uint_eq(d.torus[2], 4);
	ck_assert_uint_eq(d.memory_bytes, 95 * GIB);
	/* v6e counts chips: v6e-8 is one host of eight, a 2x4 torus */
	ck_assert_int_eq(plan_devices_parse("v6e-8", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 8);
	ck_assert_uint_eq(d.per_host, 8);
	ck_assert_uint_eq(d.torus[0], 2);
	ck_assert_uint_eq(d.torus[1], 4);
	ck_assert_uint_eq(d.torus[2], 0);
	ck_assert_uint_eq(d.memory_bytes, 32 * GIB);
	/* tpu7x counts TensorCores too */
	ck_assert_int_eq(plan_devices_parse("tpu7x-16", &d, &o, err, sizeof(err)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 8);
}
END_TEST

START_TEST(bad_shapes_say_what_is_accepted)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char err[256];

	ck_assert_int_eq(plan_devices_parse("H999x8", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "no GPU 'H999'"));
	ck_assert_int_eq(plan_devices_parse("warp-drive", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a TPU type"));
	ck_assert_int_eq(plan_devices_parse("H100", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "MODELxCOUNT"));
	ck_assert_int_eq(plan_devices_parse("", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(plan_devices_parse("cpu", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_int_eq(plan_devices_parse("H100x999999", &d, &o, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "at most"));
}
END_TEST

START_TEST(a_v6e_host_plans_for_its_slice)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char why[256];

	host_cpu();
	for (int i = 0; i < 8; i++) {
		struct device *t = add(DEVICE_TPU, "TPU v6e", 32 * GIB);

		DEVICE_SET(t->tpu.accelerator_type, "v6e-8");
		DEVICE_SET(t->tpu.topology, "2x4");
		t->tpu.chips = 8;
	}
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_TPU);
	ck_assert_uint_eq(d.count, 8);
	ck_assert_uint_eq(d.per_host, 8);
	ck_assert_uint_eq(d.torus[0], 2);
	ck_assert_uint_eq(d.torus[1], 4);
}
END_TEST

START_TEST(a_v5p_worker_plans_for_the_whole_slice)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char why[256];

	host_cpu();
	for (int i = 0; i < 4; i++) {
		struct device *t = add(DEVICE_TPU, "TPU v5p", 95 * GIB);

		DEVICE_SET(t->tpu.accelerator_type, "v5p-128");
		DEVICE_SET(t->tpu.topology, "4x4x4");
		t->tpu.chips = 4;
	}
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 64);
	ck_assert_uint_eq(d.per_host, 4);
	ck_assert_uint_eq(d.torus[2], 4);
	ck_assert_ptr_nonnull(strstr(o.text, "v5p-128"));
}
END_TEST

START_TEST(gpus_of_the_host)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char why[256];
	enum device_type cpu = DEVICE_CPU;

	/* eight H100s on an NVSwitch board */
	host_cpu();
	for (int i = 0; i < 8; i++) {
		struct device *g = add(DEVICE_GPU, "NVIDIA H100 80GB HBM3", 85520809984ull);

		g->gpu.nvlink_domain = 8;
		g->gpu.nvlink_group = 1;
	}
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_GPU);
	ck_assert_uint_eq(d.count, 8);
	ck_assert_uint_eq(d.fast_domain, 8);
	ck_assert_uint_eq(d.memory_bytes, 85520809984ull);
	ck_assert_ptr_nonnull(strstr(o.text, "joined by NVLink"));
	/* four L4s: NVML says no pair has NVLink */
	host_cpu();
	for (int i = 0; i < 4; i++)
		add(DEVICE_GPU, "NVIDIA L4", 24 * GIB)->gpu.nvlink_domain = 1;
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.fast_domain, 1);
	ck_assert_str_eq(o.text, "4 x NVIDIA L4 on this host, without NVLink between them");
	/* one GPU has nothing to be linked to (a real H100 once read "1 x ... without NVLink between them") */
	host_cpu();
	add(DEVICE_GPU, "NVIDIA H100 80GB HBM3", 85520809984ull)->gpu.nvlink_domain = 1;
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_str_eq(o.text, "1 x NVIDIA H100 80GB HBM3 on this host");
	/* mixed GPUs: the most numerous model, each GPU's memory the smallest */
	host_cpu();
	add(DEVICE_GPU, "NVIDIA T4", 16 * GIB);
	add(DEVICE_GPU, "NVIDIA L4", 23 * GIB);
	add(DEVICE_GPU, "NVIDIA L4", 24 * GIB);
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_uint_eq(d.count, 2);
	ck_assert_uint_eq(d.memory_bytes, 23 * GIB);
	ck_assert_str_eq(o.model, "NVIDIA L4");
	/* the CPU when asked */
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, &cpu, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_CPU);
	ck_assert_uint_eq(d.count, 1);
}
END_TEST

START_TEST(a_cpu_only_host)
{
	struct plan_devices d;
	struct plan_devices_origin o;
	char why[256];
	enum device_type gpu = DEVICE_GPU;

	host_cpu();
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, NULL, &d, &o, why, sizeof(why)), ACCELD_OK);
	ck_assert_int_eq(d.kind, PLAN_CPU);
	ck_assert_uint_eq(d.memory_bytes, 64 * GIB);
	ck_assert_int_eq(plan_devices_from_registry(devs, ndevs, &gpu, &d, &o, why, sizeof(why)), ACCELD_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(why, "no gpu"));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("plan_devices");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, named_gpu_shapes);
	tcase_add_test(tc, named_tpu_slices);
	tcase_add_test(tc, bad_shapes_say_what_is_accepted);
	tcase_add_test(tc, a_v6e_host_plans_for_its_slice);
	tcase_add_test(tc, a_v5p_worker_plans_for_the_whole_slice);
	tcase_add_test(tc, gpus_of_the_host);
	tcase_add_test(tc, a_cpu_only_host);
	suite_add_tcase(s, tc);
	return s;
}
