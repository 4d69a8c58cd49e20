/*
 * Unit tests for cgroup.c against fixture trees (tests/fixtures/cgroup-*): finding the folders on v2, v1 and
 * hybrid hosts, and reading the cpuset, CPU quota, memory limit, memory usage and CPU time each way, so the CPU
 * probe and the sampler get the same figures whatever the host mounts.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "detect/cgroup.h"
#include "check_main.h"

#define FIX "tests/fixtures/"

static struct cgroup cg;

static void find(const char *name, const char *sys)
{
	char sysfs[256];
	char proc[256];

	snprintf(sysfs, sizeof(sysfs), FIX "%s/%s", name, sys);
	snprintf(proc, sizeof(proc), FIX "%s/proc", name);
	cgroup_find(&cg, sysfs, proc);
}

START_TEST(v2_unified_tree)
{
	char set[64];
	double cpus;
	uint64_t bytes, inactive, usec;

	find("cgroup-v2-limited", "sys");
	ck_assert_str_eq(cgroup_mode(&cg), "v2");
	for (int c = 0; c < CGROUP_NCONTROLLERS; c++)
		ck_assert_str_eq(cgroup_dir(&cg, (enum cgroup_controller)c),
				 FIX "cgroup-v2-limited/sys/fs/cgroup/acceld.slice/svc.scope");
	ck_assert_int_eq(cgroup_cpuset(&cg, set, sizeof(set)), 0);
	ck_assert_str_eq(set, "0");
	/* the folder says max; its parent's 50000/100000 binds */
	ck_assert_int_eq(cgroup_cpu_quota(&cg, &cpus), 0);
	ck_assert_double_eq_tol(cpus, 0.5, 1e-12);
	ck_assert_int_eq(cgroup_memory_limit(&cg, &bytes), 0);
	ck_assert_uint_eq(bytes, 2147483648ull);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, &inactive), 0);
	ck_assert_uint_eq(bytes, 536870912ull);
	ck_assert_uint_eq(inactive, 134217728ull);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, NULL), 0);
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), 0);
	ck_assert_uint_eq(usec, 7250000);
}
END_TEST

START_TEST(v1_tree_per_controller)
{
	char set[64];
	double cpus;
	uint64_t bytes, inactive, usec;

	find("cgroup-v1-limited", "sys");
	ck_assert_str_eq(cgroup_mode(&cg), "v1");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_CPU), FIX "cgroup-v1-limited/sys/fs/cgroup/cpu,cpuacct/docker/abc");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_CPUACCT), FIX "cgroup-v1-limited/sys/fs/cgroup/cpu,cpuacct/docker/abc");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_MEMORY), FIX "cgroup-v1-limited/sys/fs/cgroup/memory/docker/abc");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_CPUSET), FIX "cgroup-v1-limited/sys/fs/cgroup/cpuset/docker/abc");
	ck_assert_int_eq(cgroup_cpuset(&cg, set, sizeof(set)), 0);
	ck_assert_str_eq(set, "0");
	/* 150000/100000 in the folder; the root's -1 is no limit */
	ck_assert_int_eq(cgroup_cpu_quota(&cg, &cpus), 0);
	ck_assert_double_eq_tol(cpus, 1.5, 1e-12);
	/* the root's page-rounded LLONG_MAX is no limit either */
	ck_assert_int_eq(cgroup_memory_limit(&cg, &bytes), 0);
	ck_assert_uint_eq(bytes, 1073741824ull);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, &inactive), 0);
	ck_assert_uint_eq(bytes, 268435456ull);
	ck_assert_uint_eq(inactive, 0);
	/* the figure the sampler needs on a v1 host: cpuacct.usage, in nanoseconds */
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), 0);
	ck_assert_uint_eq(usec, 20000000);

	/* the sampler's second reading, 10 s later */
	find("cgroup-v1-limited", "sys-t1");
	ck_assert_str_eq(cgroup_mode(&cg), "v1");
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), 0);
	ck_assert_uint_eq(usec, 24000000);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, NULL), 0);
	ck_assert_uint_eq(bytes, 301989888ull);
	/* no cpuset tree and no limit files there: unknown, not zero */
	ck_assert_ptr_null(cgroup_dir(&cg, CGROUP_CPUSET));
	ck_assert_int_eq(cgroup_cpuset(&cg, set, sizeof(set)), -1);
	ck_assert_int_eq(cgroup_cpu_quota(&cg, &cpus), -1);
	ck_assert(isnan(cpus));
	ck_assert_int_eq(cgroup_memory_limit(&cg, &bytes), -1);
	ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(hybrid_reads_the_v1_trees)
{
	char set[64];
	double cpus;
	uint64_t bytes, inactive, usec;

	find("cgroup-hybrid", "sys");
	ck_assert_str_eq(cgroup_mode(&cg), "hybrid");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_CPUACCT),
			 FIX "cgroup-hybrid/sys/fs/cgroup/cpu,cpuacct/system.slice/acceld.service");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_MEMORY), FIX "cgroup-hybrid/sys/fs/cgroup/memory/system.slice/acceld.service");
	/* the unified tree enables no controller and no cpuset tree is mounted */
	ck_assert_ptr_null(cgroup_dir(&cg, CGROUP_CPUSET));
	ck_assert_int_eq(cgroup_cpuset(&cg, set, sizeof(set)), -1);
	ck_assert_int_eq(cgroup_cpu_quota(&cg, &cpus), 0);
	ck_assert_double_eq_tol(cpus, 2.5, 1e-12);
	ck_assert_int_eq(cgroup_memory_limit(&cg, &bytes), 0);
	ck_assert_uint_eq(bytes, 4294967296ull);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, &inactive), 0);
	ck_assert_uint_eq(bytes, 1073741824ull);
	ck_assert_uint_eq(inactive, 268435456ull);
	/* cpuacct.usage of the v1 tree, not the unified tree's cpu.stat */
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), 0);
	ck_assert_uint_eq(usec, 3000000);
}
END_TEST

START_TEST(nothing_mounted)
{
	char set[64] = "x";
	double cpus = 0;
	uint64_t bytes = 1, usec;

	find("does-not-exist", "sys");
	ck_assert_ptr_null(cgroup_mode(&cg));
	for (int c = 0; c < CGROUP_NCONTROLLERS; c++)
		ck_assert_ptr_null(cgroup_dir(&cg, (enum cgroup_controller)c));
	ck_assert_int_eq(cgroup_cpuset(&cg, set, sizeof(set)), -1);
	ck_assert_int_eq(cgroup_cpu_quota(&cg, &cpus), -1);
	ck_assert(isnan(cpus));
	ck_assert_int_eq(cgroup_memory_limit(&cg, &bytes), -1);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_int_eq(cgroup_memory_usage(&cg, &bytes, NULL), -1);
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), -1);
}
END_TEST

START_TEST(without_self_cgroup_the_mount_is_the_folder)
{
	uint64_t usec;

	/* a v2 sysfs root with a proc root that has no self/cgroup */
	cgroup_find(&cg, FIX "proc-stat/sys-t0", FIX "does-not-exist/proc");
	ck_assert_str_eq(cgroup_mode(&cg), "v2");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_CPUACCT), FIX "proc-stat/sys-t0/fs/cgroup");
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), -1);
	/* and a path the mount does not show (a cgroup namespace) falls back to the mount as well */
	cgroup_find(&cg, FIX "proc-stat/sys-t0", FIX "cgroup-v2-limited/proc");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_MEMORY), FIX "proc-stat/sys-t0/fs/cgroup");
	cgroup_find(&cg, FIX "proc-stat/sys-t0", FIX "proc-stat/t0");
	ck_assert_str_eq(cgroup_dir(&cg, CGROUP_MEMORY), FIX "proc-stat/sys-t0/fs/cgroup/acceld.slice");
	ck_assert_int_eq(cgroup_cpu_usage_usec(&cg, &usec), 0);
	ck_assert_uint_eq(usec, 10000000);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");

	tcase_add_test(tc, v2_unified_tree);
	tcase_add_test(tc, v1_tree_per_controller);
	tcase_add_test(tc, hybrid_reads_the_v1_trees);
	tcase_add_test(tc, nothing_mounted);
	tcase_add_test(tc, without_self_cgroup_the_mount_is_the_folder);
	suite_add_tcase(s, tc);
	return s;
}
