/* jsonval: finite numbers or null, optional numbers and instants, written one way for every document. */
#include "core/jsonval.h"

#include <math.h>

#include "core/clock.h"

json_t *jsonval_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
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
