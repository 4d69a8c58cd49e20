/* The proxy's tables: which backends run in a worker, the causes a worker ends for, the counts /metrics shows. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "exec/backend/worker_proxy.h"

START_TEST(kinds_and_causes)
{
	struct worker_counts c[4];
	size_t n = worker_proxy_counts(c, 4);

	ck_assert_ptr_eq(worker_proxy_real("pjrt"), &backend_pjrt);
	ck_assert_ptr_eq(worker_proxy_real("opencl"), &backend_opencl);
	ck_assert_ptr_null(worker_proxy_real("native"));
	/* a proxy is named and ranked as the backend it runs */
	ck_assert_str_eq(backend_pjrt_proxy.name, backend_pjrt.name);
	ck_assert_int_eq(backend_pjrt_proxy.rank, backend_pjrt.rank);
	ck_assert_str_eq(backend_opencl_proxy.name, backend_opencl.name);
	ck_assert_int_eq(backend_opencl_proxy.rank, backend_opencl.rank);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(c[0].backend, "pjrt");
	ck_assert_str_eq(c[1].backend, "opencl");
	ck_assert_uint_eq(c[0].starts, 0);
	ck_assert_str_eq(worker_cause_name(WORKER_CAUSE_START), "start");
	/* PoCL's CPU device goes through a worker only when a test asks */
	unsetenv("ACCELD_OPENCL_WORKER");
	ck_assert(!worker_proxy_opencl_all());
	setenv("ACCELD_OPENCL_WORKER", "all", 1);
	ck_assert(worker_proxy_opencl_all());
	unsetenv("ACCELD_OPENCL_WORKER");
	ck_assert_str_eq(worker_cause_name(WORKER_CAUSE_IDLE), "idle");
	ck_assert_str_eq(worker_cause_name(WORKER_CAUSE_DEADLINE), "deadline");
	ck_assert_str_eq(worker_cause_name(WORKER_CAUSE_CRASH), "crash");
	ck_assert_str_eq(worker_cause_name(WORKER_CAUSE_COUNT), "?");
}
END_TEST

START_TEST(a_cpu_is_none_of_its_business)
{
	struct device d;

	device_init(&d, DEVICE_CPU);
	DEVICE_SET(d.id, "cpu:0");
	ck_assert(!backend_pjrt_proxy.serves(&d));
	ck_assert_ptr_null(backend_pjrt_proxy.describe(&d));
	ck_assert_ptr_null(backend_pjrt_proxy.inspect(&d)); /* and no worker starts for it */
	ck_assert_uint_eq(worker_proxy_counts((struct worker_counts[4]){0}, 4), 2);
	ck_assert_uint_eq(worker_proxy_counts((struct worker_counts[1]){0}, 1), 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("worker_proxy");
	TCase *tc = tcase_create("worker_proxy");

	tcase_add_test(tc, kinds_and_causes);
	tcase_add_test(tc, a_cpu_is_none_of_its_business);
	suite_add_tcase(s, tc);
	return s;
}
