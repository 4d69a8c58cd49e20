/*
 * probe: the interface every detection source implements (hwloc/cgroup, OpenCL, NVML, sysfs, TPU).
 *
 * A probe is an ops struct so tests can register fakes. probe() appends what it finds to a device list; refresh()
 * updates telemetry of devices it found earlier (it may be NULL). A probe that fails reports why in its
 * probe_result and never stops the others. Probes do not assign ids: detect merges views of one device (by PCI
 * bus id, or the PoCL CPU into the CPU) and names them.
 */
#ifndef ACCELD_PROBE_H
#define ACCELD_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "detect/device.h"

struct probe_result {
	bool ok;               /* the probe ran; false means it failed (why says how) */
	bool available;        /* the source exists on this host (e.g. NVML loaded) */
	unsigned found;        /* devices it added */
	char why[256];         /* an error or a note, "" when there is nothing to say */
	double duration_ms;
};

/* Appends a note to res->why ("; "-separated), cutting at the field's size. */
void probe_note(struct probe_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Reads the PCIe link of the PCI device d->pci_bus_id names from <sysfs_root>/bus/pci/devices/<bdf>
 * (current_link_speed "16.0 GT/s PCIe", current_link_width, max_link_speed, max_link_width) into d->pcie, leaving
 * what is unreadable or "Unknown" at 0. The maximum generation is capped by the port above the device (the parent
 * folder of the device's real path) where that port says its own maximum, as a Gen5 card in a Gen4 slot trains at
 * Gen4. Fields already known stay as they are.
 */
void probe_pcie_sysfs(const char *sysfs_root, struct device *d);

struct probe_ops {
	const char *name;      /* "cpu", "opencl", "nvml", "sysfs-gpu", "tpu" */
	/*
	 * How far its view of a device is trusted for the fields two views both give, when detection merges them
	 * (the higher wins): vendor libraries (NVML 4) over the kernel's sysfs and hwloc (3) over PCI ids and device
	 * nodes (2) over OpenCL (1).
	 */
	unsigned trust;
	/* Finds devices and appends them to out. state is the probe's own, created on first use (may stay NULL). */
	void (*probe)(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res);
	/* Updates telemetry of devices this probe added earlier; may be NULL. */
	void (*refresh)(void **state, const struct config *cfg, struct device_list *devs, struct probe_result *res);
	/* Frees state; may be NULL. */
	void (*release)(void *state);
};

extern const struct probe_ops probe_cpu_ops;
extern const struct probe_ops probe_opencl_ops;
extern const struct probe_ops probe_nvml_ops;
extern const struct probe_ops probe_sysfs_gpu_ops;
extern const struct probe_ops probe_tpu_ops;

/* The built-in probes, NULL-terminated, in the order they run: the only list of them (detect.c, the registry that
 * runs them). A new probe is one file with its ops and one line there. */
extern const struct probe_ops *const probe_builtin[];

#endif
