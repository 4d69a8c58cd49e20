/*
 * cgroup: the control groups this process runs in, and the limits and usage they hold.
 *
 * Linux mounts control groups one of three ways: v2 alone (one unified tree at /sys/fs/cgroup, known by its
 * cgroup.controllers file), v1 (a tree per controller: /sys/fs/cgroup/cpu,cpuacct, .../memory, .../cpuset), or
 * hybrid (the v1 trees beside a v2 tree at /sys/fs/cgroup/unified that usually holds no controller). cgroup_find
 * resolves, for each controller, the tree it lives in and this process's folder there from <proc>/self/cgroup;
 * the readers then use that tree's file names. Every file is read below the configured sysfs and proc roots
 * (ACCELD_SYSFS_ROOT, ACCELD_PROC_ROOT), so tests use fixture trees. A missing or malformed file is "not known",
 * never an error worth logging.
 */
#ifndef ACCELD_CGROUP_H
#define ACCELD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_PATH_MAX 1024

enum cgroup_controller {
	CGROUP_CPU,     /* the CPU quota */
	CGROUP_CPUACCT, /* CPU time used (v2: cpu.stat, present in every folder) */
	CGROUP_MEMORY,
	CGROUP_CPUSET,
	CGROUP_NCONTROLLERS,
};

/* Where one controller's files are. */
struct cgroup_place {
	bool v2;                     /* the folder uses the unified tree's file names */
	char dir[CGROUP_PATH_MAX];   /* this process's folder; "" when the controller was not found */
	char root[CGROUP_PATH_MAX];  /* the tree's mount, where walking up to ancestors stops */
};

/* The caller's storage; fill it with cgroup_find and read it through the functions below. */
struct cgroup {
	struct cgroup_place place[CGROUP_NCONTROLLERS];
	bool unified;                /* a v2 tree is mounted (alone, or beside v1 trees) */
	bool v1;                     /* at least one controller lives in a v1 tree */
};

/*
 * Finds this process's cgroup folders below sysfs_root/fs/cgroup, from proc_root/self/cgroup. Inside a cgroup
 * namespace the path it names may not exist under the mount, which then is the folder itself; without
 * proc_root/self/cgroup the mount is the best guess too. Call it again to follow a process that was moved.
 */
void cgroup_find(struct cgroup *cg, const char *sysfs_root, const char *proc_root);

/* "v2", "v1" or "hybrid" (v1 trees beside a v2 tree); NULL when no controller was found. */
const char *cgroup_mode(const struct cgroup *cg);

/* The folder of a controller, or NULL when it was not found (for logs and reports). */
const char *cgroup_dir(const struct cgroup *cg, enum cgroup_controller c);

/*
 * The CPUs the folder may use as list text ("0-3,8"): v2 cpuset.cpus.effective, v1 cpuset.effective_cpus or
 * cpuset.cpus. Returns 0, or -1 when none can be read or the list is empty.
 */
int cgroup_cpuset(const struct cgroup *cg, char *out, size_t outsz);

/*
 * The CPU quota in CPUs (quota / period), the tightest of the folder and its ancestors: v2 cpu.max, v1
 * cpu.cfs_quota_us over cpu.cfs_period_us. *cpus is NAN when no level is limited. Returns 0 when a quota file was
 * read at some level, -1 when none was.
 */
int cgroup_cpu_quota(const struct cgroup *cg, double *cpus);

/*
 * The memory limit in bytes, the tightest of the folder and its ancestors: v2 memory.max, v1
 * memory.limit_in_bytes (whose "no limit" is a page-rounded LLONG_MAX). *bytes is 0 when no level is limited.
 * Returns 0 when a limit file was read at some level, -1 when none was.
 */
int cgroup_memory_limit(const struct cgroup *cg, uint64_t *bytes);

/*
 * Memory charged to the folder: v2 memory.current, v1 memory.usage_in_bytes. When inactive_file is not NULL it
 * receives the inactive page cache from memory.stat (v2 inactive_file, v1 total_inactive_file; 0 when not
 * listed), which the kernel reclaims before it refuses memory. Returns 0, or -1 when the usage cannot be read.
 */
int cgroup_memory_usage(const struct cgroup *cg, uint64_t *bytes, uint64_t *inactive_file);

/*
 * CPU time used by the folder's processes, in microseconds, cumulative: v2 cpu.stat usage_usec, v1 cpuacct.usage
 * (nanoseconds). Returns 0, or -1.
 */
int cgroup_cpu_usage_usec(const struct cgroup *cg, uint64_t *usec);

#endif
