/*
 * Unit tests for machines.c: the per-shape tables against their sources, and the unbundled rates.
 *
 * Karpenter's Azure list (tools/prices/src/karpenter-azure-2b431da1-extract.go, in the repository: its
 * westeurope, northeurope, southeastasia and japaneast blocks, and eastus for the build's check): every (size,
 * region) of the four regions the table answers from that source is within 1 % of the file's price; a size the
 * build found Windows-priced is left out; each of the four regions prices D, E, F, NC and ND sizes.
 *
 * SkyPilot's v8 AWS catalog (the rows read: P4, P5 and P6 in tools/prices/src/skypilot-aws-v8-e385a0d3-p.csv; i7i,
 * i7ie, i8g, i8ge and im4gn in the table's seven storage regions in tools/prices/src/skypilot-aws-v8-e385a0d3-i.csv): every
 * (type, region) the table answers from it is the file's on-demand price and its lowest zone's Spot price, to 1 %.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "core/csv.h"
#include "cost/machines.h"

#define KARPENTER_AZURE "tools/prices/src/karpenter-azure-2b431da1-extract.go"
static const char *const skypilot_aws_v8[] = {"tools/prices/src/skypilot-aws-v8-e385a0d3-p.csv",
					       "tools/prices/src/skypilot-aws-v8-e385a0d3-i.csv"};
#define KARPENTER_AZURE_ID "karpenter-azure@2b431da1"

static const char *const regions[] = {"westeurope", "northeurope", "southeastasia", "japaneast"};

static bool one_of_the_regions(const char *r)
{
	for (size_t i = 0; i < sizeof(regions) / sizeof(regions[0]); i++)
		if (strcmp(r, regions[i]) == 0)
			return true;
	return false;
}

START_TEST(karpenter_azure_rows_match_their_source)
{
	FILE *f = fopen(KARPENTER_AZURE, "r");
	char line[256], region[64] = "", name[96];
	double price;
	size_t answered = 0, left_out = 0, listed = 0, rows = 0, n;
	const struct machine *t = machines_table(&n);

	ck_assert_msg(f != NULL, "%s", KARPENTER_AZURE);
	while (fgets(line, sizeof(line), f) != NULL) {
		const struct machine *m;

		if (sscanf(line, " initialOnDemandPrices[\"%63[^\"]\"]", region) == 1)
			continue;
		if (sscanf(line, " \"%95[^\"]\": %lf,", name, &price) != 2 || !one_of_the_regions(region))
			continue;
		listed++;
		m = machines_find("azure", name, region);
		if (m == NULL) {
			left_out++;
			continue;
		}
		ck_assert_str_eq(m->source, KARPENTER_AZURE_ID);
		ck_assert_msg(fabs(m->usd_per_hour - price) <= 0.01 * price, "%s %s: %g, the source %g", name, region,
			      m->usd_per_hour, price);
		ck_assert_msg(isnan(m->usd_per_hour_spot), "%s %s: the source has no Spot price", name, region);
		answered++;
	}
	fclose(f);
	/* and the table has no row of that source the file lacks */
	for (size_t i = 0; i < n; i++)
		rows += strcmp(t[i].source, KARPENTER_AZURE_ID) == 0;
	ck_assert_uint_eq(rows, answered);
	ck_assert_uint_ge(listed, 6000);
	ck_assert_uint_ge(answered, 2000);
	ck_assert_uint_gt(left_out, 0);
}
END_TEST

START_TEST(windows_priced_azure_rows_are_left_out)
{
	/* the source's westeurope D*ads_v5 rows: D16ads_v5 carries the Windows price, 0.046 USD per vCPU-hour above
	 * the family's Linux rate that D4ads_v5 (kept) shows; likewise northeurope's D2ads_v5 against D4ads_v5 */
	static const struct {
		const char *windows, *linux, *region;
	} cases[] = {
		{"Standard_D16ads_v5", "Standard_D4ads_v5", "westeurope"},
		{"Standard_D2ads_v5", "Standard_D4ads_v5", "northeurope"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct machine *lin = machines_find("azure", cases[i].linux, cases[i].region);

		ck_assert_msg(machines_find("azure", cases[i].windows, cases[i].region) == NULL, "%s %s",
			      cases[i].windows, cases[i].region);
		ck_assert_ptr_nonnull(lin);
		ck_assert(machines_knows_type("azure", cases[i].windows)); /* priced elsewhere, from the US catalog */
	}
}
END_TEST

START_TEST(four_regions_price_d_e_f_nc_and_nd)
{
	static const char *const series[] = {"Standard_D", "Standard_E", "Standard_F", "Standard_NC", "Standard_ND"};
	size_t n;
	const struct machine *t = machines_table(&n);

	for (size_t r = 0; r < sizeof(regions) / sizeof(regions[0]); r++)
		for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
			size_t found = 0;

			for (size_t i = 0; i < n; i++)
				found += strcmp(t[i].cloud, "azure") == 0 && strcmp(t[i].region, regions[r]) == 0 &&
					 strncmp(t[i].instance_type, series[s], strlen(series[s])) == 0 &&
					 isfinite(t[i].usd_per_hour) && t[i].usd_per_hour > 0;
			ck_assert_msg(found >= 3, "%s %s*: %zu sizes", regions[r], series[s], found);
		}
	ck_assert_ptr_nonnull(machines_find("azure", "Standard_D8s_v5", "westeurope"));
	ck_assert_ptr_nonnull(machines_find("azure", "Standard_E8s_v5", "northeurope"));
	ck_assert_ptr_nonnull(machines_find("azure", "Standard_F8s_v2", "southeastasia"));
	ck_assert_ptr_nonnull(machines_find("azure", "Standard_NC24ads_A100_v4", "japaneast"));
}
END_TEST

/* One (type, region) of the v8 extract: its on-demand price and lowest real Spot price over the zones. */
struct v8_row {
	char type[32], region[32];
	double price, spot;
};

/* Adds the rows of one v8 extract to rows[0..*n), one per (type, region). */
static void read_v8(const char *path, struct v8_row *rows, size_t cap, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[512];

	ck_assert_msg(f != NULL, "%s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *cols[12];
		size_t nc, i;
		double price, spot;

		if (line[0] == '#' || strncmp(line, "InstanceType,", 13) == 0)
			continue;
		csv_split_record(line, cols, 12, &nc);
		ck_assert_uint_eq(nc, 9);
		price = csv_number(cols[5]);
		spot = csv_number(cols[6]);
		if (isfinite(spot) && spot >= 0.999 * price)
			spot = NAN; /* the catalog repeats the on-demand price where a zone has no Spot price */
		for (i = 0; i < *n; i++)
			if (strcmp(rows[i].type, cols[0]) == 0 && strcmp(rows[i].region, cols[7]) == 0)
				break;
		if (i == *n) {
			ck_assert_uint_lt(*n, cap);
			snprintf(rows[*n].type, sizeof(rows[*n].type), "%s", cols[0]);
			snprintf(rows[*n].region, sizeof(rows[*n].region), "%s", cols[7]);
			rows[*n].price = price;
			rows[*n].spot = spot;
			(*n)++;
		} else if (isfinite(spot) && (!isfinite(rows[i].spot) || spot < rows[i].spot)) {
			rows[i].spot = spot;
		}
	}
	fclose(f);
}

START_TEST(skypilot_aws_v8_rows_match_their_source)
{
	static struct v8_row rows[320];
	size_t n = 0, answered = 0, spots = 0;

	for (size_t k = 0; k < sizeof(skypilot_aws_v8) / sizeof(skypilot_aws_v8[0]); k++)
		read_v8(skypilot_aws_v8[k], rows, sizeof(rows) / sizeof(rows[0]), &n);
	for (size_t i = 0; i < n; i++) {
		const struct machine *m = machines_find("aws", rows[i].type, rows[i].region);

		ck_assert_msg(m != NULL, "%s %s", rows[i].type, rows[i].region);
		ck_assert_str_eq(m->source, "skypilot-aws@e385a0d3");
		ck_assert_msg(fabs(m->usd_per_hour - rows[i].price) <= 0.01 * rows[i].price, "%s %s: %g, the source %g",
			      rows[i].type, rows[i].region, m->usd_per_hour, rows[i].price);
		if (isfinite(rows[i].spot)) {
			ck_assert_msg(fabs(m->usd_per_hour_spot - rows[i].spot) <= 0.01 * rows[i].spot,
				      "%s %s Spot: %g, the source %g", rows[i].type, rows[i].region,
				      m->usd_per_hour_spot, rows[i].spot);
			spots++;
		} else {
			ck_assert_msg(isnan(m->usd_per_hour_spot), "%s %s", rows[i].type, rows[i].region);
		}
		answered++;
	}
	ck_assert_uint_ge(answered, 303);
	ck_assert_uint_ge(spots, 283);
	/* the P5 price after AWS's cut, read in each region, not scaled from us-east-1 */
	ck_assert_double_eq_tol(machines_find("aws", "p5.48xlarge", "eu-west-2")->usd_per_hour, 71.552, 1e-9);
	/* i7i read in eu-central-1, no longer us-east-1 only (Karpenter's list); im4gn in ap-southeast-1 */
	ck_assert_double_eq_tol(machines_find("aws", "i7i.2xlarge", "eu-central-1")->usd_per_hour, 0.9002, 1e-9);
	ck_assert_double_eq_tol(machines_find("aws", "im4gn.xlarge", "ap-southeast-1")->usd_per_hour_spot, 0.1386, 1e-9);
}
END_TEST

/* GCE GPU shapes from SkyPilot's v8 catalog: its VM part plus the GPUs at gce_gpus.csv's price; Spot the file's own
 * VM and GPU Spot prices (tests/deploy/test_price_sources.py holds every row to the file) */
START_TEST(gce_v8_gpu_shapes)
{
	const struct machine *m = machines_find("gce", "a3-ultragpu-8g", "us-west1");

	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->source, "skypilot-gcp@8427bbff");
	ck_assert_uint_eq(m->accelerators, 8);
	ck_assert_str_eq(m->accelerator_key, "nvidia-h200");
	ck_assert_double_eq_tol(m->usd_per_hour, 12.266 + 8 * 9.31174, 1e-6);
	ck_assert_double_eq_tol(m->usd_per_hour_spot, 3.56978 + 37.2472, 1e-6);
	m = machines_find("gce", "a4-highgpu-8g", "us-central1");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->accelerator_key, "nvidia-b200");
	ck_assert_double_eq_tol(m->usd_per_hour, 90.216, 1e-6);
	ck_assert_double_eq_tol(m->usd_per_hour_spot, 32.6064, 1e-6);
	ck_assert_ptr_nonnull(machines_find("gce", "a3-edgegpu-8g", "us-central1"));
	/* H100 priced per GPU by the v8 file where no other source does: a3-edgegpu-8g in asia-south1 */
	m = machines_find("gce", "a3-edgegpu-8g", "asia-south1");
	ck_assert_ptr_nonnull(m);
	ck_assert_double_eq_tol(m->usd_per_hour, 9.83846 + 81.50728, 1e-6);
	ck_assert_double_eq_tol(m->usd_per_hour_spot, 2.14573 + 17.752, 1e-6);
	/* a shape whose GPU has no price in the region is not in the table (the v8 file's H200 price in asia-south1
	 * is its flat second set, below its own Spot price) */
	ck_assert_ptr_null(machines_find("gce", "a3-ultragpu-8g", "asia-south1"));
}
END_TEST

START_TEST(unbundled_rates_price_cpu_and_memory)
{
	double od, spot;
	const char *where;
	const struct machine *m = machines_find("aws", "r6i.8xlarge", "us-east-1");

	/* an r6i size is priced close to itself (the fit over c6i, m6i and r6i sizes) */
	where = machines_unbundled("aws", "us-east-1", m->vcpus, m->memory_gib, &od, &spot);
	ck_assert_str_eq(where, "us-east-1");
	ck_assert_double_eq_tol(od, m->usd_per_hour, 0.05 * m->usd_per_hour);
	ck_assert(spot > 0 && spot < od);
	/* a region without those families borrows the reference region's rates */
	where = machines_unbundled("aws", "sa-east-1", 8, 64, &od, &spot);
	ck_assert_str_eq(where, "us-east-1");
	/* Azure in Europe: Karpenter's rows have no Spot */
	where = machines_unbundled("azure", "westeurope", 24, 220, &od, &spot);
	ck_assert_str_eq(where, "westeurope");
	ck_assert(od > 0 && isnan(spot));
	/* a cloud without such families */
	ck_assert_ptr_null(machines_unbundled("gce", "us-central1", 8, 32, &od, &spot));
	ck_assert(isnan(od) && isnan(spot));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("machines");
	TCase *tc = tcase_create("machines");

	tcase_add_test(tc, karpenter_azure_rows_match_their_source);
	tcase_add_test(tc, windows_priced_azure_rows_are_left_out);
	tcase_add_test(tc, four_regions_price_d_e_f_nc_and_nd);
	tcase_add_test(tc, skypilot_aws_v8_rows_match_their_source);
	tcase_add_test(tc, gce_v8_gpu_shapes);
	tcase_add_test(tc, unbundled_rates_price_cpu_and_memory);
	suite_add_tcase(s, tc);
	return s;
}
