/*
 * pjrt_plugin: finding, loading and describing the PJRT plugins that run jobs on TPUs (libtpu.so) and NVIDIA GPUs
 * (JAX's CUDA plugin), without Python and without linking them.
 *
 * Where a plugin comes from, first match wins, per kind (tpu, cuda):
 *   1. ACCELD_PJRT_PLUGINS (--pjrt-plugins): tpu=PATH,cuda=PATH; a path it names is used or nothing is ("none"
 *      disables PJRT altogether);
 *   2. TPU_LIBRARY_PATH (tpu), as libtpu's own loaders read it;
 *   3. PJRT_NAMES_AND_LIBRARY_PATHS: NAME:PATH[,NAME:PATH] as JAX reads it (tpu; cuda or gpu);
 *   4. the folders of ACCELD_PJRT_SEARCH (default $VIRTUAL_ENV/lib, ~/.local/lib, /usr/local/lib, /usr/lib, /lib,
 *      /opt/conda/lib): below each, python3.* and python3 site-packages and dist-packages holding
 *      libtpu/libtpu.so or jax_plugins/xla_cuda13 (then 12)/xla_cuda_plugin.so, and libtpu.so in the folder itself.
 * Detection finds paths only (a stat per candidate: cheap, at every full probe). A plugin is loaded (dlopen, its
 * GetPjrtApi, the version check, PJRT_Plugin_Initialize) once per path and process, by the backend off the request
 * path; what loading found (API version, a refusal and why) is kept here and shown with the device.
 */
#ifndef ACCELD_PJRT_PLUGIN_H
#define ACCELD_PJRT_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "detect/device.h"
#include "exec/backend/pjrt_abi.h"

enum pjrt_kind { PJRT_KIND_TPU, PJRT_KIND_CUDA, PJRT_KIND_COUNT };

#define PJRT_PATH_MAX 1024

/* "tpu", "cuda". */
const char *pjrt_kind_name(enum pjrt_kind k);

/* The kind of plugin that serves dev: tpu for TPUs, cuda for NVIDIA GPUs; false for other devices. */
bool pjrt_kind_of(const struct device *dev, enum pjrt_kind *out);

/* A search's answer: the path and where it came from, or what was tried. */
struct pjrt_found {
	char path[PJRT_PATH_MAX];
	char source[48];
	char tried[768];
};

/*
 * Finds the plugin of kind in the order above; env looks variables up (NULL: the process environment). Returns
 * true with path and source, or false with what was tried in tried (also kept, shortened, when found).
 */
bool pjrt_plugin_find(const struct config *cfg, config_getenv_fn env, enum pjrt_kind kind, struct pjrt_found *out);

/* What acceld knows of the PJRT plugin of a device's kind: found, loaded, what it said, or why none serves it. GET
 * /devices shows it as the device's "pjrt" (the backend's describe). */
struct pjrt_view {
	bool found;                 /* a plugin file was found for its kind */
	bool usable;                /* found, not refused when loaded (version, symbols), and the device can be told
				       apart (its CUDA ordinal is known) */
	unsigned ordinal;           /* where its runtime counts it: a TPU's chip index, an NVIDIA GPU's CUDA ordinal
				       (gpu.cuda_ordinal: its place in CUDA_VISIBLE_DEVICES, PCI order when unset) */
	char plugin[256];           /* the plugin's path */
	char source[48];            /* where the path came from: "ACCELD_PJRT_PLUGINS", "site-packages", ... */
	char api_version[16];       /* "0.54" once loaded */
	char platform[32];          /* "tpu", "cuda" once a client ran */
	char platform_version[96];
	uint64_t memory_limit_bytes; /* PJRT_Device_MemoryStats as last read by a job (0 unknown) */
	uint64_t memory_in_use_bytes;
	char why[384];              /* why no plugin serves it, or what went wrong */
	char note[256];             /* a caveat while it is used: a refused call, a newer API; "" none */
};

/* The configuration the plugin search reads (ACCELD_PJRT_PLUGINS, ACCELD_PJRT_SEARCH); kept, not copied: cfg must
 * outlive every later call. The backend's prepare sets it, before any thread starts. */
void pjrt_plugin_configure(const struct config *cfg);

/*
 * What is known of the plugin of dev's kind (a search, a stat per candidate file: cheap, so a plugin installed later
 * is found), then what loading it said, if it was loaded (pjrt_plugin_status). False for a device no PJRT plugin
 * kind serves (a CPU, a GPU not NVIDIA's).
 */
bool pjrt_plugin_view(const struct device *dev, struct pjrt_view *v);

/*
 * Brings v up to date with what loading its plugin found (API version, platform after a client ran, a refusal):
 * usable stays true until a load refuses the plugin.
 */
void pjrt_plugin_status(struct pjrt_view *v);

/* The view as GET /devices shows it: a new object. */
json_t *pjrt_view_json(const struct pjrt_view *v);

/* A plugin as loaded: api NULL when it was refused (why says so), else ready for PJRT_Client_Create. */
struct pjrt_plugin {
	char path[PJRT_PATH_MAX];
	void *handle;
	const PJRT_Api *api;
	int major, minor;
	char why[512];
	char note[256];   /* loaded, with a caveat: a minor newer than acceld has met; "" none */
};

/*
 * Loads the plugin at path once per process (dlopen, GetPjrtApi, the version rules of pjrt_abi.h and every slot
 * acceld calls, PJRT_Plugin_Initialize) and keeps it for the process's life; later calls answer the same. NULL only
 * when more than a handful of plugin paths were asked for.
 */
const struct pjrt_plugin *pjrt_plugin_load(const char *path);

/* Reads a PJRT_Error's message into msg and destroys it; returns its code (PJRT_Error_Code_OK for NULL). */
int pjrt_error_take(const PJRT_Api *api, PJRT_Error *error, char *msg, size_t msgsz);

/* What the loader found, kept for pjrt_plugin_status: the plugin at path was loaded with this API version, or was
 * refused and why; and the platform a client reported. */
void pjrt_plugin_note_loaded(const char *path, unsigned major, unsigned minor, const char *note);
void pjrt_plugin_note_refused(const char *path, const char *why);
void pjrt_plugin_note_platform(const char *path, const char *name, const char *version);
void pjrt_plugin_note_memory(const char *path, unsigned ordinal, uint64_t limit, uint64_t in_use);
/* A call whose answer acceld needs was refused for the device at this ordinal: shown with it as pjrt.note. */
void pjrt_plugin_note_problem(const char *path, unsigned ordinal, const char *note);

/*
 * The records above as bytes, for another process of the same binary (a worker tells the daemon what loading
 * said): when they changed since *since, writes them to buf (bufsz at least pjrt_plugin_facts_max()), sets *since
 * and returns their length; 0 otherwise. pjrt_plugin_learn takes such bytes in, record by record (by path); bytes
 * of another size are ignored.
 */
size_t pjrt_plugin_facts(uint64_t *since, void *buf, size_t bufsz);
void pjrt_plugin_learn(const void *buf, size_t len);
size_t pjrt_plugin_facts_max(void);

/* "INVALID_ARGUMENT", ...: the name of a PJRT error code, as absl names it. */
const char *pjrt_error_code_name(int code);

#endif
