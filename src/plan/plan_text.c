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

/* bytes in the largest binary unit that keeps a whole number before the point: "43.9 MiB", "512 B". */
static void unit_text(char *out, size_t outsz, uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		plan_put(out, outsz, "%llu B", (unsigned long long)bytes);
	else
		plan_put(out, outsz, "%.1f %s", v, units[u]);
}

void plan_need_text(char *out, size_t outsz, uint64_t need, uint64_t have)
{
	char n[32], h[32], s[32];

	plan_gib_text(n, sizeof(n), need);
	plan_gib_text(h, sizeof(h), have);
	if (need > have && need != PLAN_SAT) {
		unit_text(s, sizeof(s), need - have);
		plan_put(out, outsz, "needs %s of %s usable (%s short)", n, h, s);
	} else {
		plan_put(out, outsz, "needs %s of %s usable", n, h);
	}
}

void plan_mesh_text(const struct plan_mesh *m, char *out, size_t outsz)
{
	plan_put(out, outsz, "data %u x fsdp %u x tensor %u x expert %u", m->data, m->fsdp, m->tensor, m->expert);
}
