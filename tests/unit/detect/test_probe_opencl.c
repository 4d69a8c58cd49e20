/*
 * Unit tests for probe_opencl.c: the real ICD loader with PoCL finds a CPU device; the NVIDIA ICD fix-up writes a
 * private vendors folder only when it is needed. Check runs each test in its own process, so environment changes
 * and OpenCL initialisation do not leak between tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "detect/probe.h"
#include "detect/probe_opencl.h"

static char tmp[64];

static void mk_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/acceld-ocl-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void read_file(const char *dir, const char *name, char *out, size_t outsz)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s missing", path);
	n = fread(out, 1, outsz - 1, f);
	out[n] = '\0';
	fclose(f);
}

static void rm_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(pocl_cpu_device)
{
	struct config cfg;
	struct device_list l;
	struct probe_result res;
	void *state = NULL;
	const struct device *cpu = NULL;

	memset(&cfg, 0, sizeof(cfg));
	memset(&res, 0, sizeof(res));
	device_list_init(&l);
	probe_opencl_ops.probe(&state, &cfg, &l, &res);
	ck_assert_msg(res.ok, "probe failed: %s", res.why);
	ck_assert(res.available);
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].type == DEVICE_CPU)
			cpu = &l.v[i];
	ck_assert_ptr_nonnull(cpu);
	ck_assert(cpu->opencl.present);
	ck_assert_uint_eq(cpu->sources, SOURCE_OPENCL);
	ck_assert_str_ne(cpu->opencl.name, "");
	ck_assert_ptr_nonnull(strstr(cpu->opencl.platform, "Portable Computing Language"));
	ck_assert_ptr_nonnull(strstr(cpu->opencl.version, "OpenCL"));
	ck_assert_uint_gt(cpu->opencl.compute_units, 0);
	ck_assert_uint_gt(cpu->opencl.global_mem_bytes, 0);
	ck_assert_uint_gt(cpu->opencl.max_alloc_bytes, 0);
	ck_assert_uint_gt(cpu->opencl.local_mem_bytes, 0);
	/* the CPU view leaves the CPU's own fields to hwloc */
	ck_assert_str_eq(cpu->model, "");
	ck_assert_str_eq(cpu->pci_bus_id, "");
	/* a second probe (a topology refresh) finds the same */
	memset(&res, 0, sizeof(res));
	probe_opencl_ops.probe(&state, &cfg, &l, &res);
	ck_assert(res.ok);
	ck_assert_uint_ge(l.n, 2);
	device_list_release(&l);
}
END_TEST

START_TEST(fixup_writes_private_vendors)
{
	char vendors[128];
	char priv[128];
	char why[256];
	char text[256];

	unsetenv("OCL_ICD_VENDORS");
	mk_tmp();
	snprintf(vendors, sizeof(vendors), "%s/vendors", tmp);
	snprintf(priv, sizeof(priv), "%s/private", tmp);
	ck_assert_int_eq(mkdir(vendors, 0755), 0);
	write_file(vendors, "pocl.icd", "libpocl.so.2.11.0\n");
	/* any library that loads stands in for libnvidia-opencl.so.1 */
	ck_assert_int_eq(probe_opencl_icd_fixup("libm.so.6", vendors, priv, why, sizeof(why)), 1);
	ck_assert_str_eq(getenv("OCL_ICD_VENDORS"), priv);
	ck_assert_ptr_nonnull(strstr(why, "OCL_ICD_VENDORS"));
	read_file(priv, "nvidia.icd", text, sizeof(text));
	ck_assert_str_eq(text, "libnvidia-opencl.so.1\n");
	read_file(priv, "pocl.icd", text, sizeof(text));
	ck_assert_str_eq(text, "libpocl.so.2.11.0\n");
	rm_tree();
}
END_TEST

START_TEST(fixup_not_needed)
{
	char vendors[128];
	char priv[128];
	char why[256];

	unsetenv("OCL_ICD_VENDORS");
	mk_tmp();
	snprintf(vendors, sizeof(vendors), "%s/vendors", tmp);
	snprintf(priv, sizeof(priv), "%s/private", tmp);
	ck_assert_int_eq(mkdir(vendors, 0755), 0);
	write_file(vendors, "nvidia.icd", "libnvidia-opencl.so.1\n");
	/* an ICD file names the library already */
	ck_assert_int_eq(probe_opencl_icd_fixup("libm.so.6", vendors, priv, why, sizeof(why)), 0);
	ck_assert_ptr_null(getenv("OCL_ICD_VENDORS"));
	ck_assert_int_ne(access(priv, F_OK), 0);
	/* the library does not load: nothing to do */
	ck_assert_int_eq(probe_opencl_icd_fixup("libacceld-no-such-library.so.1", tmp, priv, why, sizeof(why)), 0);
	ck_assert_ptr_null(getenv("OCL_ICD_VENDORS"));
	/* the user chose a vendors folder: left alone */
	setenv("OCL_ICD_VENDORS", "/somewhere", 1);
	ck_assert_int_eq(probe_opencl_icd_fixup("libm.so.6", tmp, priv, why, sizeof(why)), 0);
	ck_assert_str_eq(getenv("OCL_ICD_VENDORS"), "/somewhere");
	ck_assert_int_ne(access(priv, F_OK), 0);
	rm_tree();
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe_opencl");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pocl_cpu_device);
	tcase_add_test(tc, fixup_writes_private_vendors);
	tcase_add_test(tc, fixup_not_needed);
	suite_add_tcase(s, tc);
	return s;
}
