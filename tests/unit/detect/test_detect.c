/*
 * Unit tests for detect.c with fake probes: merging views by PCI bus id (and the PoCL CPU into cpu:0), ids and
 * order, table figures, a failing probe not stopping the others, refresh generations and ETags, snapshot lifetime.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "detect/detect.h"

static struct config cfg;
static int nvml_refreshes;

static void add(struct device_list *out, struct device *d)
{
	device_list_add(out, d);
}

static void fake_cpu(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	struct device d;

	(void)state;
	(void)c;
	device_init(&d, DEVICE_CPU);
	d.sources = SOURCE_HWLOC;
	DEVICE_SET(d.vendor, "GenuineIntel");
	DEVICE_SET(d.model, "Fixture Xeon");
	d.cpu.pus = 4;
	d.memory_total_bytes = 8ull << 30;
	add(out, &d);
	res->ok = true;
	res->available = true;
}

static void fake_opencl(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	struct device d;

	(void)state;
	(void)c;
	/* PoCL's CPU device */
	device_init(&d, DEVICE_CPU);
	d.sources = SOURCE_OPENCL;
	d.opencl.present = true;
	DEVICE_SET(d.opencl.name, "pthread-fixture");
	d.memory_total_bytes = 1234;
	add(out, &d);
	/* two NVIDIA GPUs with bus ids, in the order the driver lists them */
	device_init(&d, DEVICE_GPU);
	d.sources = SOURCE_OPENCL;
	d.opencl.present = true;
	DEVICE_SET(d.vendor, "NVIDIA");
	DEVICE_SET(d.model, "OpenCL name");
	DEVICE_SET(d.pci_bus_id, "0000:65:00.0");
	d.compute_units = 132;
	add(out, &d);
	DEVICE_SET(d.pci_bus_id, "0000:17:00.0");
	d.opencl.device_index = 1;
	add(out, &d);
	/* an AMD GPU whose driver gives no bus id */
	device_init(&d, DEVICE_GPU);
	d.sources = SOURCE_OPENCL;
	d.opencl.present = true;
	DEVICE_SET(d.vendor, "AMD");
	DEVICE_SET(d.model, "gfx942");
	d.opencl.platform_index = 1;
	add(out, &d);
	res->ok = true;
	res->available = true;
}

static void fake_nvml(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	struct device d;

	(void)state;
	(void)c;
	device_init(&d, DEVICE_GPU);
	d.sources = SOURCE_NVML;
	DEVICE_SET(d.vendor, "NVIDIA");
	DEVICE_SET(d.model, "NVIDIA H100 80GB HBM3");
	DEVICE_SET(d.uuid, "GPU-aaaa");
	DEVICE_SET(d.pci_bus_id, "00000000:65:00.0");
	add(out, &d);
	DEVICE_SET(d.model, "NVIDIA H100 PCIe");
	DEVICE_SET(d.uuid, "GPU-bbbb");
	DEVICE_SET(d.pci_bus_id, "00000000:17:00.0");
	add(out, &d);
	res->ok = true;
	res->available = true;
}

static void fake_nvml_refresh(void **state, const struct config *c, struct device_list *devs,
			      struct probe_result *res)
{
	(void)state;
	(void)c;
	nvml_refreshes++;
	for (size_t i = 0; i < devs->n; i++) {
		if (devs->v[i].sources & SOURCE_NVML) {
			devs->v[i].telemetry.utilization_ratio = 0.25 * nvml_refreshes;
			devs->v[i].telemetry.sampled_at_ms = 1000 * nvml_refreshes;
		}
	}
	res->ok = true;
}

static void fake_sysfs(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	struct device d;

	(void)state;
	(void)c;
	device_init(&d, DEVICE_GPU);
	d.sources = SOURCE_SYSFS;
	DEVICE_SET(d.vendor, "AMD");
	DEVICE_SET(d.model, "AMD Instinct MI300X");
	DEVICE_SET(d.pci_bus_id, "0000:C1:00.0");
	add(out, &d);
	res->ok = true;
	res->available = true;
}

static void fake_fail(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	(void)state;
	(void)c;
	(void)out;
	res->ok = false;
	snprintf(res->why, sizeof(res->why), "boom");
}

static void fake_tpu(void **state, const struct config *c, struct device_list *out, struct probe_result *res)
{
	struct device d;
	int *calls = *state;

	(void)c;
	/* probe state is created on first use and handed back on every later call */
	if (calls == NULL) {
		calls = calloc(1, sizeof(*calls));
		*state = calls;
	}
	(*calls)++;
	for (unsigned i = 0; i < 2; i++) {
		device_init(&d, DEVICE_TPU);
		d.sources = SOURCE_PCI | SOURCE_DEVNODE;
		DEVICE_SET(d.vendor, "Google");
		DEVICE_SET(d.tpu.generation, "v6e");
		DEVICE_SET(d.pci_bus_id, i == 0 ? "0000:00:05.0" : "0000:00:04.0");
		d.tpu.chip_index = 1 - i;
		d.tpu.chips = 2;
		add(out, &d);
	}
	res->ok = true;
	res->available = true;
}

/* trusted as the real probes are (probe.h): the merge takes each field from the most trusted view that has it */
static const struct probe_ops cpu_ops = {.name = "cpu", .trust = 3, .probe = fake_cpu};
static const struct probe_ops ocl_ops = {.name = "opencl", .trust = 1, .probe = fake_opencl};
static const struct probe_ops nvml_ops = {.name = "nvml", .trust = 4, .probe = fake_nvml,
					  .refresh = fake_nvml_refresh};
static const struct probe_ops fail_ops = {.name = "broken", .probe = fake_fail};
static const struct probe_ops sysfs_ops = {.name = "sysfs-gpu", .trust = 3, .probe = fake_sysfs};
static const struct probe_ops tpu_ops = {.name = "tpu", .trust = 2, .probe = fake_tpu, .release = free};

static const struct probe_ops *const all[] = {&cpu_ops, &ocl_ops, &nvml_ops, &fail_ops, &sysfs_ops, &tpu_ops};
#define NALL (sizeof(all) / sizeof(all[0]))

static void setup(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.telemetry_interval_ms = 3600000;
	cfg.topology_interval_ms = 3600000;
	nvml_refreshes = 0;
}

/* Who runs jobs is the executor's to say (detect_set_executable): here, CPUs and devices with an OpenCL view. */
static bool cpus_and_opencl_run_jobs(void *ctx, const struct device *dev)
{
	(void)ctx;
	return dev->type == DEVICE_CPU || dev->opencl.present;
}

START_TEST(merges_orders_and_names)
{
	struct detect *det = NULL;
	const struct detect_snapshot *s;
	const struct device *d;

	det = detect_new(&cfg, all, NALL);
	ck_assert_ptr_nonnull(det);
	s = detect_acquire(det);
	/* until told who runs jobs, no device does */
	ck_assert(!s->devices[0].executable);
	detect_release(s);
	detect_set_executable(det, cpus_and_opencl_run_jobs, NULL);
	s = detect_acquire(det);
	ck_assert_uint_eq(s->n, 6);
	ck_assert_uint_eq(s->generation, 2);

	d = &s->devices[0];
	ck_assert_str_eq(d->id, "cpu:0");
	ck_assert_str_eq(d->vendor, "Intel");
	ck_assert_str_eq(d->model, "Fixture Xeon");
	ck_assert_uint_eq(d->cpu.pus, 4);
	ck_assert_uint_eq(d->memory_total_bytes, 8ull << 30); /* the hwloc view wins over PoCL's */
	ck_assert(d->opencl.present);
	ck_assert_str_eq(d->opencl.name, "pthread-fixture");
	ck_assert_uint_eq(d->sources, SOURCE_OPENCL | SOURCE_HWLOC);
	ck_assert(d->executable);

	d = &s->devices[1];
	ck_assert_str_eq(d->id, "gpu:0");
	ck_assert_str_eq(d->pci_bus_id, "0000:17:00.0");
	ck_assert_str_eq(d->model, "NVIDIA H100 PCIe"); /* NVML's name over OpenCL's */
	ck_assert_str_eq(d->uuid, "GPU-bbbb");
	ck_assert_uint_eq(d->compute_units, 132);    /* filled from the OpenCL view */
	ck_assert_uint_eq(d->opencl.device_index, 1);
	ck_assert_uint_eq(d->sources, SOURCE_OPENCL | SOURCE_NVML);
	ck_assert_str_eq(d->accelerator_type, "H100");
	ck_assert_str_eq(d->spec_key, "nvidia-h100-pcie");
	ck_assert_double_eq_tol(d->peak.fp32_tflops, 51, 1e-9);
	ck_assert(d->executable);

	d = &s->devices[2];
	ck_assert_str_eq(d->id, "gpu:1");
	ck_assert_str_eq(d->pci_bus_id, "0000:65:00.0");
	ck_assert_str_eq(d->spec_key, "nvidia-h100-sxm");
	ck_assert_double_eq_tol(d->price.usd_per_hour, 10.98, 1e-9);

	/* the AMD OpenCL view without a bus id is the only AMD GPU sysfs saw: one device */
	d = &s->devices[3];
	ck_assert_str_eq(d->id, "gpu:2");
	ck_assert_str_eq(d->pci_bus_id, "0000:c1:00.0");
	ck_assert_str_eq(d->model, "AMD Instinct MI300X");
	ck_assert_str_eq(d->accelerator_type, "MI300X");
	ck_assert_uint_eq(d->sources, SOURCE_OPENCL | SOURCE_SYSFS);
	ck_assert_uint_eq(d->opencl.platform_index, 1);
	ck_assert(d->executable);

	d = &s->devices[4];
	ck_assert_str_eq(d->id, "tpu:0");
	ck_assert_str_eq(d->pci_bus_id, "0000:00:04.0");
	ck_assert_str_eq(d->accelerator_type, "TPU-V6E");
	ck_assert_uint_eq(d->memory_total_bytes, 32ull << 30);
	ck_assert(!d->executable);
	ck_assert_str_eq(s->devices[5].id, "tpu:1");
	ck_assert_str_eq(s->devices[5].pci_bus_id, "0000:00:05.0");

	ck_assert_ptr_eq(detect_find(s, "gpu:2"), &s->devices[3]);
	ck_assert_ptr_null(detect_find(s, "gpu:9"));
	ck_assert_ptr_null(detect_find(s, "cpu"));
	detect_release(s);
	detect_free(det);
}
END_TEST

START_TEST(failing_probe_does_not_stop_others)
{
	struct detect *det = NULL;
	const struct detect_snapshot *s;
	json_t *doc;
	json_t *p;

	det = detect_new(&cfg, all, NALL);
	s = detect_acquire(det);
	ck_assert_uint_eq(s->nprobes, NALL);
	ck_assert_str_eq(s->probes[3].name, "broken");
	ck_assert(!s->probes[3].result.ok);
	ck_assert_str_eq(s->probes[3].result.why, "boom");
	ck_assert(s->probes[4].result.ok);
	ck_assert_uint_eq(s->probes[1].result.found, 4);
	ck_assert_uint_eq(s->probes[5].result.found, 2);

	doc = json_loadb(s->json, s->json_len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(json_integer_value(json_object_get(doc, "generation")), 1);
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "devices")), 6);
	p = json_array_get(json_object_get(doc, "probes"), 3);
	ck_assert_str_eq(json_string_value(json_object_get(p, "name")), "broken");
	ck_assert(json_is_false(json_object_get(p, "ok")));
	ck_assert_str_eq(json_string_value(json_object_get(p, "why")), "boom");
	ck_assert(json_is_number(json_object_get(p, "duration_ms")));
	ck_assert_ptr_nonnull(json_object_get(doc, "taken_at"));
	json_decref(doc);
	detect_release(s);
	detect_free(det);
}
END_TEST

START_TEST(only_failures_still_give_cpu0)
{
	static const struct probe_ops *const broken[] = {&fail_ops};
	struct detect *det = NULL;
	const struct detect_snapshot *s;

	det = detect_new(&cfg, broken, 1);
	detect_set_executable(det, cpus_and_opencl_run_jobs, NULL);
	s = detect_acquire(det);
	ck_assert_uint_eq(s->n, 1);
	ck_assert_str_eq(s->devices[0].id, "cpu:0");
	ck_assert(s->devices[0].executable);
	detect_release(s);
	detect_free(det);
}
END_TEST

START_TEST(refresh_generations_and_etags)
{
	struct detect *det = NULL;
	const struct detect_snapshot *s1;
	const struct detect_snapshot *s2;
	const struct detect_snapshot *s3;
	const char *body;
	size_t len = 0;
	char etag1[40];
	json_t *dev;

	det = detect_new(&cfg, all, NALL);
	s1 = detect_acquire(det);
	snprintf(etag1, sizeof(etag1), "%s", detect_device_etag(s1, "gpu:0"));
	ck_assert(s1->full);

	detect_refresh(det, false);
	s2 = detect_acquire(det);
	ck_assert_uint_eq(s2->generation, 2);
	ck_assert(!s2->full);
	ck_assert_str_ne(s1->etag, s2->etag);
	ck_assert_uint_eq(nvml_refreshes, 1);
	ck_assert_double_eq_tol(s2->devices[1].telemetry.utilization_ratio, 0.25, 1e-9);
	ck_assert_str_eq(s2->devices[1].id, "gpu:0");
	/* the device changed, so did its ETag; the TPU did not */
	ck_assert_str_ne(detect_device_etag(s2, "gpu:0"), etag1);
	ck_assert_str_eq(detect_device_etag(s2, "tpu:0"), detect_device_etag(s1, "tpu:0"));
	body = detect_device_json(s2, "gpu:0", &len);
	dev = json_loadb(body, len, 0, NULL);
	ck_assert_ptr_nonnull(dev);
	ck_assert_str_eq(json_string_value(json_object_get(dev, "pci_bus_id")), "0000:17:00.0");
	ck_assert_ptr_nonnull(json_object_get(json_object_get(dev, "telemetry"), "sampled_at"));
	json_decref(dev);
	ck_assert_ptr_null(detect_device_json(s2, "nope", &len));
	ck_assert_ptr_null(detect_device_etag(s2, "nope"));

	/* the first snapshot is still whole while held */
	ck_assert_uint_eq(s1->generation, 1);
	ck_assert(isnan(s1->devices[1].telemetry.utilization_ratio));
	ck_assert_ptr_nonnull(strstr(s1->json, "\"generation\":1"));
	detect_release(s1);

	detect_refresh(det, true);
	s3 = detect_acquire(det);
	ck_assert_uint_eq(s3->generation, 3);
	ck_assert(s3->full);
	ck_assert_uint_eq(s3->n, 6);
	ck_assert_str_ne(s3->etag, s2->etag);
	detect_release(s2);
	detect_release(s3);
	detect_free(det);
}
END_TEST

START_TEST(refresher_thread_stops)
{
	struct detect *det = NULL;
	const struct detect_snapshot *s;

	cfg.telemetry_interval_ms = 1;
	det = detect_new(&cfg, all, NALL);
	ck_assert_int_eq(detect_start(det), ACCELD_OK);
	ck_assert_int_eq(detect_start(det), ACCELD_OK);
	s = detect_acquire(det);
	ck_assert_uint_ge(s->generation, 1);
	/* a snapshot held past detect_free stays readable */
	detect_free(det);
	ck_assert_uint_eq(s->n, 6);
	detect_release(s);
}
END_TEST

static void *refresh_many(void *arg)
{
	for (int i = 0; i < 200; i++)
		detect_refresh(arg, i % 2 == 0);
	return NULL;
}

/* Full refreshes asked through the API race the refresher thread; each reads only snapshots it holds. */
START_TEST(concurrent_refreshes_keep_snapshots_whole)
{
	struct detect *det = NULL;
	pthread_t t[2];

	cfg.telemetry_interval_ms = 1;
	cfg.topology_interval_ms = 1;
	det = detect_new(&cfg, all, NALL);
	ck_assert_int_eq(detect_start(det), ACCELD_OK);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, refresh_many, det), 0);
	for (int i = 0; i < 400; i++) {
		const struct detect_snapshot *s = detect_acquire(det);

		ck_assert_uint_eq(s->n, 6);
		ck_assert_ptr_nonnull(strstr(s->json, "\"generation\""));
		detect_release(s);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	detect_free(det);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("detect");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, merges_orders_and_names);
	tcase_add_test(tc, failing_probe_does_not_stop_others);
	tcase_add_test(tc, only_failures_still_give_cpu0);
	tcase_add_test(tc, refresh_generations_and_etags);
	tcase_add_test(tc, refresher_thread_stops);
	tcase_add_test(tc, concurrent_refreshes_keep_snapshots_whole);
	suite_add_tcase(s, tc);
	return s;
}
