/*
 * jsonval: the JSON values that every document of the API writes the same way, and the one way its text is written.
 * A figure that is not finite (NaN for unknown, an overflow) is never written as a number: it is null where the
 * member always appears, and the member is left out where it is optional. An instant is an RFC 3339 UTC string
 * (clock.h), left out while unknown.
 *
 * Text: jansson writes every real with %.17g (its dump.c; JSON_REAL_PRECISION only fixes another precision), so
 * 0.1 comes out as 0.10000000000000001. Every JSON text acceld answers or prints (HTTP bodies, the device snapshot,
 * stored check documents, the commands' --json, log values) is made by jsonval_dumps or jsonval_dumpf, which dump
 * with jansson and then write each real with the fewest significant digits that strtod reads back to the same
 * double (jsonval_real_text). The redo journal keeps jansson's text: only acceld reads it, %.17g reads back
 * exactly too, and the rewrite would cost its durable path about a microsecond per real.
 */
#ifndef ACCELD_JSONVAL_H
#define ACCELD_JSONVAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* v as a number, or null when it is not finite (a new reference). */
json_t *jsonval_num(double v);

/*
 * A float32 figure as the number with the fewest digits that reads back as the same float (0.1f is 0.1, where its
 * double would be 0.10000000149011612), or null when it is not finite (a new reference).
 */
json_t *jsonval_float(float v);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there are not one (s NUL-terminated). */
size_t jsonval_utf8_len(const unsigned char *s);

/*
 * s as a JSON string (a new reference), never NULL: text from outside (a query, a driver's message) whose bytes are
 * not UTF-8 keeps its readable part, each byte that starts no UTF-8 sequence written as U+FFFD.
 */
json_t *jsonval_text(const char *s);

/*
 * v to `digits` significant digits (%.*g read back), so that a figure computed in another unit or by a formula is
 * the number its text says (0.166144 TFLOPS x 1000 is 166.144, not 166.14399999999998); v itself when not finite.
 */
double jsonval_round(double v, int digits);

/* Sets o[key] to v when v is finite; leaves o as it is otherwise. */
void jsonval_set_num(json_t *o, const char *key, double v);

/* Sets o[key] to the RFC 3339 form of unix_ms when it is positive (0 or less: unknown, left out). */
void jsonval_set_time(json_t *o, const char *key, int64_t unix_ms);

/*
 * Sets "as_of" to the date of a price ("2026-06-18") and "age_days" to its whole days before unix_ms
 * (clock_days_since); both null where the date is "" or no date.
 */
void jsonval_set_as_of(json_t *o, const char *as_of, int64_t unix_ms);

/* Room for any text jsonval_real_text writes, its NUL included. */
#define JSONVAL_REAL_MAX 32

/*
 * The shortest text of a finite double that strtod reads back to the same double, laid out as jansson lays out
 * reals, so only the digits change: the fewest significant digits that read back (as the smallest precision of
 * %.*g that does), written out in full from 1e-4 up to 1e17 and with an exponent elsewhere (1e-5, 1.5e300: no
 * '+', no leading zeros), and ".0" after an integral value written out in full, so that jansson reads it back as a
 * real, not an integer. 0.1 is "0.1", 100000.0 "100000.0", -0.0 "-0.0". Writes into out and returns the length;
 * 0 (and "") for a value that is not finite.
 */
size_t jsonval_real_text(double v, char out[JSONVAL_REAL_MAX]);

/*
 * Rewrites in place every real of text (len bytes of JSON as jansson writes it: a number token with a '.' or an
 * exponent, outside strings) as jsonval_real_text writes it, and returns the new length, never more than len.
 * Integers, strings and keys are left as they are. A NUL is written after the new end when the new length is
 * shorter.
 */
size_t jsonval_shorten(char *text, size_t len);

/* json_dumps(v, flags), then jsonval_shorten: a new string (free() it), or NULL when jansson cannot encode v. */
char *jsonval_dumps(const json_t *v, size_t flags);

/* jsonval_dumps(v, flags) written to out (no newline added); 0, or -1 when v cannot be encoded or written. */
int jsonval_dumpf(const json_t *v, FILE *out, size_t flags);

#endif
