/* machines: the embedded per-shape price tables (db/prices/aws.csv, azure.csv, gce_shapes.csv) and their lookup. */
#include "cost/machines.h"

#include <math.h>
#include <pthread.h>
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
		m->source = cols[C_SOURCE];
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

/* How far a shape of v vCPUs and g GiB lies from the wanted ones: GiB per vCPU first, then the size. */
static double distance(double v, double g, double want_v, double want_g)
{
	return fabs(log((g / v) / (want_g / want_v))) * 16 + fabs(log(v / want_v));
}

const struct machine *machines_unbundled(const char *cloud, const char *region, double vcpus, double memory_gib,
					 double *usd_per_hour, double *usd_per_hour_spot)
{
	size_t n;
	const struct machine *t = machines_table(&n), *best = NULL;
	double best_d = INFINITY;

	*usd_per_hour = *usd_per_hour_spot = NAN;
	if (cloud == NULL || region == NULL || !(vcpus > 0) || !(memory_gib > 0))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct machine *m = &t[i];
		double d;

		if (m->accelerators > 0 || m->accelerator_key[0] != '\0' || !(m->vcpus > 0) || !(m->memory_gib > 0) ||
		    !isfinite(m->usd_per_hour) || strcmp(m->cloud, cloud) != 0 || strcasecmp(m->region, region) != 0)
			continue;
		d = distance(m->vcpus, m->memory_gib, vcpus, memory_gib);
		if (best == NULL || d < best_d - 1e-9 ||
		    (fabs(d - best_d) <= 1e-9 && m->usd_per_hour / m->vcpus < best->usd_per_hour / best->vcpus)) {
			best = m;
			best_d = d;
		}
	}
	if (best == NULL)
		return NULL;
	*usd_per_hour = best->usd_per_hour / best->vcpus * vcpus;
	*usd_per_hour_spot = best->usd_per_hour_spot / best->vcpus * vcpus;
	return best;
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
		const struct machine *like = machines_unbundled(m->cloud, m->region, m->vcpus, m->memory_gib,
								&out->cpu_usd_per_hour, &out->cpu_usd_per_hour_spot);

		if (like != NULL)
			snprintf(out->cpu_like, sizeof(out->cpu_like), "%.47s", like->instance_type);
	}
	snprintf(out->source, sizeof(out->source), "built-in table: %s %.60s %.60s: %.60s, as of %.12s", m->cloud,
		 m->instance_type, m->region, m->source, pricebook_as_of(m->source));
}
