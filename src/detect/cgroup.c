/* cgroup: finding this process's control groups (v2, v1, hybrid) and reading their limits and usage. */
#include "detect/cgroup.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hwfile.h"

#define CGROUP_DEPTH_MAX 32

/* The names of the controllers in /proc/self/cgroup and in cgroup.controllers. */
static const char *const controller_names[CGROUP_NCONTROLLERS] = {"cpu", "cpuacct", "memory", "cpuset"};

/* The folders a v1 controller is mounted as below fs/cgroup, most common first. */
static const char *const v1_mounts[CGROUP_NCONTROLLERS][4] = {
	[CGROUP_CPU] = {"cpu,cpuacct", "cpu", "cpuacct,cpu", NULL},
	[CGROUP_CPUACCT] = {"cpu,cpuacct", "cpuacct", "cpuacct,cpu", NULL},
	[CGROUP_MEMORY] = {"memory", NULL},
	[CGROUP_CPUSET] = {"cpuset", NULL},
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* True when name is in the list, whose items are separated by sep. */
static bool in_list(const char *list, char sep, const char *name)
{
	size_t n = strlen(name);

	while (*list) {
		const char *end = strchr(list, sep);
		size_t len = end ? (size_t)(end - list) : strlen(list);

		if (len == n && strncmp(list, name, n) == 0)
			return true;
		list += len;
		if (*list == sep)
			list++;
	}
	return false;
}

/*
 * Sets place->dir to root + path when that folder exists, else to root (inside a cgroup namespace the path names
 * a place the mount does not show).
 */
static void set_dir(struct cgroup_place *p, const char *path)
{
	size_t rootlen = strlen(p->root);

	if (snprintf(p->dir, sizeof(p->dir), "%s%s", p->root, path) >= (int)sizeof(p->dir) || !is_dir(p->dir))
		snprintf(p->dir, sizeof(p->dir), "%s", p->root);
	while (strlen(p->dir) > rootlen && p->dir[strlen(p->dir) - 1] == '/')
		p->dir[strlen(p->dir) - 1] = '\0';
}

/* Chooses the tree of each controller: the unified one, a v1 mount, or for hybrid hosts the unified one again. */
static void find_roots(struct cgroup *cg, const char *sysfs_root)
{
	char base[CGROUP_PATH_MAX];
	char path[CGROUP_PATH_MAX + 32];
	char hybrid[CGROUP_PATH_MAX];
	char controllers[512] = "";
	bool have_hybrid;

	snprintf(base, sizeof(base), "%s/fs/cgroup", sysfs_root);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
	if (access(path, R_OK) == 0) {
		cg->unified = true;
		for (int c = 0; c < CGROUP_NCONTROLLERS; c++) {
			cg->place[c].v2 = true;
			snprintf(cg->place[c].root, sizeof(cg->place[c].root), "%s", base);
		}
		return;
	}
	snprintf(hybrid, sizeof(hybrid), "%.1000s/unified", base);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", hybrid);
	have_hybrid = hwfile_read_text(controllers, sizeof(controllers), "%s", path) == 0;
	cg->unified = have_hybrid;
	for (int c = 0; c < CGROUP_NCONTROLLERS; c++) {
		struct cgroup_place *p = &cg->place[c];

		for (size_t i = 0; v1_mounts[c][i] != NULL && p->root[0] == '\0'; i++) {
			snprintf(p->root, sizeof(p->root), "%.1000s/%s", base, v1_mounts[c][i]);
			if (is_dir(p->root))
				cg->v1 = true;
			else
				p->root[0] = '\0';
		}
		/* a controller no v1 tree holds may be enabled in the unified one; cpu.stat is in every v2 folder */
		if (p->root[0] == '\0' && have_hybrid &&
		    (c == CGROUP_CPUACCT || in_list(controllers, ' ', controller_names[c]))) {
			p->v2 = true;
			snprintf(p->root, sizeof(p->root), "%s", hybrid);
		}
	}
}

void cgroup_find(struct cgroup *cg, const char *sysfs_root, const char *proc_root)
{
	char path[CGROUP_PATH_MAX];
	char line[CGROUP_PATH_MAX];
	FILE *f;

	memset(cg, 0, sizeof(*cg));
	find_roots(cg, sysfs_root);
	snprintf(path, sizeof(path), "%s/self/cgroup", proc_root);
	f = fopen(path, "re");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		/* "hierarchy-id:controller,list:/path"; v2's line is "0::/path" */
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		bool unified_line;

		if (c2 == NULL)
			continue;
		*c1 = '\0';
		*c2 = '\0';
		c2[1 + strcspn(c2 + 1, "\n")] = '\0';
		unified_line = strcmp(line, "0") == 0 && c1[1] == '\0';
		for (int c = 0; c < CGROUP_NCONTROLLERS; c++) {
			struct cgroup_place *p = &cg->place[c];

			if (p->root[0] == '\0')
				continue;
			if (p->v2 ? unified_line : in_list(c1 + 1, ',', controller_names[c]))
				set_dir(p, c2 + 1);
		}
	}
	if (f != NULL)
		fclose(f);
	for (int c = 0; c < CGROUP_NCONTROLLERS; c++) {
		struct cgroup_place *p = &cg->place[c];

		if (p->dir[0] == '\0' && p->root[0] != '\0' && is_dir(p->root))
			snprintf(p->dir, sizeof(p->dir), "%s", p->root);
	}
}

const char *cgroup_mode(const struct cgroup *cg)
{
	bool found = false;

	for (int c = 0; c < CGROUP_NCONTROLLERS; c++)
		found = found || cg->place[c].dir[0] != '\0';
	if (!found)
		return NULL;
	if (!cg->v1)
		return "v2";
	return cg->unified ? "hybrid" : "v1";
}

const char *cgroup_dir(const struct cgroup *cg, enum cgroup_controller c)
{
	if ((int)c < 0 || c >= CGROUP_NCONTROLLERS || cg->place[c].dir[0] == '\0')
		return NULL;
	return cg->place[c].dir;
}

/* Cuts the last path component off dir unless it is root; returns false when it was root already. */
static bool to_parent(char *dir, const char *root)
{
	char *slash;

	if (strlen(dir) <= strlen(root))
		return false;
	slash = strrchr(dir, '/');
	if (slash == NULL || (size_t)(slash - dir) < strlen(root))
		return false;
	*slash = '\0';
	return true;
}

int cgroup_cpuset(const struct cgroup *cg, char *out, size_t outsz)
{
	static const char *const names[] = {"cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"};
	const struct cgroup_place *p = &cg->place[CGROUP_CPUSET];
	char path[CGROUP_PATH_MAX + 32];

	if (p->dir[0] == '\0' || outsz == 0)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", p->dir, names[i]);
		if (hwfile_read_text(out, outsz, "%s", path) == 0 && out[0] != '\0')
			return 0;
	}
	out[0] = '\0';
	return -1;
}

/* The quota of one folder in CPUs, or NAN when it is not limited; sets *seen when its quota file was read. */
static double folder_quota(const struct cgroup_place *p, const char *dir, bool *seen)
{
	char path[CGROUP_PATH_MAX + 32];
	char text[128];
	uint64_t quota = 0;
	uint64_t period = 0;
	bool limited = false;

	if (p->v2) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		if (hwfile_read_text(text, sizeof(text), "%s", path) == 0) {
			char *sp = strchr(text, ' ');

			*seen = true;
			if (sp != NULL && strncmp(text, "max", 3) != 0) {
				*sp = '\0';
				limited = hwfile_parse_field_u64(text, &quota) == 0 &&
					  hwfile_parse_field_u64(sp + 1, &period) == 0;
			}
		}
	} else {
		snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dir);
		if (hwfile_read_text(text, sizeof(text), "%s", path) == 0) {
			*seen = true;
			/* -1 is "no limit" */
			if (text[0] != '-' && hwfile_parse_field_u64(text, &quota) == 0) {
				snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", dir);
				limited = hwfile_read_text(text, sizeof(text), "%s", path) == 0 &&
					  hwfile_parse_field_u64(text, &period) == 0;
			}
		}
	}
	return limited && quota > 0 && period > 0 ? (double)quota / (double)period : NAN;
}

int cgroup_cpu_quota(const struct cgroup *cg, double *cpus)
{
	const struct cgroup_place *p = &cg->place[CGROUP_CPU];
	char dir[CGROUP_PATH_MAX];
	bool seen = false;

	*cpus = NAN;
	if (p->dir[0] == '\0')
		return -1;
	snprintf(dir, sizeof(dir), "%s", p->dir);
	for (int depth = 0; depth < CGROUP_DEPTH_MAX; depth++) {
		double q = folder_quota(p, dir, &seen);

		if (!isnan(q) && (isnan(*cpus) || q < *cpus))
			*cpus = q;
		if (!to_parent(dir, p->root))
			break;
	}
	return seen ? 0 : -1;
}

int cgroup_memory_limit(const struct cgroup *cg, uint64_t *bytes)
{
	const struct cgroup_place *p = &cg->place[CGROUP_MEMORY];
	char dir[CGROUP_PATH_MAX];
	char path[CGROUP_PATH_MAX + 32];
	char text[64];
	bool seen = false;

	*bytes = 0;
	if (p->dir[0] == '\0')
		return -1;
	snprintf(dir, sizeof(dir), "%s", p->dir);
	for (int depth = 0; depth < CGROUP_DEPTH_MAX; depth++) {
		uint64_t v;

		snprintf(path, sizeof(path), "%s/%s", dir, p->v2 ? "memory.max" : "memory.limit_in_bytes");
		if (hwfile_read_text(text, sizeof(text), "%s", path) == 0) {
			seen = true;
			/* v2 writes "max"; v1 writes "no limit" as a page-rounded LLONG_MAX */
			if (hwfile_parse_field_u64(text, &v) == 0 && v < (1ull << 62) && (*bytes == 0 || v < *bytes))
				*bytes = v;
		}
		if (!to_parent(dir, p->root))
			break;
	}
	return seen ? 0 : -1;
}

int cgroup_memory_usage(const struct cgroup *cg, uint64_t *bytes, uint64_t *inactive_file)
{
	const struct cgroup_place *p = &cg->place[CGROUP_MEMORY];
	char path[CGROUP_PATH_MAX + 32];
	char text[64];
	char line[256];
	const char *key = p->v2 ? "inactive_file " : "total_inactive_file ";
	FILE *f;

	if (p->dir[0] == '\0')
		return -1;
	snprintf(path, sizeof(path), "%s/%s", p->dir, p->v2 ? "memory.current" : "memory.usage_in_bytes");
	if (hwfile_read_text(text, sizeof(text), "%s", path) != 0 || hwfile_parse_field_u64(text, bytes) != 0)
		return -1;
	if (inactive_file == NULL)
		return 0;
	*inactive_file = 0;
	snprintf(path, sizeof(path), "%s/memory.stat", p->dir);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0 &&
		    hwfile_parse_field_u64(line + strlen(key), inactive_file) != 0)
			*inactive_file = 0;
	fclose(f);
	return 0;
}

int cgroup_cpu_usage_usec(const struct cgroup *cg, uint64_t *usec)
{
	const struct cgroup_place *p = &cg->place[CGROUP_CPUACCT];
	char path[CGROUP_PATH_MAX + 32];
	char line[256];
	uint64_t ns;
	int rc = -1;
	FILE *f;

	if (p->dir[0] == '\0')
		return -1;
	if (!p->v2) {
		snprintf(path, sizeof(path), "%s/cpuacct.usage", p->dir);
		if (hwfile_read_text(line, sizeof(line), "%s", path) != 0 || hwfile_parse_field_u64(line, &ns) != 0)
			return -1;
		*usec = ns / 1000u;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/cpu.stat", p->dir);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (rc != 0 && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "usage_usec ", 11) == 0 && hwfile_parse_field_u64(line + 11, usec) == 0)
			rc = 0;
	fclose(f);
	return rc;
}
