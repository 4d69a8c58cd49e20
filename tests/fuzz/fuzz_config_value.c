/* libFuzzer harness: the setting parsers (durations, sizes, booleans, integers) on arbitrary text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[128];
	uint64_t v;
	bool b;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	config_parse_duration_ms(text, &v);
	config_parse_size(text, &v);
	config_parse_bool(text, &b);
	if (config_parse_u64(text, &v) == 0 && strlen(text + strspn(text, "0")) > 20)
		abort(); /* more than 20 significant digits cannot fit 64 bits */
	return 0;
}
