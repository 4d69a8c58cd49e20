/* pjrt_plugin: the plugin search, and what loading a plugin found (see pjrt_plugin.h). */
#include "exec/backend/pjrt_plugin.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log.h"
#include "core/names.h"

static const char *const kind_names[PJRT_KIND_COUNT] = {"tpu", "cuda"};

/* The files that hold each kind's plugin, below a python3.* folder's site-packages or dist-packages. */
static const char *const package_files[PJRT_KIND_COUNT][3] = {
	[PJRT_KIND_TPU] = {"libtpu/libtpu.so", NULL},
	[PJRT_KIND_CUDA] = {"jax_plugins/xla_cuda13/xla_cuda_plugin.so", "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
			    NULL},
};

const char *pjrt_kind_name(enum pjrt_kind k)
{
	return names_at(kind_names, PJRT_KIND_COUNT, k);
}

bool pjrt_kind_of(const struct device *dev, enum pjrt_kind *out)
{
	if (dev->type == DEVICE_TPU) {
		*out = PJRT_KIND_TPU;
		return true;
	}
	if (dev->type == DEVICE_GPU && strcasecmp(dev->vendor, "NVIDIA") == 0) {
		*out = PJRT_KIND_CUDA;
		return true;
	}
	return false;
}

/* Appends a note to what was tried (cut when full). */
static void tried(struct pjrt_found *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tried(struct pjrt_found *f, const char *fmt, ...)
{
	size_t len = strlen(f->tried);
	va_list ap;

	if (len + 4 >= sizeof(f->tried))
		return;
	if (len > 0) {
		snprintf(f->tried + len, sizeof(f->tried) - len, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(f->tried + len, sizeof(f->tried) - len, fmt, ap);
	va_end(ap);
}

static bool readable(const char *path)
{
	return path[0] != '\0' && access(path, R_OK) == 0;
}

/* Takes path when the file is there; otherwise notes it under source. */
static bool take(struct pjrt_found *f, const char *path, const char *source)
{
	if (readable(path)) {
		snprintf(f->path, sizeof(f->path), "%s", path);
		snprintf(f->source, sizeof(f->source), "%s", source);
		return true;
	}
	tried(f, "%s names %s, which cannot be read", source, path);
	return false;
}

/* The name of a PJRT_NAMES_AND_LIBRARY_PATHS entry as a kind ("gpu" is JAX's older name for the CUDA plugin). */
static bool name_is_kind(const char *name, size_t len, enum pjrt_kind kind)
{
	if (kind == PJRT_KIND_TPU)
		return len == 3 && strncmp(name, "tpu", 3) == 0;
	return (len == 4 && strncmp(name, "cuda", 4) == 0) || (len == 3 && strncmp(name, "gpu", 3) == 0);
}

static bool from_names_and_paths(const char *list, enum pjrt_kind kind, struct pjrt_found *f)
{
	while (list != NULL && *list != '\0') {
		size_t len = strcspn(list, ",");
		const char *colon = memchr(list, ':', len);

		if (colon != NULL && name_is_kind(list, (size_t)(colon - list), kind)) {
			char path[PJRT_PATH_MAX];
			size_t plen = len - (size_t)(colon - list) - 1;

			if (plen < sizeof(path)) {
				memcpy(path, colon + 1, plen);
				path[plen] = '\0';
				if (take(f, path, "PJRT_NAMES_AND_LIBRARY_PATHS"))
					return true;
			}
		}
		list += len;
		if (*list == ',')
			list++;
	}
	return false;
}

/* One search folder with $VAR and a leading ~ expanded; false when a variable it names is unset. */
static bool expand(const char *entry, size_t len, config_getenv_fn env, char *out, size_t outsz)
{
	char name[64];
	const char *value = NULL;
	size_t skip = 0;

	if (len > 0 && entry[0] == '~') {
		value = env("HOME");
		skip = 1;
	} else if (len > 1 && entry[0] == '$') {
		skip = 1 + strspn(entry + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
		if (skip > len || skip - 1 >= sizeof(name))
			return false;
		memcpy(name, entry + 1, skip - 1);
		name[skip - 1] = '\0';
		value = env(name);
	}
	if (skip > 0 && (value == NULL || value[0] == '\0'))
		return false;
	return snprintf(out, outsz, "%s%.*s", skip ? value : "", (int)(len - skip), entry + skip) < (int)outsz;
}

/* The first plugin file of kind below folder (python site- and dist-packages, then the folder itself). */
static bool in_folder(const char *folder, enum pjrt_kind kind, struct pjrt_found *f)
{
	char pattern[PJRT_PATH_MAX + 128];
	bool hit = false;

	for (size_t i = 0; package_files[kind][i] != NULL && !hit; i++) {
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s/python3*/*-packages/%s", folder, package_files[kind][i]);
		if (glob(pattern, 0, NULL, &g) == 0) {
			for (size_t j = 0; j < g.gl_pathc && !hit; j++) {
				const char *p = g.gl_pathv[j];

				/* site-packages and dist-packages only */
				if (strstr(p, "/site-packages/") == NULL && strstr(p, "/dist-packages/") == NULL)
					continue;
				hit = readable(p);
				if (hit) {
					snprintf(f->path, sizeof(f->path), "%s", p);
					snprintf(f->source, sizeof(f->source), "%s",
						 strstr(p, "/site-packages/") ? "site-packages" : "dist-packages");
				}
			}
		}
		globfree(&g);
	}
	if (!hit && kind == PJRT_KIND_TPU && strlen(folder) + sizeof("/libtpu.so") <= sizeof(f->path)) {
		snprintf(f->path, sizeof(f->path), "%s/libtpu.so", folder);
		hit = readable(f->path);
		if (hit)
			snprintf(f->source, sizeof(f->source), "library folder");
		else
			f->path[0] = '\0';
	}
	return hit;
}

static const char *process_env(const char *name)
{
	return getenv(name);
}

bool pjrt_plugin_find(const struct config *cfg, config_getenv_fn env, enum pjrt_kind kind, struct pjrt_found *out)
{
	const char *search = cfg->pjrt_search ? cfg->pjrt_search : "";
	char path[PJRT_PATH_MAX];
	const char *v;

	memset(out, 0, sizeof(*out));
	if (env == NULL)
		env = process_env;
	if (cfg->pjrt_plugins != NULL && strcmp(cfg->pjrt_plugins, "none") == 0) {
		tried(out, "PJRT is off (ACCELD_PJRT_PLUGINS=none)");
		return false;
	}
	if (config_plugin_path(cfg, pjrt_kind_name(kind), path, sizeof(path)) == 0)
		return take(out, path, "ACCELD_PJRT_PLUGINS");
	v = env("TPU_LIBRARY_PATH");
	if (kind == PJRT_KIND_TPU && v != NULL && v[0] != '\0' && take(out, v, "TPU_LIBRARY_PATH"))
		return true;
	v = env("PJRT_NAMES_AND_LIBRARY_PATHS");
	if (v != NULL && from_names_and_paths(v, kind, out))
		return true;
	while (*search != '\0') {
		size_t len = strcspn(search, ":");
		char folder[PJRT_PATH_MAX];

		if (len > 0 && expand(search, len, env, folder, sizeof(folder)) && in_folder(folder, kind, out))
			return true;
		search += len;
		if (*search == ':')
			search++;
	}
	tried(out, "no %s plugin in ACCELD_PJRT_SEARCH (%s)", kind == PJRT_KIND_TPU ? "libtpu.so" : "JAX CUDA",
	      cfg->pjrt_search ? cfg->pjrt_search : "");
	return false;
}

static const struct config *search_cfg; /* pjrt_plugin_configure's */

void pjrt_plugin_configure(const struct config *cfg)
{
	search_cfg = cfg;
}

bool pjrt_plugin_view(const struct device *dev, struct pjrt_view *v)
{
	enum pjrt_kind kind;
	struct pjrt_found f;

	if (!pjrt_kind_of(dev, &kind))
		return false;
	memset(v, 0, sizeof(*v));
	if (search_cfg == NULL || !pjrt_plugin_find(search_cfg, NULL, kind, &f)) {
		snprintf(v->why, sizeof(v->why), "no %s PJRT plugin found: %.300s", pjrt_kind_name(kind),
			 search_cfg ? f.tried : "the search is not configured");
		return true;
	}
	v->found = true;
	DEVICE_SET(v->plugin, f.path);
	DEVICE_SET(v->source, f.source);
	if (kind == PJRT_KIND_TPU) {
		v->ordinal = dev->tpu.chip_index;
		v->usable = true;
	} else if (dev->gpu.cuda_ordinal >= 0) {
		v->ordinal = (unsigned)dev->gpu.cuda_ordinal;
		v->usable = true;
	} else {
		/* without NVML's view the CUDA ordinal is a guess, and a wrong one runs a job on another GPU */
		snprintf(v->why, sizeof(v->why), "its CUDA ordinal is unknown (NVML does not see it), so the CUDA "
			 "plugin's devices cannot be told apart");
	}
	if (v->usable)
		pjrt_plugin_status(v);
	return true;
}

json_t *pjrt_view_json(const struct pjrt_view *v)
{
	json_t *o = json_object();

	json_object_set_new(o, "found", json_boolean(v->found));
	json_object_set_new(o, "usable", json_boolean(v->usable));
	if (v->plugin[0] != '\0')
		json_object_set_new(o, "plugin", json_string(v->plugin));
	if (v->source[0] != '\0')
		json_object_set_new(o, "source", json_string(v->source));
	if (v->api_version[0] != '\0')
		json_object_set_new(o, "api_version", json_string(v->api_version));
	if (v->platform[0] != '\0')
		json_object_set_new(o, "platform", json_string(v->platform));
	if (v->platform_version[0] != '\0')
		json_object_set_new(o, "platform_version", json_string(v->platform_version));
	if (v->memory_limit_bytes != 0) {
		json_object_set_new(o, "memory_limit_bytes", json_integer((json_int_t)v->memory_limit_bytes));
		json_object_set_new(o, "memory_in_use_bytes", json_integer((json_int_t)v->memory_in_use_bytes));
	}
	if (v->why[0] != '\0')
		json_object_set_new(o, "why", json_string(v->why));
	if (v->note[0] != '\0')
		json_object_set_new(o, "note", json_string(v->note));
	return o;
}

/* --- what loading found, per plugin path (process-wide; the backend writes, detection reads) --- */

#define RECORDS_MAX 8

#define ORDINALS_MAX 16

struct record {
	char path[PJRT_PATH_MAX];
	bool refused;
	uint64_t memory_limit[ORDINALS_MAX];  /* per device ordinal, 0 unknown */
	uint64_t memory_in_use[ORDINALS_MAX];
	char note[ORDINALS_MAX][256];         /* a refused call, per device ordinal */
	char plugin_note[256];                /* loaded with a caveat (pjrt_plugin.note) */
	char api_version[16];
	char platform[32];
	char platform_version[96];
	char why[384];
};

static pthread_mutex_t records_mu = PTHREAD_MUTEX_INITIALIZER;
static struct record records[RECORDS_MAX];
static size_t oldest; /* once full: the record made longest ago */
static size_t nrecords;
static uint64_t records_gen; /* counts changes: a worker sends its records when they changed (pjrt_plugin_facts) */

/* The record of path, made when new (the oldest is reused beyond RECORDS_MAX); records_mu held. */
static struct record *record_of(const char *path)
{
	struct record *r;

	records_gen++; /* every caller changes what it gets */
	for (size_t i = 0; i < nrecords; i++)
		if (strcmp(records[i].path, path) == 0)
			return &records[i];
	if (nrecords < RECORDS_MAX)
		r = &records[nrecords++];
	else
		r = &records[oldest++ % RECORDS_MAX]; /* made first, reused first */
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	return r;
}

void pjrt_plugin_note_loaded(const char *path, unsigned major, unsigned minor, const char *note)
{
	struct record *r;

	pthread_mutex_lock(&records_mu);
	r = record_of(path);
	r->refused = false;
	r->why[0] = '\0';
	snprintf(r->plugin_note, sizeof(r->plugin_note), "%s", note ? note : "");
	snprintf(r->api_version, sizeof(r->api_version), "%u.%u", major, minor);
	pthread_mutex_unlock(&records_mu);
}

void pjrt_plugin_note_refused(const char *path, const char *why)
{
	struct record *r;

	pthread_mutex_lock(&records_mu);
	r = record_of(path);
	r->refused = true;
	snprintf(r->why, sizeof(r->why), "%s", why);
	pthread_mutex_unlock(&records_mu);
}

void pjrt_plugin_note_platform(const char *path, const char *name, const char *version)
{
	struct record *r;

	pthread_mutex_lock(&records_mu);
	r = record_of(path);
	snprintf(r->platform, sizeof(r->platform), "%s", name ? name : "");
	snprintf(r->platform_version, sizeof(r->platform_version), "%s", version ? version : "");
	pthread_mutex_unlock(&records_mu);
}

void pjrt_plugin_note_memory(const char *path, unsigned ordinal, uint64_t limit, uint64_t in_use)
{
	struct record *r;

	if (ordinal >= ORDINALS_MAX)
		return;
	pthread_mutex_lock(&records_mu);
	r = record_of(path);
	r->memory_limit[ordinal] = limit;
	r->memory_in_use[ordinal] = in_use;
	pthread_mutex_unlock(&records_mu);
}

void pjrt_plugin_note_problem(const char *path, unsigned ordinal, const char *note)
{
	struct record *r;

	if (ordinal >= ORDINALS_MAX)
		return;
	pthread_mutex_lock(&records_mu);
	r = record_of(path);
	snprintf(r->note[ordinal], sizeof(r->note[ordinal]), "%s", note);
	pthread_mutex_unlock(&records_mu);
}

size_t pjrt_plugin_facts(uint64_t *since, void *buf, size_t bufsz)
{
	/* what was last sent: a note that wrote what was there already (memory figures read by every job) is no news */
	static struct record sent[RECORDS_MAX];
	static size_t nsent;
	size_t len = 0;
	uint32_t n;

	pthread_mutex_lock(&records_mu);
	n = (uint32_t)nrecords;
	if (records_gen != *since && n == nsent && memcmp(sent, records, n * sizeof(struct record)) == 0)
		*since = records_gen;
	if (records_gen != *since && bufsz >= sizeof(n) + n * sizeof(struct record)) {
		memcpy(sent, records, n * sizeof(struct record));
		nsent = n;
		memcpy(buf, &n, sizeof(n));
		memcpy((char *)buf + sizeof(n), records, n * sizeof(struct record));
		len = sizeof(n) + n * sizeof(struct record);
		*since = records_gen;
	}
	pthread_mutex_unlock(&records_mu);
	return len;
}

void pjrt_plugin_learn(const void *buf, size_t len)
{
	uint32_t n;

	if (len < sizeof(n))
		return;
	memcpy(&n, buf, sizeof(n));
	if (n > RECORDS_MAX || len != sizeof(n) + n * sizeof(struct record))
		return; /* not from this build: nothing learnt */
	pthread_mutex_lock(&records_mu);
	for (uint32_t i = 0; i < n; i++) {
		struct record in;
		struct record *r;

		memcpy(&in, (const char *)buf + sizeof(n) + i * sizeof(struct record), sizeof(in));
		in.path[sizeof(in.path) - 1] = '\0';
		r = record_of(in.path);
		*r = in; /* the worker that loaded the plugin knows best; records of plugins it never loaded stay */
	}
	pthread_mutex_unlock(&records_mu);
}

size_t pjrt_plugin_facts_max(void)
{
	return sizeof(uint32_t) + RECORDS_MAX * sizeof(struct record);
}

const char *pjrt_error_code_name(int code)
{
	static const char *const names[] = {
		"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
		"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
	};

	return code >= 0 ? names_at(names, sizeof(names) / sizeof(names[0]), (unsigned)code) : "?";
}

void pjrt_plugin_status(struct pjrt_view *p)
{
	if (!p->found)
		return;
	pthread_mutex_lock(&records_mu);
	for (size_t i = 0; i < nrecords; i++) {
		const struct record *r = &records[i];

		if (strcmp(r->path, p->plugin) != 0)
			continue;
		p->usable = !r->refused;
		DEVICE_SET(p->api_version, r->api_version);
		DEVICE_SET(p->platform, r->platform);
		DEVICE_SET(p->platform_version, r->platform_version);
		if (p->ordinal < ORDINALS_MAX) {
			p->memory_limit_bytes = r->memory_limit[p->ordinal];
			p->memory_in_use_bytes = r->memory_in_use[p->ordinal];
			DEVICE_SET(p->note, r->note[p->ordinal]);
		}
		if (p->note[0] == '\0')
			DEVICE_SET(p->note, r->plugin_note);
		DEVICE_SET(p->why, r->why);
	}
	pthread_mutex_unlock(&records_mu);
}

/* --- loading --- */

#define PLUGINS_MAX 4

static pthread_mutex_t plugins_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pjrt_plugin plugins[PLUGINS_MAX];
static size_t nplugins;

int pjrt_error_take(const PJRT_Api *api, PJRT_Error *error, char *msg, size_t msgsz)
{
	PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = error};
	PJRT_Error_GetCode_Args c = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = error};
	PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = error};
	PJRT_Error *inner;

	if (error == NULL) {
		if (msgsz > 0)
			msg[0] = '\0';
		return PJRT_Error_Code_OK;
	}
	api->PJRT_Error_Message(&m);
	if (msgsz > 0)
		snprintf(msg, msgsz, "%.*s", m.message ? (int)(m.message_size < 4096 ? m.message_size : 4096) : 0,
			 m.message ? m.message : "");
	inner = api->PJRT_Error_GetCode(&c);
	if (inner != NULL) { /* a plugin that cannot say its code: unknown */
		PJRT_Error_Destroy_Args di = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = inner};

		api->PJRT_Error_Destroy(&di);
		c.code = PJRT_Error_Code_UNKNOWN;
	}
	api->PJRT_Error_Destroy(&d);
	return (int)c.code;
}

/* The slots acceld calls; a plugin missing one is refused before anything is called. */
#define SLOT(name) {offsetof(PJRT_Api, name), #name}
static const struct {
	size_t offset;
	const char *name;
} required[] = {
	SLOT(PJRT_Error_Destroy),
	SLOT(PJRT_Error_Message),
	SLOT(PJRT_Error_GetCode),
	SLOT(PJRT_Plugin_Initialize),
	SLOT(PJRT_Event_Destroy),
	SLOT(PJRT_Event_IsReady),
	SLOT(PJRT_Event_Await),
	SLOT(PJRT_Client_Create),
	SLOT(PJRT_Client_Destroy),
	SLOT(PJRT_Client_PlatformName),
	SLOT(PJRT_Client_PlatformVersion),
	SLOT(PJRT_Client_AddressableDevices),
	SLOT(PJRT_Client_Compile),
	SLOT(PJRT_Client_BufferFromHostBuffer),
	SLOT(PJRT_DeviceDescription_Id),
	SLOT(PJRT_DeviceDescription_Attributes),
	SLOT(PJRT_Device_GetDescription),
	SLOT(PJRT_Device_LocalHardwareId),
	SLOT(PJRT_LoadedExecutable_Destroy),
	SLOT(PJRT_LoadedExecutable_Execute),
	SLOT(PJRT_Buffer_Destroy),
	SLOT(PJRT_Buffer_ToHostBuffer),
	SLOT(PJRT_Buffer_ReadyEvent),
};
#undef SLOT

/* Why the plugin's table cannot be used (version, a missing slot), or "" when it can. */
static void check_api(const PJRT_Api *api, char *why, size_t whysz)
{
	const size_t head = offsetof(PJRT_Api, pjrt_api_version) + PJRT_Api_Version_STRUCT_SIZE;

	why[0] = '\0';
	if (api->struct_size < head) {
		snprintf(why, whysz, "its PJRT_Api is %zu bytes, too short to hold a version", api->struct_size);
		return;
	}
	if (!pjrt_api_version_ok(api)) {
		snprintf(why, whysz, "PJRT C API %d.%d: acceld needs major %d, minor %d or later (it speaks %d.%d to %d.%d)",
			 api->pjrt_api_version.major_version, api->pjrt_api_version.minor_version, PJRT_API_MAJOR,
			 PJRT_MIN_MINOR, PJRT_API_MAJOR, PJRT_MIN_MINOR, PJRT_API_MAJOR, PJRT_API_MINOR);
		return;
	}
	if (api->pjrt_api_version.minor_version == PJRT_REFUSED_MINOR) {
		snprintf(why, whysz, "PJRT C API %d.%d: the C API's changelog says 0.57 rearranged PJRT_Api, so acceld "
			 "cannot trust where a %d.%d plugin keeps its functions; use a plugin of 0.57 or later",
			 PJRT_API_MAJOR, PJRT_REFUSED_MINOR, PJRT_API_MAJOR, PJRT_REFUSED_MINOR);
		return;
	}
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		void *slot;

		if (api->struct_size < required[i].offset + sizeof(void *)) {
			snprintf(why, whysz, "its PJRT_Api (%zu bytes) ends before %s", api->struct_size, required[i].name);
			return;
		}
		memcpy(&slot, (const char *)api + required[i].offset, sizeof(slot));
		if (slot == NULL) {
			snprintf(why, whysz, "it does not implement %s", required[i].name);
			return;
		}
	}
}

/*
 * The NVIDIA libraries JAX's CUDA plugin expects, in the order jax-ml/jax's jax_plugins/cuda/__init__.py
 * (_load_nvidia_libraries, through _load(module, libraries)) loads them from the `nvidia` Python packages before it
 * registers the plugin: <site-packages>/nvidia/<package>/lib/<library>. (The cu13 package's libcusparse.so.12 is as
 * written there.)
 */
static const char *const nvidia_libraries[] = {
	/* paths below <site-packages>/nvidia, never sonames for the loader to search: only these files are opened */
	"cuda_runtime/lib/libcudart.so.12", "cu13/lib/libcudart.so.13",     "cuda_nvrtc/lib/libnvrtc.so.12",
	"cu13/lib/libnvrtc.so.13",          "cublas/lib/libcublas.so.12",   "cublas/lib/libcublasLt.so.12",
	"cu13/lib/libcublas.so.13",         "cu13/lib/libcublasLt.so.13",   "nccl/lib/libnccl.so.2",
	"cuda_cupti/lib/libcupti.so.12",    "cu13/lib/libcupti.so.13",      "cusparse/lib/libcusparse.so.12",
	"cu13/lib/libcusparse.so.12",       "cusolver/lib/libcusolver.so.11", "cu13/lib/libcusolver.so.12",
	"cufft/lib/libcufft.so.11",         "cu13/lib/libcufft.so.12",      "nvshmem/lib/libnvshmem_host.so.3",
	"cudnn/lib/libcudnn.so.9",
};

/*
 * Before JAX's CUDA plugin (a path of the form <site-packages>/jax_plugins/<folder>/<file>) is opened: the libraries
 * above that its site-packages holds, each dlopened as JAX does (a failure passed over), so that the plugin's own
 * lookups by soname find them and a host whose CUDA comes only from pip works. Kept for the process's life, as the
 * plugin is. Returns how many were loaded.
 */
static unsigned load_nvidia_libraries(const char *plugin)
{
	const char *mark = NULL, *at = plugin;
	unsigned loaded = 0;

	while ((at = strstr(at, "/jax_plugins/")) != NULL)
		mark = at++;
	if (mark == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(nvidia_libraries) / sizeof(nvidia_libraries[0]); i++) {
		char path[PJRT_PATH_MAX + 96];
		void *h;

		snprintf(path, sizeof(path), "%.*s/nvidia/%s", (int)(mark - plugin), plugin, nvidia_libraries[i]);
		if (access(path, F_OK) != 0)
			continue;
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h != NULL) {
			loaded++;
			continue;
		}
		log_fields(LOGL_WARN, "pjrt", "an NVIDIA library beside JAX's CUDA plugin did not load",
			   (struct log_field[]){LOG_S("library", path), LOG_S("error", dlerror())}, 2);
	}
	if (loaded > 0)
		log_fields(LOGL_INFO, "pjrt", "NVIDIA libraries loaded from the plugin's site-packages",
			   (struct log_field[]){LOG_S("plugin", plugin), LOG_I("libraries", loaded)}, 2);
	return loaded;
}

/* dlopen, GetPjrtApi, the checks, PJRT_Plugin_Initialize; fills p (p->api NULL and p->why on refusal). */
static void load(struct pjrt_plugin *p)
{
	PJRT_GetPjrtApi_Fn *get;
	const PJRT_Api *api;
	const char *dl;
	PJRT_Plugin_Initialize_Args init = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
	char msg[512];

	load_nvidia_libraries(p->path);
	p->handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
	if (p->handle == NULL) {
		dl = dlerror();
		snprintf(p->why, sizeof(p->why), "cannot load %.200s: %.280s", p->path, dl ? dl : "dlopen failed");
		return;
	}
	*(void **)&get = dlsym(p->handle, "GetPjrtApi");
	if (get == NULL) {
		snprintf(p->why, sizeof(p->why), "%.300s is not a PJRT plugin: it exports no GetPjrtApi", p->path);
		return;
	}
	api = get();
	if (api == NULL) {
		snprintf(p->why, sizeof(p->why), "%.300s: GetPjrtApi returned nothing", p->path);
		return;
	}
	check_api(api, msg, sizeof(msg));
	if (msg[0] != '\0') {
		snprintf(p->why, sizeof(p->why), "%.200s refused: %.290s", p->path, msg);
		return;
	}
	if (pjrt_error_take(api, api->PJRT_Plugin_Initialize(&init), msg, sizeof(msg)) != PJRT_Error_Code_OK) {
		snprintf(p->why, sizeof(p->why), "%.200s: PJRT_Plugin_Initialize failed: %.260s", p->path, msg);
		return;
	}
	p->api = api;
	p->major = api->pjrt_api_version.major_version;
	p->minor = api->pjrt_api_version.minor_version;
	if (p->minor > PJRT_NEWEST_CHECKED_MINOR)
		snprintf(p->note, sizeof(p->note), "PJRT C API %d.%d is newer than any acceld has met (%d.%d): argument "
			 "structs that grew since are sent at their %d.%d size, which the plugin may refuse",
			 p->major, p->minor, PJRT_API_MAJOR, PJRT_NEWEST_CHECKED_MINOR, PJRT_API_MAJOR,
			 PJRT_NEWEST_CHECKED_MINOR);
}

const struct pjrt_plugin *pjrt_plugin_load(const char *path)
{
	struct pjrt_plugin *p = NULL;

	pthread_mutex_lock(&plugins_mu);
	for (size_t i = 0; i < nplugins && p == NULL; i++)
		if (strcmp(plugins[i].path, path) == 0)
			p = &plugins[i];
	if (p == NULL && nplugins < PLUGINS_MAX) {
		/* loaded once per process and never unloaded: plugins keep threads and state for the process's life */
		p = &plugins[nplugins++];
		snprintf(p->path, sizeof(p->path), "%s", path);
		load(p);
		if (p->api != NULL) {
			pjrt_plugin_note_loaded(path, (unsigned)p->major, (unsigned)p->minor, p->note);
			if (p->note[0] != '\0')
				log_fields(LOGL_WARN, "pjrt", "plugin newer than acceld knows",
					   (struct log_field[]){LOG_S("plugin", path), LOG_S("note", p->note)}, 2);
		} else
			pjrt_plugin_note_refused(path, p->why);
	}
	pthread_mutex_unlock(&plugins_mu);
	return p;
}
