/*
 * Unit tests for gcetype.c: what GCE machine type names say (predefined classes, shapes listed whole, custom and
 * extended, TPU hosts, names refused), prices of a spread of shapes, and the test over the whole GCE table: every
 * (shape, region) the source lists (tests/fixtures/prices/gce_reference.csv, written by tools/prices/build.sh from
 * the same source as the rate tables) computed from the tables within 1 %, on demand and Spot, with the vCPUs and
 * memory the name gives equal to the source's.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "core/csv.h"
#include "cost/gcetype.h"
#include "cost/machines.h"
#include "cost/pricebook.h"

#define REFERENCE "tests/fixtures/prices/gce_reference.csv"
#define LIMIT 0.01

START_TEST(names_say_the_shape)
{
	static const struct {
		const char *name, *family;
		double vcpus, gib;
		bool custom, extended, attach, per_shape;
		unsigned chips;
	} ok[] = {
		{"n1-standard-8", "n1", 8, 30, false, false, true, false, 0},
		{"n1-highmem-2", "n1", 2, 13, false, false, true, false, 0},
		{"n1-highcpu-4", "n1", 4, 3.6, false, false, true, false, 0},
		{"n2-standard-2", "n2", 2, 8, false, false, false, false, 0},
		{"n2-highmem-96", "n2", 96, 768, false, false, false, false, 0},
		{"n2-highmem-128", "n2", 128, 864, false, false, false, false, 0}, /* listed whole: 6.75 GiB per vCPU */
		{"n2-highcpu-16", "n2", 16, 16, false, false, false, false, 0},
		{"n2d-standard-224", "n2d", 224, 896, false, false, false, false, 0},
		{"e2-standard-4", "e2", 4, 16, false, false, false, false, 0},
		{"e2-highcpu-8", "e2", 8, 8, false, false, false, false, 0},
		{"c2-standard-60", "c2", 60, 240, false, false, false, false, 0},
		{"c3-standard-22", "c3", 22, 88, false, false, false, false, 0},
		{"c3-highmem-192-metal", "c3", 192, 1536, false, false, false, false, 0},
		{"c4-standard-2", "c4", 2, 7, false, false, false, false, 0}, /* whole GiB: 3.75 x 2 rounded down */
		{"c4-highmem-8", "c4", 8, 62, false, false, false, false, 0},
		{"n4-highcpu-80", "n4", 80, 160, false, false, false, false, 0},
		{"c4d-standard-2", "c4d", 2, 7, false, false, false, false, 0}, /* whole GiB: 3.875 x 2 rounded down */
		{"c4d-highmem-4", "c4d", 4, 31, false, false, false, false, 0},
		{"c4d-highcpu-192", "c4d", 192, 360, false, false, false, false, 0},
		{"n4d-highmem-80", "n4d", 80, 640, false, false, false, false, 0},
		{"m1-megamem-96", "m1", 96, 1433.6, false, false, false, false, 0},
		{"m2-ultramem-208", "m2", 208, 5888, false, false, false, false, 0},
		{"m3-ultramem-32", "m3", 32, 976, false, false, false, false, 0},
		{"t2d-standard-1", "t2d", 1, 4, false, false, false, false, 0},
		{"custom-4-16384", "n1", 4, 16, true, false, true, false, 0},
		{"n2-custom-4-16384", "n2", 4, 16, true, false, false, false, 0},
		{"n2-custom-8-327680-ext", "n2", 8, 320, true, true, false, false, 0},
		{"N2D-Custom-2-4608", "n2d", 2, 4.5, true, false, false, false, 0},
		{"e2-custom-6-24576", "e2", 6, 24, true, false, false, false, 0},
		{"g2-standard-16", "g2", NAN, NAN, false, false, false, true, 0},
		{"a3-highgpu-8g", "a3", NAN, NAN, false, false, false, true, 0},
		{"ct6e-standard-4t", "ct6e", NAN, NAN, false, false, false, true, 4},
		{"ct5lp-hightpu-1t", "ct5lp", NAN, NAN, false, false, false, true, 1},
		{"ct4p-hightpu-4t", "ct4p", NAN, NAN, false, false, false, true, 4},
	};
	static const char *const refused[] = {
		"", "n2", "n2-standard", "n2-standard-0", "n2-standard-x", "n2-standard-8x", "n2-foo-4",
		"c3-standard-4-lssd", "c3-custom-4-4096", "e2-custom-small-1024", "n2-custom-4",
		"n2-custom-4-16384-big",
		"custom-0-1024", "custom-4-0", "ct6e-standard-t", "ct6e-standard-4", "n2--standard-4", "-n2-standard-4",
		"n2-standard-4-", "zz9-standard-4", "n2-standard-2048", "e2-medium", "m1-megamem-97",
		"n2-standard-4-a-b-c-d-e", "n2-standard-44444444444444444444444444444444",
	};
	struct gcetype t;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(gcetype_parse(ok[i].name, &t) == 0, "%s", ok[i].name);
		ck_assert_str_eq(t.family, ok[i].family);
		ck_assert_msg(isnan(ok[i].vcpus) ? isnan(t.vcpus) : t.vcpus == ok[i].vcpus, "%s: %g", ok[i].name,
			      t.vcpus);
		ck_assert_msg(isnan(ok[i].gib) ? isnan(t.memory_gib) : fabs(t.memory_gib - ok[i].gib) < 1e-9, "%s: %g",
			      ok[i].name, t.memory_gib);
		ck_assert_msg(t.custom == ok[i].custom && t.extended == ok[i].extended, "%s", ok[i].name);
		ck_assert_msg(t.attach_gpus == ok[i].attach && t.per_shape == ok[i].per_shape, "%s", ok[i].name);
		ck_assert_uint_eq(t.tpu_chips, ok[i].chips);
		ck_assert_msg((t.tpu_key != NULL) == (ok[i].chips > 0), "%s", ok[i].name);
	}
	ck_assert_str_eq(gcetype_parse("ct5lp-hightpu-8t", &t) == 0 ? t.tpu_key : "", "tpu-v5e");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ck_assert_msg(gcetype_parse(refused[i], &t) == -1, "%s", refused[i]);
		ck_assert_str_eq(t.family, "");
		ck_assert(isnan(t.vcpus) && !t.custom && t.tpu_key == NULL);
	}
	ck_assert_int_eq(gcetype_parse(NULL, &t), -1);
}
END_TEST

/* Prices of a spread of shapes from the tables, and what each found code means. */
START_TEST(prices_of_a_spread)
{
	struct pricerec hp;
	const struct cloud_gpus t4 = {.vendor = CLOUD_PCI_NVIDIA, .device = 0x1eb8, .count = 2};
	const struct cloud_gpus h100 = {.vendor = CLOUD_PCI_NVIDIA, .device = 0x2330, .count = 1};
	const struct cloud_gpus v100 = {.vendor = CLOUD_PCI_NVIDIA, .device = 0x1db1, .count = 4};
	const struct pricebook_rate *r = pricebook_gce_rate("n2", "europe-west4");

	/* predefined: the family's rates in the region */
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(gcetype_price("n2-highmem-16", "europe-west4", NULL, 0, &hp), GCETYPE_PRICED);
	ck_assert_double_eq_tol(hp.usd_per_hour, 16 * r->usd_per_vcpu_hour + 128 * r->usd_per_gib_hour, 1e-12);
	ck_assert_double_eq_tol(hp.usd_per_hour_spot,
				16 * r->usd_per_vcpu_hour_spot + 128 * r->usd_per_gib_hour_spot, 1e-12);
	ck_assert_str_eq(hp.sources[0], r->source);
	ck_assert_str_eq(hp.as_of, pricebook_as_of(r->source));
	/* custom and extended: the same rates, marked a lower bound */
	ck_assert_int_eq(gcetype_price("n2-custom-8-65536-ext", "europe-west4", NULL, 0, &hp), GCETYPE_PRICED);
	ck_assert_double_eq_tol(hp.usd_per_hour, 8 * r->usd_per_vcpu_hour + 64 * r->usd_per_gib_hour, 1e-12);
	ck_assert(hp.lower_bound);
	ck_assert_ptr_nonnull(strstr(hp.source, "lower bound"));
	ck_assert_ptr_nonnull(strstr(hp.source, "custom SKUs higher"));
	/* shared-core: its own row, billed as a quarter vCPU */
	ck_assert_int_eq(gcetype_price("e2-micro", "us-central1", NULL, 0, &hp), GCETYPE_PRICED);
	ck_assert_double_eq(hp.vcpus, 0.25);
	ck_assert(hp.usd_per_hour > 0 && hp.usd_per_hour < 0.01);
	/* GPU-bundled: the row, and the GPU's own price for the split */
	ck_assert_int_eq(gcetype_price("a2-highgpu-1g", "us-central1", &t4, 1, &hp), GCETYPE_PRICED);
	ck_assert_ptr_nonnull(machines_find("gce", "a2-highgpu-1g", "us-central1"));
	ck_assert_double_eq_tol(hp.usd_per_hour, machines_find("gce", "a2-highgpu-1g", "us-central1")->usd_per_hour,
				1e-12);
	ck_assert_str_eq(hp.accelerator_key, "nvidia-a100-40gb");
	ck_assert_double_eq_tol(hp.accelerator_usd_per_hour,
				pricebook_gce_gpu("nvidia-a100-40gb", "us-central1")->usd_per_hour, 1e-12);
	/* n1 with V100s attached: the VM plus four V100 at GCE's price in the region, from a second source */
	r = pricebook_gce_rate("n1", "us-west1");
	ck_assert_int_eq(gcetype_price("n1-highmem-16", "us-west1", &v100, 1, &hp), GCETYPE_PRICED);
	ck_assert_double_eq_tol(hp.usd_per_hour, 16 * r->usd_per_vcpu_hour + 104 * r->usd_per_gib_hour + 4 * 2.48,
				1e-9);
	ck_assert_str_eq(hp.sources[0], "cyclenerd-gce@fd66b26f");
	ck_assert_str_eq(hp.sources[1], "skypilot-gcp@017e2502");
	ck_assert_str_eq(hp.as_of, "2025-08-30"); /* the older of the two */
	/* attached GPUs a region does not price: not here; a kind the tables lack: nowhere */
	ck_assert_int_eq(gcetype_price("n1-standard-8", "asia-northeast2", &t4, 1, &hp), GCETYPE_NOT_HERE);
	ck_assert(isnan(hp.usd_per_hour));
	ck_assert_int_eq(gcetype_price("n1-standard-8", "us-central1", &h100, 1, &hp), GCETYPE_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(hp.source, "10de:2330"));
	/* TPU hosts: the row; a host without one is priced by its chips */
	ck_assert_int_eq(gcetype_price("ct5lp-hightpu-8t", "europe-west4", NULL, 0, &hp), GCETYPE_PRICED);
	ck_assert_double_eq_tol(hp.usd_per_hour, 12.48, 1e-9);
	ck_assert_double_eq_tol(hp.accelerator_usd_per_hour, 1.56, 1e-12);
	ck_assert_int_eq(gcetype_price("ct6e-standard-2t", "us-east5", NULL, 0, &hp), GCETYPE_PRICED);
	ck_assert_double_eq_tol(hp.usd_per_hour, 2 * 2.7, 1e-9);
	ck_assert_double_eq_tol(hp.usd_per_hour_spot, 2 * 1.35, 1e-9);
	ck_assert_ptr_nonnull(strstr(hp.source, "2 chips x 2.7 USD/h"));
	ck_assert_int_eq(gcetype_price("ct6e-standard-4t", "southamerica-east1", NULL, 0, &hp), GCETYPE_NOT_HERE);
	/* not here and nowhere */
	ck_assert_int_eq(gcetype_price("n2-standard-2", "antarctica-south1", NULL, 0, &hp), GCETYPE_NOT_HERE);
	ck_assert_ptr_nonnull(strstr(hp.source, "no gce n2-standard-2 in antarctica-south1"));
	ck_assert_int_eq(gcetype_price("g2-standard-4", "antarctica-south1", NULL, 0, &hp), GCETYPE_NOT_HERE);
	ck_assert_int_eq(gcetype_price("e2-medium", "antarctica-south1", NULL, 0, &hp), GCETYPE_NOT_HERE);
	ck_assert_int_eq(gcetype_price("x9-standard-4", "us-central1", NULL, 0, &hp), GCETYPE_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(hp.source, "(in any region)"));
	ck_assert(isnan(hp.usd_per_hour) && isnan(hp.vcpus) && hp.sources[0][0] == '\0');
}
END_TEST

/* Every TPU host row is its chips at their price per chip. */
START_TEST(tpu_host_rows_are_their_chips)
{
	size_t n, rows = 0;
	const struct machine *t = machines_table(&n);

	for (size_t i = 0; i < n; i++) {
		struct gcetype g;
		const struct pricebook_unit *u;

		if (strcmp(t[i].cloud, "gce") != 0 || strncmp(t[i].accelerator_key, "tpu-", 4) != 0)
			continue;
		ck_assert_msg(gcetype_parse(t[i].instance_type, &g) == 0, "%s", t[i].instance_type);
		ck_assert_str_eq(g.tpu_key, t[i].accelerator_key);
		ck_assert_uint_eq(g.tpu_chips, t[i].accelerators);
		u = pricebook_tpu_chip(g.tpu_key, t[i].region);
		ck_assert_msg(u != NULL, "%s %s", t[i].instance_type, t[i].region);
		ck_assert_msg(fabs(g.tpu_chips * u->usd_per_hour - t[i].usd_per_hour) < 1e-6 * t[i].usd_per_hour,
			      "%s %s", t[i].instance_type, t[i].region);
		rows++;
	}
	ck_assert_uint_ge(rows, 70);
}
END_TEST

/* The worst relative error seen, for the failure message. */
struct worst {
	double err;
	char what[160];
};

static void note(struct worst *w, double err, const char *what, const char *region, double want, double got)
{
	if (err > w->err) {
		w->err = err;
		snprintf(w->what, sizeof(w->what), "%s %s: source %g, computed %g", what, region, want, got);
	}
}

START_TEST(whole_gce_table_within_one_percent)
{
	FILE *f = fopen(REFERENCE, "r");
	char line[512];
	size_t rows = 0, spots = 0, computed = 0, header = 1;
	struct worst od = {0, ""}, spot = {0, ""};

	ck_assert_msg(f != NULL, "%s: run from the repository root", REFERENCE);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *cols[8];
		size_t n;
		double vcpus, gib, want, want_spot;
		struct pricerec hp;
		struct gcetype t;

		csv_split_record(line, cols, 8, &n);
		if (header) {
			header = 0;
			continue;
		}
		ck_assert_uint_eq(n, 6);
		vcpus = csv_number(cols[2]);
		gib = csv_number(cols[3]);
		want = csv_number(cols[4]);
		want_spot = csv_number(cols[5]);
		ck_assert_msg(gcetype_price(cols[0], cols[1], NULL, 0, &hp) == GCETYPE_PRICED, "%s %s: %s", cols[0],
			      cols[1], hp.source);
		ck_assert_msg(fabs(hp.usd_per_hour - want) <= LIMIT * want, "%s %s: source %g, computed %g", cols[0],
			      cols[1], want, hp.usd_per_hour);
		note(&od, fabs(hp.usd_per_hour - want) / want, cols[0], cols[1], want, hp.usd_per_hour);
		if (isfinite(want_spot)) {
			ck_assert_msg(fabs(hp.usd_per_hour_spot - want_spot) <= LIMIT * want_spot,
				      "%s %s Spot: source %g, computed %g", cols[0], cols[1], want_spot,
				      hp.usd_per_hour_spot);
			note(&spot, fabs(hp.usd_per_hour_spot - want_spot) / want_spot, cols[0], cols[1], want_spot,
			     hp.usd_per_hour_spot);
			spots++;
		}
		/* the name gives the shape the source states (the rows carry their own) */
		if (machines_find("gce", cols[0], cols[1]) == NULL) {
			ck_assert_int_eq(gcetype_parse(cols[0], &t), 0);
			ck_assert_msg(t.vcpus == vcpus && fabs(t.memory_gib - gib) < 1e-9,
				      "%s: %g vCPU %g GiB, source %g %g", cols[0], t.vcpus, t.memory_gib, vcpus, gib);
			computed++;
		}
		rows++;
	}
	fclose(f);
	/* the whole table: every shape x region of the source, most of them computed from rates */
	ck_assert_uint_ge(rows, 13354);
	ck_assert_uint_ge(spots, 13186);
	ck_assert_uint_ge(computed, 5500);
	ck_assert_msg(od.err < 0.001 && spot.err < 0.001, "worst on demand %s; worst Spot %s", od.what, spot.what);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("gcetype");
	TCase *tc = tcase_create("gcetype");

	/* the whole-table test prices 13,354 shapes (Check's default 4 s is too short on a loaded two-core machine) */
	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, names_say_the_shape);
	tcase_add_test(tc, prices_of_a_spread);
	tcase_add_test(tc, tpu_host_rows_are_their_chips);
	tcase_add_test(tc, whole_gce_table_within_one_percent);
	suite_add_tcase(s, tc);
	return s;
}
