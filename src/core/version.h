/* version: what this build is (the libraries it runs with are app_version_json's, which may ask every module). */
#ifndef ACCELD_VERSION_H
#define ACCELD_VERSION_H

const char *version_string(void);
const char *version_commit(void);
const char *version_build_time(void);

#endif
