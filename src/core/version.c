/* version: build identity and the run-time versions of the libraries acceld uses. */
#include "core/version.h"

#include <stdio.h>
#include <string.h>

#include <hwloc.h>

#include "exec/backend/exec_cpu.h"
#include "http/http.h"
#include "store/store.h"

#ifndef ACCELD_VERSION
#define ACCELD_VERSION "0.0.0"
#endif
#ifndef ACCELD_COMMIT
#define ACCELD_COMMIT "unknown"
#endif
#ifndef ACCELD_BUILD_TIME
#define ACCELD_BUILD_TIME "unknown"
#endif

const char *version_string(void)
{
	return ACCELD_VERSION;
}

const char *version_commit(void)
{
	return ACCELD_COMMIT;
}

const char *version_build_time(void)
{
	return ACCELD_BUILD_TIME;
}

json_t *version_json(void)
{
	unsigned hw = hwloc_get_api_version();
	char hwloc[32];
	char blas[128];
	const char *cfg = exec_cpu_blas_config(); /* OpenBLAS is loaded at run time, not linked */

	snprintf(hwloc, sizeof(hwloc), "%u.%u.%u", hw >> 16, (hw >> 8) & 0xff, hw & 0xff);
	/* "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." -> "0.3.21" */
	snprintf(blas, sizeof(blas), "%s", cfg ? cfg : "unknown");
	if (strncmp(blas, "OpenBLAS ", 9) == 0) {
		memmove(blas, blas + 9, strlen(blas + 9) + 1);
		blas[strcspn(blas, " ")] = '\0';
	}
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "version", ACCELD_VERSION, "commit",
			 ACCELD_COMMIT, "build_time", ACCELD_BUILD_TIME, "libraries", "libmicrohttpd",
			 http_library_version(), "jansson", jansson_version_str(), "sqlite", store_sqlite_version(),
			 "hwloc", hwloc, "openblas", blas);
}
