/* Unit tests for probe.c: the notes a probe leaves in its result, and the one list of built-in probes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "detect/probe.h"

START_TEST(notes_are_joined_and_cut)
{
	struct probe_result res;
	char long_text[400];

	memset(&res, 0, sizeof(res));
	probe_note(&res, "no %s", "libnvidia-ml.so.1");
	ck_assert_str_eq(res.why, "no libnvidia-ml.so.1");
	probe_note(&res, "%d devices skipped", 2);
	ck_assert_str_eq(res.why, "no libnvidia-ml.so.1; 2 devices skipped");

	/* a note longer than the field is cut, terminated */
	memset(&res, 0, sizeof(res));
	memset(long_text, 'x', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	probe_note(&res, "%s", long_text);
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	/* a full field takes nothing more, not even the separator */
	probe_note(&res, "more");
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	ck_assert_ptr_null(strstr(res.why, ";"));

	/* with room for the separator but not the whole note, the note is cut */
	memset(&res, 0, sizeof(res));
	memset(res.why, 'y', sizeof(res.why) - 10);
	probe_note(&res, "0123456789abcdef");
	ck_assert_uint_eq(strlen(res.why), sizeof(res.why) - 1);
	ck_assert_ptr_nonnull(strstr(res.why, "y; 0123456"));
}
END_TEST

START_TEST(builtin_probes_in_order_with_their_trust)
{
	static const struct {
		const char *name;
		unsigned trust;
	} want[] = {{"cpu", 3}, {"opencl", 1}, {"nvml", 4}, {"sysfs-gpu", 3}, {"tpu", 2}};
	size_t n = 0;

	for (; probe_builtin[n] != NULL; n++) {
		ck_assert_uint_lt(n, sizeof(want) / sizeof(want[0]));
		ck_assert_str_eq(probe_builtin[n]->name, want[n].name);
		/* vendor libraries over the kernel's sysfs and hwloc over PCI ids and device nodes over OpenCL */
		ck_assert_uint_eq(probe_builtin[n]->trust, want[n].trust);
		ck_assert(probe_builtin[n]->probe != NULL);
	}
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
}
END_TEST

/* Writes text into root/rel. */
static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(pcie_link_from_sysfs_capped_by_the_port)
{
	char root[] = "/tmp/acceld-pcie-XXXXXX";
	char path[1024];
	struct device d;

	ck_assert_ptr_nonnull(mkdtemp(root));
	/* a Gen5 card (idle at Gen1) under a Gen4 port: sys/devices/pci0000:00/<port>/<card>, linked from the bus */
	snprintf(path, sizeof(path), "mkdir -p %s/devices/pci0000:00/0000:00:01.0/0000:01:00.0 %s/bus/pci/devices",
		 root, root);
	ck_assert_int_eq(system(path), 0);
	put(root, "devices/pci0000:00/0000:00:01.0/max_link_speed", "16.0 GT/s PCIe\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_speed", "2.5 GT/s PCIe\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_width", "16\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_speed", "32.0 GT/s PCIe\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_width", "16\n");
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:01:00.0", root);
	ck_assert_int_eq(symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0", path), 0);

	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.pci_bus_id, "0000:01:00.0");
	probe_pcie_sysfs(root, &d);
	ck_assert_uint_eq(d.pcie.generation, 1);
	ck_assert_uint_eq(d.pcie.width, 16);
	ck_assert_uint_eq(d.pcie.max_generation, 4);
	ck_assert_uint_eq(d.pcie.max_width, 16);

	/* what a source already gave stays; garbage and "Unknown" are absent */
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_speed", "Unknown\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_width", "255\n");
	put(root, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/max_link_speed", "fast\n");
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.pci_bus_id, "0000:01:00.0");
	d.pcie.max_width = 8;
	probe_pcie_sysfs(root, &d);
	ck_assert_uint_eq(d.pcie.generation, 0);
	ck_assert_uint_eq(d.pcie.width, 0);
	ck_assert_uint_eq(d.pcie.max_generation, 0);
	ck_assert_uint_eq(d.pcie.max_width, 8);

	/* a device without an address or without files: nothing */
	device_init(&d, DEVICE_GPU);
	probe_pcie_sysfs(root, &d);
	DEVICE_SET(d.pci_bus_id, "0000:02:00.0");
	probe_pcie_sysfs(root, &d);
	ck_assert_uint_eq(d.pcie.generation + d.pcie.width + d.pcie.max_generation + d.pcie.max_width, 0);

	snprintf(path, sizeof(path), "rm -rf %s", root);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, notes_are_joined_and_cut);
	tcase_add_test(tc, builtin_probes_in_order_with_their_trust);
	tcase_add_test(tc, pcie_link_from_sysfs_capped_by_the_port);
	suite_add_tcase(s, tc);
	return s;
}
