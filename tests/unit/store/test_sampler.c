/*
 * Unit tests for sampler.c against fixture procfs/sysfs roots (tests/fixtures/proc-stat, cgroup-v1-limited) and a
 * fake device array: /proc/stat deltas, the cgroup's CPU time under a quota on v2 and v1 hosts, telemetry of
 * accelerators, the executor's busy fraction, and samples reaching the store.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "core/config.h"
#include "detect/device.h"
#include "store/sampler.h"
#include "store/store.h"

#define FIX "tests/fixtures/proc-stat"
#define T0 1700002800000LL

static struct device devs[3];
static size_t ndevs;
static int releases;

static const struct device *fake_acquire(void *ctx, size_t *n, void **token)
{
	(void)ctx;
	*n = ndevs;
	*token = devs;
	return devs;
}

static void fake_release(void *ctx, void *token)
{
	(void)ctx;
	ck_assert_ptr_eq(token, devs);
	releases++;
}

static double fake_busy(void *ctx, const char *id, uint64_t window_ms)
{
	(void)ctx;
	ck_assert_uint_eq(window_ms, 10000);
	return strcmp(id, "tpu:0") == 0 ? 0.4 : NAN;
}

static struct config cfg;

static void setup(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.proc_root = FIX "/t0";
	cfg.sysfs_root = FIX "/no-sysfs";
	cfg.sample_interval_ms = 10000;
	device_init(&devs[0], DEVICE_CPU);
	snprintf(devs[0].id, sizeof(devs[0].id), "cpu:0");
	device_init(&devs[1], DEVICE_GPU);
	snprintf(devs[1].id, sizeof(devs[1].id), "gpu:0");
	devs[1].telemetry.utilization_ratio = 0.9;
	devs[1].telemetry.temperature_celsius = 61;
	devs[1].telemetry.power_watts = 250;
	devs[1].telemetry.memory_used_bytes = 4096;
	devs[1].telemetry.sampled_at_ms = T0;
	device_init(&devs[2], DEVICE_TPU);
	snprintf(devs[2].id, sizeof(devs[2].id), "tpu:0");
	ndevs = 3;
	releases = 0;
}

static struct sampler *make(struct store *st, bool busy)
{
	struct sampler_opts o = {.cfg = &cfg, .store = st,
				 .devices = {.acquire = fake_acquire, .release = fake_release},
				 .busy = busy ? fake_busy : NULL};
	struct sampler *s = sampler_new(&o);

	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(proc_stat_and_meminfo_parse)
{
	struct sampler_cpu_times t;
	uint64_t used;

	ck_assert_int_eq(sampler_read_proc_stat(FIX "/t0", &t), 0);
	ck_assert_uint_eq(t.busy, 1500);
	ck_assert_uint_eq(t.total, 9600);
	ck_assert_int_eq(sampler_read_meminfo(FIX "/t0", &used), 0);
	ck_assert_uint_eq(used, 4000000ull * 1024);
	ck_assert_int_eq(sampler_read_proc_stat(FIX "/missing", &t), -1);
	ck_assert_int_eq(sampler_read_meminfo(FIX "/missing", &used), -1);
}
END_TEST

START_TEST(cpu_utilisation_from_proc_stat_deltas)
{
	struct sampler *s = make(NULL, false);
	const struct store_sample *x;
	size_t n;

	cfg.proc_root = FIX "/t1";
	sampler_tick(s, T0);
	x = sampler_last(s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(x[0].device, "cpu:0");
	ck_assert_int_eq(x[0].source, STORE_SRC_PROC_STAT);
	ck_assert_double_eq_tol(x[0].utilization_ratio, 0.3, 1e-12);
	ck_assert_double_eq(x[0].memory_used_bytes, 4000000.0 * 1024);
	ck_assert_uint_eq(x[0].dt_ms, 10000);
	/* no change since: an idle delta of zero ticks tells nothing */
	sampler_tick(s, T0 + 10000);
	x = sampler_last(s, &n);
	ck_assert(isnan(x[0].utilization_ratio));
	ck_assert_int_eq(releases, 2);
	sampler_free(s);
}
END_TEST

START_TEST(cpu_utilisation_from_the_cgroup_under_a_quota)
{
	struct sampler *s;
	const struct store_sample *x;
	size_t n;

	devs[0].cpu.quota_cpus = 2;
	devs[0].cpu.effective_cpus = 2;
	cfg.sysfs_root = FIX "/sys-t0";
	s = make(NULL, false);
	sampler_tick(s, T0);
	cfg.sysfs_root = FIX "/sys-t1";
	sampler_tick(s, T0 + 10000);
	x = sampler_last(s, &n);
	ck_assert_int_eq(x[0].source, STORE_SRC_CGROUP);
	/* 5 s of CPU in 10 s on 2 CPUs */
	ck_assert_double_eq_tol(x[0].utilization_ratio, 0.25, 1e-12);
	ck_assert_double_eq(x[0].memory_used_bytes, 536870912.0);
	sampler_free(s);
}
END_TEST

START_TEST(cpu_utilisation_from_a_v1_cgroup)
{
	struct sampler *s;
	const struct store_sample *x;
	size_t n;

	/* a cgroup v1 host: cpuacct.usage and memory.usage_in_bytes, where v2 has cpu.stat and memory.current */
	devs[0].cpu.quota_cpus = 1.5;
	devs[0].cpu.effective_cpus = 1;
	cfg.proc_root = "tests/fixtures/cgroup-v1-limited/proc";
	cfg.sysfs_root = "tests/fixtures/cgroup-v1-limited/sys";
	s = make(NULL, false);
	sampler_tick(s, T0);
	cfg.sysfs_root = "tests/fixtures/cgroup-v1-limited/sys-t1";
	sampler_tick(s, T0 + 10000);
	x = sampler_last(s, &n);
	ck_assert_int_eq(x[0].source, STORE_SRC_CGROUP);
	/* 4 s of CPU in 10 s on the one CPU of the cpuset (tighter than the 1.5-CPU quota) */
	ck_assert_double_eq_tol(x[0].utilization_ratio, 0.4, 1e-12);
	ck_assert_double_eq(x[0].memory_used_bytes, 301989888.0);
	sampler_free(s);
}
END_TEST

START_TEST(accelerators_report_telemetry_or_executor_busy)
{
	struct sampler *s = make(NULL, true);
	const struct store_sample *x;
	size_t n;

	sampler_tick(s, T0);
	x = sampler_last(s, &n);
	ck_assert_int_eq(x[1].source, STORE_SRC_DEVICE);
	ck_assert_double_eq(x[1].utilization_ratio, 0.9);
	ck_assert_double_eq(x[1].temperature_celsius, 61);
	ck_assert_double_eq(x[1].power_watts, 250);
	ck_assert_double_eq(x[1].memory_used_bytes, 4096);
	ck_assert_int_eq(x[2].source, STORE_SRC_EXECUTOR);
	ck_assert_double_eq(x[2].utilization_ratio, 0.4);
	ck_assert(isnan(x[2].temperature_celsius));
	sampler_free(s);

	/* without the executor's callback a device without telemetry is only present */
	s = make(NULL, false);
	sampler_tick(s, T0);
	x = sampler_last(s, &n);
	ck_assert_int_eq(x[2].source, STORE_SRC_NONE);
	ck_assert(isnan(x[2].utilization_ratio));
	sampler_free(s);
}
END_TEST

START_TEST(samples_and_devices_reach_the_store)
{
	struct store *st = NULL;
	struct store_series ser;
	struct store_device_row *rows = NULL;
	size_t n = 0;
	char err[256];
	struct sampler *s;

	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
	s = make(st, true);
	for (int i = 0; i < 6; i++)
		sampler_tick(s, T0 + i * 10000);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(store_series(st, "gpu:0", STORE_TEMPERATURE, T0, T0 + 60000, 10000, T0 + 60000, &ser),
			 ACCELD_OK);
	ck_assert_uint_eq(ser.n, 6);
	ck_assert_double_eq(ser.points[5].value, 61);
	ck_assert_uint_eq(ser.sources, 1u << STORE_SRC_DEVICE);
	free(ser.points);
	ck_assert_int_eq(store_devices_list(st, &rows, &n), ACCELD_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(rows[2].id, "tpu:0");
	ck_assert_str_eq(rows[2].type, "tpu");
	ck_assert_int_eq(rows[2].first_seen_ms, T0);
	ck_assert_int_eq(rows[2].last_seen_ms, T0 + 50000);
	free(rows);
	sampler_free(s);
	store_close(st);
}
END_TEST

START_TEST(the_thread_starts_and_stops)
{
	struct sampler *s;

	cfg.sample_interval_ms = 100;
	s = make(NULL, false);
	ck_assert_int_eq(sampler_start(s), ACCELD_OK);
	sampler_free(s);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("sampler");
	TCase *tc = tcase_create("sampler");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, proc_stat_and_meminfo_parse);
	tcase_add_test(tc, cpu_utilisation_from_proc_stat_deltas);
	tcase_add_test(tc, cpu_utilisation_from_the_cgroup_under_a_quota);
	tcase_add_test(tc, cpu_utilisation_from_a_v1_cgroup);
	tcase_add_test(tc, accelerators_report_telemetry_or_executor_busy);
	tcase_add_test(tc, samples_and_devices_reach_the_store);
	tcase_add_test(tc, the_thread_starts_and_stops);
	suite_add_tcase(s, tc);
	return s;
}
