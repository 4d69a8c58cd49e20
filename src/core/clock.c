/* clock: time sources, deadlines, and RFC 3339 formatting and parsing. */
#include "core/clock.h"

#include <limits.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t clock_real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define NS_PER_S 1000000000ull

/* The largest time_t (a signed type of the platform's width). */
#define TIME_T_MAX ((time_t)(((uint64_t)1 << (sizeof(time_t) * 8 - 1)) - 1))

struct timespec clock_timespec_add(struct timespec t, uint64_t ns)
{
	uint64_t secs = ns / NS_PER_S;
	long nsec = t.tv_nsec + (long)(ns % NS_PER_S);

	if (nsec >= (long)NS_PER_S) {
		nsec -= (long)NS_PER_S;
		secs++;
	}
	if (t.tv_sec >= 0 && secs > (uint64_t)(TIME_T_MAX - t.tv_sec)) {
		t.tv_sec = TIME_T_MAX;
		t.tv_nsec = (long)NS_PER_S - 1;
		return t;
	}
	t.tv_sec += (time_t)secs;
	t.tv_nsec = nsec;
	return t;
}

struct timespec clock_timespec_from_ns(uint64_t ns)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = 0};

	return clock_timespec_add(t, ns);
}

struct timespec clock_deadline(clockid_t clock, uint64_t ns_from_now)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return clock_timespec_add(now, ns_from_now);
}

void clock_rfc3339(int64_t unix_ms, char out[CLOCK_RFC3339_LEN])
{
	time_t secs = (time_t)(unix_ms / 1000);
	int ms = (int)(unix_ms % 1000);
	struct tm tm;
	size_t n;

	if (ms < 0) {
		ms += 1000;
		secs -= 1;
	}
	gmtime_r(&secs, &tm);
	n = strftime(out, CLOCK_RFC3339_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, CLOCK_RFC3339_LEN - n, ".%03dZ", ms % 1000);
}

/* Reads exactly n decimal digits at *p; advances *p. */
static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int expect(const char **p, char c1, char c2)
{
	if (**p != c1 && **p != c2)
		return -1;
	(*p)++;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era;
	int64_t yoe;
	int64_t doy;
	int64_t doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return mdays[m - 1] + (m == 2 && leap);
}

int clock_parse_rfc3339(const char *s, int64_t *unix_ms)
{
	const char *p = s;
	int y, mo, d, h, mi, sec;
	int ms = 0;
	int offset_min = 0;
	int64_t total;

	if (digits(&p, 4, &y) || expect(&p, '-', '-') || digits(&p, 2, &mo) || expect(&p, '-', '-') ||
	    digits(&p, 2, &d) || expect(&p, 'T', 't') || digits(&p, 2, &h) || expect(&p, ':', ':') ||
	    digits(&p, 2, &mi) || expect(&p, ':', ':') || digits(&p, 2, &sec))
		return -1;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
		return -1;
	if (sec == 60)
		sec = 59; /* a leap second is read as the last second of its minute */
	if (*p == '.') {
		int scale = 100;
		int n = 0;

		p++;
		while (*p >= '0' && *p <= '9') {
			if (n < 3)
				ms += (*p - '0') * scale;
			scale /= 10;
			n++;
			p++;
			if (n > 9)
				return -1;
		}
		if (n == 0)
			return -1;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;
		int oh, om;

		p++;
		if (digits(&p, 2, &oh) || expect(&p, ':', ':') || digits(&p, 2, &om) || oh > 23 || om > 59)
			return -1;
		offset_min = sign * (oh * 60 + om);
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	total = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - (int64_t)offset_min * 60;
	if (total < 0)
		return -1;
	*unix_ms = total * 1000 + ms;
	return 0;
}

long clock_days_since(const char *date, int64_t unix_ms)
{
	const char *p = date;
	int y, m, d;
	int64_t day_ms = 86400000;

	if (p == NULL || digits(&p, 4, &y) != 0 || *p++ != '-' || digits(&p, 2, &m) != 0 || *p++ != '-' ||
	    digits(&p, 2, &d) != 0 || *p != '\0' || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
		return LONG_MIN;
	return (long)((unix_ms >= 0 ? unix_ms / day_ms : (unix_ms - day_ms + 1) / day_ms) - days_from_civil(y, m, d));
}
