/* version: build identity. */
#include "core/version.h"


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
