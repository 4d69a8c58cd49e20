/*
 * Unit tests for probe_cpu.c: hwloc on this host, with cgroup v2, v1 and hybrid fixture trees (tests/fixtures/cgroup-*)
 * read through cfg.sysfs_root and cfg.proc_root: cpuset, CPU quota, memory limit, and the figures built on them;
 * the maximum clock from cpufreq, CPUID leaf 0x16 (a fake) or the DMI table (tests/fixtures/dmi-*), else a peak
 * that says it is a lower bound; and this host's topology given back to hwloc as XML (HWLOC_XMLFILE) with padded
 * model and vendor strings.
 */
#include <hwloc.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "detect/probe.h"
#include "detect/probe_cpu.h"

static struct config cfg;
static char sys_root[512];
static char proc_root[512];

static void use_fixture(const char *name)
{
	memset(&cfg, 0, sizeof(cfg));
	snprintf(sys_root, sizeof(sys_root), "tests/fixtures/%s/sys", name);
	snprintf(proc_root, sizeof(proc_root), "tests/fixtures/%s/proc", name);
	cfg.sysfs_root = sys_root;
	cfg.proc_root = proc_root;
}

/* Runs the probe once and returns the one device it found in *d. */
static void probe_once(struct device *d, struct probe_result *res, void **state)
{
	struct device_list l;

	device_list_init(&l);
	memset(res, 0, sizeof(*res));
	probe_cpu_ops.probe(state, &cfg, &l, res);
	ck_assert_msg(res->ok, "probe failed: %s", res->why);
	ck_assert_uint_eq(l.n, 1);
	*d = l.v[0];
	device_list_release(&l);
}

START_TEST(cgroup_v2_limits)
{
	struct device d;
	struct probe_result res;
	struct device_list l;
	void *state = NULL;

	use_fixture("cgroup-v2-limited");
	probe_once(&d, &res, &state);
	ck_assert(res.available);
	ck_assert_ptr_nonnull(strstr(res.why, "v2"));
	ck_assert_int_eq(d.type, DEVICE_CPU);
	ck_assert(d.sources & SOURCE_HWLOC);
	ck_assert(d.sources & SOURCE_CGROUP);
	/* the leaf's cpuset is CPU 0 */
	ck_assert_str_eq(d.cpu.cpuset, "0");
	ck_assert_uint_eq(d.cpu.pus, 1);
	ck_assert_uint_eq(d.cpu.cores, 1);
	ck_assert_uint_eq(d.cpu.packages, 1);
	ck_assert_uint_eq(d.compute_units, 1);
	/* the parent's cpu.max (50000/100000) binds although the leaf says max */
	ck_assert_double_eq_tol(d.cpu.quota_cpus, 0.5, 1e-9);
	ck_assert_double_eq_tol(d.cpu.effective_cpus, 0.5, 1e-9);
	/* memory.max 2 GiB below 16 GiB of host; available = limit - (current - inactive_file) */
	ck_assert_uint_eq(d.memory_total_bytes, 2147483648ull);
	ck_assert_uint_eq(d.memory_available_bytes, 2147483648ull - (536870912ull - 134217728ull));
	ck_assert_str_eq(d.cpu.isa, "avx2");
	ck_assert_uint_eq(d.clock_mhz, 2000);
	/* 0.5 CPU x 2000 MHz x 32 FLOP/cycle */
	ck_assert_double_eq_tol(d.peak.fp32_tflops, 0.032, 1e-9);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "estimate"));
	ck_assert_ptr_nonnull(strstr(d.peak.source, "2000 MHz"));
	ck_assert_uint_ge(d.cpu.numa_nodes, 1);
	ck_assert_uint_gt(d.cpu.cache_bytes[0], 0);

	/* telemetry: memory again and a sample time; utilisation needs two different /proc/stat readings */
	device_list_init(&l);
	device_list_add(&l, &d);
	memset(&res, 0, sizeof(res));
	probe_cpu_ops.refresh(&state, &cfg, &l, &res);
	ck_assert(res.ok);
	ck_assert_uint_eq(l.v[0].memory_available_bytes, d.memory_available_bytes);
	ck_assert_uint_eq(l.v[0].telemetry.memory_used_bytes, 402653184ull);
	ck_assert_int_gt(l.v[0].telemetry.sampled_at_ms, 0);
	ck_assert(isnan(l.v[0].telemetry.utilization_ratio));
	device_list_release(&l);
	probe_cpu_ops.release(state);
}
END_TEST

START_TEST(cgroup_v1_limits)
{
	struct device d;
	struct device host;
	struct probe_result res;
	void *state = NULL;

	use_fixture("cgroup-v1-limited");
	probe_once(&d, &res, &state);
	ck_assert_ptr_nonnull(strstr(res.why, "v1"));
	ck_assert(d.sources & SOURCE_CGROUP);
	ck_assert_str_eq(d.cpu.cpuset, "0");
	ck_assert_uint_eq(d.cpu.pus, 1);
	/* cfs 150000/100000 = 1.5 CPUs, more than the one CPU of the cpuset */
	ck_assert_double_eq_tol(d.cpu.quota_cpus, 1.5, 1e-9);
	ck_assert_double_eq_tol(d.cpu.effective_cpus, 1.0, 1e-9);
	ck_assert_uint_eq(d.memory_total_bytes, 1073741824ull);
	ck_assert_uint_eq(d.memory_available_bytes, 1073741824ull - 268435456ull);
	ck_assert_str_eq(d.cpu.isa, "avx512f");
	/* cpufreq's maximum wins over /proc/cpuinfo's current clock */
	ck_assert_uint_eq(d.clock_mhz, 3500);
	ck_assert_double_eq_tol(d.peak.fp32_tflops, 1 * 3500e6 * 64 / 1e12, 1e-9);
	probe_cpu_ops.release(state);

	/* a package and caches shared with CPUs outside the cpuset still describe it (hwloc's model wins) */
	state = NULL;
	memset(&cfg, 0, sizeof(cfg));
	cfg.sysfs_root = "/sys";
	cfg.proc_root = "/proc";
	probe_once(&host, &res, &state);
	ck_assert_str_eq(d.model, host.model);
	ck_assert_uint_eq(d.cpu.packages, 1);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(d.cpu.cache_bytes[i], host.cpu.cache_bytes[i]);
	probe_cpu_ops.release(state);
}
END_TEST

START_TEST(cgroup_hybrid_limits)
{
	struct device d;
	struct probe_result res;
	cpu_set_t set;
	void *state = NULL;

	/* v1 trees beside an empty unified tree: the limits come from the v1 files; no cpuset tree is mounted */
	use_fixture("cgroup-hybrid");
	probe_once(&d, &res, &state);
	ck_assert_ptr_nonnull(strstr(res.why, "hybrid"));
	ck_assert(d.sources & SOURCE_CGROUP);
	ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
	ck_assert_uint_eq(d.cpu.pus, (unsigned)CPU_COUNT(&set));
	ck_assert_double_eq_tol(d.cpu.quota_cpus, 2.5, 1e-9);
	ck_assert_uint_eq(d.memory_total_bytes, 4294967296ull);
	ck_assert_uint_eq(d.memory_available_bytes, 4294967296ull - (1073741824ull - 268435456ull));
	probe_cpu_ops.release(state);
}
END_TEST

/* Copies xml to f without the info elements named name. */
static void write_without(FILE *f, const char *xml, const char *const *names, size_t nnames)
{
	const char *p = xml;

	for (;;) {
		const char *next = NULL;

		for (size_t i = 0; i < nnames; i++) {
			char key[64];
			const char *at;

			snprintf(key, sizeof(key), "<info name=\"%s\"", names[i]);
			at = strstr(p, key);
			if (at != NULL && (next == NULL || at < next))
				next = at;
		}
		if (next == NULL) {
			fputs(p, f);
			return;
		}
		fwrite(p, 1, (size_t)(next - p), f);
		p = strstr(next, "/>");
		ck_assert_ptr_nonnull(p);
		p += 2;
	}
}

/*
 * Writes this host's topology as hwloc XML to path, its CPUModel and CPUVendor replaced by model and vendor on the
 * first package (NULL: left out), as a CPUID brand string padded with blanks reaches hwloc.
 */
static void write_topology(const char *path, const char *model, const char *vendor)
{
	static const char *const names[] = {"CPUModel", "CPUVendor"};
	hwloc_topology_t topo;
	char *xml = NULL;
	char *edited;
	char *pkg;
	char *end;
	int len = 0;
	FILE *f;
	FILE *mem;
	size_t memlen = 0;

	ck_assert_int_eq(hwloc_topology_init(&topo), 0);
	ck_assert_int_eq(hwloc_topology_load(topo), 0);
	ck_assert_int_eq(hwloc_topology_export_xmlbuffer(topo, &xml, &len, 0), 0);
	mem = open_memstream(&edited, &memlen);
	ck_assert_ptr_nonnull(mem);
	write_without(mem, xml, names, 2);
	fclose(mem);
	hwloc_free_xmlbuffer(topo, xml);
	hwloc_topology_destroy(topo);

	/* the new infos go first inside the first package's element */
	pkg = strstr(edited, "<object type=\"Package\"");
	ck_assert_ptr_nonnull(pkg);
	end = strchr(pkg, '>');
	ck_assert_ptr_nonnull(end);
	ck_assert(end[-1] != '/');
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(edited, 1, (size_t)(end + 1 - edited), f);
	if (model != NULL)
		fprintf(f, "\n<info name=\"CPUModel\" value=\"%s\"/>", model);
	if (vendor != NULL)
		fprintf(f, "\n<info name=\"CPUVendor\" value=\"%s\"/>", vendor);
	fputs(end + 1, f);
	ck_assert_int_eq(fclose(f), 0);
	free(edited);
}

START_TEST(padded_model_strings_are_trimmed)
{
	char path[] = "/tmp/acceld-topology-XXXXXX";
	int fd = mkstemp(path);
	struct device d;
	struct probe_result res;
	void *state = NULL;

	ck_assert_int_ge(fd, 0);
	close(fd);
	/* CPUID's brand string is padded to 48 bytes; hwloc passes it on as it is */
	write_topology(path, "Oxide Virtual Turin-like Processor             ", "  AuthenticAMD ");
	setenv("HWLOC_XMLFILE", path, 1);
	use_fixture("cgroup-v2-limited");
	probe_once(&d, &res, &state);
	ck_assert_str_eq(d.model, "Oxide Virtual Turin-like Processor");
	ck_assert_str_eq(d.vendor, "AuthenticAMD");
	probe_cpu_ops.release(state);

	/* without a model from hwloc, /proc/cpuinfo's "model name" (padded in this fixture) is used, trimmed */
	write_topology(path, NULL, NULL);
	state = NULL;
	use_fixture("cgroup-v1-limited");
	probe_once(&d, &res, &state);
	ck_assert_str_eq(d.model, "Fixture CPU");
	ck_assert_str_eq(d.vendor, "");
	probe_cpu_ops.release(state);
	unsetenv("HWLOC_XMLFILE");
	unlink(path);
}
END_TEST

START_TEST(no_cgroup_files)
{
	struct device d;
	struct probe_result res;
	void *state = NULL;
	cpu_set_t set;

	/* an empty tree: topology from hwloc alone, no quota, nothing invented */
	memset(&cfg, 0, sizeof(cfg));
	cfg.sysfs_root = "tests/fixtures/does-not-exist/sys";
	cfg.proc_root = "tests/fixtures/does-not-exist/proc";
	probe_once(&d, &res, &state);
	ck_assert(!(d.sources & SOURCE_CGROUP));
	ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
	ck_assert_uint_eq(d.cpu.pus, (unsigned)CPU_COUNT(&set));
	ck_assert(isnan(d.cpu.quota_cpus));
	ck_assert_double_eq_tol(d.cpu.effective_cpus, d.cpu.pus, 1e-9);
	ck_assert_uint_eq(d.memory_total_bytes, 0);
	ck_assert_uint_eq(d.clock_mhz, 0);
	/* no clock and no ISA: no peak rather than a guess */
	ck_assert(isnan(d.peak.fp32_tflops));
	ck_assert_str_eq(d.peak.source, "");
	probe_cpu_ops.release(state);
}
END_TEST

START_TEST(cpufreq_ceiling_not_base_clock)
{
	struct device d;
	struct device_list l;
	struct probe_result res;
	void *state = NULL;
	cpu_set_t set;
	unsigned want;

	/* the highest policy ceiling of the usable CPUs (3.4 and 3.2 GHz), not the hardware maximum (4.0), the base
	 * clock (2.1) or /proc/cpuinfo's current clock (1.2, 1.3) */
	use_fixture("cpufreq-turbo");
	ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
	if (!CPU_ISSET(0, &set) && !CPU_ISSET(1, &set))
		return; /* this host runs us on neither fixture CPU: nothing of the fixture is in the cpuset */
	want = CPU_ISSET(0, &set) ? 3400 : 3200;
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, want);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "cpufreq scaling_max_freq"));
	ck_assert_str_eq(d.cpu.isa, "avx2");
	ck_assert_double_eq_tol(d.peak.fp32_tflops, fmin(d.cpu.cores, d.cpu.effective_cpus) * want * 1e6 * 32 / 1e12,
				1e-9);

	/* the current clocks, averaged over the usable CPUs, are telemetry */
	device_list_init(&l);
	device_list_add(&l, &d);
	memset(&res, 0, sizeof(res));
	probe_cpu_ops.refresh(&state, &cfg, &l, &res);
	ck_assert(res.ok);
	if (CPU_ISSET(0, &set) && CPU_ISSET(1, &set))
		ck_assert_double_eq_tol(l.v[0].telemetry.clock_mhz, 3000, 1e-9);
	else
		ck_assert(l.v[0].telemetry.clock_mhz == 3100 || l.v[0].telemetry.clock_mhz == 2900);
	device_list_release(&l);
	probe_cpu_ops.release(state);
}
END_TEST

START_TEST(zen4_avx512_peaks_as_avx2)
{
	struct device d;
	struct probe_result res;
	void *state = NULL;

	/* AVX-512 on Zen 4 is two 256-bit halves: 0.5 CPU x 2000 MHz x 32 FLOP/cycle, not 64 */
	use_fixture("amd-zen4");
	probe_once(&d, &res, &state);
	ck_assert_str_eq(d.cpu.isa, "avx512f");
	ck_assert_double_eq_tol(d.peak.fp32_tflops, 0.5 * 2000e6 * 32 / 1e12, 1e-9);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "Zen 4"));
	probe_cpu_ops.release(state);
}
END_TEST

START_TEST(cpuinfo_clock_is_named_as_such)
{
	struct device d;
	struct probe_result res;
	void *state = NULL;

	/* no cpufreq, CPUID or DMI maximum: /proc/cpuinfo's current clock, and the peak is only a lower bound */
	use_fixture("cgroup-v2-limited");
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, 2000);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "/proc/cpuinfo"));
	ck_assert_msg(strstr(d.peak.source, "estimate, not measured, a lower bound: at least 0.50 cores x 2000 MHz") ==
			      d.peak.source,
		      "%s", d.peak.source);
	ck_assert(isnan(d.telemetry.clock_mhz));
	probe_cpu_ops.release(state);
}
END_TEST

static unsigned cpuid_mhz;

static unsigned fake_cpuid(void)
{
	return cpuid_mhz;
}

/* Without cpufreq the firmware says the maximum: CPUID leaf 0x16 first, then DMI's Max Speed; a ceiling. */
START_TEST(firmware_gives_the_maximum_clock)
{
	struct device d;
	struct probe_result res;
	void *state = NULL;
	cpu_set_t set;

	/* the DMI table's populated socket (3500 MHz), not its empty one (4800) nor the clock now (2000) */
	use_fixture("dmi-max-speed");
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, 3500);
	ck_assert_msg(strstr(d.peak.source, "estimate, not measured: 0.50 cores x 3500 MHz (DMI processor Max "
					    "Speed)") == d.peak.source,
		      "%s", d.peak.source);
	ck_assert_ptr_null(strstr(d.peak.source, "at least"));
	ck_assert_double_eq_tol(d.peak.fp32_tflops, 0.5 * 3500e6 * 32 / 1e12, 1e-12);
	probe_cpu_ops.release(state);

	/* CPUID's maximum comes before DMI's; one of 0 says nothing */
	probe_cpu_set_cpuid(fake_cpuid);
	cpuid_mhz = 3900;
	state = NULL;
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, 3900);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "(CPUID leaf 0x16 maximum frequency)"));
	probe_cpu_ops.release(state);
	cpuid_mhz = 0;
	state = NULL;
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, 3500);
	probe_cpu_ops.release(state);

	/* a maximum below the clock now is no ceiling (QEMU's DMI says 2000 MHz on a 2600 MHz host): a lower bound */
	use_fixture("dmi-qemu");
	cpuid_mhz = 2400;
	state = NULL;
	probe_once(&d, &res, &state);
	ck_assert_uint_eq(d.clock_mhz, 2600);
	ck_assert_ptr_nonnull(strstr(d.peak.source, "a lower bound: at least 0.50 cores x 2600 MHz"));
	probe_cpu_ops.release(state);

	/* cpufreq, where there is one (the fixture's CPUs are 0 and 1), comes first */
	ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
	if (CPU_ISSET(0, &set) || CPU_ISSET(1, &set)) {
		use_fixture("cpufreq-turbo");
		cpuid_mhz = 9000;
		state = NULL;
		probe_once(&d, &res, &state);
		ck_assert_ptr_nonnull(strstr(d.peak.source, "cpufreq scaling_max_freq"));
		probe_cpu_ops.release(state);
	}
	probe_cpu_set_cpuid(NULL);
}
END_TEST

/* The DMI walk: Max Speed of populated sockets, the highest; a malformed table ends the walk, never overruns. */
START_TEST(dmi_tables_are_walked_within_bounds)
{
	unsigned char t[256];
	size_t n = 0;

	/* a populated socket at 2800 MHz (status 0x41), an SMBIOS 2.0 one too short for a status byte at 3100 */
	memset(t, 0, sizeof(t));
	t[n] = 4;
	t[n + 1] = 0x1a;
	t[n + 0x14] = 2800 & 0xff;
	t[n + 0x15] = 2800 >> 8;
	t[n + 0x18] = 0x41;
	n += 0x1a + 2;
	t[n] = 4;
	t[n + 1] = 0x16;
	t[n + 0x14] = 3100 & 0xff;
	t[n + 0x15] = 3100 >> 8;
	n += 0x16;
	memcpy(t + n, "CPU\0\0", 5);
	n += 5;
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, n), 3100);
	/* cut inside the second structure: only the first counts */
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, 0x1a + 2 + 10), 2800);
	/* an unpopulated socket, a bad length, nothing */
	t[0x18] = 0x00;
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, 0x1a + 2), 0);
	t[1] = 2;
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, n), 0);
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, 0), 0);
	ck_assert_uint_eq(probe_cpu_dmi_max_mhz(t, 3), 0);
}
END_TEST

START_TEST(this_host)
{
	struct device d;
	struct probe_result res;
	void *state = NULL;
	cpu_set_t set;

	memset(&cfg, 0, sizeof(cfg));
	cfg.sysfs_root = "/sys";
	cfg.proc_root = "/proc";
	probe_once(&d, &res, &state);
	ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
	ck_assert_uint_eq(d.cpu.pus, (unsigned)CPU_COUNT(&set));
	ck_assert_uint_gt(d.memory_total_bytes, 0);
	ck_assert_uint_le(d.memory_available_bytes, d.memory_total_bytes);
	ck_assert_str_ne(d.model, "");
	probe_cpu_ops.release(state);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("probe_cpu");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, cgroup_v2_limits);
	tcase_add_test(tc, cgroup_v1_limits);
	tcase_add_test(tc, cgroup_hybrid_limits);
	tcase_add_test(tc, no_cgroup_files);
	tcase_add_test(tc, padded_model_strings_are_trimmed);
	tcase_add_test(tc, this_host);
	tcase_add_test(tc, cpufreq_ceiling_not_base_clock);
	tcase_add_test(tc, zen4_avx512_peaks_as_avx2);
	tcase_add_test(tc, cpuinfo_clock_is_named_as_such);
	tcase_add_test(tc, firmware_gives_the_maximum_clock);
	tcase_add_test(tc, dmi_tables_are_walked_within_bounds);
	suite_add_tcase(s, tc);
	return s;
}
