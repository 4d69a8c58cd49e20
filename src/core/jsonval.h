/*
 * jsonval: the JSON values that every document of the API writes the same way. A figure that is not finite (NaN
 * for unknown, an overflow) is never written as a number: it is null where the member always appears, and the
 * member is left out where it is optional. An instant is an RFC 3339 UTC string (clock.h), left out while unknown.
 */
#ifndef ACCELD_JSONVAL_H
#define ACCELD_JSONVAL_H

#include <stdint.h>

#include <jansson.h>

/* v as a number, or null when it is not finite (a new reference). */
json_t *jsonval_num(double v);

/* Sets o[key] to v when v is finite; leaves o as it is otherwise. */
void jsonval_set_num(json_t *o, const char *key, double v);

/* Sets o[key] to the RFC 3339 form of unix_ms when it is positive (0 or less: unknown, left out). */
void jsonval_set_time(json_t *o, const char *key, int64_t unix_ms);

#endif
