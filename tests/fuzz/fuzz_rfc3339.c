/* libFuzzer harness: RFC 3339 parsing; whatever parses must format and parse back to the same instant. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[64];
	char again[CLOCK_RFC3339_LEN];
	int64_t ms;
	int64_t ms2;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (clock_parse_rfc3339(text, &ms) != 0)
		return 0;
	clock_rfc3339(ms, again);
	if (clock_parse_rfc3339(again, &ms2) != 0 || ms2 != ms)
		abort();
	return 0;
}
