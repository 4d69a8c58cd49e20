/* regions: the embedded region table (db/prices/regions.csv) and distances between regions. */
#include "cost/regions.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/csv.h"
#include "core/mem.h"
#include "regions_csv.h"

#define EARTH_RADIUS_KM 6371.0
#define UNPLACED_KM 100000.0 /* past any distance on Earth: a placed region always ranks before a guessed one */
#define DEGREES (M_PI / 180.0)

enum col { C_CLOUD, C_REGION, C_LATITUDE, C_LONGITUDE, C_PLACE, C_COLS };

/* Parsed once; the strings point into text, a writable copy of the embedded CSV. */
static char text[sizeof(regions_csv)];
static struct region *rows;
static size_t nrows;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse_table(void)
{
	char *cols[C_COLS + 1];
	char *p = text;
	size_t n;

	memcpy(text, regions_csv, sizeof(text));
	rows = xcalloc(csv_records(text), sizeof(*rows));
	p = csv_split_record(p, cols, C_COLS + 1, &n); /* the header */
	while (*p) {
		p = csv_split_record(p, cols, C_COLS + 1, &n);
		if (n != C_COLS || cols[C_CLOUD][0] == '\0' || cols[C_REGION][0] == '\0')
			continue;
		rows[nrows] = (struct region){.cloud = cols[C_CLOUD], .name = cols[C_REGION],
					      .latitude = csv_number_in(cols[C_LATITUDE], -90, 90),
					      .longitude = csv_number_in(cols[C_LONGITUDE], -180, 180), .place = cols[C_PLACE]};
		nrows++;
	}
}

const struct region *regions_table(size_t *n)
{
	pthread_once(&once, parse_table);
	*n = nrows;
	return rows;
}

const struct region *regions_find(const char *cloud, const char *name)
{
	size_t n;
	const struct region *t = regions_table(&n);

	for (size_t i = 0; cloud != NULL && name != NULL && i < n; i++)
		if (strcmp(t[i].cloud, cloud) == 0 && strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

static int placed(const struct region *r)
{
	return r != NULL && isfinite(r->latitude) && isfinite(r->longitude);
}

int regions_placed(const char *cloud, const char *a, const char *b)
{
	return placed(regions_find(cloud, a)) && placed(regions_find(cloud, b));
}

double regions_distance(const char *cloud, const char *a, const char *b)
{
	const struct region *ra = regions_find(cloud, a), *rb = regions_find(cloud, b);
	double dlat, dlon, h;
	size_t shared = 0;

	if (strcmp(a, b) == 0)
		return 0;
	if (!placed(ra) || !placed(rb)) {
		while (a[shared] != '\0' && a[shared] == b[shared])
			shared++;
		return UNPLACED_KM - 1000.0 * (double)shared;
	}
	/* haversine: exact enough for ranking at any distance */
	dlat = (rb->latitude - ra->latitude) * DEGREES;
	dlon = (rb->longitude - ra->longitude) * DEGREES;
	h = sin(dlat / 2) * sin(dlat / 2) +
	    cos(ra->latitude * DEGREES) * cos(rb->latitude * DEGREES) * sin(dlon / 2) * sin(dlon / 2);
	return 2 * EARTH_RADIUS_KM * asin(sqrt(h < 1 ? h : 1));
}
