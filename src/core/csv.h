/*
 * csv: the RFC 4180 record splitter for the data tables embedded at build time (db/accelerators.csv,
 * the tables in db/prices). One copy, used by specs.c, machines.c, pricebook.c and regions.c.
 */
#ifndef ACCELD_CSV_H
#define ACCELD_CSV_H

#include <stddef.h>

/*
 * Splits the record starting at p in place: quoted fields may hold commas and doubled quotes, which are unquoted;
 * each field is NUL-terminated where it ends. At most maxcols field pointers go into cols[]; *ncols receives how
 * many were stored. Returns the start of the next record (past its line end), or the terminating NUL.
 */
char *csv_split_record(char *p, char **cols, size_t maxcols, size_t *ncols);

/* Lines in text (its line ends plus one): an upper bound on the records of a table, to size its array. */
size_t csv_records(const char *text);

/* A decimal number filling the whole field within [lo, hi], or NAN (empty, malformed or out of range: unknown,
 * never 0). */
double csv_number_in(const char *field, double lo, double hi);

/* A non-negative decimal number filling the whole field, or NAN: csv_number_in(field, 0, INFINITY). */
double csv_number(const char *field);

/* An unsigned integer in base (10 or 16, no prefix) filling the whole field, at most max; 0 when the field is empty
 * or malformed (for counts and ids, where 0 means unknown). */
unsigned csv_uint(const char *field, int base, unsigned long max);

#endif
