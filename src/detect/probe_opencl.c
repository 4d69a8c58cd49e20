/*
 * probe_opencl: every OpenCL platform and device the ICD loader offers. GPUs carry their PCI bus id where an
 * extension gives it (cl_khr_pci_bus_info, NVIDIA's PCI_BUS_ID/SLOT_ID, AMD's TOPOLOGY) so detect can merge them
 * with the NVML and sysfs views; CPU devices (PoCL) are reported as CPU views that detect folds into cpu:0.
 * This file is the only one in detection that calls OpenCL.
 */
#include "detect/probe_opencl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "core/mem.h"
#include "detect/probe.h"

/* NVIDIA's cl_nv_device_attribute_query values (not in the Khronos headers). */
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64
#define NVIDIA_OPENCL_LIB "libnvidia-opencl.so.1"
#define SYSTEM_VENDORS_DIR "/etc/OpenCL/vendors"

/* The fixup must happen once, before the first OpenCL call of the process; later probes reuse its note. */
static pthread_once_t fixup_once = PTHREAD_ONCE_INIT;
static char fixup_note[256];

static bool names_nvidia(const char *path)
{
	char text[512];
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return strstr(text, "libnvidia-opencl") != NULL;
}

static bool is_icd(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, ".icd") == 0 && name[0] != '.';
}

static int copy_file(const char *from, const char *to)
{
	char buf[4096];
	FILE *in = fopen(from, "re");
	FILE *out = NULL;
	size_t n;
	int rc = -1;

	if (in == NULL)
		goto out;
	out = fopen(to, "we");
	if (out == NULL)
		goto out;
	for (n = fread(buf, 1, sizeof(buf), in); n > 0; n = fread(buf, 1, sizeof(buf), in))
		if (fwrite(buf, 1, n, out) != n)
			goto out;
	rc = 0;
out:
	if (out != NULL && fclose(out) != 0)
		rc = -1;
	if (in != NULL)
		fclose(in);
	return rc;
}

int probe_opencl_icd_fixup(const char *nvidia_lib, const char *vendors_dir, const char *private_dir, char *why,
			   size_t whysz)
{
	void *lib = NULL;
	DIR *dir = NULL;
	struct dirent *e;
	struct stat st;
	char from[4096];
	char to[4096];
	FILE *f;
	int rc = -1;

	if (getenv("OCL_ICD_VENDORS") != NULL) {
		snprintf(why, whysz, "OCL_ICD_VENDORS is set; left alone");
		return 0;
	}
	lib = dlopen(nvidia_lib, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		snprintf(why, whysz, "%s", "");
		return 0;
	}
	dlclose(lib);
	dir = opendir(vendors_dir);
	for (e = dir ? readdir(dir) : NULL; e != NULL; e = readdir(dir)) {
		if (!is_icd(e->d_name))
			continue;
		snprintf(from, sizeof(from), "%s/%s", vendors_dir, e->d_name);
		if (names_nvidia(from)) {
			snprintf(why, whysz, "%s names the NVIDIA OpenCL library", e->d_name);
			rc = 0;
			goto out;
		}
	}
	if (mkdir(private_dir, 0700) != 0 && errno != EEXIST) {
		snprintf(why, whysz, "cannot create %.200s: %s", private_dir, strerror(errno));
		goto out;
	}
	/* a folder someone else owns (or a link) in a shared temp dir must not steer which libraries load */
	if (lstat(private_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, whysz, "%.200s is not a folder of this user", private_dir);
		goto out;
	}
	if (dir != NULL) {
		rewinddir(dir);
		for (e = readdir(dir); e != NULL; e = readdir(dir)) {
			if (!is_icd(e->d_name) || strcmp(e->d_name, "nvidia.icd") == 0)
				continue;
			snprintf(from, sizeof(from), "%s/%s", vendors_dir, e->d_name);
			snprintf(to, sizeof(to), "%s/%s", private_dir, e->d_name);
			if (copy_file(from, to) != 0) {
				snprintf(why, whysz, "cannot copy %.100s into %.100s", e->d_name, private_dir);
				goto out;
			}
		}
	}
	snprintf(to, sizeof(to), "%s/nvidia.icd", private_dir);
	f = fopen(to, "we");
	if (f == NULL || fprintf(f, "%s\n", NVIDIA_OPENCL_LIB) < 0 || fclose(f) != 0) {
		snprintf(why, whysz, "cannot write %.200s", to);
		goto out;
	}
	if (setenv("OCL_ICD_VENDORS", private_dir, 1) != 0) {
		snprintf(why, whysz, "cannot set OCL_ICD_VENDORS");
		goto out;
	}
	snprintf(why, whysz, "no ICD file named %.40s; OCL_ICD_VENDORS=%.180s", nvidia_lib, private_dir);
	rc = 1;
out:
	if (dir != NULL)
		closedir(dir);
	return rc;
}

static void fixup_run(void)
{
	const char *tmp = getenv("TMPDIR");
	char priv[512];

	snprintf(priv, sizeof(priv), "%s/acceld-ocl-vendors-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)geteuid());
	probe_opencl_icd_fixup(NVIDIA_OPENCL_LIB, SYSTEM_VENDORS_DIR, priv, fixup_note, sizeof(fixup_note));
}

/* --- queries --- */

/* A string property, cut to outsz; "" when the device does not know it. */
static void dev_str(cl_device_id dev, cl_device_info what, char *out, size_t outsz)
{
	size_t need = 0;
	char *tmp = NULL;

	out[0] = '\0';
	/* a buffer shorter than the value is an error in OpenCL, so ask for the size first */
	if (clGetDeviceInfo(dev, what, 0, NULL, &need) != CL_SUCCESS || need == 0 || need > (1u << 20))
		goto out;
	tmp = xmalloc(need + 1);
	if (clGetDeviceInfo(dev, what, need, tmp, NULL) != CL_SUCCESS)
		goto out;
	tmp[need] = '\0';
	/* drivers pad some strings with blanks */
	device_set_trimmed(out, outsz, tmp);
out:
	free(tmp);
}

static void platform_name(cl_platform_id plat, char *out, size_t outsz)
{
	size_t need = 0;
	char *tmp = NULL;

	out[0] = '\0';
	if (clGetPlatformInfo(plat, CL_PLATFORM_NAME, 0, NULL, &need) != CL_SUCCESS || need == 0 || need > 4096)
		return;
	tmp = xmalloc(need + 1);
	if (clGetPlatformInfo(plat, CL_PLATFORM_NAME, need, tmp, NULL) == CL_SUCCESS) {
		tmp[need] = '\0';
		device_set_trimmed(out, outsz, tmp);
	}
	free(tmp);
}

static bool dev_uint(cl_device_id dev, cl_device_info what, cl_uint *out)
{
	return clGetDeviceInfo(dev, what, sizeof(*out), out, NULL) == CL_SUCCESS;
}

static bool dev_ulong(cl_device_id dev, cl_device_info what, cl_ulong *out)
{
	return clGetDeviceInfo(dev, what, sizeof(*out), out, NULL) == CL_SUCCESS;
}

static bool has_ext(const char *exts, const char *name)
{
	size_t n = strlen(name);
	const char *p = exts;

	for (p = strstr(p, name); p != NULL; p = strstr(p + n, name))
		if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

/* "NVIDIA Corporation" -> "NVIDIA"; CPUID names -> "AMD"/"Intel". */
static void short_vendor(const char *raw, char *out, size_t outsz)
{
	if (strstr(raw, "NVIDIA") != NULL)
		snprintf(out, outsz, "NVIDIA");
	else if (strstr(raw, "Advanced Micro Devices") != NULL || strstr(raw, "AMD") != NULL ||
		 strcmp(raw, "AuthenticAMD") == 0)
		snprintf(out, outsz, "AMD");
	else if (strstr(raw, "Intel") != NULL || strcmp(raw, "GenuineIntel") == 0)
		snprintf(out, outsz, "Intel");
	else
		device_set_str(out, outsz, raw);
}

/* The PCI address from whichever extension the device offers; false when none does. */
static bool pci_bus_id(cl_device_id dev, const char *vendor, const char *exts, char *out, size_t outsz)
{
	if (has_ext(exts, "cl_khr_pci_bus_info")) {
		cl_device_pci_bus_info_khr info;

		if (clGetDeviceInfo(dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof(info), &info, NULL) == CL_SUCCESS) {
			snprintf(out, outsz, "%04x:%02x:%02x.%x", info.pci_domain & 0xffff, info.pci_bus & 0xff,
				 info.pci_device & 0x1f, info.pci_function & 7);
			return true;
		}
	}
	if (strcmp(vendor, "NVIDIA") == 0 && has_ext(exts, "cl_nv_device_attribute_query")) {
		cl_uint bus;
		cl_uint slot;
		cl_uint domain = 0;

		if (dev_uint(dev, CL_DEVICE_PCI_BUS_ID_NV, &bus) && dev_uint(dev, CL_DEVICE_PCI_SLOT_ID_NV, &slot)) {
			/* the domain query is newer; older drivers only know domain 0 */
			if (!dev_uint(dev, CL_DEVICE_PCI_DOMAIN_ID_NV, &domain))
				domain = 0;
			snprintf(out, outsz, "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff, (slot >> 3) & 0x1f,
				 slot & 7);
			return true;
		}
	}
	if (strcmp(vendor, "AMD") == 0 && has_ext(exts, "cl_amd_device_attribute_query")) {
		cl_device_topology_amd topo;

		if (clGetDeviceInfo(dev, CL_DEVICE_TOPOLOGY_AMD, sizeof(topo), &topo, NULL) == CL_SUCCESS &&
		    topo.raw.type == CL_DEVICE_TOPOLOGY_TYPE_PCIE_AMD) {
			snprintf(out, outsz, "0000:%02x:%02x.%x", (unsigned)(unsigned char)topo.pcie.bus,
				 (unsigned)(unsigned char)topo.pcie.device & 0x1f,
				 (unsigned)(unsigned char)topo.pcie.function & 7);
			return true;
		}
	}
	return false;
}

/* The extensions acceld cares about, space-separated. */
static void ext_summary(const char *exts, char *out, size_t outsz)
{
	static const char *const wanted[] = {
		"cl_khr_fp64",
		"cl_khr_fp16",
		"cl_khr_int64_base_atomics",
		"cl_khr_subgroups",
		"cl_khr_il_program",
		"cl_khr_pci_bus_info",
		"cl_khr_device_uuid",
		"cl_nv_device_attribute_query",
		"cl_amd_device_attribute_query",
		"cl_intel_subgroups",
	};
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (!has_ext(exts, wanted[i]))
			continue;
		if (len + strlen(wanted[i]) + 2 > outsz)
			break;
		len += (size_t)snprintf(out + len, outsz - len, "%s%s", len ? " " : "", wanted[i]);
	}
}

/* NVML writes UUIDs as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx; the same bytes let detect merge by UUID. */
static void nvidia_uuid(cl_device_id dev, const char *exts, char *out, size_t outsz)
{
	unsigned char u[16];

	out[0] = '\0';
	if (!has_ext(exts, "cl_khr_device_uuid") ||
	    clGetDeviceInfo(dev, CL_DEVICE_UUID_KHR, sizeof(u), u, NULL) != CL_SUCCESS)
		return;
	snprintf(out, outsz, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* Describes one device; returns false (and leaves d alone) for types acceld does not list. */
static bool describe(cl_device_id dev, const char *platform, unsigned pi, unsigned di, struct device *d)
{
	cl_device_type type = 0;
	char vendor_raw[128];
	char exts[8192];
	char board[128];
	cl_uint u;
	cl_ulong ul;

	if (clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL) != CL_SUCCESS)
		return false;
	if (type & CL_DEVICE_TYPE_GPU)
		device_init(d, DEVICE_GPU);
	else if (type & CL_DEVICE_TYPE_CPU)
		device_init(d, DEVICE_CPU);
	else
		return false;
	d->sources = SOURCE_OPENCL;
	d->opencl.present = true;
	d->opencl.platform_index = pi;
	d->opencl.device_index = di;
	DEVICE_SET(d->opencl.platform, platform);
	dev_str(dev, CL_DEVICE_NAME, d->opencl.name, sizeof(d->opencl.name));
	dev_str(dev, CL_DEVICE_VERSION, d->opencl.version, sizeof(d->opencl.version));
	dev_str(dev, CL_DRIVER_VERSION, d->opencl.driver_version, sizeof(d->opencl.driver_version));
	dev_str(dev, CL_DEVICE_VENDOR, vendor_raw, sizeof(vendor_raw));
	dev_str(dev, CL_DEVICE_EXTENSIONS, exts, sizeof(exts));
	short_vendor(vendor_raw, d->vendor, sizeof(d->vendor));
	ext_summary(exts, d->opencl.extensions_summary, sizeof(d->opencl.extensions_summary));
	if (dev_ulong(dev, CL_DEVICE_GLOBAL_MEM_SIZE, &ul))
		d->opencl.global_mem_bytes = ul;
	if (dev_ulong(dev, CL_DEVICE_LOCAL_MEM_SIZE, &ul))
		d->opencl.local_mem_bytes = ul;
	if (dev_ulong(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &ul))
		d->opencl.max_alloc_bytes = ul;
	if (dev_uint(dev, CL_DEVICE_MAX_COMPUTE_UNITS, &u))
		d->opencl.compute_units = u;
	if (dev_uint(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, &u))
		d->opencl.clock_mhz = u;
	if (d->type == DEVICE_CPU)
		return true; /* the CPU's own fields come from hwloc; the OpenCL view only adds the opencl member */
	DEVICE_SET(d->model, d->opencl.name);
	/* AMD names the chip ("gfx942") as the device; the board name is the product */
	if (strcmp(d->vendor, "AMD") == 0 && has_ext(exts, "cl_amd_device_attribute_query")) {
		dev_str(dev, CL_DEVICE_BOARD_NAME_AMD, board, sizeof(board));
		if (board[0] != '\0')
			DEVICE_SET(d->model, board);
	}
	pci_bus_id(dev, d->vendor, exts, d->pci_bus_id, sizeof(d->pci_bus_id));
	if (strcmp(d->vendor, "NVIDIA") == 0)
		nvidia_uuid(dev, exts, d->uuid, sizeof(d->uuid));
	d->memory_total_bytes = d->opencl.global_mem_bytes;
	d->compute_units = d->opencl.compute_units;
	d->clock_mhz = d->opencl.clock_mhz;
	return true;
}

static void opencl_probe(void **state, const struct config *cfg, struct device_list *out, struct probe_result *res)
{
	cl_platform_id plats[MAX_PLATFORMS];
	cl_uint nplat = 0;
	cl_int err;
	unsigned skipped = 0;
	size_t wlen = 0;

	(void)state;
	(void)cfg;
	pthread_once(&fixup_once, fixup_run);
	err = clGetPlatformIDs(MAX_PLATFORMS, plats, &nplat);
	if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && nplat == 0)) {
		res->ok = true;
		res->available = false;
		snprintf(res->why, sizeof(res->why), "no OpenCL platform%s%.200s", fixup_note[0] ? "; " : "",
			 fixup_note);
		return;
	}
	if (err != CL_SUCCESS) {
		res->ok = false;
		snprintf(res->why, sizeof(res->why), "clGetPlatformIDs failed (%d)", (int)err);
		return;
	}
	if (nplat > MAX_PLATFORMS)
		nplat = MAX_PLATFORMS;
	res->ok = true;
	res->available = true;
	for (cl_uint p = 0; p < nplat; p++) {
		cl_device_id devs[MAX_DEVICES];
		cl_uint ndev = 0;
		char pname[64];

		platform_name(plats[p], pname, sizeof(pname));
		err = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &ndev);
		if (err == CL_DEVICE_NOT_FOUND)
			continue;
		if (err != CL_SUCCESS) {
			wlen += (size_t)snprintf(res->why + wlen, wlen < sizeof(res->why) ? sizeof(res->why) - wlen : 0,
						 "%s%.40s: clGetDeviceIDs failed (%d)", wlen ? "; " : "", pname,
						 (int)err);
			continue;
		}
		if (ndev > MAX_DEVICES)
			ndev = MAX_DEVICES;
		for (cl_uint i = 0; i < ndev; i++) {
			struct device d;

			if (describe(devs[i], pname, p, i, &d))
				device_list_add(out, &d);
			else
				skipped++;
		}
	}
	if (skipped > 0 && wlen < sizeof(res->why))
		wlen += (size_t)snprintf(res->why + wlen, sizeof(res->why) - wlen,
					 "%s%u device(s) neither CPU nor GPU left out", wlen ? "; " : "", skipped);
	if (fixup_note[0] != '\0' && wlen < sizeof(res->why))
		snprintf(res->why + wlen, sizeof(res->why) - wlen, "%s%.200s", wlen ? "; " : "", fixup_note);
}

const struct probe_ops probe_opencl_ops = {
	.name = "opencl",
	.trust = 1,
	.probe = opencl_probe,
	.refresh = NULL,
	.release = NULL,
};
