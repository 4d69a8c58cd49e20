/* names: a word's index in an enum's table of names. */
#include "core/names.h"

#include <string.h>

const char *names_at(const char *const *names, size_t n, unsigned v)
{
	return v < n && names[v] != NULL ? names[v] : "?";
}

int names_find(const char *const *names, size_t n, const char *text)
{
	for (size_t i = 0; text != NULL && i < n; i++)
		if (names[i] != NULL && strcmp(text, names[i]) == 0)
			return (int)i;
	return -1;
}
