/* probe: what every probe shares. */
#include "detect/probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void probe_note(struct probe_result *res, const char *fmt, ...)
{
	size_t len = strlen(res->why);
	va_list ap;

	if (len + 3 >= sizeof(res->why))
		return;
	if (len > 0) {
		memcpy(res->why + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(res->why + len, sizeof(res->why) - len, fmt, ap);
	va_end(ap);
}
