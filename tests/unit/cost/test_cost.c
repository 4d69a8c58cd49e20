/*
 * Unit tests for cost.c: the prices document, price precedence (device > accelerator type > type; API over file;
 * built-in; CPU 0), accrued cost from stored samples and jobs, and estimates (measured, peak, cheapest first).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core/config.h"
#include "detect/cloud.h"
#include "cost/cost.h"
#include "exec/exec.h"
#include "detect/device.h"
#include "store/store.h"

#define T0 1700002800000LL

static struct device devs[3];
static struct store *st;

static void setup(void)
{
	char err[256];

	device_init(&devs[0], DEVICE_CPU);
	snprintf(devs[0].id, sizeof(devs[0].id), "cpu:0");
	devs[0].peak.fp32_tflops = 1;
	devs[0].peak.memory_gbytes_per_s = 20;
	devs[0].executable = true;
	device_init(&devs[1], DEVICE_GPU);
	snprintf(devs[1].id, sizeof(devs[1].id), "gpu:0");
	snprintf(devs[1].accelerator_type, sizeof(devs[1].accelerator_type), "H100");
	devs[1].peak.fp32_tflops = 67;
	devs[1].peak.memory_gbytes_per_s = 3350;
	devs[1].price.usd_per_hour = 10.98;
	snprintf(devs[1].price.source, sizeof(devs[1].price.source), "GCP a3-highgpu-1g");
	device_init(&devs[2], DEVICE_GPU);
	snprintf(devs[2].id, sizeof(devs[2].id), "gpu:1");
	snprintf(devs[2].accelerator_type, sizeof(devs[2].accelerator_type), "MI300X");
	ck_assert_int_eq(store_open(":memory:", &st, err, sizeof(err)), ACCELD_OK);
}

static void teardown(void)
{
	store_close(st);
}

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *doc = json_loads(text, 0, &je);

	ck_assert_ptr_nonnull(doc);
	return doc;
}

static enum acceld_err parse_prices(const char *text, char *path, char *why)
{
	struct store_price *v = NULL;
	size_t n = 0;
	json_t *doc = parse(text);
	struct refusal r = {.err = ACCELD_OK};
	enum acceld_err e = cost_parse_prices(doc, &v, &n, &r);

	if (e != ACCELD_OK) {
		snprintf(path, 128, "%.127s", json_string_value(json_object_get(r.extra, "path")));
		snprintf(why, 160, "%.159s", r.detail);
	}
	refusal_release(&r);

	json_decref(doc);
	free(v);
	return e;
}

START_TEST(prices_document_is_validated)
{
	char path[128], why[160];

	ck_assert_int_eq(parse_prices("{\"currency\":\"USD\",\"prices\":[{\"device\":\"gpu:0\",\"usd_per_hour\":2},"
				      "{\"type\":\"cpu\",\"usd_per_hour\":0.5,\"usd_per_hour_spot\":null}]}",
				      path, why),
			 ACCELD_OK);
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"device\":\"gpu:0\",\"usd_per_hour\":2,\"colour\":1}]}", path, why),
			 ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.prices[0].colour");
	ck_assert_str_eq(why, "unknown field; accepted: device, accelerator_type, type, instance_type, usd_per_hour, "
			 "usd_per_hour_spot, unit, note");
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"device\":\"gpu:0\",\"usd_per_hour\":\"2\"}]}", path, why),
			 ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.prices[0].usd_per_hour");
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"usd_per_hour\":2}]}", path, why), ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.prices[0]");
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"type\":\"fpga\",\"usd_per_hour\":2}]}", path, why),
			 ACCELD_EINVAL);
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"device\":\"a\",\"usd_per_hour\":-1}]}", path, why),
			 ACCELD_EINVAL);
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"device\":\"gpu:0\",\"usd_per_hour\":1},{\"device\":\"gpu:0\","
				      "\"usd_per_hour\":2}]}",
				      path, why),
			 ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.prices[1]");
	/* a device selector is a device id, here or not */
	ck_assert_int_eq(parse_prices("{\"prices\":[{\"device\":\"a\",\"usd_per_hour\":1}]}", path, why),
			 ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.prices[0].device");
	ck_assert_str_eq(why, "'a' is not a device id (cpu:N, gpu:N or tpu:N)");
	ck_assert_int_eq(parse_prices("{\"currency\":\"EUR\",\"prices\":[]}", path, why), ACCELD_EINVAL);
	ck_assert_str_eq(path, "$.currency");
	ck_assert_int_eq(parse_prices("{\"prices\":{}}", path, why), ACCELD_EINVAL);
}
END_TEST

START_TEST(prices_follow_precedence_and_name_their_source)
{
	struct cost *c = NULL;
	struct cost_price p;
	char file[] = "/tmp/acceld-prices-XXXXXX";
	char err[256];
	int fd = mkstemp(file);
	const char text[] = "{\"prices\":[{\"accelerator_type\":\"H100\",\"usd_per_hour\":8},"
			    "{\"type\":\"gpu\",\"usd_per_hour\":1.5}]}";
	struct store_price api = {.selector = "accelerator_type", .value = "H100", .usd_per_hour = 7,
				  .usd_per_hour_spot = NAN};

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (int)sizeof(text) - 1);
	close(fd);
	ck_assert_int_eq(cost_new(st, file, &c, err, sizeof(err)), ACCELD_OK);
	/* built-in table loses to the file's accelerator type entry */
	cost_price_lookup(c, "gpu:0", "gpu", "H100", &devs[1].price, &p);
	ck_assert_double_eq(p.usd_per_hour, 8);
	ck_assert_ptr_nonnull(strstr(p.source, "prices file"));
	/* a device of no listed accelerator type takes the type entry */
	cost_price_lookup(c, "gpu:1", "gpu", "MI300X", &devs[2].price, &p);
	ck_assert_double_eq(p.usd_per_hour, 1.5);
	/* the CPU of a host that is no known cloud VM has no price: unknown, never 0, and the source says why */
	cost_price_lookup(c, "cpu:0", "cpu", "", &devs[0].price, &p);
	ck_assert(isnan(p.usd_per_hour));
	ck_assert(isnan(p.applied));
	ck_assert_ptr_nonnull(strstr(p.source, "host price is unknown"));
	/* an API override of the same specificity wins over the file, and persists */
	cost_set_overrides(c, &api, 1);
	cost_price_lookup(c, "gpu:0", "gpu", "H100", &devs[1].price, &p);
	ck_assert_double_eq(p.usd_per_hour, 7);
	ck_assert_ptr_nonnull(strstr(p.source, "api override"));
	ck_assert(store_flush(st, 5000));
	cost_free(c);
	ck_assert_int_eq(cost_new(st, NULL, &c, err, sizeof(err)), ACCELD_OK);
	cost_price_lookup(c, "gpu:0", "gpu", "H100", &devs[1].price, &p);
	ck_assert_double_eq(p.usd_per_hour, 7);
	cost_set_overrides(c, NULL, 0);
	cost_price_lookup(c, "gpu:0", "gpu", "H100", &devs[1].price, &p);
	ck_assert_double_eq(p.usd_per_hour, 10.98);
	ck_assert_ptr_nonnull(strstr(p.source, "built-in table: GCP"));
	cost_price_lookup(c, "gpu:1", "gpu", "MI300X", &devs[2].price, &p);
	ck_assert(isnan(p.usd_per_hour));
	ck_assert_ptr_nonnull(strstr(p.source, "none"));
	cost_free(c);
	unlink(file);
	/* a bad file is refused with its path */
	ck_assert_int_eq(cost_new(st, "/nonexistent/prices.json", &c, err, sizeof(err)), ACCELD_EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "ACCELD_PRICES_FILE"));
}
END_TEST

START_TEST(report_accrues_allocated_and_utilized_cost)
{
	struct cost *c = NULL;
	struct cost_query q = {.start_ms = T0, .end_ms = T0 + 2 * STORE_HOUR_MS, .bucket_ms = STORE_HOUR_MS};
	struct store_job j = {.id = "j1", .device = "gpu:0", .kernel = "sgemm", .state = "succeeded",
			      .started_ms = T0 + 1000, .finished_ms = T0 + 3000, .flops = NAN, .bytes = NAN,
			      .kernel_ms = NAN, .total_ms = 1800000, .cost_usd = NAN};
	json_t *doc = NULL, *d;
	char err[256];

	/* gpu:0 present for 2 hours at half utilisation; gpu:9 left long ago (history only, outside the window) */
	for (int64_t t = 0; t < 2 * STORE_HOUR_MS; t += 10000) {
		struct store_sample s = {.device = "gpu:0", .ts_ms = T0 + t, .dt_ms = 10000,
					 .source = STORE_SRC_DEVICE, .utilization_ratio = 0.5,
					 .memory_used_bytes = NAN, .temperature_celsius = NAN, .power_watts = NAN};

		store_add_samples(st, &s, 1);
	}
	{
		struct store_sample s = {.device = "gpu:9", .ts_ms = T0 - STORE_DAY_MS, .dt_ms = 10000,
					 .utilization_ratio = NAN, .memory_used_bytes = NAN,
					 .temperature_celsius = NAN, .power_watts = NAN};

		store_add_samples(st, &s, 1);
	}
	store_job_record(st, &j);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(cost_new(st, NULL, &c, err, sizeof(err)), ACCELD_OK);
	ck_assert_int_eq(cost_report(c, devs, 3, &q, &doc), ACCELD_OK);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "currency")), "USD");
	ck_assert_uint_eq(json_array_size(json_object_get(doc, "devices")), 3); /* the three present devices */
	d = json_array_get(json_object_get(doc, "devices"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(d, "device")), "gpu:0");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(d, "allocated"), "usd")), 2 * 10.98,
				1e-6);
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(d, "utilized"), "usd")), 10.98, 1e-6);
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(d, "jobs"), "usd")), 10.98 / 2, 1e-6);
	ck_assert_uint_eq(json_array_size(json_object_get(d, "groups")), 2);
	ck_assert_ptr_nonnull(json_string_value(json_object_get(json_object_get(d, "price"), "source")));
	ck_assert_double_eq_tol(
		json_real_value(json_object_get(json_object_get(doc, "totals"), "allocated_usd")), 2 * 10.98, 1e-6);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(doc, "totals"), "groups")), 2);
	json_decref(doc);

	/* one device, by day; a device only history knows is found; an unknown one is not */
	q.device = "gpu:9";
	q.start_ms = T0 - 2 * STORE_DAY_MS;
	q.bucket_ms = STORE_DAY_MS;
	ck_assert_int_eq(cost_report(c, devs, 3, &q, &doc), ACCELD_OK);
	d = json_array_get(json_object_get(doc, "devices"), 0);
	ck_assert(json_is_false(json_object_get(d, "present")));
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(d, "allocated"), "seconds")), 10, 1e-9);
	json_decref(doc);
	q.device = "tpu:4";
	ck_assert_int_eq(cost_report(c, devs, 3, &q, &doc), ACCELD_ENOTFOUND);
	cost_free(c);
}
END_TEST

START_TEST(estimates_use_measurements_then_peaks_cheapest_first)
{
	struct cost *c = NULL;
	struct cost_estimate_query q = {.kernel = KERNEL_SGEMM, .shape = {.m = 1024, .n = 1024, .k = 1024}};
	struct store_job j = {.id = "m1", .device = "cpu:0", .kernel = "sgemm", .state = "succeeded",
			      .finished_ms = T0, .flops = 2e9, .bytes = NAN, .kernel_ms = 20, .total_ms = 25,
			      .cost_usd = NAN};
	struct store_price cpu_free = {.selector = "type", .value = "cpu", .usd_per_hour = 0, .usd_per_hour_spot = NAN};
	json_t *doc = NULL, *list;
	char err[256];

	store_job_record(st, &j);
	ck_assert(store_flush(st, 5000));
	ck_assert_int_eq(cost_new(st, NULL, &c, err, sizeof(err)), ACCELD_OK);
	cost_set_overrides(c, &cpu_free, 1);
	ck_assert_int_eq(cost_estimate(c, devs, 3, &q, &doc), ACCELD_OK);
	list = json_object_get(doc, "estimates");
	ck_assert_uint_eq(json_array_size(list), 3);
	/* cpu:0 costs nothing (configured so) and was measured at 100 GFLOP/s */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "device")), "cpu:0");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(list, 0), "seconds")),
				2.0 * 1024 * 1024 * 1024 / 1e11, 1e-9);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(list, 0), "basis")), "measured"));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 1), "device")), "gpu:0");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(list, 1), "basis")), "peak"));
	/* gpu:1 has no price: last, usd null */
	ck_assert(json_is_null(json_object_get(json_array_get(list, 2), "usd")));
	json_decref(doc);

	q = (struct cost_estimate_query){.seconds = 3600, .device = "gpu:0", .kernel = -1};
	ck_assert_int_eq(cost_estimate(c, devs, 3, &q, &doc), ACCELD_OK);
	list = json_object_get(doc, "estimates");
	ck_assert_uint_eq(json_array_size(list), 1);
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(list, 0), "usd")), 10.98, 1e-9);
	json_decref(doc);
	q.device = "tpu:0";
	ck_assert_int_eq(cost_estimate(c, devs, 3, &q, &doc), ACCELD_ENOTFOUND);
	cost_free(c);
}
END_TEST

/* What a job records of its work, as the executor's history callback sees it. */
static double job_flops, job_bytes;
static int jobs_recorded;
static pthread_mutex_t note_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t note_cv = PTHREAD_COND_INITIALIZER;

static void note_job(void *ctx, const struct exec_record *rec)
{
	(void)ctx;
	pthread_mutex_lock(&note_mu);
	job_flops = rec->flops;
	job_bytes = rec->bytes;
	jobs_recorded++;
	pthread_cond_broadcast(&note_cv);
	pthread_mutex_unlock(&note_mu);
}

static void wait_recorded(int n)
{
	pthread_mutex_lock(&note_mu);
	while (jobs_recorded < n)
		pthread_cond_wait(&note_cv, &note_mu);
	pthread_mutex_unlock(&note_mu);
}

/*
 * An estimate counts the same work as the job it estimates: the FLOPs and bytes of /cost/estimate for a kernel and
 * sizes equal those the executor records for that job (sgemm's C, softmax's m rows).
 */
START_TEST(estimates_count_the_work_jobs_record)
{
	static const struct {
		enum kernel_id kernel;
		struct kernel_shape shape;
	} cases[] = {
		{KERNEL_SGEMM, {.m = 48, .n = 40, .k = 24}},
		{KERNEL_SOFTMAX, {.m = 30, .n = 50}},
		{KERNEL_SAXPY, {.n = 1000}},
		{KERNEL_DOT, {.n = 1000}},
		{KERNEL_TRIAD, {.n = 1000}},
	};
	struct config cfg;
	char err[256];
	struct cost *c = NULL;
	struct exec *ex = NULL;
	struct exec_opts opts;

	ck_assert_int_eq(config_load(&cfg, 0, NULL, NULL, err, sizeof(err)), 0);
	exec_opts_from_config(&cfg, &opts);
	opts.devices = devs;
	opts.ndevices = 1;
	opts.on_job_done = note_job;
	ck_assert_int_eq(exec_new(&opts, &ex), ACCELD_OK);
	ck_assert_int_eq(cost_new(st, NULL, &c, err, sizeof(err)), ACCELD_OK);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cost_estimate_query q = {.device = "cpu:0", .kernel = (int)cases[i].kernel,
						.shape = cases[i].shape};
		struct exec_request r;
		struct refusal why;
		struct exec_job *job = NULL;
		json_t *doc = NULL;

		exec_request_init(&r);
		r.kernel = cases[i].kernel;
		r.shape = cases[i].shape;
		exec_request_add_device(&r, "cpu:0");
		ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
		exec_job_wait(job);
		ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
		wait_recorded((int)i + 1);
		ck_assert_int_eq(cost_estimate(c, devs, 3, &q, &doc), ACCELD_OK);
		ck_assert_double_eq(json_real_value(json_object_get(doc, "flops")), job_flops);
		ck_assert_double_eq(json_real_value(json_object_get(doc, "bytes")), job_bytes);
		ck_assert_double_eq(job_flops, kernel_flops(cases[i].kernel, &cases[i].shape));
		json_decref(doc);
		exec_job_unref(job);
		exec_request_release(&r);
	}
	exec_free(ex);
	cost_free(c);
	config_release(&cfg);
}
END_TEST

/* A g2-standard-4 (one L4) in us-central1: the L4 takes GCE's price of one L4 there, the CPU the rest, Spot by the
 * same fractions; an instance_type override replaces the host price (and the table's sources and date) and the split
 * follows. */
#define G2_4 0.7068323   /* db/prices/gce_shapes.csv, g2-standard-4 us-central1 */
#define G2_4_SPOT 0.397336
#define L4 0.5600402     /* db/prices/gce_gpus.csv, nvidia-l4 us-central1 */
START_TEST(host_price_is_split_and_spot_applied)
{
	struct cost *c = NULL;
	struct device d[2];
	struct cloud_host h;
	struct cost_host_applied host;
	double usd[2];
	char err[256];
	json_t *doc, *list, *hp;
	struct store_price o = {.selector = "instance_type", .value = "g2-standard-4", .usd_per_hour = 1.0,
				.usd_per_hour_spot = NAN};

	device_init(&d[0], DEVICE_CPU);
	snprintf(d[0].id, sizeof(d[0].id), "cpu:0");
	device_init(&d[1], DEVICE_GPU);
	snprintf(d[1].id, sizeof(d[1].id), "gpu:0");
	snprintf(d[1].spec_key, sizeof(d[1].spec_key), "nvidia-l4");
	snprintf(d[1].accelerator_type, sizeof(d[1].accelerator_type), "L4");
	cloud_host_init(&h);
	h.cloud = CLOUD_GCE;
	h.state = CLOUD_KNOWN;
	snprintf(h.instance_type, sizeof(h.instance_type), "g2-standard-4");
	snprintf(h.region, sizeof(h.region), "us-central1");
	h.spot = 1;
	ck_assert_int_eq(cost_new(st, NULL, &c, err, sizeof(err)), ACCELD_OK);
	cost_set_host(c, &h);
	doc = cost_prices_json(c, d, 2);
	list = json_object_get(doc, "prices");
	hp = json_object_get(json_object_get(doc, "host"), "price");
	ck_assert_double_eq_tol(json_real_value(json_object_get(hp, "usd_per_hour")), G2_4, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(hp, "applied_usd_per_hour")), G2_4_SPOT, 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(hp, "as_of")), "2026-07-30");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(list, 1), "usd_per_hour")), L4, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(list, 0), "usd_per_hour")), G2_4 - L4,
				1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(list, 0), "billing")), "spot");
	json_decref(doc);
	/* the applied shares add up to the applied host price */
	cost_applied_prices(c, d, 2, usd, &host);
	ck_assert_double_eq_tol(usd[0] + usd[1], G2_4_SPOT, 1e-9);
	ck_assert_double_eq_tol(host.usd_per_hour, G2_4_SPOT, 1e-9);
	ck_assert_str_eq(host.billing, "spot");
	/* an override of the instance type: no Spot figure, so on demand applies to host and shares */
	cost_set_overrides(c, &o, 1);
	cost_applied_prices(c, d, 2, usd, &host);
	ck_assert_double_eq_tol(host.usd_per_hour, 1.0, 1e-9);
	ck_assert_str_eq(host.billing, "on_demand");
	ck_assert_double_eq_tol(usd[1], L4, 1e-9);
	ck_assert_double_eq_tol(usd[0], 1.0 - L4, 1e-9);
	doc = cost_prices_json(c, d, 2);
	hp = json_object_get(json_object_get(doc, "host"), "price");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(hp, "source")), "api override (instance_type"));
	ck_assert(json_is_null(json_object_get(hp, "as_of"))); /* an override has no table's date */
	ck_assert(json_is_null(json_object_get(hp, "age_days")));
	ck_assert_ptr_null(json_object_get(hp, "sources"));
	json_decref(doc);
	/* a device override still wins over the share */
	o = (struct store_price){.selector = "device", .value = "cpu:0", .usd_per_hour = 0.1, .usd_per_hour_spot = NAN};
	cost_set_overrides(c, &o, 1);
	cost_applied_prices(c, d, 2, usd, &host);
	ck_assert_double_eq_tol(usd[0], 0.1, 1e-9);
	cost_free(c);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("cost");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, prices_document_is_validated);
	tcase_add_test(tc, prices_follow_precedence_and_name_their_source);
	tcase_add_test(tc, report_accrues_allocated_and_utilized_cost);
	tcase_add_test(tc, estimates_use_measurements_then_peaks_cheapest_first);
	tcase_add_test(tc, estimates_count_the_work_jobs_record);
	tcase_add_test(tc, host_price_is_split_and_spot_applied);
	suite_add_tcase(s, tc);
	return s;
}
