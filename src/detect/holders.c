/*
 * holders: who else holds an accelerator (holders.h).
 */
#include "detect/holders.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* NVML's process entry as _v2 and _v3 fill it (nvml.h: nvmlProcessInfo_t), and v1's older, shorter one */
struct nvml_process {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

struct nvml_process_v1 {
	unsigned int pid;
	unsigned long long used_gpu_memory;
};

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(const char *, void **);
typedef int (*nvml_procs_fn)(void *, unsigned int *, void *);

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define PROCS_MAX 64

static void *symbol(void *lib, const char *name)
{
	return dlsym(lib, name);
}

/* The comm of pid under cfg's proc root, "" when it cannot be read. */
static void comm_of(const struct config *cfg, long pid, char *out, size_t outsz)
{
	char path[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%ld/comm", cfg->proc_root && *cfg->proc_root ? cfg->proc_root : "/proc", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(out, (int)outsz, f) == NULL)
		out[0] = '\0';
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

/* Whether pid's parent is this process (/proc/<pid>/stat's fourth field, after the parenthesised comm). */
static bool started_here(const struct config *cfg, long pid)
{
	char path[512], line[512];
	const char *close;
	long ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%ld/stat", cfg->proc_root && *cfg->proc_root ? cfg->proc_root : "/proc", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	close = strrchr(line, ')');
	return close != NULL && sscanf(close + 1, " %*c %ld", &ppid) == 1 && ppid == (long)getpid();
}

/* NVML's "not available" for a process's memory (NVML_VALUE_NOT_AVAILABLE) is read as unknown (0). */
static uint64_t used_bytes(unsigned long long v)
{
	return v == ~0ull ? 0 : (uint64_t)v;
}

/*
 * NVML's running processes of the GPU of uuid, others into out. own NULL: only this process is left out; else also
 * those it started, and what they all use is summed into *own.
 */
static size_t list_gpu(const struct config *cfg, const char *uuid, struct holder *out, size_t max, uint64_t *own,
		       char *why, size_t whysz)
{
	static const char stock[] = "libnvidia-ml.so.1";
	const char *name = cfg->nvml_library && *cfg->nvml_library ? cfg->nvml_library : stock;
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	void *init_sym, *shutdown_sym, *handle_sym, *procs_sym;
	nvml_init_fn init = NULL, shutdown = NULL;
	nvml_handle_fn handle = NULL;
	nvml_procs_fn procs = NULL;
	struct nvml_process list[PROCS_MAX];
	unsigned int count = PROCS_MAX;
	bool v1 = false;
	void *dev = NULL;
	size_t n = 0;
	int rc;

	why[0] = '\0';
	if (lib == NULL && strcmp(name, stock) == 0)
		lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		snprintf(why, whysz, "NVML is not loaded");
		return 0;
	}
	init_sym = symbol(lib, "nvmlInit_v2");
	if (init_sym == NULL)
		init_sym = symbol(lib, "nvmlInit");
	shutdown_sym = symbol(lib, "nvmlShutdown");
	handle_sym = symbol(lib, "nvmlDeviceGetHandleByUUID");
	procs_sym = symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (procs_sym == NULL)
		procs_sym = symbol(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	if (procs_sym == NULL) {
		procs_sym = symbol(lib, "nvmlDeviceGetComputeRunningProcesses");
		v1 = true;
	}
	/* ISO C has no object-to-function pointer cast; POSIX guarantees the representations agree */
	memcpy(&init, &init_sym, sizeof(init));
	memcpy(&shutdown, &shutdown_sym, sizeof(shutdown));
	memcpy(&handle, &handle_sym, sizeof(handle));
	memcpy(&procs, &procs_sym, sizeof(procs));
	if (init == NULL || handle == NULL || procs == NULL || uuid == NULL || uuid[0] == '\0') {
		snprintf(why, whysz, "%s", uuid == NULL || uuid[0] == '\0' ? "the GPU's UUID is not known" :
					   "NVML does not list running processes");
		goto out;
	}
	if (init() != NVML_SUCCESS) {
		snprintf(why, whysz, "NVML did not initialise");
		goto out;
	}
	rc = handle(uuid, &dev);
	if (rc == NVML_SUCCESS) {
		if (v1) {
			struct nvml_process_v1 old[PROCS_MAX];

			rc = procs(dev, &count, old);
			for (unsigned i = 0; rc == NVML_SUCCESS && i < count && i < PROCS_MAX; i++) {
				list[i].pid = old[i].pid;
				list[i].used_gpu_memory = old[i].used_gpu_memory;
			}
		} else {
			rc = procs(dev, &count, list);
		}
	}
	if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE)
		snprintf(why, whysz, "NVML did not list the GPU's processes (error %d)", rc);
	for (unsigned i = 0; rc == NVML_SUCCESS && i < count && i < PROCS_MAX && n < max; i++) {
		long pid = (long)list[i].pid;

		if (pid == (long)getpid() || (own != NULL && started_here(cfg, pid))) {
			if (own != NULL)
				*own += used_bytes(list[i].used_gpu_memory);
			continue;
		}
		out[n].pid = pid;
		out[n].bytes = used_bytes(list[i].used_gpu_memory);
		comm_of(cfg, out[n].pid, out[n].name, sizeof(out[n].name));
		n++;
	}
	if (shutdown != NULL)
		shutdown();
out:
	dlclose(lib);
	return n;
}

size_t holders_gpu(const struct config *cfg, const char *uuid, struct holder *out, size_t max, char *why,
		   size_t whysz)
{
	return list_gpu(cfg, uuid, out, max, NULL, why, whysz);
}

size_t holders_gpu_memory(const struct config *cfg, const char *uuid, struct holder *out, size_t max, uint64_t *own,
			  char *why, size_t whysz)
{
	*own = 0;
	return list_gpu(cfg, uuid, out, max, own, why, whysz);
}

/*
 * From /proc/locks (no descriptor of the file is opened: closing one would drop any POSIX lock this process holds on
 * it). A line: "1: POSIX  ADVISORY  WRITE 4242 08:01:1835011 0 EOF" (id, class, mode, type, pid, major:minor:inode in
 * hexadecimal, decimal, range); lockf takes POSIX locks.
 */
bool holders_lock_file(const struct config *cfg, const char *path, struct holder *out)
{
	char locks[512], line[256];
	struct stat st;
	bool found = false;
	FILE *f;

	if (stat(path, &st) != 0)
		return false;
	snprintf(locks, sizeof(locks), "%s/locks", cfg->proc_root && *cfg->proc_root ? cfg->proc_root : "/proc");
	f = fopen(locks, "re");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char cls[16], mode[16], type[16];
		unsigned maj, min;
		unsigned long long ino;
		long pid;

		if (strstr(line, "->") != NULL) /* a waiter, not a holder */
			continue;
		if (sscanf(line, "%*d: %15s %15s %15s %ld %x:%x:%llu", cls, mode, type, &pid, &maj, &min, &ino) != 7)
			continue;
		if (strcmp(cls, "POSIX") != 0 && strcmp(cls, "OFDLCK") != 0)
			continue;
		if (ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) || min != minor(st.st_dev) ||
		    pid <= 0 || pid == (long)getpid())
			continue;
		out->pid = pid;
		out->bytes = 0;
		comm_of(cfg, pid, out->name, sizeof(out->name));
		found = true;
	}
	fclose(f);
	return found;
}

void holders_text(const struct holder *h, size_t n, char *out, size_t outsz)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && len + 1 < outsz; i++) {
		int w = h[i].name[0] != '\0' ?
				snprintf(out + len, outsz - len, "%sprocess %ld (%s)", i > 0 ? ", " : "", h[i].pid,
					 h[i].name) :
				snprintf(out + len, outsz - len, "%sprocess %ld", i > 0 ? ", " : "", h[i].pid);

		if (w < 0 || (size_t)w >= outsz - len)
			break;
		len += (size_t)w;
		if (h[i].bytes > 0) {
			w = snprintf(out + len, outsz - len, " holding %" PRIu64 " bytes", h[i].bytes);
			if (w < 0 || (size_t)w >= outsz - len)
				break;
			len += (size_t)w;
		}
	}
}
