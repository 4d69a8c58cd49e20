/* jsonval: finite numbers or null, optional numbers and instants, the shortest reals: one way for every document. */
#include "core/jsonval.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/mem.h"

json_t *jsonval_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *jsonval_float(float v)
{
	char text[JSONVAL_REAL_MAX];

	if (!isfinite(v))
		return json_null();
	/* 9 significant digits always read back as the same float */
	for (int p = 1; p <= 9; p++) {
		snprintf(text, sizeof(text), "%.*g", p, (double)v);
		if (p == 9 || strtof(text, NULL) == v)
			break;
	}
	return json_real(strtod(text, NULL));
}

/* --- text --- */

size_t jsonval_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f)) /* overlong, surrogate */
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f)) /* overlong, past U+10FFFF */
			return 0;
		return 4;
	}
	return 0;
}

json_t *jsonval_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	json_t *v = json_string(s);
	char *out;
	size_t n = 0;

	if (v != NULL)
		return v;
	/* each byte that starts no UTF-8 sequence becomes U+FFFD (3 bytes): at most 3 times as long */
	out = xmalloc(strlen(s) * 3 + 1);
	while (*p != '\0') {
		size_t len = jsonval_utf8_len(p);

		if (len == 0) {
			memcpy(out + n, "\xef\xbf\xbd", 3);
			n += 3;
			p++;
		} else {
			memcpy(out + n, p, len);
			n += len;
			p += len;
		}
	}
	v = json_stringn(out, n);
	free(out);
	return v;
}

double jsonval_round(double v, int digits)
{
	char text[JSONVAL_REAL_MAX];

	if (!isfinite(v))
		return v;
	snprintf(text, sizeof(text), "%.*g", digits, v);
	return strtod(text, NULL);
}

void jsonval_set_num(json_t *o, const char *key, double v)
{
	if (isfinite(v))
		json_object_set_new(o, key, json_real(v));
}

void jsonval_set_time(json_t *o, const char *key, int64_t unix_ms)
{
	char when[CLOCK_RFC3339_LEN];

	if (unix_ms <= 0)
		return;
	clock_rfc3339(unix_ms, when);
	json_object_set_new(o, key, json_string(when));
}

/* --- the shortest reals --- */

/* a and b are the same double, the sign of a zero included (-0.0 == 0.0 compares true) */
static bool same_double(double a, double b)
{
	return a == b && signbit(a) == signbit(b);
}

/*
 * Lays out digits (nd significant digits, the first one non-zero unless the value is 0) times 10^exp10 as jansson's
 * %.17g would: in full while -4 <= exp10 < 17 (".0" after an integral value), else d.ddde-5. Returns the length.
 */
static size_t lay_out(bool neg, const char *digits, int nd, int exp10, char *out)
{
	size_t n = 0;

	if (neg)
		out[n++] = '-';
	if (exp10 >= -4 && exp10 < 17) {
		if (exp10 < 0) {
			out[n++] = '0';
			out[n++] = '.';
			for (int i = -1; i > exp10; i--)
				out[n++] = '0';
			for (int i = 0; i < nd; i++)
				out[n++] = digits[i];
		} else {
			for (int i = 0; i <= exp10; i++)
				out[n++] = i < nd ? digits[i] : '0';
			out[n++] = '.';
			if (nd > exp10 + 1)
				for (int i = exp10 + 1; i < nd; i++)
					out[n++] = digits[i];
			else
				out[n++] = '0';
		}
	} else {
		int e = exp10 < 0 ? -exp10 : exp10;
		char rev[8];
		int nr = 0;

		out[n++] = digits[0];
		if (nd > 1) {
			out[n++] = '.';
			for (int i = 1; i < nd; i++)
				out[n++] = digits[i];
		}
		out[n++] = 'e';
		if (exp10 < 0)
			out[n++] = '-';
		do {
			rev[nr++] = (char)('0' + e % 10);
			e /= 10;
		} while (e > 0 && nr < (int)sizeof(rev));
		while (nr > 0)
			out[n++] = rev[--nr];
	}
	out[n] = '\0';
	return n;
}

size_t jsonval_real_text(double v, char out[JSONVAL_REAL_MAX])
{
	char sci[JSONVAL_REAL_MAX];
	char digits[24];
	int nd = 0;
	int p;
	const char *s;

	out[0] = '\0';
	if (!isfinite(v))
		return 0;
	/*
	 * A normal double has 15.9 significant digits: a decimal of 15 digits or fewer that reads back to it is the
	 * only one within its rounding interval, so %.15g (which drops trailing zeros) finds it when there is one, and
	 * 16 then 17 digits are tried only when there is none. Subnormals have fewer digits: every precision is tried.
	 */
	p = v == 0 || isnormal(v) ? 15 : 1;
	for (;; p++) {
		snprintf(sci, sizeof(sci), "%.*e", p - 1, v);
		if (p >= 17 || same_double(strtod(sci, NULL), v))
			break;
	}
	/* "-d.ddde-05": the digits, then the exponent */
	s = sci[0] == '-' ? sci + 1 : sci;
	for (; *s != '\0' && *s != 'e' && nd < (int)sizeof(digits); s++)
		if (*s >= '0' && *s <= '9')
			digits[nd++] = *s;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	return lay_out(sci[0] == '-', digits, nd, *s == 'e' ? (int)strtol(s + 1, NULL, 10) : 0, out);
}

static bool number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/*
 * The significant digits of a number token (leading and trailing zeros of its digits not counted): jansson's %.17g
 * rounds to 17, so a token of 15 or fewer is already the shortest for a normal double.
 */
static int significant_digits(const char *tok, size_t len)
{
	int first = -1, last = -1, i = 0;

	for (size_t k = 0; k < len && tok[k] != 'e' && tok[k] != 'E'; k++) {
		if (tok[k] < '0' || tok[k] > '9')
			continue;
		if (tok[k] != '0') {
			if (first < 0)
				first = i;
			last = i;
		}
		i++;
	}
	return first < 0 ? 1 : last - first + 1;
}

/* A token of jansson's: %.17g's digits (d[0] not '0', zeros after the last one written), times 10^exp10. */
struct decimal {
	bool neg;
	char d[17];
	int exp10;
};

/* Reads a real token into x; false for zero or a token of more than 17 significant digits. */
static bool parse_token(const char *tok, size_t len, struct decimal *x)
{
	size_t k = 0;
	int n = 0, before = -1, first = -1, e = 0;

	x->neg = tok[0] == '-';
	if (x->neg)
		k = 1;
	memset(x->d, '0', sizeof(x->d));
	for (; k < len && tok[k] != 'e' && tok[k] != 'E'; k++) {
		if (tok[k] == '.') {
			before = n;
			continue;
		}
		if (first < 0 && tok[k] != '0') {
			first = n;
		}
		if (first >= 0 && n - first < (int)sizeof(x->d))
			x->d[n - first] = tok[k];
		else if (first >= 0 && tok[k] != '0')
			return false;
		n++;
	}
	if (first < 0)
		return false;
	if (before < 0)
		before = n;
	if (k < len)
		e = (int)strtol(tok + k + 1, NULL, 10);
	x->exp10 = before - 1 - first + e;
	return true;
}

/*
 * x rounded to k digits (r, *nr of them once trailing zeros are dropped, times 10^*exp10); false when the digits
 * dropped are exactly half a unit, where the double's own digits past the 17th decide.
 */
static bool round_to(const struct decimal *x, int k, char *r, int *nr, int *exp10)
{
	bool half = x->d[k] == '5';

	for (int i = k + 1; i < (int)sizeof(x->d) && half; i++)
		half = x->d[i] == '0';
	if (half)
		return false;
	memcpy(r, x->d, (size_t)k);
	*exp10 = x->exp10;
	if (x->d[k] >= '5') {
		int i = k - 1;

		while (i >= 0 && r[i] == '9')
			r[i--] = '0';
		if (i >= 0) {
			r[i]++;
		} else {
			r[0] = '1';
			(*exp10)++;
		}
	}
	*nr = k;
	while (*nr > 1 && r[*nr - 1] == '0')
		(*nr)--;
	return true;
}

/*
 * The shortest text of the real token tok (len bytes, as jansson wrote it) into out; returns its length, or 0 to
 * keep the token. What jsonval_real_text gives, without its printf: %.17g's digits are rounded to 15 and 16 here
 * (printf only when a rounding is a tie), and strtod says whether they read back.
 */
static size_t shorter_real(const char *tok, size_t len, char out[JSONVAL_REAL_MAX])
{
	char copy[64];
	char r[17];
	struct decimal x;
	double v;
	int nr, exp10, tail;

	if (len >= sizeof(copy))
		return 0;
	memcpy(copy, tok, len);
	copy[len] = '\0';
	v = strtod(copy, NULL);
	if (!isfinite(v) || v == 0)
		return 0;
	if (!isnormal(v) || !parse_token(tok, len, &x))
		return jsonval_real_text(v, out);
	if (significant_digits(tok, len) <= 15)
		return 0;
	/*
	 * 15 digits read back only when they are within half a unit in the last place: the two digits they drop (d,
	 * as a number of units of the 17th) must be within 11.6 of 0 or 100, since 10^17 x 2^-53 is 11.1
	 */
	tail = (x.d[15] - '0') * 10 + (x.d[16] - '0');
	for (int k = tail <= 12 || tail >= 88 ? 15 : 16; k <= 16; k++) {
		size_t n;

		if (!round_to(&x, k, r, &nr, &exp10))
			return jsonval_real_text(v, out);
		n = lay_out(x.neg, r, nr, exp10, out);
		if (same_double(strtod(out, NULL), v))
			return n;
	}
	return 0; /* 17 digits: jansson's own */
}

size_t jsonval_shorten(char *text, size_t len)
{
	size_t r = 0, w = 0;

	while (r < len) {
		char c = text[r];

		if (c == '"') {
			/* a string or a key, copied through its closing quote; an escaped character never ends it */
			text[w++] = text[r++];
			while (r < len) {
				c = text[r++];
				text[w++] = c;
				if (c == '\\' && r < len)
					text[w++] = text[r++];
				else if (c == '"')
					break;
			}
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t end = r;
			bool real = false;
			char out[JSONVAL_REAL_MAX];
			size_t n = 0;

			while (end < len && number_char(text[end])) {
				real = real || text[end] == '.' || text[end] == 'e' || text[end] == 'E';
				end++;
			}
			if (real)
				n = shorter_real(text + r, end - r, out);
			/* never longer than jansson's token: the text is rewritten in place, w never passes r */
			if (n > 0 && n <= end - r) {
				memcpy(text + w, out, n);
				w += n;
			} else {
				memmove(text + w, text + r, end - r);
				w += end - r;
			}
			r = end;
		} else {
			text[w++] = text[r++];
		}
	}
	if (w < len)
		text[w] = '\0';
	return w;
}

char *jsonval_dumps(const json_t *v, size_t flags)
{
	char *text = json_dumps(v, flags);

	if (text != NULL)
		jsonval_shorten(text, strlen(text));
	return text;
}

int jsonval_dumpf(const json_t *v, FILE *out, size_t flags)
{
	char *text = jsonval_dumps(v, flags);
	size_t len;
	int rc = -1;

	if (text == NULL)
		return -1;
	len = strlen(text);
	if (fwrite(text, 1, len, out) == len)
		rc = 0;
	free(text);
	return rc;
}

void jsonval_set_as_of(json_t *o, const char *as_of, int64_t unix_ms)
{
	long age = clock_days_since(as_of, unix_ms);

	json_object_set_new(o, "as_of", age != LONG_MIN ? json_string(as_of) : json_null());
	json_object_set_new(o, "age_days", age != LONG_MIN ? json_integer(age < 0 ? 0 : age) : json_null());
}
