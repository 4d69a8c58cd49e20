/* visible: CUDA-style visible-device lists (see visible.h). */
#include "detect/visible.h"

#include <ctype.h>
#include <string.h>

#define ENTRY_MAX 128

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && isspace((unsigned char)**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && isspace((unsigned char)(*s)[*len - 1]))
		(*len)--;
}

/* An ordinal: decimal digits only, no sign; -1 when the text is not one or too large. */
static long parse_ordinal(const char *s, size_t len)
{
	long v = 0;

	if (len == 0 || len > 6)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* The one entry of uuids[0..n) that starts with prefix (compared without case); -1 none, -2 ambiguous. */
static long match_prefix(const char *prefix, size_t plen, const char *const *uuids, size_t n)
{
	long found = -1;

	if (!uuids || plen == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (uuids[i] && strlen(uuids[i]) >= plen && strncasecmp(uuids[i], prefix, plen) == 0) {
			if (found >= 0)
				return -2;
			found = (long)i;
		}
	}
	return found;
}

/* Resolves one entry to a device index, or -1 when it is invalid. */
static long resolve(const char *s, size_t len, const struct visible_set *set)
{
	long idx = parse_ordinal(s, len);
	const char *slash;

	if (idx >= 0)
		return (size_t)idx < set->n ? idx : -1;
	if (len > 4 && strncasecmp(s, "GPU-", 4) == 0) {
		idx = match_prefix(s, len, set->uuids, set->n);
		return idx >= 0 ? idx : -1;
	}
	if (len > 4 && strncasecmp(s, "MIG-", 4) == 0) {
		/* the legacy form MIG-GPU-<uuid>/<gi>/<ci> names the GPU itself */
		if (len > 8 && strncasecmp(s + 4, "GPU-", 4) == 0) {
			slash = memchr(s, '/', len);
			idx = match_prefix(s + 4, slash ? (size_t)(slash - s) - 4 : len - 4, set->uuids, set->n);
			return idx >= 0 ? idx : -1;
		}
		idx = match_prefix(s, len, set->mig_uuids, set->nmig);
		return idx >= 0 && set->mig_parent && set->mig_parent[idx] < set->n ? (long)set->mig_parent[idx] : -1;
	}
	return -1;
}

size_t visible_select(const char *value, const struct visible_set *set, size_t *sel, size_t cap, int *stopped)
{
	size_t count = 0;
	int pos = 0;
	const char *p = value;

	if (stopped)
		*stopped = -1;
	if (!value) {
		for (size_t i = 0; i < set->n && count < cap; i++)
			sel[count++] = i;
		return count;
	}
	if (*value == '\0')
		return 0;
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *s = p;
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		long idx;
		bool dup = false;

		trim(&s, &len);
		idx = len <= ENTRY_MAX ? resolve(s, len, set) : -1;
		for (size_t i = 0; idx >= 0 && i < count; i++)
			dup = dup || sel[i] == (size_t)idx;
		if (idx < 0 || dup || count >= cap) {
			if (stopped)
				*stopped = pos;
			break;
		}
		sel[count++] = (size_t)idx;
		if (!comma)
			break;
		p = comma + 1;
		pos++;
	}
	return count;
}
