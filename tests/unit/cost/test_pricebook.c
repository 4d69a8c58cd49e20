/*
 * Unit tests for pricebook.c: the embedded GCE rate, GPU and TPU chip tables are whole, priced, sourced (every id in
 * sources.csv, spelled out) and dated, one row per key and region; lookups find exact rows only.
 */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "cost/pricebook.h"
#include "detect/specs.h"

/* A row's source is in sources.csv, which dates it. */
static void sourced(const char *what, const char *region, const char *source)
{
	const struct pricebook_source *s = pricebook_source(source);

	ck_assert_msg(s != NULL, "%s %s: source %s not in sources.csv", what, region, source);
	ck_assert_str_eq(pricebook_as_of(source), s->as_of);
}

START_TEST(sources_are_spelled_out)
{
	size_t n;
	const struct pricebook_source *t = pricebook_sources(&n);

	ck_assert_uint_ge(n, 6);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(strlen(t[i].description) > 20, "%s", t[i].id);
		ck_assert_msg(strlen(t[i].as_of) == 10 && t[i].as_of[4] == '-' && t[i].as_of[7] == '-', "%s", t[i].id);
		ck_assert_msg(t[i].url[0] == '\0' || strncmp(t[i].url, "https://", 8) == 0, "%s", t[i].id);
		ck_assert_msg(strchr(t[i].id, '@') != NULL, "%s", t[i].id);
	}
	ck_assert_str_eq(pricebook_source("cocalc-gcp@1.17.0")->as_of, "2026-02-24");
	ck_assert_ptr_null(pricebook_source("nope"));
	ck_assert_str_eq(pricebook_as_of("nope"), "");
	ck_assert_ptr_null(pricebook_source(NULL));
}
END_TEST

START_TEST(rates_are_whole)
{
	size_t n;
	const struct pricebook_rate *t = pricebook_gce_rates(&n);
	const char *families[] = {"c2", "c2d", "c3", "c3d", "c4", "c4a", "e2", "m1", "m2", "m3", "n1", "n2", "n2d",
				  "n4", "t2a", "t2d"};

	ck_assert_uint_ge(n, 350);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(isfinite(t[i].usd_per_vcpu_hour) && t[i].usd_per_vcpu_hour > 0, "%s %s", t[i].family,
			      t[i].region);
		ck_assert_msg(isfinite(t[i].usd_per_gib_hour) && t[i].usd_per_gib_hour >= 0, "%s %s", t[i].family,
			      t[i].region);
		/* memory folded into the vCPU rate exactly where the fit says so */
		ck_assert_msg((strcmp(t[i].fit, "vcpu-only") == 0) == (t[i].usd_per_gib_hour == 0), "%s %s",
			      t[i].family, t[i].region);
		ck_assert_msg(isnan(t[i].usd_per_vcpu_hour_spot) ||
				      t[i].usd_per_vcpu_hour_spot < t[i].usd_per_vcpu_hour,
			      "%s %s", t[i].family, t[i].region);
		sourced(t[i].family, t[i].region, t[i].source);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(t[i].family, t[j].family) || strcmp(t[i].region, t[j].region),
				      "%s %s twice", t[i].family, t[i].region);
	}
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		size_t regions = 0;

		for (size_t i = 0; i < n; i++)
			regions += strcmp(t[i].family, families[f]) == 0;
		ck_assert_msg(regions >= 3, "%s in %zu regions", families[f], regions);
	}
	ck_assert_double_eq_tol(pricebook_gce_rate("n2", "us-central1")->usd_per_vcpu_hour, 0.031611, 1e-12);
	ck_assert_double_eq_tol(pricebook_gce_rate("n2", "us-central1")->usd_per_gib_hour, 0.004237, 1e-12);
	ck_assert_ptr_null(pricebook_gce_rate("n2", "antarctica-south1"));
	ck_assert_ptr_null(pricebook_gce_rate("a3", "us-central1")); /* priced per shape */
	ck_assert_ptr_null(pricebook_gce_rate(NULL, "us-central1"));
}
END_TEST

/* GPU and chip rows: every key an accelerator table row, priced, Spot below on demand, sourced, once each. */
static void units_are_whole(const struct pricebook_unit *t, size_t n, const char *prefix)
{
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(strncmp(t[i].key, prefix, strlen(prefix)) == 0, "%s", t[i].key);
		ck_assert_msg(specs_find_key(t[i].key) != NULL, "%s has no accelerator table row", t[i].key);
		ck_assert_msg(isfinite(t[i].usd_per_hour) && t[i].usd_per_hour > 0, "%s %s", t[i].key, t[i].region);
		ck_assert_msg(isnan(t[i].usd_per_hour_spot) || t[i].usd_per_hour_spot < t[i].usd_per_hour, "%s %s",
			      t[i].key, t[i].region);
		sourced(t[i].key, t[i].region, t[i].source);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(t[i].key, t[j].key) || strcmp(t[i].region, t[j].region), "%s %s twice",
				      t[i].key, t[i].region);
	}
}

START_TEST(gpus_and_chips_are_whole)
{
	size_t n;
	const struct pricebook_unit *g = pricebook_gce_gpus(&n);
	const char *attached[] = {"nvidia-t4", "nvidia-v100", "nvidia-p100", "nvidia-p4"};
	const char *tpus[] = {"tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"};

	ck_assert_uint_ge(n, 90);
	units_are_whole(g, n, "nvidia-");
	/* the GPUs GCE attaches to n1 are known by their PCI ids, so a host's bus names them */
	for (size_t i = 0; i < sizeof(attached) / sizeof(attached[0]); i++) {
		const struct spec *s = specs_find_key(attached[i]);

		ck_assert_ptr_nonnull(pricebook_gce_gpu(attached[i], "us-central1"));
		ck_assert_ptr_nonnull(s);
		ck_assert_ptr_eq(specs_find_pci(0x10de, s->pci_device, 0), s);
	}
	ck_assert_double_eq_tol(pricebook_gce_gpu("nvidia-t4", "us-central1")->usd_per_hour, 0.35, 1e-12);
	ck_assert_ptr_null(pricebook_gce_gpu("nvidia-t4", "asia-northeast2"));
	g = pricebook_tpu_chips(&n);
	ck_assert_uint_ge(n, 30);
	units_are_whole(g, n, "tpu-");
	for (size_t i = 0; i < sizeof(tpus) / sizeof(tpus[0]); i++)
		ck_assert_msg(pricebook_tpu_chip(tpus[i], "us-central1") != NULL ||
				      pricebook_tpu_chip(tpus[i], "us-central2") != NULL,
			      "%s", tpus[i]);
	ck_assert_double_eq_tol(pricebook_tpu_chip("tpu-v6e", "us-central1")->usd_per_hour, 2.7, 1e-12);
	ck_assert_ptr_null(pricebook_tpu_chip("tpu-v6e", NULL));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pricebook");
	TCase *tc = tcase_create("pricebook");

	tcase_add_test(tc, sources_are_spelled_out);
	tcase_add_test(tc, rates_are_whole);
	tcase_add_test(tc, gpus_and_chips_are_whole);
	suite_add_tcase(s, tc);
	return s;
}
