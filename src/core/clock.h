/*
 * clock: monotonic and wall-clock time, deadlines for timed waits, and RFC 3339 UTC text.
 */
#ifndef ACCELD_CLOCK_H
#define ACCELD_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define CLOCK_RFC3339_LEN 32 /* room for "2026-11-22T03:16:09.123Z" and a NUL */

/* Nanoseconds on the monotonic clock, for durations. */
uint64_t clock_mono_ns(void);

/* Milliseconds since the Unix epoch on the wall clock. */
int64_t clock_real_ms(void);

/*
 * The absolute time ns_from_now nanoseconds after now on clock, as pthread_cond_timedwait takes it. The clock must
 * be the condition variable's: CLOCK_REALTIME unless its attributes chose CLOCK_MONOTONIC.
 */
struct timespec clock_deadline(clockid_t clock, uint64_t ns_from_now);

/* t plus ns, with tv_nsec kept within [0, 1e9); a sum past the largest time_t stays at the largest. */
struct timespec clock_timespec_add(struct timespec t, uint64_t ns);

/* A time in nanoseconds (such as clock_mono_ns() plus a delay) as a timespec on the same clock. */
struct timespec clock_timespec_from_ns(uint64_t ns);

/* Formats unix_ms as RFC 3339 UTC with milliseconds ("...T03:16:09.123Z") into out. */
void clock_rfc3339(int64_t unix_ms, char out[CLOCK_RFC3339_LEN]);

/*
 * Parses an RFC 3339 date-time ("2026-11-22T03:16:09Z", fractional seconds and numeric offsets allowed) into
 * milliseconds since the epoch. Returns 0, or -1 when the text is not a valid RFC 3339 date-time between the years
 * 1970 and 9999.
 */
int clock_parse_rfc3339(const char *s, int64_t *unix_ms);

/*
 * Whole days from the date ("2026-02-24", taken as UTC midnight) to unix_ms: a price's age (negative for a date
 * after it). LONG_MIN for text (or NULL) that is no such date.
 */
long clock_days_since(const char *date, int64_t unix_ms);

#endif
