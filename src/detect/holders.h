/*
 * holders: which other process holds an accelerator, from facts rather than error messages: NVML's running compute
 * processes for an NVIDIA GPU, and the owner of the POSIX lock on libtpu's lock file for a TPU. A pid is named with
 * its /proc/<pid>/comm where that is visible (another user's process in another PID namespace may not be).
 */
#ifndef ACCELD_HOLDERS_H
#define ACCELD_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#define HOLDERS_MAX 8

struct holder {
	long pid;
	char name[32];  /* its comm, "" when not visible */
	uint64_t bytes; /* the device memory NVML says it uses; 0 unknown (a lock file's owner) */
};

/*
 * The processes other than this one that NVML lists as running compute work on the GPU of this UUID (at most max
 * into out); the count listed. 0 also when NVML cannot say: why then says why ("" when it could).
 */
size_t holders_gpu(const struct config *cfg, const char *uuid, struct holder *out, size_t max, char *why,
		   size_t whysz);

/*
 * The same for the GPU's memory: the processes other than this one and those it started (acceld's workers) into out
 * (at most max; the count listed), each with the bytes it uses, and the bytes this process and those it started use
 * into *own. 0 also when NVML cannot say (why says why).
 */
size_t holders_gpu_memory(const struct config *cfg, const char *uuid, struct holder *out, size_t max, uint64_t *own,
			  char *why, size_t whysz);

/* The process (other than this one) holding a POSIX lock on the file at path (lockf, fcntl), as /proc/locks says
 * (under cfg's proc root); false when none does, the file is not there or the table cannot be read. */
bool holders_lock_file(const struct config *cfg, const char *path, struct holder *out);

/* "process 4242 (python3)", or "process 4242" without a visible name, then " holding N bytes" where its bytes are
 * known; several joined with ", ". */
void holders_text(const struct holder *h, size_t n, char *out, size_t outsz);

#endif
