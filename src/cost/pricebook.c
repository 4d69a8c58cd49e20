/* pricebook: the embedded GCE rate, GPU, TPU chip and source tables (db/prices/) and their lookups. */
#include "cost/pricebook.h"

#include <pthread.h>
#include <string.h>

#include "core/csv.h"
#include "core/mem.h"
#include "gce_gpus_csv.h"
#include "gce_rates_csv.h"
#include "sources_csv.h"
#include "tpu_chips_csv.h"

#define MAX_COLS 12

enum rate_col {
	R_FAMILY, R_REGION, R_VCPU, R_GIB, R_VCPU_SPOT, R_GIB_SPOT, R_FIT, R_SHAPES, R_SOURCE, R_COLS
};
enum gpu_col { G_KEY, G_REGION, G_USD, G_USD_SPOT, G_NAME, G_SOURCE, G_COLS };
enum chip_col { T_KEY, T_REGION, T_USD, T_USD_SPOT, T_SLICE, T_SOURCE, T_COLS };
enum source_col { S_ID, S_DESCRIPTION, S_URL, S_PATH, S_VERSION, S_AS_OF, S_KEY, S_COLS };

/* Parsed once; the strings point into writable copies of the embedded CSVs. */
static char rates_text[sizeof(gce_rates_csv)], gpus_text[sizeof(gce_gpus_csv)], chips_text[sizeof(tpu_chips_csv)],
	sources_text[sizeof(sources_csv)];
static struct pricebook_rate *rates;
static struct pricebook_unit *gpus, *chips;
static struct pricebook_source *sources;
static size_t nrates, ngpus, nchips, nsources;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/*
 * The next record of text after *p with exactly want fields whose first two are not empty, into cols; false at the
 * end. The header is the caller's to skip.
 */
static int next_record(char **p, char **cols, size_t want)
{
	size_t n;

	while (**p) {
		*p = csv_split_record(*p, cols, MAX_COLS, &n);
		if (n == want && cols[0][0] != '\0' && cols[1][0] != '\0')
			return 1;
	}
	return 0;
}

static void parse_rates(void)
{
	char *cols[MAX_COLS];
	char *p = rates_text;
	size_t n;

	memcpy(rates_text, gce_rates_csv, sizeof(rates_text));
	rates = xcalloc(csv_records(rates_text), sizeof(*rates));
	p = csv_split_record(p, cols, MAX_COLS, &n); /* the header */
	while (next_record(&p, cols, R_COLS)) {
		struct pricebook_rate *r = &rates[nrates];

		r->family = cols[R_FAMILY];
		r->region = cols[R_REGION];
		r->usd_per_vcpu_hour = csv_number(cols[R_VCPU]);
		r->usd_per_gib_hour = csv_number(cols[R_GIB]);
		r->usd_per_vcpu_hour_spot = csv_number(cols[R_VCPU_SPOT]);
		r->usd_per_gib_hour_spot = csv_number(cols[R_GIB_SPOT]);
		r->fit = cols[R_FIT];
		r->source = pricebook_source_id(cols[R_SOURCE]);
		nrates++;
	}
}

/* A GPU or chip table (same columns but for the fifth, which says where the figure was taken from). */
static size_t parse_units(char *text, const unsigned char *csv, size_t size, struct pricebook_unit **out)
{
	char *cols[MAX_COLS];
	char *p = text;
	size_t n, count = 0;
	struct pricebook_unit *u;

	memcpy(text, csv, size);
	u = xcalloc(csv_records(text), sizeof(*u));
	p = csv_split_record(p, cols, MAX_COLS, &n);
	while (next_record(&p, cols, G_COLS)) {
		u[count].key = cols[G_KEY];
		u[count].region = cols[G_REGION];
		u[count].usd_per_hour = csv_number(cols[G_USD]);
		u[count].usd_per_hour_spot = csv_number(cols[G_USD_SPOT]);
		u[count].source = pricebook_source_id(cols[G_SOURCE]);
		count++;
	}
	*out = u;
	return count;
}

static void parse_sources(void)
{
	char *cols[MAX_COLS];
	char *p = sources_text;
	size_t n;

	memcpy(sources_text, sources_csv, sizeof(sources_text));
	sources = xcalloc(csv_records(sources_text), sizeof(*sources));
	p = csv_split_record(p, cols, MAX_COLS, &n);
	while (next_record(&p, cols, S_COLS)) {
		sources[nsources] = (struct pricebook_source){.id = cols[S_ID], .description = cols[S_DESCRIPTION],
							      .url = cols[S_URL], .version = cols[S_VERSION],
							      .as_of = cols[S_AS_OF], .key = cols[S_KEY]};
		nsources++;
	}
}

static pthread_once_t sources_once = PTHREAD_ONCE_INIT;

static void parse_all(void)
{
	_Static_assert((int)T_COLS == (int)G_COLS && (int)T_SOURCE == (int)G_SOURCE, "GPU and chip tables align");
	pthread_once(&sources_once, parse_sources);
	parse_rates();
	ngpus = parse_units(gpus_text, gce_gpus_csv, sizeof(gpus_text), &gpus);
	nchips = parse_units(chips_text, tpu_chips_csv, sizeof(chips_text), &chips);
}

const struct pricebook_rate *pricebook_gce_rates(size_t *n)
{
	pthread_once(&once, parse_all);
	*n = nrates;
	return rates;
}

const struct pricebook_unit *pricebook_gce_gpus(size_t *n)
{
	pthread_once(&once, parse_all);
	*n = ngpus;
	return gpus;
}

const struct pricebook_unit *pricebook_tpu_chips(size_t *n)
{
	pthread_once(&once, parse_all);
	*n = nchips;
	return chips;
}

const struct pricebook_source *pricebook_sources(size_t *n)
{
	pthread_once(&sources_once, parse_sources);
	*n = nsources;
	return sources;
}

const struct pricebook_rate *pricebook_gce_rate(const char *family, const char *region)
{
	size_t n;
	const struct pricebook_rate *t = pricebook_gce_rates(&n);

	for (size_t i = 0; family != NULL && region != NULL && i < n; i++)
		if (strcmp(t[i].family, family) == 0 && strcmp(t[i].region, region) == 0)
			return &t[i];
	return NULL;
}

static const struct pricebook_unit *find_unit(const struct pricebook_unit *t, size_t n, const char *key,
					      const char *region)
{
	for (size_t i = 0; key != NULL && region != NULL && i < n; i++)
		if (strcmp(t[i].key, key) == 0 && strcmp(t[i].region, region) == 0)
			return &t[i];
	return NULL;
}

const struct pricebook_unit *pricebook_gce_gpu(const char *key, const char *region)
{
	size_t n;
	const struct pricebook_unit *t = pricebook_gce_gpus(&n);

	return find_unit(t, n, key, region);
}

const struct pricebook_unit *pricebook_tpu_chip(const char *key, const char *region)
{
	size_t n;
	const struct pricebook_unit *t = pricebook_tpu_chips(&n);

	return find_unit(t, n, key, region);
}

const struct pricebook_source *pricebook_source(const char *id)
{
	size_t n;
	const struct pricebook_source *t = pricebook_sources(&n);

	for (size_t i = 0; id != NULL && i < n; i++)
		if (strcmp(t[i].id, id) == 0)
			return &t[i];
	return NULL;
}

const char *pricebook_source_id(const char *key)
{
	size_t n;
	const struct pricebook_source *t = pricebook_sources(&n);

	for (size_t i = 0; key != NULL && i < n; i++)
		if (strcmp(t[i].key, key) == 0)
			return t[i].id;
	return key;
}

const char *pricebook_as_of(const char *id)
{
	const struct pricebook_source *s = pricebook_source(id);

	return s != NULL ? s->as_of : "";
}

