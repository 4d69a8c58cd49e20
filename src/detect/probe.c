/* probe: what every probe shares. */
#include "detect/probe.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hwfile.h"

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

/* The generation a link speed file names ("32.0 GT/s PCIe", "8 GT/s"); 0 for "Unknown" or anything unreadable. */
static unsigned read_generation(const char *dir, const char *file)
{
	char text[64];
	char *end;
	double gts;

	if (hwfile_read_line(text, sizeof(text), "%s/%s", dir, file) != 0)
		return 0;
	gts = strtod(text, &end);
	if (end == text || strncmp(end, " GT/s", 5) != 0)
		return 0;
	return device_pcie_generation_of(gts);
}

/* A link width file's lane count (1..32); 0 when unreadable or out of range (some devices write 0 or 255). */
static unsigned read_width(const char *dir, const char *file)
{
	uint64_t v;

	if (hwfile_read_u64(&v, "%s/%s", dir, file) != 0 || v < 1 || v > 32)
		return 0;
	return (unsigned)v;
}

void probe_pcie_sysfs(const char *sysfs_root, struct device *d)
{
	char dir[HWFILE_PATH_MAX];
	char real[PATH_MAX];
	struct device_pcie *p = &d->pcie;
	unsigned port_max;
	char *slash;

	if (d->pci_bus_id[0] == '\0' ||
	    snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s", sysfs_root, d->pci_bus_id) >= (int)sizeof(dir))
		return;
	if (p->generation == 0)
		p->generation = read_generation(dir, "current_link_speed");
	if (p->width == 0)
		p->width = read_width(dir, "current_link_width");
	if (p->max_generation == 0)
		p->max_generation = read_generation(dir, "max_link_speed");
	if (p->max_width == 0)
		p->max_width = read_width(dir, "max_link_width");
	/* /sys/bus/pci/devices/<bdf> links to /sys/devices/pci0000:00/<port>/<bdf>: the port is the parent */
	if (p->max_generation == 0 || realpath(dir, real) == NULL)
		return;
	slash = strrchr(real, '/');
	if (slash == NULL || slash == real)
		return;
	*slash = '\0';
	port_max = read_generation(real, "max_link_speed");
	if (port_max > 0 && port_max < p->max_generation)
		p->max_generation = port_max;
}
