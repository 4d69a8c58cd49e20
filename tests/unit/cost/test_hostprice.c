/*
 * Unit tests for hostprice.c and machines.c: the machine table's integrity (every row sourced, dated and priced,
 * every accelerator it names in the accelerator table), lookups, and the split rule: shares add up to the host
 * price, accelerators beyond it are scaled, accelerators the host does not list keep their part, an accelerator
 * without a table price stops the split, Spot shares follow the same fractions.
 */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "cost/hostprice.h"
#include "cost/machines.h"
#include "detect/specs.h"

static struct cloud_host host_of(enum cloud_kind cloud, const char *type, const char *region)
{
	struct cloud_host h;

	cloud_host_init(&h);
	h.cloud = cloud;
	h.state = CLOUD_KNOWN;
	snprintf(h.instance_type, sizeof(h.instance_type), "%s", type);
	snprintf(h.region, sizeof(h.region), "%s", region);
	return h;
}

static void gpu(struct device *d, const char *id, const char *key)
{
	device_init(d, DEVICE_GPU);
	snprintf(d->id, sizeof(d->id), "%s", id);
	snprintf(d->spec_key, sizeof(d->spec_key), "%s", key);
}

START_TEST(machine_table_is_sourced)
{
	size_t n;
	const struct machine *t = machines_table(&n);
	const char *clouds[] = {"gce", "aws", "azure"};

	ck_assert_uint_ge(n, 60);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(isfinite(t[i].usd_per_hour) && t[i].usd_per_hour > 0, "%s", t[i].instance_type);
		ck_assert_msg(isnan(t[i].usd_per_hour_spot) || t[i].usd_per_hour_spot < t[i].usd_per_hour, "%s",
			      t[i].instance_type);
		ck_assert_msg(strlen(t[i].source) > 10 && strlen(t[i].as_of) == 10, "%s", t[i].instance_type);
		ck_assert_msg(t[i].accelerators == 0 || specs_find_key(t[i].accelerator_key) != NULL, "%s",
			      t[i].instance_type);
		ck_assert_msg(strcmp(t[i].cloud, clouds[0]) == 0 || strcmp(t[i].cloud, clouds[1]) == 0 ||
				      strcmp(t[i].cloud, clouds[2]) == 0,
			      "%s", t[i].cloud);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(t[i].cloud, t[j].cloud) || strcmp(t[i].instance_type, t[j].instance_type) ||
					      strcmp(t[i].region, t[j].region),
				      "%s %s twice", t[i].instance_type, t[i].region);
	}
	/* the families the table is meant to cover (GCE c4 comes from the Cloud Billing catalog via Cyclenerd's
	 * pricing.yml, since the SkyPilot catalog the other GCE rows cite has no c4 rows) */
	static const char *const families[][2] = {
		{"gce", "e2-"},        {"gce", "n2-"},        {"gce", "n2d-"},        {"gce", "c3-"},
		{"gce", "c4-"},        {"gce", "a2-"},        {"gce", "a3-"},         {"gce", "g2-"},
		{"gce", "ct6e-"},      {"gce", "ct5lp-"},     {"gce", "ct5p-"},       {"aws", "m7i."},
		{"aws", "c7i."},       {"aws", "r7i."},       {"aws", "g5."},         {"aws", "g6."},
		{"aws", "p4d."},       {"aws", "p5."},        {"azure", "Standard_D"}, {"azure", "Standard_E"},
		{"azure", "Standard_F"}, {"azure", "Standard_NC"}, {"azure", "Standard_ND"},
	};
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		size_t rows = 0;

		for (size_t i = 0; i < n; i++)
			rows += strcmp(t[i].cloud, families[f][0]) == 0 &&
				strncmp(t[i].instance_type, families[f][1], strlen(families[f][1])) == 0;
		ck_assert_msg(rows > 0, "no %s %s rows", families[f][0], families[f][1]);
	}
	ck_assert_ptr_nonnull(machines_find("aws", "M7I.LARGE", "us-east-1"));
	ck_assert_ptr_nonnull(machines_find("gce", "n2-standard-8", "europe-west4"));
	const struct machine *c4 = machines_find("gce", "c4-standard-8", "us-central1");
	ck_assert_ptr_nonnull(c4);
	ck_assert_double_eq_tol(c4->vcpus, 8, 1e-12);
	ck_assert_double_eq_tol(c4->usd_per_hour, 0.39534, 1e-12);
	ck_assert_double_eq_tol(c4->usd_per_hour_spot, 0.1546, 1e-12);
	ck_assert_ptr_null(machines_find("aws", "m7i.large", "eu-west-1"));
	ck_assert_int_eq(machines_knows_type("aws", "m7i.large"), 1);
	ck_assert_int_eq(machines_knows_type("gce", "m7i.large"), 0);
	ck_assert_ptr_null(machines_find("gce", NULL, "x"));
}
END_TEST

START_TEST(shares_add_up)
{
	struct cloud_host h = host_of(CLOUD_AWS, "g6.12xlarge", "us-east-1");
	struct hostprice hp;
	struct hostprice_split s;
	struct device d[5];
	struct device_price p[5];
	double sum = 0, spot = 0;

	device_init(&d[0], DEVICE_CPU);
	snprintf(d[0].id, sizeof(d[0].id), "cpu:0");
	for (int i = 1; i < 5; i++) {
		char id[DEVICE_ID_MAX];

		snprintf(id, sizeof(id), "gpu:%d", i - 1);
		gpu(&d[i], id, "nvidia-l4");
	}
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 4.6016, 1e-9);
	ck_assert_uint_eq(hp.accelerators, 4);
	hostprice_split(&h, &hp, d, 5, p, &s);
	ck_assert(s.split);
	for (int i = 0; i < 5; i++) {
		sum += p[i].usd_per_hour;
		spot += p[i].usd_per_hour_spot;
	}
	ck_assert_double_eq_tol(sum, hp.usd_per_hour, 1e-9);
	ck_assert_double_eq_tol(spot, hp.usd_per_hour_spot, 1e-9);
	ck_assert_double_eq_tol(p[1].usd_per_hour, 0.56, 1e-9);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 4.6016 - 4 * 0.56, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 0, 1e-12);
	ck_assert_str_eq(p[1].unit, "host share");
	/* two of the four GPUs hidden: their part stays off the devices, not on the CPU */
	hostprice_split(&h, &hp, d, 3, p, &s);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 4.6016 - 4 * 0.56, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 2 * 0.56, 1e-9);
	ck_assert_double_eq_tol(s.devices_usd_per_hour + s.unlisted_usd_per_hour, 4.6016, 1e-9);
}
END_TEST

START_TEST(accelerators_beyond_the_host_price_are_scaled)
{
	/* p5.48xlarge: 8 x H100 at 10.98 = 87.84 < 98.32: no scaling; a2-highgpu-1g: 3.67 <= 3.67339 */
	struct cloud_host h = host_of(CLOUD_AWS, "p5.48xlarge", "us-east-1");
	struct hostprice hp;
	struct hostprice_split s;
	struct device d[2];
	struct device_price p[2];

	device_init(&d[0], DEVICE_CPU);
	gpu(&d[1], "gpu:0", "nvidia-h100-sxm");
	hostprice_from_table(&h, &hp);
	hp.usd_per_hour = 44; /* half of the GPUs' part: everything scales by 0.5, the CPU gets nothing */
	hp.usd_per_hour_spot = NAN;
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert_double_eq_tol(s.scale, 44 / 87.84, 1e-12);
	ck_assert_double_eq_tol(p[1].usd_per_hour, 10.98 * 44 / 87.84, 1e-9);
	ck_assert_double_eq_tol(p[0].usd_per_hour, 0, 1e-12);
	ck_assert(isnan(p[1].usd_per_hour_spot));
}
END_TEST

START_TEST(no_weight_no_split)
{
	struct cloud_host h = host_of(CLOUD_AZURE, "Standard_NC40ads_H100_v5", "eastus");
	struct hostprice hp;
	struct hostprice_split s;
	struct device d[2];
	struct device_price p[2];

	device_init(&d[0], DEVICE_CPU);
	gpu(&d[1], "gpu:0", "nvidia-h100-pcie"); /* no price in the accelerator table */
	hostprice_from_table(&h, &hp);
	ck_assert_double_eq_tol(hp.usd_per_hour, 6.98, 1e-9);
	ck_assert(isnan(hp.usd_per_hour_spot));
	hostprice_split(&h, &hp, d, 2, p, &s);
	ck_assert(!s.split);
	ck_assert_ptr_nonnull(strstr(s.rule, "gpu:0"));
	ck_assert(isnan(p[0].usd_per_hour) && isnan(p[1].usd_per_hour));
	/* an unknown host: no price, and the source says so */
	h = host_of(CLOUD_GCE, "n2d-standard-16", "antarctica-south1");
	hostprice_from_table(&h, &hp);
	ck_assert(isnan(hp.usd_per_hour));
	ck_assert_ptr_nonnull(strstr(hp.source, "in antarctica-south1"));
	h.state = CLOUD_NOT_A_CLOUD;
	hostprice_from_table(&h, &hp);
	ck_assert_ptr_nonnull(strstr(hp.source, "not_a_cloud"));
}
END_TEST

START_TEST(applied_price_and_json)
{
	struct cloud_host h = host_of(CLOUD_GCE, "ct6e-standard-4t", "us-central1");
	struct hostprice hp;
	struct hostprice_split s;
	struct device d[1];
	const char *billing;
	json_t *o;

	ck_assert_double_eq(hostprice_applied(1, 2, 1, &billing), 1);
	ck_assert_str_eq(billing, "spot");
	ck_assert_double_eq(hostprice_applied(1, 2, NAN, &billing), 2);
	ck_assert_str_eq(billing, "on_demand");
	ck_assert_double_eq(hostprice_applied(-1, 2, 1, &billing), 2);
	device_init(&d[0], DEVICE_CPU);
	h.spot = 1;
	hostprice_apply_builtin(&h, d, 1, &hp, &s);
	/* four chips the host does not list: their part is unlisted, the CPU gets what is left (nothing) */
	ck_assert_double_eq_tol(d[0].price.usd_per_hour, 0, 1e-9);
	ck_assert_double_eq_tol(s.unlisted_usd_per_hour, 10.8, 1e-9);
	o = hostprice_json(&h, &hp, &s);
	ck_assert_str_eq(json_string_value(json_object_get(o, "billing")), "spot");
	ck_assert_double_eq_tol(json_real_value(json_object_get(json_object_get(o, "price"), "applied_usd_per_hour")),
				2.59333, 1e-9);
	json_decref(o);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("hostprice");
	TCase *tc = tcase_create("hostprice");

	tcase_add_test(tc, machine_table_is_sourced);
	tcase_add_test(tc, shares_add_up);
	tcase_add_test(tc, accelerators_beyond_the_host_price_are_scaled);
	tcase_add_test(tc, no_weight_no_split);
	tcase_add_test(tc, applied_price_and_json);
	suite_add_tcase(s, tc);
	return s;
}
