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

/*
 * Fills dev->pjrt for a TPU or NVIDIA GPU (others are left alone): the plugin found for its kind, marking the device
 * BACKEND_PJRT, or why there is none; then what loading it said, if it was loaded (pjrt_plugin_status). Call it
 * for the devices in registry order: seen[kind] counts the devices of each kind so far (their CUDA ordinals).
 */
void pjrt_plugin_describe(const struct config *cfg, struct device *dev, unsigned seen[PJRT_KIND_COUNT]);

/*
 * Brings dev->pjrt up to date with what loading its plugin found (API version, platform after a client ran, a
 * refusal): usable stays true until a load refuses the plugin. Cheap: detection calls it for every snapshot.
 */
void pjrt_plugin_status(struct device_pjrt *p);

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

/* "INVALID_ARGUMENT", ...: the name of a PJRT error code, as absl names it. */
const char *pjrt_error_code_name(int code);

#endif
