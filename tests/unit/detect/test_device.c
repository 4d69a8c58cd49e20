/* Unit tests for device.c: unknowns stay absent in JSON, names, backends, trimmed strings, and the device list. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "detect/device.h"
#include "detect/probe.h"

START_TEST(unknown_fields_are_absent)
{
	struct device d;
	json_t *j;

	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.id, "gpu:0");
	j = device_to_json(&d);
	/* only what is always known */
	ck_assert_uint_eq(json_object_size(j), 4);
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "gpu:0");
	ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "gpu");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "backends")), 0);
	ck_assert(json_is_false(json_object_get(j, "executable")));
	json_decref(j);
	ck_assert_int_eq(d.numa_node, -1);
	ck_assert_int_eq(d.tpu.worker_id, -1);
	ck_assert_int_eq(d.gpu.mig_mode, -1);
}
END_TEST

START_TEST(known_fields_are_shown)
{
	struct device d;
	json_t *j;
	json_t *o;

	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.id, "gpu:1");
	DEVICE_SET(d.vendor, "NVIDIA");
	DEVICE_SET(d.model, "NVIDIA H100 80GB HBM3");
	DEVICE_SET(d.pci_bus_id, "0000:65:00.0");
	d.numa_node = 0;
	d.memory_total_bytes = 1000;
	d.peak.bf16_tflops = 989;
	DEVICE_SET(d.peak.source, "table");
	d.telemetry.utilization_ratio = 0.5;
	d.telemetry.sampled_at_ms = 1000;
	d.sources = SOURCE_NVML | SOURCE_OPENCL;
	d.gpu.mig_mode = 0;
	d.gpu.pci_device_id = 0x2330;
	d.opencl.present = true;
	DEVICE_SET(d.opencl.extensions_summary, "cl_khr_fp64 cl_khr_pci_bus_info");
	d.price.usd_per_hour = 1.5;
	DEVICE_SET(d.price.unit, "gpu");
	d.executable = true;
	j = device_to_json(&d);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "numa_node")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "memory"), "total_bytes")), 1000);
	ck_assert_ptr_null(json_object_get(json_object_get(j, "memory"), "available_bytes"));
	o = json_object_get(j, "peak");
	ck_assert_double_eq_tol(json_real_value(json_object_get(o, "bf16_gflops")), 989000, 1e-9);
	ck_assert_ptr_null(json_object_get(o, "fp32_gflops"));
	ck_assert_str_eq(json_string_value(json_object_get(o, "source")), "table");
	o = json_object_get(j, "telemetry");
	ck_assert_str_eq(json_string_value(json_object_get(o, "sampled_at")), "1970-01-01T00:00:01.000Z");
	ck_assert_ptr_null(json_object_get(o, "power_watts"));
	ck_assert_ptr_null(json_object_get(j, "backends")); /* what runs jobs is the backends' to say (backend.h) */
	o = json_object_get(j, "seen_by");
	ck_assert_uint_eq(json_array_size(o), 2);
	ck_assert_str_eq(json_string_value(json_array_get(o, 0)), "opencl");
	ck_assert_str_eq(json_string_value(json_array_get(o, 1)), "nvml");
	o = json_object_get(j, "gpu");
	ck_assert(json_is_false(json_object_get(o, "mig_enabled")));
	ck_assert_str_eq(json_string_value(json_object_get(o, "pci_device_id")), "0x2330");
	o = json_object_get(json_object_get(j, "opencl"), "extensions");
	ck_assert_uint_eq(json_array_size(o), 2);
	ck_assert_str_eq(json_string_value(json_array_get(o, 1)), "cl_khr_pci_bus_info");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "price"), "unit")), "gpu");
	ck_assert_ptr_null(json_object_get(json_object_get(j, "price"), "usd_per_hour_spot"));
	ck_assert_ptr_null(json_object_get(j, "cpu"));
	ck_assert_ptr_null(json_object_get(j, "tpu"));
	ck_assert(json_is_true(json_object_get(j, "executable")));
	json_decref(j);
}
END_TEST

START_TEST(tpu_and_cpu_members)
{
	struct device d;
	json_t *j;
	json_t *o;

	device_init(&d, DEVICE_TPU);
	DEVICE_SET(d.tpu.generation, "v6e");
	d.tpu.chips = 8;
	d.tpu.chip_index = 0;
	j = device_to_json(&d);
	o = json_object_get(j, "tpu");
	ck_assert_str_eq(json_string_value(json_object_get(o, "generation")), "v6e");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "chip_index")), 0);
	ck_assert_ptr_null(json_object_get(o, "worker_id"));
	json_decref(j);

	device_init(&d, DEVICE_CPU);
	d.cpu.pus = 4;
	d.cpu.cache_bytes[2] = 1 << 20;
	d.cpu.effective_cpus = 1.5;
	j = device_to_json(&d);
	o = json_object_get(j, "cpu");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "pus")), 4);
	ck_assert_double_eq_tol(json_real_value(json_object_get(o, "effective_cpus")), 1.5, 1e-9);
	ck_assert_ptr_null(json_object_get(o, "quota_cpus"));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "caches"), "l3_bytes")), 1 << 20);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "caches"), "l1d_bytes"));
	json_decref(j);
}
END_TEST

START_TEST(names_and_strings)
{
	enum device_type t;
	char small[4];

	ck_assert_str_eq(device_type_name(DEVICE_TPU), "tpu");
	ck_assert_int_eq(device_type_parse("gpu", &t), 0);
	ck_assert_int_eq(t, DEVICE_GPU);
	ck_assert_int_eq(device_type_parse("GPU", &t), -1);
	ck_assert_int_eq(device_type_parse(NULL, &t), -1);
	DEVICE_SET(small, "abcdef");
	ck_assert_str_eq(small, "abc");
	DEVICE_SET(small, NULL);
	ck_assert_str_eq(small, "");
}
END_TEST

/* The one syntax of a device id: a type, a colon, 1 to 6 digits. */
START_TEST(device_ids)
{
	static const char *const good[] = {"cpu:0", "gpu:12", "tpu:255", "gpu:999999", "gpu:01"};
	static const char *const bad[] = {"", "cpu", "cpu0", "cpu:", ":0", "GPU:1", "xpu:1", "gpu:1234567", "gpu:-1",
					  "gpu:1a", "gpu:1 ", " gpu:1", "gpuu:1", "gpu:1:2", "cpu:0'; rm -rf /"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(device_id_valid(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!device_id_valid(bad[i]), "%s", bad[i]);
	ck_assert(!device_id_valid(NULL));
}
END_TEST

START_TEST(hardware_strings_are_trimmed)
{
	struct device d;
	char small[8];
	char field[32];

	device_init(&d, DEVICE_CPU);
	/* CPUID's brand string is padded to 48 bytes */
	DEVICE_SET_TRIMMED(d.model, "Oxide Virtual Turin-like Processor             ");
	ck_assert_str_eq(d.model, "Oxide Virtual Turin-like Processor");
	DEVICE_SET_TRIMMED(d.vendor, " \t AuthenticAMD\r\n");
	ck_assert_str_eq(d.vendor, "AuthenticAMD");
	/* blanks inside stay */
	DEVICE_SET_TRIMMED(d.model, "  NVIDIA  H100  ");
	ck_assert_str_eq(d.model, "NVIDIA  H100");
	DEVICE_SET_TRIMMED(d.model, " \t\n ");
	ck_assert_str_eq(d.model, "");
	DEVICE_SET_TRIMMED(d.model, NULL);
	ck_assert_str_eq(d.model, "");
	/* cut at the field's size, and trimmed again when the cut falls after a blank */
	DEVICE_SET_TRIMMED(small, "  abcdef");
	ck_assert_str_eq(small, "abcdef");
	DEVICE_SET_TRIMMED(small, "  abc defgh");
	ck_assert_str_eq(small, "abc def");
	DEVICE_SET_TRIMMED(small, "abcdef gh");
	ck_assert_str_eq(small, "abcdef");
	/* in place: src may be the field */
	snprintf(field, sizeof(field), "   GPU-1234  ");
	DEVICE_SET_TRIMMED(field, field);
	ck_assert_str_eq(field, "GPU-1234");
	/* the plain copy keeps blanks: request values are checked as given */
	DEVICE_SET(small, " gpu:0 ");
	ck_assert_str_eq(small, " gpu:0 ");
}
END_TEST

START_TEST(pcie_rates)
{
	struct device d;
	json_t *j, *p;

	/* per direction: GT/s x encoding x lanes / 8 */
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(1, 16), 4.0, 1e-9);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(2, 16), 8.0, 1e-9);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(3, 16), 8.0 * 128 / 130 * 2, 1e-9);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(4, 16), 31.5077, 1e-4);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(5, 16), 63.0154, 1e-4);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(6, 16), 64.0 * 242 / 256 * 2, 1e-9);
	ck_assert_double_eq_tol(device_pcie_lane_gbytes_per_s(4, 8), 15.7538, 1e-4);
	ck_assert(isnan(device_pcie_lane_gbytes_per_s(0, 16)));
	ck_assert(isnan(device_pcie_lane_gbytes_per_s(7, 16)));
	ck_assert(isnan(device_pcie_lane_gbytes_per_s(4, 0)));
	ck_assert_uint_eq(device_pcie_generation_of(2.5), 1);
	ck_assert_uint_eq(device_pcie_generation_of(16.0), 4);
	ck_assert_uint_eq(device_pcie_generation_of(64.0), 6);
	ck_assert_uint_eq(device_pcie_generation_of(20.0), 0);

	/* a link idle at Gen1 is judged at its maximum; the width it trained at counts */
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.id, "gpu:0");
	j = device_to_json(&d);
	ck_assert_ptr_null(json_object_get(j, "pcie"));
	json_decref(j);
	d.pcie = (struct device_pcie){.generation = 1, .width = 16, .max_generation = 5, .max_width = 16};
	j = device_to_json(&d);
	p = json_object_get(j, "pcie");
	ck_assert_int_eq(json_integer_value(json_object_get(p, "generation")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "width")), 16);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "max_generation")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(p, "max_width")), 16);
	ck_assert_double_eq(json_real_value(json_object_get(p, "gbytes_per_s")), 63.02);
	json_decref(j);
	/* only a width: no rate */
	d.pcie = (struct device_pcie){.width = 8};
	j = device_to_json(&d);
	p = json_object_get(j, "pcie");
	ck_assert_uint_eq(json_object_size(p), 1);
	json_decref(j);
}
END_TEST

START_TEST(list_grows)
{
	struct device_list l;
	struct device d;

	device_list_init(&l);
	for (int i = 0; i < 100; i++) {
		device_init(&d, DEVICE_GPU);
		d.compute_units = (unsigned)i;
		ck_assert_uint_eq(device_list_add(&l, &d)->compute_units, (unsigned)i);
	}
	ck_assert_uint_eq(l.n, 100);
	ck_assert_uint_eq(l.v[57].compute_units, 57);
	device_list_release(&l);
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(l.v);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, unknown_fields_are_absent);
	tcase_add_test(tc, device_ids);
	tcase_add_test(tc, known_fields_are_shown);
	tcase_add_test(tc, tpu_and_cpu_members);
	tcase_add_test(tc, names_and_strings);
	tcase_add_test(tc, hardware_strings_are_trimmed);
	tcase_add_test(tc, pcie_rates);
	tcase_add_test(tc, list_grows);
	suite_add_tcase(s, tc);
	return s;
}
