/* Unit tests for specs.c: the embedded table, name and PCI matching, and what specs_apply fills. */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "detect/specs.h"

START_TEST(table_is_embedded)
{
	size_t n;
	const struct spec *t = specs_table(&n);
	const struct spec *v6e = specs_find_key("tpu-v6e");
	const struct spec *v4 = specs_find_key("tpu-v4");

	ck_assert_uint_ge(n, 18);
	ck_assert_str_eq(t[0].key, "tpu-v2");
	ck_assert_ptr_nonnull(v6e);
	/* the figures the design notes correct: v6e 918 bf16 TFLOPS per chip, v4 32 GiB per chip */
	ck_assert_double_eq_tol(v6e->bf16_tflops, 918, 1e-9);
	ck_assert_double_eq_tol(v6e->memory_gib, 32, 1e-9);
	ck_assert_double_eq_tol(v4->memory_gib, 32, 1e-9);
	ck_assert_uint_eq(v6e->pci_vendor, 0x1ae0);
	ck_assert_uint_eq(v6e->pci_device, 0x006f);
	ck_assert_uint_eq(v6e->chips_per_host, 8);
	ck_assert_double_eq_tol(v6e->usd_per_hour, 2.70, 1e-9);
	ck_assert_double_eq_tol(v6e->usd_per_hour_spot, 0.65, 1e-9);
	ck_assert_str_eq(v6e->price_unit, "chip");
	ck_assert_str_eq(v6e->accelerator_type, "TPU-V6E");
	ck_assert(isnan(v6e->fp32_tflops)); /* empty cells stay unknown */
	ck_assert_ptr_null(specs_find_key("nope"));
	ck_assert_ptr_null(specs_find_key(""));
}
END_TEST

START_TEST(normalised_types)
{
	ck_assert_str_eq(specs_find_key("nvidia-h100-sxm")->accelerator_type, "H100");
	ck_assert_str_eq(specs_find_key("nvidia-h100-pcie")->accelerator_type, "H100");
	ck_assert_str_eq(specs_find_key("nvidia-a100-80gb")->accelerator_type, "A100");
	ck_assert_str_eq(specs_find_key("amd-mi300x")->accelerator_type, "MI300X");
	ck_assert_str_eq(specs_find_key("nvidia-t4")->accelerator_type, "T4");
	ck_assert_str_eq(specs_find_key("tpu-v5e")->accelerator_type, "TPU-V5E");
	ck_assert_str_eq(specs_find_key("tpu-7x")->accelerator_type, "TPU-7X");
}
END_TEST

START_TEST(name_matching)
{
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, "NVIDIA", "NVIDIA H100 80GB HBM3")->key, "nvidia-h100-sxm");
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, "NVIDIA", "NVIDIA H100 PCIe")->key, "nvidia-h100-pcie");
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, NULL, "NVIDIA A100-SXM4-40GB")->key, "nvidia-a100-40gb");
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, "", "NVIDIA A100 80GB PCIe")->key, "nvidia-a100-80gb");
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, "NVIDIA", "Tesla T4")->key, "nvidia-t4");
	ck_assert_str_eq(specs_match_name(DEVICE_GPU, "AMD", "AMD Instinct MI300X")->key, "amd-mi300x");
	/* whole words only: L40S is not an L4, and the vendor must agree */
	ck_assert_ptr_null(specs_match_name(DEVICE_GPU, "NVIDIA", "NVIDIA L40S"));
	ck_assert_ptr_null(specs_match_name(DEVICE_GPU, "AMD", "NVIDIA H100 PCIe"));
	ck_assert_ptr_null(specs_match_name(DEVICE_TPU, NULL, "NVIDIA H100 PCIe"));
	ck_assert_ptr_null(specs_match_name(DEVICE_GPU, NULL, "NVIDIA GeForce RTX 4090"));
	ck_assert_ptr_null(specs_match_name(DEVICE_GPU, NULL, ""));
	ck_assert_ptr_null(specs_match_name(DEVICE_GPU, NULL, NULL));
}
END_TEST

START_TEST(pci_and_generation)
{
	ck_assert_str_eq(specs_find_pci(0x1ae0, 0x0027, 0x004e)->key, "tpu-v2");
	ck_assert_str_eq(specs_find_pci(0x1ae0, 0x0027, 0x004f)->key, "tpu-v3");
	ck_assert_ptr_null(specs_find_pci(0x1ae0, 0x0027, 0x0001));
	ck_assert_str_eq(specs_find_pci(0x1ae0, 0x0063, 0)->key, "tpu-v5e");
	ck_assert_str_eq(specs_find_pci(0x1ae0, 0x0076, 0)->key, "tpu-7x");
	ck_assert_str_eq(specs_find_pci(0x1002, 0x74a1, 0)->key, "amd-mi300x");
	ck_assert_ptr_null(specs_find_pci(0x10de, 0x0063, 0));
	ck_assert_ptr_null(specs_find_pci(0, 0, 0));
	ck_assert_str_eq(specs_find_tpu_generation("v5litepod")->key, "tpu-v5e");
	ck_assert_str_eq(specs_find_tpu_generation("V6E")->key, "tpu-v6e");
	ck_assert_str_eq(specs_find_tpu_generation("tpu7x")->key, "tpu-7x");
	ck_assert_ptr_null(specs_find_tpu_generation("v6"));
	ck_assert_ptr_null(specs_find_tpu_generation(""));
}
END_TEST

START_TEST(apply_fills_only_unknowns)
{
	struct device d;

	device_init(&d, DEVICE_TPU);
	DEVICE_SET(d.tpu.generation, "v6e");
	specs_apply(specs_for_device(&d), &d);
	ck_assert_str_eq(d.spec_key, "tpu-v6e");
	ck_assert_str_eq(d.accelerator_type, "TPU-V6E");
	ck_assert_double_eq_tol(d.peak.bf16_tflops, 918, 1e-9);
	ck_assert_double_eq_tol(d.peak.int8_tops, 1836, 1e-9);
	ck_assert(isnan(d.peak.fp32_tflops));
	ck_assert_ptr_nonnull(strstr(d.peak.source, "tpu-v6e"));
	ck_assert_uint_eq(d.memory_total_bytes, 32ull << 30);
	ck_assert_uint_eq(d.tpu.cores_per_chip, 1);
	ck_assert_double_eq_tol(d.price.usd_per_hour, 2.70, 1e-9);
	ck_assert_str_eq(d.price.unit, "chip");
	ck_assert_ptr_nonnull(strstr(d.price.source, "us-central1"));

	/* a detected memory size wins over the table's */
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.vendor, "NVIDIA");
	DEVICE_SET(d.model, "NVIDIA H100 80GB HBM3");
	d.memory_total_bytes = 85520809984ull;
	specs_apply(specs_for_device(&d), &d);
	ck_assert_str_eq(d.accelerator_type, "H100");
	ck_assert_uint_eq(d.memory_total_bytes, 85520809984ull);
	ck_assert_double_eq_tol(d.peak.fp32_tflops, 67, 1e-9);
	ck_assert_double_eq_tol(d.price.usd_per_hour_spot, 6.57, 1e-9);

	/* an unknown model gets nothing, and the price of a row without one stays unknown */
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.model, "NVIDIA GeForce RTX 4090");
	specs_apply(specs_for_device(&d), &d);
	ck_assert_str_eq(d.spec_key, "");
	ck_assert(isnan(d.peak.fp32_tflops));
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.vendor, "AMD");
	d.gpu.pci_device_id = 0x74a1;
	specs_apply(specs_for_device(&d), &d);
	ck_assert_str_eq(d.accelerator_type, "MI300X");
	ck_assert(isnan(d.price.usd_per_hour));
	ck_assert_str_eq(d.price.source, "");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("specs");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, table_is_embedded);
	tcase_add_test(tc, normalised_types);
	tcase_add_test(tc, name_matching);
	tcase_add_test(tc, pci_and_generation);
	tcase_add_test(tc, apply_fills_only_unknowns);
	suite_add_tcase(s, tc);
	return s;
}
