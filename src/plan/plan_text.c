/* plan_text: the phrases a plan's reasons, formulas and hints share. */
#include "plan/plan_text.h"

#include <stdarg.h>
#include <stdio.h>

void plan_put(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
}

const char *plan_per_param_text(unsigned bits)
{
	switch (bits) {
	case 32:
		return "4";
	case 16:
		return "2";
	case 8:
		return "1";
	default:
		return "0.5";
	}
}

void plan_gib_text(char *out, size_t outsz, uint64_t bytes)
{
	if (bytes == PLAN_SAT)
		plan_put(out, outsz, "over 2^64 bytes");
	else
		plan_put(out, outsz, "%.1f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

void plan_mesh_text(const struct plan_mesh *m, char *out, size_t outsz)
{
	plan_put(out, outsz, "data %u x fsdp %u x tensor %u x expert %u", m->data, m->fsdp, m->tensor, m->expert);
}
