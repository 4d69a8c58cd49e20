/* Unit tests for metrics.c: the text format, escaping, histogram buckets, counters, series limits, devices. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "detect/detect.h"
#include "detect/device.h"
#include "metrics/metrics.h"

static char *render(struct metrics *m, const struct metrics_view *v)
{
	struct metrics_view empty = {0};
	char *text = NULL;
	size_t len = 0;

	ck_assert_int_eq(metrics_render(m, v ? v : &empty, &text, &len), ACCELD_OK);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(strlen(text), len);
	return text;
}

/* The value of the sample line that starts with prefix ("name{labels} "), or NAN when there is none. */
static double value_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, prefix, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	return NAN;
}

static bool has_line_prefix(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, n) == 0)
			return true;
	return false;
}

/*
 * Checks the exposition's shape: every family has HELP then TYPE, each family appears once, samples follow their
 * own family's TYPE (histogram samples with _bucket/_sum/_count), and no value is NaN or negative-one.
 */
static void check_shape(const char *text)
{
	char family[128] = "";
	char type[16] = "";
	char seen[4096] = " ";
	char help[128] = "";
	const char *p = text;

	ck_assert(text[strlen(text) - 1] == '\n');
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p);
		char line[1024];

		ck_assert_ptr_nonnull(nl);
		ck_assert_uint_lt(len, sizeof(line));
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl + 1;
		if (strncmp(line, "# HELP ", 7) == 0) {
			sscanf(line + 7, "%127s", help);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char key[140];

			ck_assert_int_eq(sscanf(line + 7, "%127s %15s", family, type), 2);
			ck_assert_msg(strcmp(help, family) == 0, "TYPE %s without HELP before it", family);
			ck_assert_msg(strncmp(family, "acceld_", 7) == 0, "%s lacks the acceld_ prefix", family);
			if (strcmp(type, "counter") == 0)
				ck_assert_msg(strlen(family) > 6 && strcmp(family + strlen(family) - 6, "_total") == 0,
					      "counter %s must end in _total", family);
			snprintf(key, sizeof(key), " %s ", family);
			ck_assert_msg(strstr(seen, key) == NULL, "family %s appears twice", family);
			ck_assert_uint_lt(strlen(seen) + strlen(key), sizeof(seen));
			strcat(seen, key + 1);
			continue;
		}
		ck_assert_msg(line[0] != '#', "unexpected comment: %s", line);
		ck_assert_msg(strncmp(line, family, strlen(family)) == 0, "sample outside its family: %s (in %s)", line,
			      family);
		if (strcmp(type, "histogram") == 0) {
			const char *rest = line + strlen(family);

			ck_assert_msg(strncmp(rest, "_bucket{", 8) == 0 || strncmp(rest, "_sum", 4) == 0 ||
					      strncmp(rest, "_count", 6) == 0,
				      "bad histogram sample %s", line);
		} else {
			char c = line[strlen(family)];

			ck_assert_msg(c == '{' || c == ' ', "sample name differs from family: %s", line);
		}
		ck_assert_msg(strstr(line, "NaN") == NULL && strstr(line, "nan") == NULL, "NaN in %s", line);
		ck_assert_msg(strcmp(line + len - 3, " -1") != 0, "-1 sentinel in %s", line);
	}
}

START_TEST(empty_registry_renders_every_family)
{
	struct metrics *m = metrics_new();
	char *text = render(m, NULL);

	check_shape(text);
	ck_assert(has_line_prefix(text, "acceld_build_info{version=\""));
	ck_assert(strstr(text, "# TYPE acceld_http_requests_total counter\n") != NULL);
	ck_assert(strstr(text, "# TYPE acceld_http_request_duration_seconds histogram\n") != NULL);
	ck_assert(strstr(text, "# TYPE acceld_jobs_total counter\n") != NULL);
	ck_assert(strstr(text, "# TYPE acceld_job_queue_depth gauge\n") != NULL);
	ck_assert(strstr(text, "# TYPE acceld_device_info gauge\n") != NULL);
	ck_assert(strstr(text, "# TYPE acceld_probe_success gauge\n") != NULL);
	ck_assert(value_of(text, "acceld_store_up") == 0);
	ck_assert(value_of(text, "acceld_process_open_fds") > 0);
	ck_assert(value_of(text, "acceld_process_resident_memory_bytes") > 0);
	/* no start time given: the series is left out, not written as 0 */
	ck_assert(isnan(value_of(text, "acceld_process_start_time_seconds")));
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(counters_grow_and_stay_apart)
{
	struct metrics *m = metrics_new();
	char *a;
	char *b;
	const char *ok = "acceld_http_requests_total{handler=\"/devices/{id}\",method=\"GET\",code=\"200\"}";
	const char *nf = "acceld_http_requests_total{handler=\"/devices/{id}\",method=\"GET\",code=\"404\"}";

	metrics_http_observe(m, "/devices/{id}", "GET", 200, 0.001);
	a = render(m, NULL);
	ck_assert(value_of(a, ok) == 1);
	ck_assert(isnan(value_of(a, nf)));
	for (int i = 0; i < 9; i++)
		metrics_http_observe(m, "/devices/{id}", "GET", 200, 0.001);
	metrics_http_observe(m, "/devices/{id}", "GET", 404, 0.001);
	b = render(m, NULL);
	ck_assert(value_of(b, ok) == 10);
	ck_assert(value_of(b, nf) == 1);
	ck_assert(value_of(b, "acceld_http_request_duration_seconds_count{handler=\"/devices/{id}\"}") == 11);
	check_shape(b);
	free(a);
	free(b);
	metrics_free(m);
}
END_TEST

START_TEST(hook_names_unmatched_requests)
{
	struct metrics *m = metrics_new();
	char *text;

	metrics_http_hook(m, "GET", NULL, 404, 0.0001);
	metrics_http_hook(m, "POST", "/run", 202, 0.002);
	metrics_http_hook(NULL, "GET", "/x", 200, 0.1); /* no registry: nothing happens */
	text = render(m, NULL);
	ck_assert(value_of(text, "acceld_http_requests_total{handler=\"unmatched\",method=\"GET\",code=\"404\"}") == 1);
	ck_assert(value_of(text, "acceld_http_requests_total{handler=\"/run\",method=\"POST\",code=\"202\"}") == 1);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(histogram_buckets_are_cumulative)
{
	struct metrics *m = metrics_new();
	char *text;
	const char *b = "acceld_http_request_duration_seconds_bucket{handler=\"/livez\",le=\"";
	char key[160];
	static const struct {
		const char *le;
		double want;
	} cases[] = {{"0.0005", 1}, {"0.001", 2}, {"0.0025", 2}, {"0.005", 4}, {"0.01", 4}, {"5", 4}, {"10", 5},
		     {"+Inf", 6}};

	metrics_http_observe(m, "/livez", "GET", 200, 0.0004);
	metrics_http_observe(m, "/livez", "GET", 200, 0.001); /* on a bound: counted in that bucket (le) */
	metrics_http_observe(m, "/livez", "GET", 200, 0.003);
	metrics_http_observe(m, "/livez", "GET", 200, 0.004);
	metrics_http_observe(m, "/livez", "GET", 200, 10);
	metrics_http_observe(m, "/livez", "GET", 200, 20);
	metrics_http_observe(m, "/livez", "GET", 200, NAN); /* clamped to 0, never poisons the sum */
	text = render(m, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double want = cases[i].want + 1; /* the NaN observation counts as 0 */

		snprintf(key, sizeof(key), "%s%s\"}", b, cases[i].le);
		ck_assert_msg(value_of(text, key) == want, "%s: %g, want %g", key, value_of(text, key), want);
	}
	ck_assert(fabs(value_of(text, "acceld_http_request_duration_seconds_sum{handler=\"/livez\"}") - 30.0084) <
		  1e-9);
	ck_assert(value_of(text, "acceld_http_request_duration_seconds_count{handler=\"/livez\"}") == 7);
	check_shape(text);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(label_values_are_escaped)
{
	struct metrics *m = metrics_new();
	char *text;

	metrics_job_observe(m, "saxpy", "we\"ird\\dev\nice", "succeeded", 0.5);
	metrics_job_observe(m, "dot", "bad\xff\xc3utf8", "failed", 0.5);
	text = render(m, NULL);
	ck_assert_msg(strstr(text, "acceld_jobs_total{kernel=\"saxpy\",device=\"we\\\"ird\\\\dev\\nice\","
				   "outcome=\"succeeded\"} 1\n") != NULL,
		      "%s", text);
	ck_assert(strstr(text, "device=\"bad\xef\xbf\xbd\xef\xbf\xbdutf8\"") != NULL);
	check_shape(text);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(series_limit_drops_and_counts)
{
	struct metrics *m = metrics_new();
	char *text;
	char name[32];

	for (int i = 0; i < METRICS_MAX_SERIES + 10; i++) {
		snprintf(name, sizeof(name), "/h%d", i);
		metrics_set_queue_depth(m, name, 1, 0);
	}
	metrics_set_queue_depth(m, "/h0", 7, 2); /* an existing series still updates */
	text = render(m, NULL);
	ck_assert(value_of(text, "acceld_job_queue_depth{device=\"/h0\"}") == 7);
	ck_assert(value_of(text, "acceld_jobs_running{device=\"/h0\"}") == 2);
	ck_assert(isnan(value_of(text, "acceld_job_queue_depth{device=\"/h600\"}")));
	/* each of the 10 refused devices is refused once per family */
	ck_assert(value_of(text, "acceld_metrics_dropped_observations_total") == 20);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(store_state)
{
	struct metrics *m = metrics_new();
	struct metrics_view v = {.store_open = true, .started_at_ms = 1700000000123};
	struct metrics_store_stats st = {.up = false, .write_backlog = 42, .rows_written = 150, .samples_dropped = 3, .records_dropped = 5,
					 .write_errors = 1, .commits = 7, .confirmed = 11, .unconfirmed = 2};
	char *text;

	text = render(m, &v);
	ck_assert(value_of(text, "acceld_store_up") == 1);
	ck_assert(value_of(text, "acceld_process_start_time_seconds") == 1700000000.123);
	free(text);
	metrics_set_store_stats(m, &st);
	text = render(m, &v);
	ck_assert(value_of(text, "acceld_store_up") == 0);
	ck_assert(value_of(text, "acceld_store_write_backlog") == 42);
	ck_assert(value_of(text, "acceld_store_rows_written_total") == 150);
	ck_assert(value_of(text, "acceld_store_dropped_samples_total") == 3);
	ck_assert(value_of(text, "acceld_store_dropped_records_total") == 5);
	ck_assert(value_of(text, "acceld_store_write_errors_total") == 1);
	ck_assert(value_of(text, "acceld_store_commits_total") == 7);
	ck_assert(value_of(text, "acceld_store_confirmed_writes_total") == 11);
	ck_assert(value_of(text, "acceld_store_unconfirmed_writes_total") == 2);
	free(text);
	st.up = true;
	metrics_set_store_stats(m, &st);
	v.store_open = false; /* no connection wins over a stale "up" */
	text = render(m, &v);
	ck_assert(value_of(text, "acceld_store_up") == 0);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(connection_tables)
{
	struct metrics *m = metrics_new();
	struct metrics_listener l[2] = {
		{.name = "main",
		 .conns = {.open = 7, .max = 200, .refused = {1, 2}, .evicted = {30, 40}, .timed_out = 5}},
		{.name = "health", .conns = {.open = 1, .max = 16}},
	};
	struct metrics_view v = {.listeners = l, .nlisteners = 2};
	char *text = render(m, &v);

	ck_assert(has_line_prefix(text, "# TYPE acceld_http_connections gauge\n"));
	ck_assert(has_line_prefix(text, "# TYPE acceld_http_connections_refused_total counter\n"));
	ck_assert(has_line_prefix(text, "# TYPE acceld_http_connections_evicted_total counter\n"));
	ck_assert(value_of(text, "acceld_http_connections{listener=\"main\"}") == 7);
	ck_assert(value_of(text, "acceld_http_connections{listener=\"health\"}") == 1);
	ck_assert(value_of(text, "acceld_http_connections_max{listener=\"main\"}") == 200);
	ck_assert(value_of(text, "acceld_http_connections_refused_total{listener=\"main\",cause=\"limit\"}") == 1);
	ck_assert(value_of(text, "acceld_http_connections_refused_total{listener=\"main\",cause=\"per_ip\"}") == 2);
	ck_assert(value_of(text, "acceld_http_connections_evicted_total{listener=\"main\",cause=\"idle_keepalive\"}") ==
		  30);
	ck_assert(value_of(text,
			   "acceld_http_connections_evicted_total{listener=\"main\",cause=\"incomplete_request\"}") ==
		  40);
	ck_assert(value_of(text,
			   "acceld_http_connections_evicted_total{listener=\"health\",cause=\"incomplete_request\"}") ==
		  0);
	ck_assert(value_of(text, "acceld_http_connections_timed_out_total{listener=\"main\"}") == 5);
	free(text);
	metrics_free(m);
}
END_TEST

START_TEST(devices_known_values_only)
{
	struct metrics *m = metrics_new();
	struct device devs[2];
	struct detect_probe_status probes[2] = {
		{.name = "cpu", .result = {.ok = true, .available = true, .found = 1, .duration_ms = 12.5}},
		{.name = "nvml", .result = {.ok = false, .available = false, .duration_ms = NAN}},
	};
	struct detect_snapshot snap;
	struct metrics_view v;
	char *text;

	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	DEVICE_SET(devs[0].vendor, "GenuineIntel");
	DEVICE_SET(devs[0].model, "Xeon \"Gold\" 6454S");
	devs[0].memory_total_bytes = 1000;
	devs[0].memory_available_bytes = 400;
	devs[0].executable = true;
	device_init(&devs[1], DEVICE_GPU);
	DEVICE_SET(devs[1].id, "gpu:0");
	DEVICE_SET(devs[1].vendor, "NVIDIA");
	DEVICE_SET(devs[1].model, "NVIDIA H100 80GB HBM3");
	DEVICE_SET(devs[1].accelerator_type, "H100");
	DEVICE_SET(devs[1].uuid, "GPU-0d3f");
	DEVICE_SET(devs[1].pci_bus_id, "0000:65:00.0");
	devs[1].memory_total_bytes = 85899345920ull;
	devs[1].telemetry.memory_used_bytes = 1073741824ull;
	devs[1].telemetry.utilization_ratio = 0.25;
	devs[1].telemetry.temperature_celsius = 41;
	devs[1].telemetry.power_watts = 120.5;
	devs[1].telemetry.power_limit_watts = 700;
	devs[1].telemetry.energy_joules = 123456.75;
	devs[1].telemetry.sampled_at_ms = 1700000000000;
	memset(&snap, 0, sizeof(snap));
	snap.devices = devs;
	snap.n = 2;
	snap.probes = probes;
	snap.nprobes = 2;
	snap.taken_at_ms = 1700000000500;
	v = (struct metrics_view){.devices = &snap, .store_open = true};

	text = render(m, &v);
	check_shape(text);
	ck_assert_msg(strstr(text, "acceld_device_info{device=\"cpu:0\",id=\"cpu:0\",type=\"cpu\",vendor=\"GenuineIntel\","
				   "model=\"Xeon \\\"Gold\\\" 6454S\"} 1\n") != NULL,
		      "%s", text);
	ck_assert(strstr(text, "acceld_device_info{device=\"gpu:0\",id=\"gpu:0\",type=\"gpu\",vendor=\"NVIDIA\","
			       "model=\"NVIDIA H100 80GB HBM3\",accelerator_type=\"H100\",uuid=\"GPU-0d3f\","
			       "pci_bus_id=\"0000:65:00.0\"} 1\n") != NULL);
	ck_assert(value_of(text, "acceld_devices{type=\"gpu\"}") == 1);
	ck_assert(value_of(text, "acceld_devices{type=\"tpu\"}") == 0);
	ck_assert(value_of(text, "acceld_device_memory_total_bytes{device=\"cpu:0\"}") == 1000);
	ck_assert(value_of(text, "acceld_device_memory_used_bytes{device=\"cpu:0\"}") == 600);
	ck_assert(value_of(text, "acceld_device_memory_total_bytes{device=\"gpu:0\"}") == 85899345920.0);
	ck_assert(value_of(text, "acceld_device_memory_used_bytes{device=\"gpu:0\"}") == 1073741824.0);
	ck_assert(isnan(value_of(text, "acceld_device_memory_available_bytes{device=\"gpu:0\"}")));
	ck_assert(value_of(text, "acceld_device_utilization_ratio{device=\"gpu:0\"}") == 0.25);
	ck_assert(value_of(text, "acceld_device_temperature_celsius{device=\"gpu:0\"}") == 41);
	ck_assert(value_of(text, "acceld_device_power_watts{device=\"gpu:0\"}") == 120.5);
	ck_assert(value_of(text, "acceld_device_power_limit_watts{device=\"gpu:0\"}") == 700);
	ck_assert(value_of(text, "acceld_device_energy_joules_total{device=\"gpu:0\"}") == 123456.75);
	ck_assert(value_of(text, "acceld_device_executable{device=\"cpu:0\"}") == 1);
	/* the CPU's unknown telemetry is absent, not 0 or -1 */
	ck_assert(!has_line_prefix(text, "acceld_device_temperature_celsius{device=\"cpu:0\"}"));
	ck_assert(!has_line_prefix(text, "acceld_device_utilization_ratio{device=\"cpu:0\"}"));
	ck_assert(!has_line_prefix(text, "acceld_device_power_watts{device=\"cpu:0\"}"));
	ck_assert(!has_line_prefix(text, "acceld_device_telemetry_timestamp_seconds{device=\"cpu:0\"}"));
	ck_assert(value_of(text, "acceld_probe_success{probe=\"cpu\"}") == 1);
	ck_assert(value_of(text, "acceld_probe_success{probe=\"nvml\"}") == 0);
	ck_assert(value_of(text, "acceld_probe_duration_seconds{probe=\"cpu\"}") == 0.0125);
	ck_assert(!has_line_prefix(text, "acceld_probe_duration_seconds{probe=\"nvml\"}"));
	ck_assert(value_of(text, "acceld_device_snapshot_timestamp_seconds") == 1700000000.5);
	free(text);
	metrics_free(m);
}
END_TEST

static void *hammer(void *arg)
{
	for (int i = 0; i < 2000; i++)
		metrics_http_observe(arg, "/livez", "GET", 200, 0.0001);
	return NULL;
}

START_TEST(concurrent_observations_are_all_counted)
{
	struct metrics *m = metrics_new();
	pthread_t t[4];
	char *text;

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, m), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	text = render(m, NULL);
	ck_assert(value_of(text, "acceld_http_requests_total{handler=\"/livez\",method=\"GET\",code=\"200\"}") == 8000);
	free(text);
	metrics_free(m);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, empty_registry_renders_every_family);
	tcase_add_test(tc, counters_grow_and_stay_apart);
	tcase_add_test(tc, hook_names_unmatched_requests);
	tcase_add_test(tc, histogram_buckets_are_cumulative);
	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, series_limit_drops_and_counts);
	tcase_add_test(tc, store_state);
	tcase_add_test(tc, connection_tables);
	tcase_add_test(tc, devices_known_values_only);
	tcase_add_test(tc, concurrent_observations_are_all_counted);
	suite_add_tcase(s, tc);
	return s;
}
