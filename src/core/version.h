/* version: what this build is and which libraries it runs with. */
#ifndef ACCELD_VERSION_H
#define ACCELD_VERSION_H

#include <jansson.h>

const char *version_string(void);
const char *version_commit(void);
const char *version_build_time(void);

/* {version, commit, build_time, libraries: {name: version}} as a new object. */
json_t *version_json(void);

#endif
