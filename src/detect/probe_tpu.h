/*
 * probe_tpu: Google TPUs found without any TPU library, from the PCI bus (vendor 0x1ae0 and the device-id table),
 * their device nodes (/dev/accelN for v2-v4, /dev/vfio/<group> for v5e and later, each counted only when the PCI
 * function behind it is Google's), the TPU_* environment and, on Google hosts only, the GCE metadata server.
 *
 * The parsers below are pure and bounded so they can be tested and fuzzed on their own.
 */
#ifndef ACCELD_PROBE_TPU_H
#define ACCELD_PROBE_TPU_H

#include <stddef.h>

#define TPU_ENV_MAX_BYTES 65536 /* the largest tpu-env document accepted */
#define TPU_ENV_MAX_LINES 1024
#define TPU_ENV_MAX_VALUE 1024

/* What acceld takes from the metadata attribute tpu-env. */
struct tpu_env {
	char accelerator_type[32]; /* "v6e-8"; "" absent */
	char topology[32];         /* "2x4"; "" absent */
	int worker_id;             /* -1 absent */
	char name[64];             /* TPU_NAME; "" absent */
};

/*
 * Parses tpu-env text of len bytes (not NUL-terminated necessarily): lines `KEY: 'value'` (or an unquoted value
 * of safe characters), blank lines allowed, \r\n accepted. Keys are [A-Z_][A-Z0-9_]*; known keys (ACCELERATOR_TYPE,
 * TOPOLOGY, WORKER_ID) must appear at most once and hold a valid value; other keys are checked for form only.
 * Returns 0, or -1 when anything is malformed or a limit is passed (out is then left empty).
 */
int probe_tpu_env_parse(const char *text, size_t len, struct tpu_env *out);

/*
 * Parses an accelerator type as GCP names slices: "v2-8", "v3-32", "v4-8", "v5p-8" and "tpu7x-16" count
 * TensorCores (two per chip); "v5litepod-4", "v5lite-4", "v5e-4" and "v6e-8" count chips. Writes the generation
 * ("v2", "v3", "v4", "v5p", "v5e", "v6e", "tpu7x") into gen and the chips of the whole slice into *chips.
 * Returns 0, or -1 when the name is not one of these forms.
 */
int probe_tpu_type_parse(const char *name, char *gen, size_t gensz, unsigned *chips);

/* Checks a topology such as "2x4" or "4x4x8" (1 to 3 positive factors); returns 0, or -1. */
int probe_tpu_topology_check(const char *text);

#endif
