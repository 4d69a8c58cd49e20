/*
 * Unit tests for regions.c: every region a price table names is placed, the table has each region once, distances
 * are great-circle kilometres (symmetric, zero to itself, of the right size), and a region the table does not know
 * ranks its namesakes first, after every placed region.
 */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "cost/machines.h"
#include "cost/pricebook.h"
#include "cost/regions.h"

static void placed(const char *cloud, const char *region)
{
	const struct region *r = regions_find(cloud, region);

	ck_assert_msg(r != NULL && isfinite(r->latitude) && isfinite(r->longitude), "%s %s is not placed", cloud,
		      region);
}

START_TEST(every_priced_region_is_placed)
{
	size_t n;
	const struct machine *m = machines_table(&n);
	const struct pricebook_rate *r;
	const struct pricebook_unit *u;
	const struct region *t;

	for (size_t i = 0; i < n; i++)
		placed(m[i].cloud, m[i].region);
	r = pricebook_gce_rates(&n);
	for (size_t i = 0; i < n; i++)
		placed("gce", r[i].region);
	u = pricebook_gce_gpus(&n);
	for (size_t i = 0; i < n; i++)
		placed("gce", u[i].region);
	u = pricebook_tpu_chips(&n);
	for (size_t i = 0; i < n; i++)
		placed("gce", u[i].region);
	t = regions_table(&n);
	ck_assert_uint_ge(n, 100);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(fabs(t[i].latitude) <= 90 && fabs(t[i].longitude) <= 180, "%s", t[i].name);
		ck_assert_msg(t[i].place[0] != '\0', "%s", t[i].name);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(t[i].cloud, t[j].cloud) || strcmp(t[i].name, t[j].name), "%s twice",
				      t[i].name);
	}
	/* the regions issue 26 names are placed even where the tables price nothing yet */
	placed("azure", "westeurope");
	placed("azure", "northeurope");
	placed("azure", "southeastasia");
	placed("azure", "japaneast");
	ck_assert_ptr_null(regions_find("gce", "us-east-1"));
	ck_assert_ptr_null(regions_find(NULL, "us-east-1"));
}
END_TEST

START_TEST(distances)
{
	double d = regions_distance("gce", "us-central1", "europe-west4");

	ck_assert_double_eq(regions_distance("gce", "us-central1", "us-central1"), 0);
	ck_assert_double_eq(regions_distance("gce", "us-central1", "europe-west4"),
			    regions_distance("gce", "europe-west4", "us-central1"));
	ck_assert_msg(d > 6500 && d < 7500, "%g", d); /* Iowa to Groningen, about 7,000 km */
	d = regions_distance("aws", "us-east-1", "us-east-2");
	ck_assert_msg(d > 400 && d < 600, "%g", d); /* Virginia to Ohio */
	d = regions_distance("azure", "japaneast", "westus2");
	ck_assert_msg(d > 7000 && d < 8500, "%g", d);
	ck_assert(regions_placed("azure", "japaneast", "westus2"));
	/* an unknown region: behind every placed one, its namesakes first */
	ck_assert(!regions_placed("gce", "europe-west15", "europe-west1"));
	ck_assert(regions_distance("gce", "europe-west15", "europe-west1") > 20100);
	ck_assert(regions_distance("gce", "europe-west15", "europe-west1") <
		  regions_distance("gce", "europe-west15", "europe-north1"));
	ck_assert(regions_distance("gce", "europe-west15", "europe-north1") <
		  regions_distance("gce", "europe-west15", "us-east1"));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("regions");
	TCase *tc = tcase_create("regions");

	tcase_add_test(tc, every_priced_region_is_placed);
	tcase_add_test(tc, distances);
	suite_add_tcase(s, tc);
	return s;
}
