/*
 * plan_devices: the devices a plan (plan.h) is made for, taken from the registry or from a shape the caller names.
 *
 * From the registry: the devices of one type (the automatic order TPU > GPU > CPU when none is asked for); of GPUs
 * those of the most numerous model, each GPU's memory the smallest of them, the fast-link domain the smallest
 * NVLink domain they are in (NVML's P2P status; unknown counts as none); a TPU VM worker plans for its whole slice
 * (the accelerator type's chips, the chips of this host, the slice's topology as its ICI torus); a CPU host for its
 * one CPU.
 *
 * A named shape (`devices` override): "H100x8", "8xH100", "gpu:L4x4", "tpu:v5p-128", "v6e-8", "cpu". A GPU model
 * is matched against the spec table (db/accelerators.csv) for its memory; whether its GPUs are joined by fast links
 * is this module's table of board kinds (SXM and OAM boards join up to 8 with NVLink or Infinity Fabric, PCIe cards
 * none), the one place that says so. A TPU type follows GCP's naming (probe_tpu_type_parse: v2-v4 and v5p count
 * TensorCores, v5e and v6e chips), with the generation's memory and chips per host from the spec table and the
 * slice's usual topology.
 */
#ifndef ACCELD_PLAN_DEVICES_H
#define ACCELD_PLAN_DEVICES_H

#include <stddef.h>

#include "core/err.h"
#include "detect/device.h"
#include "plan/plan.h"

#define PLAN_DEVICES_TEXT_MAX 64 /* the longest shape text accepted */

/* What the plan is made for, in words ("8 x NVIDIA H100 80GB HBM3 (gpu:0 to gpu:7), one NVLink domain of 8"). */
struct plan_devices_origin {
	char text[256];
	char model[64];
};

/*
 * The devices of type want (NULL: the automatic order) among devs. Returns ACCELD_OK, or ACCELD_ENOTFOUND when the
 * host has none of that type (why says so).
 */
enum acceld_err plan_devices_from_registry(const struct device *devs, size_t n, const enum device_type *want,
					   struct plan_devices *out, struct plan_devices_origin *origin, char *why,
					   size_t whysz);

/*
 * How GPUs are linked, as the origin's text says it: ", joined by NVLink", ", without NVLink between them", or ""
 * for a single device.
 */
const char *plan_devices_link_words(const struct plan_devices *d);

/* Parses a named shape (above). Returns ACCELD_OK; ACCELD_EUNSUPPORTED for a TPU slice GCP does not offer (v6e-3,
 * v5p-131072), with a message listing the ones it does; or ACCELD_EINVAL with a message that says what is
 * accepted. */
enum acceld_err plan_devices_parse(const char *text, struct plan_devices *out, struct plan_devices_origin *origin,
				   char *err, size_t errsz);

#endif
