/* machines: the embedded machine price table (db/machines.csv) and its lookup. */
#include "cost/machines.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/csv.h"
#include "machines_csv.h"

#define MACHINES_MAX 512
#define MACHINES_COLS 11

enum col {
	C_CLOUD, C_TYPE, C_REGION, C_VCPUS, C_MEMORY, C_ACCELS, C_ACCEL_KEY, C_USD, C_USD_SPOT, C_SOURCE, C_AS_OF
};

/* Parsed once; the strings point into text, a writable copy of the embedded CSV. */
static char text[sizeof(machines_csv)];
static struct machine rows[MACHINES_MAX];
static size_t nrows;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse_table(void)
{
	char *p = text;
	char *cols[MACHINES_COLS];
	size_t n;
	int header = 1;

	memcpy(text, machines_csv, sizeof(text));
	while (*p && nrows < MACHINES_MAX) {
		struct machine *m = &rows[nrows];

		p = csv_split_record(p, cols, MACHINES_COLS, &n);
		if (header) {
			header = 0;
			continue;
		}
		if (n != MACHINES_COLS || cols[C_CLOUD][0] == '\0' || cols[C_TYPE][0] == '\0' || cols[C_REGION][0] == '\0')
			continue;
		m->cloud = cols[C_CLOUD];
		m->instance_type = cols[C_TYPE];
		m->region = cols[C_REGION];
		m->vcpus = csv_number(cols[C_VCPUS]);
		m->memory_gib = csv_number(cols[C_MEMORY]);
		m->accelerators = csv_uint(cols[C_ACCELS], 10, 1024);
		m->accelerator_key = cols[C_ACCEL_KEY];
		m->usd_per_hour = csv_number(cols[C_USD]);
		m->usd_per_hour_spot = csv_number(cols[C_USD_SPOT]);
		m->source = cols[C_SOURCE];
		m->as_of = cols[C_AS_OF];
		nrows++;
	}
}

const struct machine *machines_table(size_t *n)
{
	pthread_once(&once, parse_table);
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
		if (strcmp(t[i].cloud, cloud) == 0 && strcasecmp(t[i].instance_type, instance_type) == 0 &&
		    strcasecmp(t[i].region, region) == 0)
			return &t[i];
	return NULL;
}

int machines_knows_type(const char *cloud, const char *instance_type)
{
	size_t n;
	const struct machine *t = machines_table(&n);

	for (size_t i = 0; cloud != NULL && instance_type != NULL && i < n; i++)
		if (strcmp(t[i].cloud, cloud) == 0 && strcasecmp(t[i].instance_type, instance_type) == 0)
			return 1;
	return 0;
}
