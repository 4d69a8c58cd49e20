/* dtype: number formats, their names and widths, said once. */
#include "core/dtype.h"

#include <string.h>

#include "core/names.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const names[DTYPE_COUNT] = {"", "f32", "bf16", "f16", "fp8", "int8", "int4"};
static const unsigned bits[DTYPE_COUNT] = {0, 32, 16, 16, 8, 8, 4};

static const struct {
	const char *name;
	enum dtype d;
} aliases[] = {{"fp32", DTYPE_F32}, {"float32", DTYPE_F32}, {"fp16", DTYPE_F16}, {"float16", DTYPE_F16},
	       {"bfloat16", DTYPE_BF16}};

const char *dtype_name(enum dtype d)
{
	return names_at(names, DTYPE_COUNT, d);
}

bool dtype_parse(const char *text, enum dtype *out)
{
	int i = text != NULL && text[0] != '\0' ? names_find(names, DTYPE_COUNT, text) : -1;

	if (i > 0) {
		*out = (enum dtype)i;
		return true;
	}
	for (size_t k = 0; text != NULL && k < COUNT(aliases); k++)
		if (strcmp(aliases[k].name, text) == 0) {
			*out = aliases[k].d;
			return true;
		}
	return false;
}

unsigned dtype_bits(enum dtype d)
{
	return (unsigned)d < DTYPE_COUNT ? bits[d] : 0;
}
