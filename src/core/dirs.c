/* Folders made with their parents, each one said in the log. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/dirs.h"
#include "core/log.h"

#define DIRS_PATH_MAX 4096

/* Makes one folder, saying so; 0 when it is there afterwards. */
static int make_one(const char *path, mode_t mode, const char *component, const char *msg)
{
	struct stat st;

	if (mkdir(path, mode) == 0) {
		log_fields(LOGL_INFO, component, msg, (struct log_field[]){LOG_S("folder", path)}, 1);
		return 0;
	}
	if (errno != EEXIST)
		return -1;
	if (stat(path, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Makes the first len bytes of path as a folder, its parents first. */
static int make_prefix(const char *path, size_t len, mode_t mode, const char *component, const char *msg)
{
	char p[DIRS_PATH_MAX];

	if (len == 0)
		return 0;
	if (len >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	{ /* "a//b/" is "a/b" */
		size_t n = 0;

		for (size_t i = 0; i < len; i++)
			if (path[i] != '/' || n == 0 || p[n - 1] != '/')
				p[n++] = path[i];
		len = n > 1 && p[n - 1] == '/' ? n - 1 : n;
		p[len] = '\0';
	}
	for (size_t i = 1; i < len; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		if (make_one(p, mode, component, msg) != 0)
			return -1;
		p[i] = '/';
	}
	return make_one(p, mode, component, msg);
}

int dirs_make(const char *dir, mode_t mode, const char *component, const char *msg)
{
	return make_prefix(dir, strlen(dir), mode, component, msg);
}

int dirs_make_parent(const char *path, mode_t mode, const char *component, const char *msg)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL || slash == path) /* a bare name, or a file in / */
		return 0;
	return make_prefix(path, (size_t)(slash - path), mode, component, msg);
}
