/*
 * probe_cpu: the host's CPUs as one device. hwloc gives the topology (packages, cores, PUs, NUMA nodes, caches,
 * model) restricted to the CPUs this process may use; the cgroup (cgroup.h: v2, v1 or hybrid) gives what hwloc
 * ignores: the cpuset of the configured tree, the CPU quota and the memory limit. Every file is read below
 * cfg->sysfs_root and cfg->proc_root so tests use fixture trees.
 */
#include "detect/probe_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect/cgroup.h"
#include "core/clock.h"
#include "core/hwfile.h"
#include "core/mem.h"
#include "detect/probe.h"

/* This process's cgroup folders, resolved at each full probe and kept for telemetry. */
struct cpu_state {
	struct cgroup cg;
	uint64_t prev_busy;
	uint64_t prev_total;
	bool have_prev;
	unsigned measured_mhz;  /* the clock measured once (measured_mhz), 0 until then */
};

/* MemTotal and MemAvailable from <proc>/meminfo, in bytes. */
static void meminfo(const struct config *cfg, uint64_t *total, uint64_t *avail)
{
	char path[PATH_MAX];
	char line[256];
	FILE *f;

	*total = *avail = 0;
	snprintf(path, sizeof(path), "%s/meminfo", cfg->proc_root);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long kb;

		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			*total = kb * 1024ull;
		else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			*avail = kb * 1024ull;
	}
	fclose(f);
}

/* Fills memory total/available, honouring the cgroup limit. Returns true when a cgroup limit file was read. */
static bool fill_memory(const struct config *cfg, const struct cgroup *cg, struct device *d)
{
	uint64_t total;
	uint64_t avail;
	uint64_t usage;
	uint64_t inactive;
	uint64_t limit;
	bool seen = cgroup_memory_limit(cg, &limit) == 0;

	meminfo(cfg, &total, &avail);
	if (limit != 0 && (total == 0 || limit < total)) {
		total = limit;
		/* what the cgroup uses and cannot give back cheaply: usage minus inactive page cache */
		if (cgroup_memory_usage(cg, &usage, &inactive) == 0) {
			uint64_t used = usage > inactive ? usage - inactive : 0;
			uint64_t room = limit > used ? limit - used : 0;

			if (avail == 0 || room < avail)
				avail = room;
		} else if (avail > limit) {
			avail = limit;
		}
	}
	d->memory_total_bytes = total;
	d->memory_available_bytes = avail;
	return seen;
}

/* Busy and total jiffies of all CPUs from <proc>/stat. */
static bool cpu_times(const struct config *cfg, uint64_t *busy, uint64_t *total)
{
	char path[PATH_MAX];
	char line[512];
	unsigned long long v[8] = {0};
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/stat", cfg->proc_root);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	n = fgets(line, sizeof(line), f) ? sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
						  &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
					 : 0;
	fclose(f);
	if (n < 4)
		return false;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4]; /* idle and iowait */
	return true;
}

#define CPU_LIST_MAX 4096 /* CPUs looked at in a cpuset list */

/*
 * Calls fn(ctx, cpu) for every CPU of a cpuset list ("0-3,8"), in order, at most CPU_LIST_MAX of them; stops at
 * the first malformed entry.
 */
static void each_cpu(const char *list, void (*fn)(void *ctx, unsigned cpu), void *ctx)
{
	const char *p = list;
	unsigned seen = 0;

	while (*p != '\0' && seen < CPU_LIST_MAX) {
		char *end;
		unsigned long a = strtoul(p, &end, 10);
		unsigned long b = a;

		if (end == p)
			return;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return;
			p = end;
		}
		for (unsigned long c = a; c <= b && seen < CPU_LIST_MAX; c++, seen++)
			fn(ctx, (unsigned)c);
		if (*p == ',')
			p++;
		else if (*p != '\0')
			return;
	}
}

/* Gathers one cpufreq file (kHz) over the CPUs of a cpuset. */
struct freq_scan {
	const struct config *cfg;
	const char *file;
	uint64_t max_khz;
	uint64_t sum_khz;
	unsigned n;
};

static void scan_cpu(void *arg, unsigned cpu)
{
	struct freq_scan *f = arg;
	char text[32];
	uint64_t khz;

	if (hwfile_read_line(text, sizeof(text), "%s/devices/system/cpu/cpu%u/cpufreq/%s", f->cfg->sysfs_root, cpu,
			     f->file) != 0 ||
	    hwfile_parse_field_u64(text, &khz) != 0 || khz < 1000 || khz > 100000000)
		return;
	if (khz > f->max_khz)
		f->max_khz = khz;
	f->sum_khz += khz;
	f->n++;
}

static struct freq_scan scan_freq(const struct config *cfg, const char *cpuset, const char *file)
{
	struct freq_scan f = {.cfg = cfg, .file = file};

	each_cpu(cpuset, scan_cpu, &f);
	return f;
}

/* Whether cpu is in a cpuset list. */
struct cpu_find {
	unsigned cpu;
	bool found;
};

static void find_cpu(void *arg, unsigned cpu)
{
	struct cpu_find *f = arg;

	f->found = f->found || f->cpu == cpu;
}

static bool in_cpuset(const char *cpuset, unsigned cpu)
{
	struct cpu_find f = {.cpu = cpu};

	if (cpuset[0] == '\0')
		return true;
	each_cpu(cpuset, find_cpu, &f);
	return f.found;
}

/* --- the maximum clock where the machine tells it --- */

unsigned probe_cpu_dmi_max_mhz(const unsigned char *table, size_t len)
{
	unsigned best = 0;
	size_t p = 0;

	/* each structure: type, length of its formatted part, handle, the part, then strings ending in two NULs */
	while (p + 4 <= len) {
		unsigned type = table[p];
		size_t flen = table[p + 1];

		if (flen < 4 || p + flen > len || type == 127)
			break;
		/* Max Speed is a word at 0x14; the status byte at 0x18 says whether the socket holds a CPU (bit 6) */
		if (type == 4 && flen >= 0x16 && (flen < 0x19 || (table[p + 0x18] & 0x40))) {
			unsigned mhz = table[p + 0x14] | (unsigned)table[p + 0x15] << 8;

			if (mhz >= 100 && mhz < 0xffff && mhz > best)
				best = mhz;
		}
		p += flen;
		while (p + 1 < len && (table[p] != 0 || table[p + 1] != 0))
			p++;
		p += 2;
	}
	return best;
}

/* The Max Speed of <sysfs>/firmware/dmi/tables/DMI (readable by root only on most hosts); 0 unknown. */
static unsigned dmi_max_mhz(const struct config *cfg)
{
	char path[PATH_MAX];
	unsigned char *table;
	size_t len;
	unsigned mhz;
	FILE *f;

	snprintf(path, sizeof(path), "%s/firmware/dmi/tables/DMI", cfg->sysfs_root);
	f = fopen(path, "rbe");
	if (f == NULL)
		return 0;
	table = xmalloc(PROBE_CPU_DMI_MAX_BYTES);
	len = fread(table, 1, PROBE_CPU_DMI_MAX_BYTES, f);
	fclose(f);
	mhz = probe_cpu_dmi_max_mhz(table, len);
	free(table);
	return mhz;
}

/* CPUID leaf 0x16 (Intel, from Skylake): EBX is the maximum frequency in MHz, 0 where the CPU does not say. */
static unsigned host_cpuid_max_mhz(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a = 0, b = 0, c = 0, d = 0;

	if (__get_cpuid_max(0, NULL) < 0x16 || !__get_cpuid(0x16, &a, &b, &c, &d))
		return 0;
	return b & 0xffff;
#else
	return 0;
#endif
}

static unsigned (*cpuid_max_mhz)(void) = host_cpuid_max_mhz;

void probe_cpu_set_cpuid(unsigned (*max_mhz)(void))
{
	cpuid_max_mhz = max_mhz != NULL ? max_mhz : host_cpuid_max_mhz;
}

/* CPUID leaf 0x16's maximum when it describes the CPU whose /proc is read: this host's, or a test's fake. */
static unsigned cpuid_max_for(const struct config *cfg)
{
	if (cpuid_max_mhz == host_cpuid_max_mhz && strcmp(cfg->proc_root, "/proc") != 0)
		return 0;
	return cpuid_max_mhz();
}

/*
 * Without cpufreq: CPUID's maximum, else the DMI table's, each only when it is not below the clock seen now (mhz, 0
 * unknown); 0 when neither tells. *clock_source names the one taken.
 */
static unsigned firmware_max_mhz(const struct config *cfg, double mhz, const char **clock_source)
{
	unsigned max = cpuid_max_for(cfg);

	if (max > 0 && max >= mhz) {
		*clock_source = "CPUID leaf 0x16 maximum frequency";
		return max;
	}
	max = dmi_max_mhz(cfg);
	if (max > 0 && max >= mhz) {
		*clock_source = "DMI processor Max Speed";
		return max;
	}
	return 0;
}

/*
 * The clock a core runs at, in MHz, timed over a chain of dependent integer adds (each waits for the one before, one
 * cycle apiece on x86-64 and AArch64, as lmbench's mhz times its chains): the fastest of a few runs, since a run the
 * scheduler interrupts only reads slower. 0 where it cannot be measured (another architecture). About 2 million
 * cycles a run, a few milliseconds in all.
 */
static unsigned measured_mhz(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
#define ADD1 "addq %1, %0\n\t"
#else
#define ADD1 "add %0, %0, %1\n\t"
#endif
#define ADD10 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1 ADD1
	enum { ADDS = 100, LOOPS = 20000, RUNS = 7 };
	uint64_t x = 0, one = 1;
	double best = 0;

	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = clock_mono_ns(), ns;

		for (int i = 0; i < LOOPS; i++)
			__asm__ volatile(ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10 ADD10
					 : "+r"(x)
					 : "r"(one));
		ns = clock_mono_ns() - t0;
		if (ns > 0 && (double)ADDS * LOOPS * 1000.0 / (double)ns > best)
			best = (double)ADDS * LOOPS * 1000.0 / (double)ns;
	}
#undef ADD10
#undef ADD1
	/* x is the chain's sum: every add ran */
	return x == (uint64_t)ADDS * LOOPS * RUNS && best >= 1 && best < 100000 ? (unsigned)(best + 0.5) : 0;
#else
	return 0;
#endif
}

/*
 * Model, clock and vector extensions from <proc>/cpuinfo and cpufreq. The clock is the highest the machine says a
 * usable CPU may run at, so a peak computed from it bounds what the CPU does (a job's fraction of the peak stays at
 * or under 1): cpufreq's scaling_max_freq (the policy's ceiling, turbo included), else cpuinfo_max_freq (the
 * hardware's); without cpufreq (VMs, some containers) the maximum frequency of CPUID leaf 0x16, else the DMI table's
 * processor Max Speed, either only when it is not below the clock seen now; else, with measured (this machine's
 * own /proc, not a fixture's: the figure measured once, 0 until it is), the clock a chain of dependent adds runs
 * at; else the highest "cpu MHz" of /proc/cpuinfo, which is only the clock now: *lower_bound says the peak is then
 * at least what it computes. The base clock is never used. *clock_source names the one taken.
 */
static void cpuinfo(const struct config *cfg, struct device *d, unsigned *measured, const char **clock_source,
		    bool *split512, bool *lower_bound)
{
	static const struct {
		const char *flag;
		const char *isa;
	} isas[] = {{"avx512f", "avx512f"}, {"avx2", "avx2"}, {"avx", "avx"}, {"sse4_2", "sse4_2"},
		    {"sse2", "sse2"},	    {"sve", "sve"},   {"asimd", "asimd"}};
	char path[PATH_MAX];
	char line[4096];
	struct freq_scan f;
	double mhz = 0;
	bool usable = true;
	bool amd = false;
	long family = -1;
	int best = -1;
	unsigned max = 0;
	FILE *f_info;

	*clock_source = "";
	*split512 = false;
	*lower_bound = false;
	snprintf(path, sizeof(path), "%s/cpuinfo", cfg->proc_root);
	f_info = fopen(path, "re");
	if (f_info != NULL) {
		while (fgets(line, sizeof(line), f_info) != NULL) {
			char *colon = strchr(line, ':');
			const char *val = colon ? colon + 1 : "";

			while (*val == ' ' || *val == '\t')
				val++;
			if (strncmp(line, "processor", 9) == 0) {
				char *end;
				unsigned long cpu = strtoul(val, &end, 10);

				usable = end == val || in_cpuset(d->cpu.cpuset, (unsigned)cpu);
			} else if (strncmp(line, "vendor_id", 9) == 0) {
				amd = strncmp(val, "AuthenticAMD", 12) == 0;
			} else if (strncmp(line, "cpu family", 10) == 0 && family < 0) {
				family = strtol(val, NULL, 10);
			} else if (strncmp(line, "model name", 10) == 0 && d->model[0] == '\0') {
				DEVICE_SET_TRIMMED(d->model, val);
			} else if (strncmp(line, "cpu MHz", 7) == 0 && usable) {
				double v = strtod(val, NULL);

				if (v > mhz && v < 100000)
					mhz = v;
			} else if ((strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0) && best < 0) {
				char padded[sizeof(line) + 2];

				snprintf(padded, sizeof(padded), " %s", val);
				padded[strcspn(padded, "\n")] = ' ';
				for (size_t i = 0; i < sizeof(isas) / sizeof(isas[0]) && best < 0; i++) {
					char word[32];

					snprintf(word, sizeof(word), " %s ", isas[i].flag);
					if (strstr(padded, word) != NULL)
						best = (int)i;
				}
			}
		}
		fclose(f_info);
	}
	if (best >= 0)
		DEVICE_SET(d->cpu.isa, isas[best].isa);
	/* Zen 4 (family 19h, the only one of it with AVX-512) runs 512-bit work as two halves on 256-bit units */
	*split512 = best >= 0 && strcmp(isas[best].isa, "avx512f") == 0 && amd && family == 0x19;
	f = scan_freq(cfg, d->cpu.cpuset, "scaling_max_freq");
	*clock_source = "cpufreq scaling_max_freq";
	if (f.n == 0) {
		f = scan_freq(cfg, d->cpu.cpuset, "cpuinfo_max_freq");
		*clock_source = "cpufreq cpuinfo_max_freq";
	}
	if (f.n == 0)
		max = firmware_max_mhz(cfg, mhz, clock_source);
	if (f.n > 0) {
		d->clock_mhz = (unsigned)(f.max_khz / 1000);
	} else if (max > 0) {
		d->clock_mhz = max;
	} else if (measured != NULL && (*measured > 0 || (*measured = measured_mhz()) > 0)) {
		/* the cores' real clock under load, turbo included: a ceiling for what they compute, where cpuinfo's
		 * figure (often the base clock a VM reports) is not */
		d->clock_mhz = *measured;
		*clock_source = "measured: a chain of dependent adds, one cycle each; no cpufreq, CPUID or DMI maximum";
	} else if (mhz >= 1) {
		d->clock_mhz = (unsigned)(mhz + 0.5);
		*lower_bound = true;
		*clock_source = "/proc/cpuinfo cpu MHz: the clock now; no cpufreq, CPUID or DMI maximum";
	} else {
		*clock_source = "";
	}
}

/*
 * FP32 FLOP per cycle per core for the widest vector extension, with what is assumed; 0 when unknown. split512: the
 * core splits 512-bit work into two 256-bit halves (AMD Zen 4), so AVX-512 peaks where AVX2 does.
 */
static unsigned flops_per_cycle(const char *isa, bool split512, const char **why)
{
	if (strcmp(isa, "avx512f") == 0 && split512) {
		*why = "avx512f on AMD Zen 4: 512-bit FMA as two halves on two 256-bit units";
		return 32;
	}
	if (strcmp(isa, "avx512f") == 0) {
		*why = "avx512f, two 512-bit FMA units assumed";
		return 64;
	}
	if (strcmp(isa, "avx2") == 0) {
		*why = "avx2, two 256-bit FMA units assumed";
		return 32;
	}
	if (strcmp(isa, "avx") == 0) {
		*why = "avx, one 256-bit add and one multiply per cycle";
		return 16;
	}
	if (strcmp(isa, "asimd") == 0 || strcmp(isa, "sve") == 0) {
		*why = "128-bit NEON, two FMA units assumed";
		return 16;
	}
	if (strcmp(isa, "sse4_2") == 0 || strcmp(isa, "sse2") == 0) {
		*why = "sse, one 128-bit add and one multiply per cycle";
		return 8;
	}
	return 0;
}

/*
 * An FP32 peak estimate from cores, clock and vector width; left unknown when any of them is. lower_bound: the clock
 * is the one seen now, not a maximum, and the source says the peak is at least this.
 */
static void estimate_peak(struct device *d, const char *clock_source, bool split512, bool lower_bound)
{
	const char *why = "";
	unsigned fpc = flops_per_cycle(d->cpu.isa, split512, &why);
	double cores = d->cpu.cores;

	if (fpc == 0 || d->clock_mhz == 0 || cores == 0)
		return;
	if (!isnan(d->cpu.effective_cpus) && d->cpu.effective_cpus < cores)
		cores = d->cpu.effective_cpus;
	d->peak.fp32_tflops = cores * d->clock_mhz * 1e6 * fpc / 1e12;
	snprintf(d->peak.source, sizeof(d->peak.source),
		 "estimate, not measured%s: %s%.2f cores x %u MHz (%s) x %u FP32 FLOP/cycle (%s)",
		 lower_bound ? ", a lower bound" : "", lower_bound ? "at least " : "", cores, d->clock_mhz,
		 clock_source, fpc, why);
}

/* The cgroup's cpuset into set. */
static bool cg_cpuset(const struct cgroup *cg, hwloc_bitmap_t set)
{
	char text[1024];

	return cgroup_cpuset(cg, text, sizeof(text)) == 0 && hwloc_bitmap_list_sscanf(set, text) == 0;
}

/* Objects of a type with at least one PU in set (a package counts though only some of its cores are usable). */
static unsigned count_touching(hwloc_topology_t topo, hwloc_const_cpuset_t set, hwloc_obj_type_t type)
{
	int n = hwloc_get_nbobjs_by_type(topo, type);
	unsigned count = 0;

	for (int i = 0; i < n; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, (unsigned)i);

		if (o != NULL && o->cpuset != NULL && hwloc_bitmap_intersects(o->cpuset, set))
			count++;
	}
	return count;
}

/* The next object of a type after prev (NULL: the first) with at least one PU in set, or NULL. */
static hwloc_obj_t next_touching(hwloc_topology_t topo, hwloc_const_cpuset_t set, hwloc_obj_type_t type,
				 hwloc_obj_t prev)
{
	hwloc_obj_t o = hwloc_get_next_obj_by_type(topo, type, prev);

	while (o != NULL && !(o->cpuset != NULL && hwloc_bitmap_intersects(o->cpuset, set)))
		o = hwloc_get_next_obj_by_type(topo, type, o);
	return o;
}

/* Topology from hwloc, restricted to the CPUs this process may run on. */
static bool fill_topology(const struct cgroup *cg, struct device *d, char *why, size_t whysz, bool *cg_seen)
{
	static const char *const io_components[] = {"opencl", "cuda", "nvml", "rsmi", "levelzero", "gl", "pci",
						     "linuxio"};
	static const hwloc_obj_type_t caches[4] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE,
						   HWLOC_OBJ_L4CACHE};
	hwloc_topology_t topo = NULL;
	hwloc_bitmap_t set = NULL;
	hwloc_bitmap_t other = NULL;
	cpu_set_t aff;
	hwloc_obj_t pkg;
	hwloc_obj_t node;
	bool ok = false;

	if (hwloc_topology_init(&topo) != 0) {
		snprintf(why, whysz, "hwloc_topology_init failed");
		topo = NULL;
		goto out;
	}
	/* only the CPU part: device plugins would initialise OpenCL/CUDA here, before probe_opencl's ICD fix-up */
	for (size_t i = 0; i < sizeof(io_components) / sizeof(io_components[0]); i++)
		hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, io_components[i]);
	if (hwloc_topology_load(topo) != 0) {
		snprintf(why, whysz, "hwloc_topology_load failed: %s", strerror(errno));
		goto out;
	}
	set = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
	other = hwloc_bitmap_alloc();
	if (set == NULL || other == NULL) {
		snprintf(why, whysz, "out of memory");
		goto out;
	}
	/* hwloc honours the cgroup cpuset of the real host; the affinity mask and the configured tree narrow it */
	if (sched_getaffinity(0, sizeof(aff), &aff) == 0) {
		hwloc_bitmap_zero(other);
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &aff))
				hwloc_bitmap_set(other, (unsigned)i);
		hwloc_bitmap_and(set, set, other);
	}
	if (cg_cpuset(cg, other)) {
		*cg_seen = true;
		hwloc_bitmap_and(set, set, other);
	}
	if (hwloc_bitmap_iszero(set)) {
		snprintf(why, whysz, "no usable CPU in the cpuset");
		goto out;
	}
	d->cpu.pus = count_touching(topo, set, HWLOC_OBJ_PU);
	d->cpu.cores = count_touching(topo, set, HWLOC_OBJ_CORE);
	d->cpu.packages = count_touching(topo, set, HWLOC_OBJ_PACKAGE);
	d->compute_units = d->cpu.pus;
	hwloc_bitmap_list_snprintf(d->cpu.cpuset, sizeof(d->cpu.cpuset), set);
	d->cpu.numa_nodes = count_touching(topo, set, HWLOC_OBJ_NUMANODE);
	node = next_touching(topo, set, HWLOC_OBJ_NUMANODE, NULL);
	if (d->cpu.numa_nodes == 1 && node != NULL)
		d->numa_node = (int)node->os_index;
	for (int i = 0; i < 4; i++) {
		hwloc_obj_t c = next_touching(topo, set, caches[i], NULL);

		/* L1 may be an instruction cache first: take the data or unified one */
		while (c != NULL && c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
			c = next_touching(topo, set, caches[i], c);
		if (c != NULL)
			d->cpu.cache_bytes[i] = c->attr->cache.size;
	}
	pkg = next_touching(topo, set, HWLOC_OBJ_PACKAGE, NULL);
	if (pkg != NULL) {
		const char *model = hwloc_obj_get_info_by_name(pkg, "CPUModel");
		const char *vendor = hwloc_obj_get_info_by_name(pkg, "CPUVendor");

		/* CPUID's brand string is padded to 48 bytes with blanks */
		if (model != NULL)
			DEVICE_SET_TRIMMED(d->model, model);
		if (vendor != NULL)
			DEVICE_SET_TRIMMED(d->vendor, vendor);
	}
	ok = true;
out:
	if (other != NULL)
		hwloc_bitmap_free(other);
	if (set != NULL)
		hwloc_bitmap_free(set);
	if (topo != NULL)
		hwloc_topology_destroy(topo);
	return ok;
}

static void cpu_probe(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res)
{
	struct cpu_state *st = *state;
	struct device d;
	bool cg_seen = false;
	const char *clock_source = "";
	bool split512 = false;
	bool lower_bound = false;
	uint64_t busy;
	uint64_t total;

	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		*state = st;
	}
	cgroup_find(&st->cg, cfg->sysfs_root, cfg->proc_root);
	device_init(&d, DEVICE_CPU);
	d.sources = SOURCE_HWLOC;
	res->available = true;
	if (!fill_topology(&st->cg, &d, res->why, sizeof(res->why), &cg_seen)) {
		res->ok = false;
		return;
	}
	/* the clock is measured on this machine's own /proc only: a fixture's CPU is not the one running */
	cpuinfo(cfg, &d, strcmp(cfg->proc_root, "/proc") == 0 ? &st->measured_mhz : NULL, &clock_source, &split512,
		&lower_bound);
	if (cgroup_cpu_quota(&st->cg, &d.cpu.quota_cpus) == 0)
		cg_seen = true;
	d.cpu.effective_cpus = d.cpu.pus;
	if (!isnan(d.cpu.quota_cpus) && d.cpu.quota_cpus < d.cpu.effective_cpus)
		d.cpu.effective_cpus = d.cpu.quota_cpus;
	if (fill_memory(cfg, &st->cg, &d))
		cg_seen = true;
	if (cg_seen)
		d.sources |= SOURCE_CGROUP;
	estimate_peak(&d, clock_source, split512, lower_bound);
	if (cpu_times(cfg, &busy, &total)) {
		st->prev_busy = busy;
		st->prev_total = total;
		st->have_prev = true;
	}
	device_list_add(out, &d);
	res->ok = true;
	if (cgroup_mode(&st->cg) == NULL)
		snprintf(res->why, sizeof(res->why), "no cgroup found under %.200s/fs/cgroup", cfg->sysfs_root);
	else
		snprintf(res->why, sizeof(res->why), "cgroup %s%s", cgroup_mode(&st->cg),
			 cg_seen ? "" : " (no limit files found)");
}

/* Utilisation since the last sample and the memory still available. */
static void cpu_refresh(void **state, const struct config *cfg, struct device_list *devs, struct probe_result *res)
{
	struct cpu_state *st = *state;
	uint64_t busy;
	uint64_t total;

	res->ok = true;
	res->available = true;
	if (st == NULL)
		return;
	for (size_t i = 0; i < devs->n; i++) {
		struct device *d = &devs->v[i];

		if (d->type != DEVICE_CPU)
			continue;
		fill_memory(cfg, &st->cg, d);
		if (cpu_times(cfg, &busy, &total)) {
			if (st->have_prev && total > st->prev_total && busy >= st->prev_busy)
				d->telemetry.utilization_ratio =
					(double)(busy - st->prev_busy) / (double)(total - st->prev_total);
			st->prev_busy = busy;
			st->prev_total = total;
			st->have_prev = true;
		}
		d->telemetry.memory_used_bytes = d->memory_total_bytes > d->memory_available_bytes
							 ? d->memory_total_bytes - d->memory_available_bytes
							 : 0;
		/* the clock now, for health checks: cpufreq's current frequency averaged over the usable CPUs */
		{
			struct freq_scan f = scan_freq(cfg, d->cpu.cpuset, "scaling_cur_freq");

			if (f.n > 0)
				d->telemetry.clock_mhz = (double)f.sum_khz / f.n / 1000.0;
		}
		d->telemetry.sampled_at_ms = clock_real_ms();
		break;
	}
}

static void cpu_release(void *state)
{
	free(state);
}

const struct probe_ops probe_cpu_ops = {
	.name = "cpu",
	.trust = 3,
	.probe = cpu_probe,
	.refresh = cpu_refresh,
	.release = cpu_release,
};
