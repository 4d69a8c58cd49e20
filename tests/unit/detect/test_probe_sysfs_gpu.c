/* Unit tests for probe_sysfs_gpu.c and hwfile.c against the fixture trees amd-mi300x and intel-gpu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core/hwfile.h"
#include "detect/probe.h"

#define GIB (1024ull * 1024 * 1024)

static struct config cfg;
static char root[256];

static void setup(void)
{
	unsetenv("ROCR_VISIBLE_DEVICES");
	unsetenv("HIP_VISIBLE_DEVICES");
	memset(&cfg, 0, sizeof(cfg));
	cfg.sysfs_root = root;
	cfg.dev_root = (char *)"/nonexistent";
}

static void use(const char *fixture)
{
	snprintf(root, sizeof(root), "tests/fixtures/%s/sys", fixture);
}

static void run(void **st, struct device_list *out, struct probe_result *res)
{
	*st = NULL;
	device_list_init(out);
	memset(res, 0, sizeof(*res));
	probe_sysfs_gpu_ops.probe(st, &cfg, out, res);
}

static void done(void *st, struct device_list *out)
{
	probe_sysfs_gpu_ops.release(st);
	device_list_release(out);
}

/* The PCI addresses found, comma-separated. */
static const char *addresses(const struct device_list *l)
{
	static char text[256];

	text[0] = '\0';
	for (size_t i = 0; i < l->n; i++) {
		size_t len = strlen(text);

		snprintf(text + len, sizeof(text) - len, "%s%s", i ? "," : "", l->v[i].pci_bus_id);
	}
	return text;
}

START_TEST(amd_mi300x)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const struct device *d;

	use("amd-mi300x");
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(res.available);
	ck_assert_uint_eq(res.found, 2);
	/* the NVIDIA card, the connector, the render node and the second node of GPU 0 are not counted */
	ck_assert_str_eq(addresses(&out), "0000:0c:00.0,0000:22:00.0");
	d = &out.v[0];
	ck_assert_int_eq(d->type, DEVICE_GPU);
	ck_assert_str_eq(d->vendor, "AMD");
	ck_assert_str_eq(d->model, "AMD Instinct MI300X");
	/* GPU 1's product_name comes padded with blanks */
	ck_assert_str_eq(out.v[1].model, "AMD Instinct MI300X");
	ck_assert_str_eq(d->gpu.driver, "amdgpu");
	ck_assert_uint_eq(d->gpu.pci_device_id, 0x74a1);
	ck_assert_uint_eq(d->sources, SOURCE_SYSFS);
	ck_assert_uint_eq(d->memory_total_bytes, 192 * GIB);
	ck_assert_uint_eq(d->telemetry.memory_used_bytes, 1 * GIB);
	ck_assert_uint_eq(d->memory_available_bytes, 191 * GIB);
	ck_assert_double_eq_tol(d->telemetry.utilization_ratio, 0.12, 1e-9);
	ck_assert_double_eq_tol(d->telemetry.temperature_celsius, 45.0, 1e-9);
	ck_assert_double_eq_tol(d->telemetry.power_watts, 350.0, 1e-9);
	ck_assert_double_eq_tol(d->telemetry.power_limit_watts, 750.0, 1e-9);
	ck_assert(isnan(d->telemetry.energy_joules));
	ck_assert_int_eq(d->numa_node, 0);
	ck_assert_int_eq(out.v[1].numa_node, 1);
	ck_assert_str_eq(d->uuid, "GPU-7fc8f6d2a1b0c3e4");
	ck_assert_str_eq(d->id, "");
	/* the PCIe link from the device's files: GPU 0 at Gen5 x16, GPU 1 idle at Gen1 that can run at Gen5 */
	ck_assert_uint_eq(d->pcie.generation, 5);
	ck_assert_uint_eq(d->pcie.width, 16);
	ck_assert_uint_eq(d->pcie.max_generation, 5);
	ck_assert_uint_eq(d->pcie.max_width, 16);
	ck_assert_uint_eq(out.v[1].pcie.generation, 1);
	ck_assert_uint_eq(out.v[1].pcie.max_generation, 5);
	ck_assert_double_eq_tol(device_pcie_gbytes_per_s(&out.v[1].pcie), 63.015, 1e-3);
	done(st, &out);
}
END_TEST

START_TEST(intel)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use("intel-gpu");
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_str_eq(addresses(&out), "0000:00:02.0,0000:03:00.0");
	ck_assert_str_eq(out.v[0].vendor, "Intel");
	ck_assert_str_eq(out.v[0].gpu.driver, "xe");
	ck_assert_str_eq(out.v[1].gpu.driver, "i915");
	ck_assert_uint_eq(out.v[1].gpu.pci_device_id, 0x56a0);
	ck_assert_uint_eq(out.v[1].memory_total_bytes, 0);
	ck_assert_double_eq_tol(out.v[1].telemetry.energy_joules, 123.0, 1e-9);
	ck_assert_double_eq_tol(out.v[1].telemetry.power_limit_watts, 225.0, 1e-9);
	ck_assert(isnan(out.v[1].telemetry.power_watts));
	ck_assert(isnan(out.v[0].telemetry.temperature_celsius));
	ck_assert_int_eq(out.v[1].numa_node, 0);
	ck_assert_int_eq(out.v[0].numa_node, -1);
	/* the integrated GPU has no link; the card's current speed is "Unknown" and its width 0: absent */
	ck_assert_uint_eq(out.v[0].pcie.max_generation, 0);
	ck_assert_uint_eq(out.v[1].pcie.generation, 0);
	ck_assert_uint_eq(out.v[1].pcie.width, 0);
	ck_assert_uint_eq(out.v[1].pcie.max_generation, 4);
	ck_assert_uint_eq(out.v[1].pcie.max_width, 16);
	/* the rate at the widest the link allows when the width it trained at is unknown */
	ck_assert_double_eq_tol(device_pcie_gbytes_per_s(&out.v[1].pcie), 31.508, 1e-3);
	/* the AMD variables leave Intel GPUs alone */
	setenv("ROCR_VISIBLE_DEVICES", "", 1);
	done(st, &out);
	run(&st, &out, &res);
	ck_assert_uint_eq(res.found, 2);
	done(st, &out);
}
END_TEST

static const char *visible(const char *rocr, const char *hip)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	const char *text;

	if (rocr)
		setenv("ROCR_VISIBLE_DEVICES", rocr, 1);
	else
		unsetenv("ROCR_VISIBLE_DEVICES");
	if (hip)
		setenv("HIP_VISIBLE_DEVICES", hip, 1);
	else
		unsetenv("HIP_VISIBLE_DEVICES");
	run(&st, &out, &res);
	text = addresses(&out);
	done(st, &out);
	return text;
}

START_TEST(visible_devices)
{
	use("amd-mi300x");
	ck_assert_str_eq(visible(NULL, NULL), "0000:0c:00.0,0000:22:00.0");
	ck_assert_str_eq(visible("", NULL), "");
	ck_assert_str_eq(visible("1", NULL), "0000:22:00.0");
	ck_assert_str_eq(visible("GPU-9a1b", NULL), "0000:22:00.0");
	ck_assert_str_eq(visible("5", NULL), "");
	ck_assert_str_eq(visible(NULL, "0"), "0000:0c:00.0");
	/* HIP's ordinals count what ROCr left */
	ck_assert_str_eq(visible("1,0", "1"), "0000:0c:00.0");
	ck_assert_str_eq(visible("1", "0"), "0000:22:00.0");
	ck_assert_str_eq(visible("1", "1"), "");
}
END_TEST

START_TEST(refresh_reads_again)
{
	void *st;
	struct device_list out;
	struct probe_result res;
	char tmpl[] = "/tmp/acceld-sysfs-XXXXXX";
	char cmd[512];
	char path[512];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(tmpl));
	snprintf(cmd, sizeof(cmd), "cp -a tests/fixtures/amd-mi300x/sys %s/", tmpl);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(root, sizeof(root), "%s/sys", tmpl);
	run(&st, &out, &res);
	ck_assert_uint_eq(out.n, 2);
	snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:0c:00.0/gpu_busy_percent", tmpl);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("77\n", f);
	fclose(f);
	memset(&res, 0, sizeof(res));
	probe_sysfs_gpu_ops.refresh(&st, &cfg, &out, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(res.found, 2);
	ck_assert_double_eq_tol(out.v[0].telemetry.utilization_ratio, 0.77, 1e-9);
	ck_assert_double_eq_tol(out.v[1].telemetry.utilization_ratio, 0.42, 1e-9);
	done(st, &out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(no_drm)
{
	void *st;
	struct device_list out;
	struct probe_result res;

	use("tpu-v4");
	run(&st, &out, &res);
	ck_assert(res.ok);
	ck_assert(!res.available);
	ck_assert_uint_eq(out.n, 0);
	done(st, &out);
}
END_TEST

START_TEST(pci_normalise)
{
	char out[32];

	ck_assert_int_eq(hwfile_pci_normalise("00000000:65:00.0", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "0000:65:00.0");
	ck_assert_int_eq(hwfile_pci_normalise("0000:CA:1F.7", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "0000:ca:1f.7");
	ck_assert_int_eq(hwfile_pci_normalise("65:00.0", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "0000:65:00.0");
	ck_assert_int_eq(hwfile_pci_normalise("0001:00:04.1", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "0001:00:04.1");
	ck_assert_int_eq(hwfile_pci_normalise("0000:65:00", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("0000:65:00.8", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("0000:65:20.0", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("0000:165:00.0", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("100000:65:00.0", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("0000:65:00.0x", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("", out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise(NULL, out, sizeof(out)), -1);
	ck_assert_int_eq(hwfile_pci_normalise("0000:65:00.0", out, 8), -1);
	ck_assert_int_eq(hwfile_pci_normalise("zz:00.0", out, sizeof(out)), -1);
}
END_TEST

START_TEST(file_reads)
{
	char text[64];
	uint64_t v;
	int64_t i;
	const char *dev = "tests/fixtures/amd-mi300x/sys/bus/pci/devices/0000:0c:00.0";

	ck_assert_int_eq(hwfile_read_u64(&v, "%s/vendor", dev), 0);
	ck_assert_uint_eq(v, 0x1002);
	ck_assert_int_eq(hwfile_read_u64(&v, "%s/mem_info_vram_total", dev), 0);
	ck_assert_uint_eq(v, 192 * GIB);
	ck_assert_int_eq(hwfile_read_u64(&v, "%s/missing", dev), -1);
	ck_assert_int_eq(hwfile_read_u64(&v, "%s/product_name", dev), -1);
	ck_assert_int_eq(hwfile_read_i64(&i, "%s/numa_node", dev), 0);
	ck_assert_int_eq(i, 0);
	ck_assert_int_eq(hwfile_link_base(text, sizeof(text), "%s/driver", dev), 0);
	ck_assert_str_eq(text, "amdgpu");
	ck_assert_int_eq(hwfile_link_base(text, sizeof(text), "%s/vendor", dev), -1);
	/* the fixture's product_name has blanks on both sides, as some drivers write it */
	ck_assert_int_eq(hwfile_read_line(text, sizeof(text), "%s/../0000:22:00.0/product_name", dev), 0);
	ck_assert_str_eq(text, "AMD Instinct MI300X");
	ck_assert(hwfile_exists("%s/unique_id", dev));
	ck_assert(!hwfile_exists("%s/nothing", dev));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe_sysfs_gpu");
	TCase *tc = tcase_create("sysfs_gpu");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, amd_mi300x);
	tcase_add_test(tc, intel);
	tcase_add_test(tc, visible_devices);
	tcase_add_test(tc, refresh_reads_again);
	tcase_add_test(tc, no_drm);
	tcase_add_test(tc, pci_normalise);
	tcase_add_test(tc, file_reads);
	suite_add_tcase(s, tc);
	return s;
}
