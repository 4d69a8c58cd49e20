/* csv: the record splitter and number reader shared by the embedded data tables. */
#include "core/csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

char *csv_split_record(char *p, char **cols, size_t maxcols, size_t *ncols)
{
	size_t n = 0;

	for (;;) {
		char *out = p;
		char *field = p;

		if (*p == '"') {
			p++;
			while (*p) {
				if (*p == '"' && p[1] == '"') {
					*out++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*out++ = *p++;
				}
			}
		} else {
			while (*p && *p != ',' && *p != '\n' && *p != '\r')
				*out++ = *p++;
		}
		if (n < maxcols)
			cols[n++] = field;
		if (*p == ',') {
			*out = '\0';
			p++;
			continue;
		}
		while (*p == '\r')
			p++;
		if (*p == '\n')
			p++;
		*out = '\0';
		break;
	}
	*ncols = n;
	return p;
}

unsigned csv_uint(const char *s, int base, unsigned long max)
{
	char *end;
	unsigned long v;

	if (*s == '\0')
		return 0;
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno != 0 || *end != '\0' || v > max)
		return 0;
	return (unsigned)v;
}

size_t csv_records(const char *text)
{
	size_t n = 1;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}

double csv_number_in(const char *s, double lo, double hi)
{
	char *end;
	double v;

	if (*s == '\0')
		return NAN;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(v >= lo && v <= hi))
		return NAN;
	return v;
}

double csv_number(const char *s)
{
	return csv_number_in(s, 0, INFINITY);
}
