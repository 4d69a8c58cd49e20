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
	snprintf(out->source, sizeof(out->source), "built-in table: %s %.60s %.60s: %.60s, as of %.12s", m->cloud,
		 m->instance_type, m->region, m->source, pricebook_as_of(m->source));
}
