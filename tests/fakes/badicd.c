/*
 * A broken OpenCL vendor library for the fault tests, built as $(BUILD)/fakes/libbadicd.so.
 *
 * The ICD loader (ocl-icd) loads every library an .icd file names, looks up clGetPlatformInfo (a library without it
 * is skipped), asks its clGetExtensionFunctionAddress for clIcdGetPlatformIDsKHR and calls that to learn the
 * vendor's platforms. This library answers the way a vendor
 * driver does when its device is gone or its kernel module is missing: the entry point exists and fails.
 *   FAKE_ICD_ERROR=N   the (negative) OpenCL error clIcdGetPlatformIDsKHR returns (default -6, out of host memory)
 *   FAKE_ICD_MARK=PATH each call of clIcdGetPlatformIDsKHR appends a line to PATH, so a black-box test can tell the
 *                      loader really reached this library
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_SUCCESS 0
#define CL_INVALID_VALUE (-30)
#define CL_OUT_OF_HOST_MEMORY (-6)
#define CL_INVALID_PLATFORM (-32)

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef void *cl_platform_id;

cl_int clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms);
void *clGetExtensionFunctionAddress(const char *name);
cl_int clGetPlatformInfo(cl_platform_id platform, cl_uint name, size_t size, void *value, size_t *size_ret);

static cl_int configured_error(void)
{
	const char *v = getenv("FAKE_ICD_ERROR");
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return CL_OUT_OF_HOST_MEMORY;
	n = strtol(v, &end, 10);
	return *end == '\0' && n < 0 && n > -10000 ? (cl_int)n : CL_OUT_OF_HOST_MEMORY;
}

cl_int clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms)
{
	const char *mark = getenv("FAKE_ICD_MARK");

	if (mark != NULL && *mark != '\0') {
		FILE *f = fopen(mark, "ae");

		if (f != NULL) {
			fputs("clIcdGetPlatformIDsKHR\n", f);
			fclose(f);
		}
	}
	if (num_entries == 0 && platforms != NULL)
		return CL_INVALID_VALUE;
	if (num_platforms != NULL)
		*num_platforms = 0;
	return configured_error();
}

void *clGetExtensionFunctionAddress(const char *name)
{
	cl_int (*fn)(cl_uint, cl_platform_id *, cl_uint *) = clIcdGetPlatformIDsKHR;
	void *p = NULL;

	if (name == NULL || strcmp(name, "clIcdGetPlatformIDsKHR") != 0)
		return NULL;
	/* ISO C has no conversion from a function pointer to void *; the ICD interface needs one (POSIX allows it) */
	memcpy(&p, &fn, sizeof(p));
	return p;
}

cl_int clGetPlatformInfo(cl_platform_id platform, cl_uint name, size_t size, void *value, size_t *size_ret)
{
	(void)platform;
	(void)name;
	(void)size;
	(void)value;
	if (size_ret != NULL)
		*size_ret = 0;
	return CL_INVALID_PLATFORM;
}
