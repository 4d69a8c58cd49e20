/*
 * probe_cpu: the host's CPUs as one device. hwloc gives the topology (packages, cores, PUs, NUMA nodes, caches,
 * model) restricted to the CPUs this process may use; the cgroup files give what hwloc ignores: the CPU quota
 * (v2 cpu.max, v1 cpu.cfs_quota_us/cfs_period_us) and the memory limit (v2 memory.max, v1
 * memory.limit_in_bytes). Every file is read below cfg->sysfs_root and cfg->proc_root so tests use fixture trees.
 */
#include <errno.h>
#include <hwloc.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "mem.h"
#include "probe.h"

#define CG_PATH_MAX 1024
#define CG_DEPTH_MAX 32

/* Where this process's cgroups are, resolved at each full probe and kept for telemetry. */
struct cpu_state {
	bool v2;
	char cpu_dir[CG_PATH_MAX];    /* v2: the one unified dir; v1: the cpu controller's dir */
	char cpu_root[CG_PATH_MAX];   /* the mount, where walking up stops */
	char mem_dir[CG_PATH_MAX];
	char mem_root[CG_PATH_MAX];
	char set_dir[CG_PATH_MAX];
	char set_root[CG_PATH_MAX];
	uint64_t prev_busy;
	uint64_t prev_total;
	bool have_prev;
};

/* Reads a small text file whole, without trailing white space; returns 0, or -1. */
static int read_text(const char *path, char *buf, size_t sz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sz - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || (*end != '\0' && *end != ' ' && *end != '\n'))
		return -1;
	*out = v;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Sets dir to root + path when that folder exists, else to root (inside a cgroup namespace the path names a place
 * the mount does not show).
 */
static void cg_dir(const char *root, const char *path, char *dir, size_t dirsz)
{
	if (snprintf(dir, dirsz, "%s%s", root, path) >= (int)dirsz || !is_dir(dir))
		snprintf(dir, dirsz, "%s", root);
	while (strlen(dir) > strlen(root) && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
}

/* True when controller is in the comma-separated list. */
static bool has_controller(const char *list, const char *controller)
{
	size_t n = strlen(controller);

	while (*list) {
		size_t len = strcspn(list, ",");

		if (len == n && strncmp(list, controller, n) == 0)
			return true;
		list += len;
		if (*list == ',')
			list++;
	}
	return false;
}

/* Finds the v1 mount of a controller: "cpu", "cpu,cpuacct" or "cpuacct,cpu" below fs/cgroup. */
static void v1_root(const struct config *cfg, const char *const *names, char *root, size_t rootsz)
{
	for (size_t i = 0; names[i] != NULL; i++) {
		snprintf(root, rootsz, "%s/fs/cgroup/%s", cfg->sysfs_root, names[i]);
		if (is_dir(root))
			return;
	}
	root[0] = '\0';
}

/* Resolves the cgroup folders of this process from <proc>/self/cgroup. */
static void cg_resolve(const struct config *cfg, struct cpu_state *st)
{
	static const char *const cpu_names[] = {"cpu,cpuacct", "cpu", "cpuacct,cpu", NULL};
	static const char *const mem_names[] = {"memory", NULL};
	static const char *const set_names[] = {"cpuset", NULL};
	char path[CG_PATH_MAX];
	char line[CG_PATH_MAX];
	char unified[CG_PATH_MAX];
	FILE *f;

	st->cpu_dir[0] = st->mem_dir[0] = st->set_dir[0] = '\0';
	snprintf(unified, sizeof(unified), "%s/fs/cgroup", cfg->sysfs_root);
	snprintf(path, sizeof(path), "%s/fs/cgroup/cgroup.controllers", cfg->sysfs_root);
	st->v2 = access(path, R_OK) == 0;
	if (st->v2) {
		snprintf(st->cpu_root, sizeof(st->cpu_root), "%s", unified);
		snprintf(st->mem_root, sizeof(st->mem_root), "%s", unified);
		snprintf(st->set_root, sizeof(st->set_root), "%s", unified);
	} else {
		v1_root(cfg, cpu_names, st->cpu_root, sizeof(st->cpu_root));
		v1_root(cfg, mem_names, st->mem_root, sizeof(st->mem_root));
		v1_root(cfg, set_names, st->set_root, sizeof(st->set_root));
	}
	snprintf(path, sizeof(path), "%s/self/cgroup", cfg->proc_root);
	f = fopen(path, "re");
	if (f == NULL)
		goto out;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		char *p;

		if (c2 == NULL)
			continue;
		*c1 = '\0';
		*c2 = '\0';
		p = c2 + 1;
		p[strcspn(p, "\n")] = '\0';
		if (st->v2) {
			if (strcmp(line, "0") == 0 && c1[1] == '\0') {
				cg_dir(st->cpu_root, p, st->cpu_dir, sizeof(st->cpu_dir));
				snprintf(st->mem_dir, sizeof(st->mem_dir), "%s", st->cpu_dir);
				snprintf(st->set_dir, sizeof(st->set_dir), "%s", st->cpu_dir);
			}
			continue;
		}
		if (has_controller(c1 + 1, "cpu") && st->cpu_root[0])
			cg_dir(st->cpu_root, p, st->cpu_dir, sizeof(st->cpu_dir));
		if (has_controller(c1 + 1, "memory") && st->mem_root[0])
			cg_dir(st->mem_root, p, st->mem_dir, sizeof(st->mem_dir));
		if (has_controller(c1 + 1, "cpuset") && st->set_root[0])
			cg_dir(st->set_root, p, st->set_dir, sizeof(st->set_dir));
	}
	fclose(f);
out:
	/* without /proc/self/cgroup the mount itself is the best guess */
	if (st->cpu_dir[0] == '\0' && st->cpu_root[0] && is_dir(st->cpu_root))
		snprintf(st->cpu_dir, sizeof(st->cpu_dir), "%s", st->cpu_root);
	if (st->mem_dir[0] == '\0' && st->mem_root[0] && is_dir(st->mem_root))
		snprintf(st->mem_dir, sizeof(st->mem_dir), "%s", st->mem_root);
	if (st->set_dir[0] == '\0' && st->set_root[0] && is_dir(st->set_root))
		snprintf(st->set_dir, sizeof(st->set_dir), "%s", st->set_root);
}

/* Cuts the last path component off dir unless it is root; returns false when it was root already. */
static bool cg_parent(char *dir, const char *root)
{
	char *slash;

	if (strlen(dir) <= strlen(root))
		return false;
	slash = strrchr(dir, '/');
	if (slash == NULL || (size_t)(slash - dir) < strlen(root))
		return false;
	*slash = '\0';
	return true;
}

/* The CPU quota in CPUs, the tightest over the cgroup and its ancestors; NAN when unlimited or unknown. */
static double cg_quota(const struct cpu_state *st, bool *seen)
{
	char dir[CG_PATH_MAX];
	char path[CG_PATH_MAX + 32];
	char text[128];
	double best = NAN;

	if (st->cpu_dir[0] == '\0')
		return NAN;
	snprintf(dir, sizeof(dir), "%s", st->cpu_dir);
	for (int depth = 0; depth < CG_DEPTH_MAX; depth++) {
		uint64_t quota = 0;
		uint64_t period = 0;
		bool limited = false;

		if (st->v2) {
			snprintf(path, sizeof(path), "%s/cpu.max", dir);
			if (read_text(path, text, sizeof(text)) == 0) {
				char *sp = strchr(text, ' ');

				*seen = true;
				if (sp != NULL && strncmp(text, "max", 3) != 0) {
					*sp = '\0';
					limited = parse_u64(text, &quota) == 0 && parse_u64(sp + 1, &period) == 0;
				}
			}
		} else {
			snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
			if (read_text(path, text, sizeof(text)) == 0) {
				*seen = true;
				if (text[0] != '-' && parse_u64(text, &quota) == 0) {
					snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
					limited = read_text(path, text, sizeof(text)) == 0 &&
						  parse_u64(text, &period) == 0;
				}
			}
		}
		if (limited && quota > 0 && period > 0) {
			double cpus = (double)quota / (double)period;

			if (isnan(best) || cpus < best)
				best = cpus;
		}
		if (!cg_parent(dir, st->cpu_root))
			break;
	}
	return best;
}

/* The memory limit in bytes, the tightest over the cgroup and its ancestors; 0 when unlimited or unknown. */
static uint64_t cg_mem_limit(const struct cpu_state *st, bool *seen)
{
	char dir[CG_PATH_MAX];
	char path[CG_PATH_MAX + 32];
	char text[64];
	uint64_t best = 0;

	if (st->mem_dir[0] == '\0')
		return 0;
	snprintf(dir, sizeof(dir), "%s", st->mem_dir);
	for (int depth = 0; depth < CG_DEPTH_MAX; depth++) {
		uint64_t v;

		snprintf(path, sizeof(path), "%s/%s", dir, st->v2 ? "memory.max" : "memory.limit_in_bytes");
		if (read_text(path, text, sizeof(text)) == 0) {
			*seen = true;
			/* v1 writes "no limit" as a page-rounded LLONG_MAX */
			if (parse_u64(text, &v) == 0 && v < (1ull << 62) && (best == 0 || v < best))
				best = v;
		}
		if (!cg_parent(dir, st->mem_root))
			break;
	}
	return best;
}

/* Memory the cgroup uses that it cannot give back cheaply: usage minus inactive page cache. */
static bool cg_mem_used(const struct cpu_state *st, uint64_t *used)
{
	char path[CG_PATH_MAX + 32];
	char text[64];
	char line[256];
	uint64_t usage;
	uint64_t inactive = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", st->mem_dir, st->v2 ? "memory.current" : "memory.usage_in_bytes");
	if (st->mem_dir[0] == '\0' || read_text(path, text, sizeof(text)) != 0 || parse_u64(text, &usage) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/memory.stat", st->mem_dir);
	f = fopen(path, "re");
	if (f != NULL) {
		const char *key = st->v2 ? "inactive_file " : "total_inactive_file ";

		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, key, strlen(key)) == 0 && parse_u64(line + strlen(key), &inactive) != 0)
				inactive = 0;
		fclose(f);
	}
	*used = usage > inactive ? usage - inactive : 0;
	return true;
}

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

/* Fills memory total/available, honouring the cgroup limit. Returns true when a cgroup file was read. */
static bool fill_memory(const struct config *cfg, const struct cpu_state *st, struct device *d)
{
	uint64_t total;
	uint64_t avail;
	uint64_t used;
	bool seen = false;
	uint64_t limit = cg_mem_limit(st, &seen);

	meminfo(cfg, &total, &avail);
	if (limit != 0 && (total == 0 || limit < total)) {
		total = limit;
		if (cg_mem_used(st, &used)) {
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

/* Model, clock and vector extensions from <proc>/cpuinfo and cpufreq. */
static void cpuinfo(const struct config *cfg, struct device *d)
{
	static const struct {
		const char *flag;
		const char *isa;
	} isas[] = {{"avx512f", "avx512f"}, {"avx2", "avx2"}, {"avx", "avx"}, {"sse4_2", "sse4_2"},
		    {"sse2", "sse2"},	    {"sve", "sve"},   {"asimd", "asimd"}};
	char path[PATH_MAX];
	char text[32];
	char line[4096];
	uint64_t khz;
	double mhz = 0;
	int best = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpuinfo", cfg->proc_root);
	f = fopen(path, "re");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			char *colon = strchr(line, ':');
			const char *val = colon ? colon + 1 : "";

			while (*val == ' ' || *val == '\t')
				val++;
			if (strncmp(line, "model name", 10) == 0 && d->model[0] == '\0') {
				DEVICE_SET(d->model, val);
				d->model[strcspn(d->model, "\n")] = '\0';
			} else if (strncmp(line, "cpu MHz", 7) == 0 && mhz == 0) {
				mhz = strtod(val, NULL);
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
		fclose(f);
	}
	if (best >= 0)
		DEVICE_SET(d->cpu.isa, isas[best].isa);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", cfg->sysfs_root);
	if (read_text(path, text, sizeof(text)) == 0 && parse_u64(text, &khz) == 0 && khz >= 1000)
		d->clock_mhz = (unsigned)(khz / 1000);
	else if (mhz >= 1 && mhz < 100000)
		d->clock_mhz = (unsigned)(mhz + 0.5);
}

/* FP32 FLOP per cycle per core for the widest vector extension, with what is assumed; 0 when unknown. */
static unsigned flops_per_cycle(const char *isa, const char **why)
{
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

/* An FP32 peak estimate from cores, clock and vector width; left unknown when any of them is. */
static void estimate_peak(struct device *d)
{
	const char *why = "";
	unsigned fpc = flops_per_cycle(d->cpu.isa, &why);
	double cores = d->cpu.cores;

	if (fpc == 0 || d->clock_mhz == 0 || cores == 0)
		return;
	if (!isnan(d->cpu.effective_cpus) && d->cpu.effective_cpus < cores)
		cores = d->cpu.effective_cpus;
	d->peak.fp32_tflops = cores * d->clock_mhz * 1e6 * fpc / 1e12;
	snprintf(d->peak.source, sizeof(d->peak.source),
		 "estimate, not measured: %.2f cores x %u MHz x %u FP32 FLOP/cycle (%s)", cores, d->clock_mhz, fpc,
		 why);
}

/* The cpuset of a cgroup (cpuset.cpus.effective, v1 cpuset.effective_cpus or cpuset.cpus) into set. */
static bool cg_cpuset(const struct cpu_state *st, hwloc_bitmap_t set)
{
	static const char *const names[] = {"cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"};
	char path[CG_PATH_MAX + 32];
	char text[1024];

	if (st->set_dir[0] == '\0')
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", st->set_dir, names[i]);
		if (read_text(path, text, sizeof(text)) == 0 && text[0] != '\0' &&
		    hwloc_bitmap_list_sscanf(set, text) == 0)
			return true;
	}
	return false;
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
static bool fill_topology(const struct cpu_state *st, struct device *d, char *why, size_t whysz, bool *cg_seen)
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
	if (cg_cpuset(st, other)) {
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

		if (model != NULL)
			DEVICE_SET(d->model, model);
		if (vendor != NULL)
			DEVICE_SET(d->vendor, vendor);
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
	uint64_t busy;
	uint64_t total;

	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		*state = st;
	}
	cg_resolve(cfg, st);
	device_init(&d, DEVICE_CPU);
	d.backends = BACKEND_HWLOC;
	res->available = true;
	if (!fill_topology(st, &d, res->why, sizeof(res->why), &cg_seen)) {
		res->ok = false;
		return;
	}
	cpuinfo(cfg, &d);
	d.cpu.quota_cpus = cg_quota(st, &cg_seen);
	d.cpu.effective_cpus = d.cpu.pus;
	if (!isnan(d.cpu.quota_cpus) && d.cpu.quota_cpus < d.cpu.effective_cpus)
		d.cpu.effective_cpus = d.cpu.quota_cpus;
	if (fill_memory(cfg, st, &d))
		cg_seen = true;
	if (cg_seen)
		d.backends |= BACKEND_CGROUP;
	estimate_peak(&d);
	if (cpu_times(cfg, &busy, &total)) {
		st->prev_busy = busy;
		st->prev_total = total;
		st->have_prev = true;
	}
	device_list_add(out, &d);
	res->ok = true;
	if (st->cpu_dir[0] == '\0' && st->mem_dir[0] == '\0' && st->set_dir[0] == '\0')
		snprintf(res->why, sizeof(res->why), "no cgroup found under %.200s/fs/cgroup", cfg->sysfs_root);
	else
		snprintf(res->why, sizeof(res->why), "cgroup %s%s", st->v2 ? "v2" : "v1",
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
		fill_memory(cfg, st, d);
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
	.probe = cpu_probe,
	.refresh = cpu_refresh,
	.release = cpu_release,
};
