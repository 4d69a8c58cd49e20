/* pricerec: the record of a host's price (pricerec.h). */
#include "cost/pricerec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/pricebook.h"

void pricerec_init(struct pricerec *r)
{
	memset(r, 0, sizeof(*r));
	r->usd_per_hour = NAN;
	r->usd_per_hour_spot = NAN;
	r->accelerator_usd_per_hour = NAN;
	r->accelerator_usd_per_hour_spot = NAN;
	r->cpu_usd_per_hour = NAN;
	r->cpu_usd_per_hour_spot = NAN;
	r->vcpus = NAN;
	r->memory_gib = NAN;
	r->hint_usd_per_hour = NAN;
	r->hint_usd_per_hour_spot = NAN;
}

void pricerec_add_source(struct pricerec *r, const char *id)
{
	const char *as_of = pricebook_as_of(id);
	size_t i = 0;

	while (i < PRICEREC_SOURCES && r->sources[i][0] != '\0' && strcmp(r->sources[i], id) != 0)
		i++;
	if (i < PRICEREC_SOURCES && r->sources[i][0] == '\0')
		snprintf(r->sources[i], sizeof(r->sources[i]), "%s", id);
	/* ISO dates order as strings */
	if (as_of[0] != '\0' && (r->as_of[0] == '\0' || strcmp(as_of, r->as_of) < 0))
		snprintf(r->as_of, sizeof(r->as_of), "%.10s", as_of);
}
