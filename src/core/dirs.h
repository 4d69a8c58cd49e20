/*
 * dirs: making the folders acceld keeps its files in (the database's, the compile caches'), each folder it makes
 * said in the log.
 */
#ifndef ACCELD_DIRS_H
#define ACCELD_DIRS_H

#include <sys/types.h>

/*
 * Creates the folder dir and every missing folder above it, each with mode (less the umask); each one made is
 * logged at info under component as msg with its path ("folder"). Returns 0 when dir exists afterwards, or -1 with
 * errno set (a path too long: ENAMETOOLONG; a part that is a file: ENOTDIR or EEXIST).
 */
int dirs_make(const char *dir, mode_t mode, const char *component, const char *msg);

/* The same for the folder that holds the file at path (nothing to make for a bare file name). */
int dirs_make_parent(const char *path, mode_t mode, const char *component, const char *msg);

#endif
