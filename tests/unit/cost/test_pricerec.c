/*
 * Unit tests for pricerec.c: a fresh record knows nothing (NAN, never 0), and sources are kept once each, the
 * oldest of their dates as the record's.
 */
#include <math.h>
#include <string.h>

#include "check_main.h"
#include "cost/pricebook.h"
#include "cost/pricerec.h"

START_TEST(a_fresh_record_knows_nothing)
{
	struct pricerec r;

	memset(&r, 0x5a, sizeof(r));
	pricerec_init(&r);
	ck_assert(isnan(r.usd_per_hour) && isnan(r.usd_per_hour_spot));
	ck_assert(isnan(r.accelerator_usd_per_hour) && isnan(r.accelerator_usd_per_hour_spot));
	ck_assert(isnan(r.vcpus) && isnan(r.memory_gib));
	ck_assert(isnan(r.hint_usd_per_hour) && isnan(r.hint_usd_per_hour_spot));
	ck_assert_uint_eq(r.accelerators, 0);
	ck_assert_str_eq(r.sources[0], "");
	ck_assert_str_eq(r.as_of, "");
	ck_assert_str_eq(r.source, "");
	ck_assert(!r.lower_bound);
}
END_TEST

START_TEST(sources_are_kept_once_with_the_oldest_date)
{
	size_t n;
	const struct pricebook_source *t = pricebook_sources(&n);
	const struct pricebook_source *old = &t[0], *young = &t[0];
	struct pricerec r;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].as_of, old->as_of) < 0)
			old = &t[i];
		if (strcmp(t[i].as_of, young->as_of) > 0)
			young = &t[i];
	}
	ck_assert_msg(strcmp(old->as_of, young->as_of) < 0, "the sources all have one date");
	pricerec_init(&r);
	pricerec_add_source(&r, young->id);
	ck_assert_str_eq(r.as_of, young->as_of);
	pricerec_add_source(&r, young->id);
	ck_assert_str_eq(r.sources[1], "");
	pricerec_add_source(&r, old->id);
	ck_assert_str_eq(r.sources[0], young->id);
	ck_assert_str_eq(r.sources[1], old->id);
	ck_assert_str_eq(r.as_of, old->as_of);
	/* past PRICEREC_SOURCES an id is left out; an id sources.csv lacks has no date */
	pricerec_add_source(&r, "no-such-source");
	ck_assert_str_eq(r.sources[1], old->id);
	ck_assert_str_eq(r.as_of, old->as_of);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pricerec");
	TCase *tc = tcase_create("pricerec");

	tcase_add_test(tc, a_fresh_record_knows_nothing);
	tcase_add_test(tc, sources_are_kept_once_with_the_oldest_date);
	suite_add_tcase(s, tc);
	return s;
}
