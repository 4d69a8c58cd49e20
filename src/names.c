/* names: a word's index in an enum's table of names. */
#include "names.h"

#include <string.h>

int names_find(const char *const *names, size_t n, const char *text)
{
	for (size_t i = 0; text != NULL && i < n; i++)
		if (names[i] != NULL && strcmp(text, names[i]) == 0)
			return (int)i;
	return -1;
}
