/*
 * probe_opencl: OpenCL platforms and devices through the ICD loader (probe_opencl_ops in probe.h). This header
 * holds what the probe does before the first OpenCL call, exposed so tests can drive it with fixture folders.
 */
#ifndef ACCELD_PROBE_OPENCL_H
#define ACCELD_PROBE_OPENCL_H

#include <stddef.h>

/*
 * Containers often ship NVIDIA's OpenCL library without the ICD file that names it. When nvidia_lib loads
 * (dlopen test) and no *.icd file in vendors_dir names libnvidia-opencl, this writes private_dir (mode 0700) with a
 * copy of every ICD file of vendors_dir plus nvidia.icd, and sets OCL_ICD_VENDORS to it, so the loader sees every
 * platform. It must run before the process's first OpenCL call; an OCL_ICD_VENDORS already set is left alone.
 * Returns 1 when it set OCL_ICD_VENDORS, 0 when nothing was needed, -1 on failure; why gets a note either way.
 */
int probe_opencl_icd_fixup(const char *nvidia_lib, const char *vendors_dir, const char *private_dir, char *why,
			   size_t whysz);

#endif
