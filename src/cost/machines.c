/* machines: the embedded per-shape price tables (db/prices/aws.csv, azure.csv, gce_shapes.csv) and their lookup. */
#include "cost/machines.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "aws_csv.h"
#include "azure_csv.h"
#include "core/csv.h"
#include "core/mem.h"
#include "cost/pricebook.h"
#include "cost/pricerec.h"
#include "gce_shapes_csv.h"

enum col { C_TYPE, C_REGION, C_VCPUS, C_MEMORY, C_ACCELS, C_ACCEL_KEY, C_USD, C_USD_SPOT, C_SOURCE, C_COLS };

/* Parsed once; the strings point into writable copies of the embedded CSVs. */
static char aws_text[sizeof(aws_csv)], azure_text[sizeof(azure_csv)], gce_text[sizeof(gce_shapes_csv)];
static struct machine *rows;
static size_t nrows;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Appends the rows of one cloud's table (its header first) to rows. */
static void parse_cloud(const char *cloud, char *text)
{
	char *cols[C_COLS + 1];
	char *p = text;
	size_t n;

	p = csv_split_record(p, cols, C_COLS + 1, &n);
	while (*p) {
		struct machine *m = &rows[nrows];

		p = csv_split_record(p, cols, C_COLS + 1, &n);
		if (n != C_COLS || cols[C_TYPE][0] == '\0' || cols[C_REGION][0] == '\0')
			continue;
		m->cloud = cloud;
		m->instance_type = cols[C_TYPE];
		m->region = cols[C_REGION];
		m->vcpus = csv_number(cols[C_VCPUS]);
		m->memory_gib = csv_number(cols[C_MEMORY]);
		m->accelerators = csv_uint(cols[C_ACCELS], 10, 1024);
		m->accelerator_key = cols[C_ACCEL_KEY];
		m->usd_per_hour = csv_number(cols[C_USD]);
		m->usd_per_hour_spot = csv_number(cols[C_USD_SPOT]);
		m->source = pricebook_source_id(cols[C_SOURCE]);
		nrows++;
	}
}

static void parse_tables(void)
{
	memcpy(gce_text, gce_shapes_csv, sizeof(gce_text));
	memcpy(aws_text, aws_csv, sizeof(aws_text));
	memcpy(azure_text, azure_csv, sizeof(azure_text));
	rows = xcalloc(csv_records(gce_text) + csv_records(aws_text) + csv_records(azure_text), sizeof(*rows));
	parse_cloud("gce", gce_text);
	parse_cloud("aws", aws_text);
	parse_cloud("azure", azure_text);
}

const struct machine *machines_table(size_t *n)
{
	pthread_once(&once, parse_tables);
	*n = nrows;
	return rows;
}

const struct machine *machines_find(const char *cloud, const char *instance_type, const char *region)
{
	size_t n;
	const struct machine *t = machines_table(&n);

	if (cloud == NULL || instance_type == NULL || region == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(t[i].instance_type, instance_type) == 0 && strcasecmp(t[i].region, region) == 0 &&
		    strcmp(t[i].cloud, cloud) == 0)
			return &t[i];
	return NULL;
}

int machines_knows_type(const char *cloud, const char *instance_type)
{
	size_t n;
	const struct machine *t = machines_table(&n);

	for (size_t i = 0; cloud != NULL && instance_type != NULL && i < n; i++)
		if (strcasecmp(t[i].instance_type, instance_type) == 0 && strcmp(t[i].cloud, cloud) == 0)
			return 1;
	return 0;
}

/*
 * The unbundled families whose sizes price a vCPU and a GiB in a region, per cloud: compute, general purpose and
 * memory (2, 4 and 8 GiB per vCPU) of one generation, sold in every region the tables hold; and the region whose
 * rates stand in where a region lacks them. A name is the family's prefix and suffix around the size.
 */
static const struct unbundled {
	const char *cloud;
	const char *fallback;
	const char *families[3][2];
} unbundled[] = {
	{"aws", "us-east-1", {{"c6i.", ""}, {"m6i.", ""}, {"r6i.", ""}}},
	{"azure", "eastus", {{"Standard_F", "s_v2"}, {"Standard_D", "s_v5"}, {"Standard_E", "s_v5"}}},
};

/* Whether name is prefix, a size (digits, or a word for EC2) and suffix, a metal size left out. */
static bool of_family(const char *name, const char *prefix, const char *suffix)
{
	size_t np = strlen(prefix), ns = strlen(suffix), n = strlen(name);

	if (n <= np + ns || strncmp(name, prefix, np) != 0 || strcmp(name + n - ns, suffix) != 0 ||
	    strstr(name, "metal") != NULL)
		return false;
	for (size_t i = np; ns > 0 && i < n - ns; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

/*
 * The per-vCPU and per-GiB rates (*a, *b) fitted to the families' sizes in region, on demand or Spot (least
 * squares of the relative error); false where fewer than two sizes with distinct GiB per vCPU are priced.
 */
static bool fit_rates(const struct unbundled *u, const char *region, bool spot, double *a, double *b)
{
	size_t n;
	const struct machine *t = machines_table(&n);
	double svv = 0, svg = 0, sgg = 0, svp = 0, sgp = 0, det;

	for (size_t i = 0; i < n; i++) {
		const struct machine *m = &t[i];
		double p = spot ? m->usd_per_hour_spot : m->usd_per_hour, v, g;
		bool member = false;

		if (strcmp(m->cloud, u->cloud) != 0 || strcasecmp(m->region, region) != 0 || !isfinite(p) || p <= 0 ||
		    !(m->vcpus > 0) || !(m->memory_gib > 0))
			continue;
		for (size_t f = 0; f < 3 && !member; f++)
			member = of_family(m->instance_type, u->families[f][0], u->families[f][1]);
		if (!member)
			continue;
		v = m->vcpus / p;
		g = m->memory_gib / p;
		svv += v * v, svg += v * g, sgg += g * g, svp += v, sgp += g;
	}
	det = svv * sgg - svg * svg;
	if (!(fabs(det) > 1e-12 * svv * sgg))
		return false;
	*a = (svp * sgg - sgp * svg) / det;
	*b = (sgp * svv - svp * svg) / det;
	return *a > 0 && *b >= 0;
}

const char *machines_unbundled(const char *cloud, const char *region, double vcpus, double memory_gib,
			       double *usd_per_hour, double *usd_per_hour_spot)
{
	double a, b;

	*usd_per_hour = *usd_per_hour_spot = NAN;
	if (cloud == NULL || region == NULL || !(vcpus > 0) || !(memory_gib >= 0))
		return NULL;
	for (size_t i = 0; i < sizeof(unbundled) / sizeof(unbundled[0]); i++) {
		const struct unbundled *u = &unbundled[i];
		const char *where = region;

		if (strcmp(u->cloud, cloud) != 0)
			continue;
		if (!fit_rates(u, where, false, &a, &b)) {
			where = u->fallback;
			if (!fit_rates(u, where, false, &a, &b))
				return NULL;
		}
		*usd_per_hour = vcpus * a + memory_gib * b;
		if (fit_rates(u, where, true, &a, &b))
			*usd_per_hour_spot = vcpus * a + memory_gib * b;
		return where;
	}
	return NULL;
}

void machines_price(const struct machine *m, struct pricerec *out)
{
	pricerec_init(out);
	out->usd_per_hour = m->usd_per_hour;
	out->usd_per_hour_spot = m->usd_per_hour_spot;
	out->vcpus = m->vcpus;
	out->memory_gib = m->memory_gib;
	out->accelerators = m->accelerators;
	snprintf(out->accelerator_key, sizeof(out->accelerator_key), "%s", m->accelerator_key);
	pricerec_add_source(out, m->source);
	if (m->accelerators > 0) {
		const char *where = machines_unbundled(m->cloud, m->region, m->vcpus, m->memory_gib,
						       &out->cpu_usd_per_hour, &out->cpu_usd_per_hour_spot);

		if (where != NULL)
			snprintf(out->cpu_like, sizeof(out->cpu_like), "%s rates in %.24s",
				 strcmp(m->cloud, "aws") == 0 ? "c6i/m6i/r6i" : "Fsv2/Dsv5/Esv5", where);
	}
	snprintf(out->source, sizeof(out->source), "built-in table: %s %.60s %.60s: %.60s, as of %.12s", m->cloud,
		 m->instance_type, m->region, m->source, pricebook_as_of(m->source));
}
