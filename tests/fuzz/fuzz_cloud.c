/*
 * libFuzzer harness: the answers of the clouds' metadata services (cloud.c's parsers). Whatever the bytes, a
 * parse that succeeds must leave names that pass cloud_name_check, and none may read past the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect/cloud.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const struct cloud_host *h)
{
	if (cloud_name_check(h->instance_type) != 0 || cloud_name_check(h->region) != 0)
		abort();
	if (h->zone[0] != '\0' && cloud_name_check(h->zone) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct cloud_host h;
	char out[CLOUD_NAME_MAX];
	int spot;

	cloud_host_init(&h);
	if (cloud_parse_aws_identity(text, size, &h) == 0)
		check_host(&h);
	cloud_host_init(&h);
	if (cloud_parse_azure_compute(text, size, &h) == 0) {
		check_host(&h);
		if (h.spot != 0 && h.spot != 1)
			abort();
	}
	if (cloud_parse_gce_path(text, size, out, sizeof(out)) == 0 && cloud_name_check(out) != 0)
		abort();
	if (cloud_parse_gce_scheduling(text, size, &spot) == 0 && spot != 0 && spot != 1)
		abort();
	if (cloud_parse_aws_lifecycle(text, size, &spot) == 0 && spot != 0 && spot != 1)
		abort();
	if (size > 0 && size < 256) {
		char *s = malloc(size + 1);
		char region[CLOUD_NAME_MAX];

		memcpy(s, data, size);
		s[size] = '\0';
		if (cloud_gce_region_of_zone(s, region, sizeof(region)) == 0 && cloud_name_check(region) != 0)
			abort();
		free(s);
	}
	return 0;
}
