/*
 * Unit tests for pjrt_plugin.c: kinds; the plugin search in its documented order (ACCELD_PJRT_PLUGINS, which is used
 * or nothing is; TPU_LIBRARY_PATH; PJRT_NAMES_AND_LIBRARY_PATHS with JAX's names; the ACCELD_PJRT_SEARCH folders with
 * $VAR and ~, python3.* site-packages and dist-packages layouts built in a temporary folder, CUDA 13 before 12, and
 * libtpu.so in the folder itself) and what a failed search says it tried; describing devices (ordinals, the PJRT
 * backend bit); the records pjrt_plugin_status reads (API version, refusal, platform, memory and notes per ordinal,
 * eight paths at most); loading the stand-in plugin build/fakes/libpjrt.so once per path, and each refusal (no file,
 * no GetPjrtApi, versions, a short table, a failing initialisation) with a newer minor used with a note;
 * pjrt_error_take and pjrt_error_code_name.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_cli.h"
#include "check_main.h"
#include "exec/backend/pjrt_plugin.h"

static char tmp[64];
static char fake[PATH_MAX]; /* the stand-in plugin, absolute */
static struct config cfg;

/* The environment a search sees: a small table, not the process's. */
static struct {
	const char *name;
	const char *value;
} vars[8];
static size_t nvars;

static const char *env_of(const char *name)
{
	for (size_t i = 0; i < nvars; i++)
		if (strcmp(vars[i].name, name) == 0)
			return vars[i].value;
	return NULL;
}

static void var(const char *name, const char *value)
{
	for (size_t i = 0; i < nvars; i++)
		if (strcmp(vars[i].name, name) == 0) {
			vars[i].value = value;
			return;
		}
	ck_assert_uint_lt(nvars, sizeof(vars) / sizeof(vars[0]));
	vars[nvars].name = name;
	vars[nvars++].value = value;
}

static void setup(void)
{
	char rel[512];

	/* the stand-in plugin's path is read before the environment is cleared (ACCELD_BUILD stays anyway) */
	check_fake_path(rel, sizeof(rel), "pjrt");
	ck_assert_ptr_nonnull(realpath(rel, fake));
	check_tmpdir(tmp, sizeof(tmp), "pjrt-plugin");
	check_cli_env(tmp, NULL);
	memset(&cfg, 0, sizeof(cfg));
	memset(vars, 0, sizeof(vars));
	nvars = 0;
}

static void teardown(void)
{
	check_rmtree(tmp);
}

/* A file below the temporary folder: tmp/rel, created (with its folders) when text is not NULL. */
static char *file(const char *rel, const char *text)
{
	static char paths[16][512];
	static unsigned next;
	char *p = paths[next++ % 16];

	snprintf(p, sizeof(paths[0]), "%s/%s", tmp, rel);
	if (text != NULL)
		check_write_file(p, text);
	return p;
}

static void found(enum pjrt_kind kind, const char *path, const char *source)
{
	struct pjrt_found f;

	ck_assert_msg(pjrt_plugin_find(&cfg, env_of, kind, &f), "%s not found: %s", pjrt_kind_name(kind), f.tried);
	ck_assert_str_eq(f.path, path);
	ck_assert_str_eq(f.source, source);
}

/* Not found; tried holds each of the texts (NULL-terminated). */
static void not_found(enum pjrt_kind kind, const char *const *texts)
{
	struct pjrt_found f;

	ck_assert_msg(!pjrt_plugin_find(&cfg, env_of, kind, &f), "found %s (%s)", f.path, f.source);
	ck_assert_str_eq(f.path, "");
	for (size_t i = 0; texts[i] != NULL; i++)
		ck_assert_msg(strstr(f.tried, texts[i]) != NULL, "'%s' not in: %s", texts[i], f.tried);
}

START_TEST(kinds)
{
	struct device d;
	enum pjrt_kind k = PJRT_KIND_COUNT;

	ck_assert_str_eq(pjrt_kind_name(PJRT_KIND_TPU), "tpu");
	ck_assert_str_eq(pjrt_kind_name(PJRT_KIND_CUDA), "cuda");
	ck_assert_str_eq(pjrt_kind_name(PJRT_KIND_COUNT), "?");

	device_init(&d, DEVICE_TPU);
	ck_assert(pjrt_kind_of(&d, &k));
	ck_assert_int_eq(k, PJRT_KIND_TPU);
	device_init(&d, DEVICE_GPU);
	DEVICE_SET(d.vendor, "nvidia"); /* any case */
	ck_assert(pjrt_kind_of(&d, &k));
	ck_assert_int_eq(k, PJRT_KIND_CUDA);
	DEVICE_SET(d.vendor, "AMD");
	ck_assert(!pjrt_kind_of(&d, &k));
	device_init(&d, DEVICE_CPU);
	DEVICE_SET(d.vendor, "NVIDIA"); /* a Grace CPU is not served by the CUDA plugin */
	ck_assert(!pjrt_kind_of(&d, &k));
}
END_TEST

/* Each source wins over the ones after it; taking it away hands the search to the next. */
START_TEST(search_order)
{
	char list[1200];
	const char *named = file("named/libtpu.so", "x");
	const char *tpu_lib = file("tpu_library_path/libtpu.so", "x");
	const char *jax = file("jax/libtpu.so", "x");
	const char *site = file("venv/lib/python3.11/site-packages/libtpu/libtpu.so", "x");

	snprintf(list, sizeof(list), "tpu=%s", named);
	cfg.pjrt_plugins = list;
	var("TPU_LIBRARY_PATH", tpu_lib);
	snprintf(list + 600, 600, "tpu:%s", jax);
	var("PJRT_NAMES_AND_LIBRARY_PATHS", list + 600);
	cfg.pjrt_search = file("venv/lib", NULL);

	found(PJRT_KIND_TPU, named, "ACCELD_PJRT_PLUGINS");
	cfg.pjrt_plugins = NULL;
	found(PJRT_KIND_TPU, tpu_lib, "TPU_LIBRARY_PATH");
	var("TPU_LIBRARY_PATH", "");
	found(PJRT_KIND_TPU, jax, "PJRT_NAMES_AND_LIBRARY_PATHS");
	var("PJRT_NAMES_AND_LIBRARY_PATHS", NULL);
	found(PJRT_KIND_TPU, site, "site-packages");
	cfg.pjrt_search = NULL;
	not_found(PJRT_KIND_TPU, (const char *const[]){"no libtpu.so plugin in ACCELD_PJRT_SEARCH ()", NULL});
}
END_TEST

/* A path ACCELD_PJRT_PLUGINS names is used or nothing is; "none" turns PJRT off whatever else is there. */
START_TEST(acceld_pjrt_plugins_decides)
{
	char list[1200];
	const char *cuda = file("cuda/xla_cuda_plugin.so", "x");
	const char *tpu_lib = file("tpu/libtpu.so", "x");

	var("TPU_LIBRARY_PATH", tpu_lib);
	snprintf(list, sizeof(list), "cuda:%s", cuda);
	var("PJRT_NAMES_AND_LIBRARY_PATHS", list);

	cfg.pjrt_plugins = "none";
	not_found(PJRT_KIND_TPU, (const char *const[]){"PJRT is off (ACCELD_PJRT_PLUGINS=none)", NULL});
	not_found(PJRT_KIND_CUDA, (const char *const[]){"PJRT is off", NULL});

	/* a missing file it names: no plugin, and no other source is asked */
	cfg.pjrt_plugins = "tpu=/nonexistent/libtpu.so";
	not_found(PJRT_KIND_TPU, (const char *const[]){"ACCELD_PJRT_PLUGINS names /nonexistent/libtpu.so, which "
						       "cannot be read",
						       NULL});
	/* a kind it does not name is searched as usual */
	found(PJRT_KIND_CUDA, cuda, "PJRT_NAMES_AND_LIBRARY_PATHS");
	snprintf(list + 600, 600, "cuda=%s,tpu=%s", cuda, tpu_lib);
	cfg.pjrt_plugins = list + 600;
	found(PJRT_KIND_CUDA, cuda, "ACCELD_PJRT_PLUGINS");
	found(PJRT_KIND_TPU, tpu_lib, "ACCELD_PJRT_PLUGINS");
}
END_TEST

START_TEST(tpu_library_path)
{
	const char *lib = file("lib/libtpu.so", "x");

	/* a TPU variable: the CUDA search ignores it */
	var("TPU_LIBRARY_PATH", lib);
	found(PJRT_KIND_TPU, lib, "TPU_LIBRARY_PATH");
	not_found(PJRT_KIND_CUDA, (const char *const[]){"no JAX CUDA plugin in ACCELD_PJRT_SEARCH", NULL});
	/* a file that is not there is noted and the search goes on */
	var("TPU_LIBRARY_PATH", "/nonexistent/libtpu.so");
	cfg.pjrt_search = file("lib", NULL);
	found(PJRT_KIND_TPU, lib, "library folder");
	cfg.pjrt_search = NULL;
	not_found(PJRT_KIND_TPU, (const char *const[]){"TPU_LIBRARY_PATH names /nonexistent/libtpu.so, which cannot be "
						       "read; no libtpu.so plugin",
						       NULL});
}
END_TEST

/* JAX's NAME:PATH[,NAME:PATH]: tpu; cuda, or gpu (JAX's older name); entries that cannot be read are passed over. */
START_TEST(names_and_library_paths)
{
	char list[2048];
	const char *tpu = file("a/libtpu.so", "x");
	const char *cuda = file("b/xla_cuda_plugin.so", "x");
	const char *gpu = file("c/xla_gpu_plugin.so", "x");

	snprintf(list, sizeof(list), "tpux:%s,nocolon,cuda:/nonexistent/cuda.so,gpu:%s,tpu:%s,cuda:%s", cuda, gpu, tpu,
		 cuda);
	var("PJRT_NAMES_AND_LIBRARY_PATHS", list);
	found(PJRT_KIND_TPU, tpu, "PJRT_NAMES_AND_LIBRARY_PATHS");
	found(PJRT_KIND_CUDA, gpu, "PJRT_NAMES_AND_LIBRARY_PATHS"); /* the first readable of cuda and gpu */

	snprintf(list, sizeof(list), "cuda:/nonexistent/cuda.so,tpu:/nonexistent/libtpu.so");
	not_found(PJRT_KIND_CUDA, (const char *const[]){"PJRT_NAMES_AND_LIBRARY_PATHS names /nonexistent/cuda.so",
							"no JAX CUDA plugin", NULL});
	/* a name alone, an empty list */
	snprintf(list, sizeof(list), "tpu");
	not_found(PJRT_KIND_TPU, (const char *const[]){"no libtpu.so plugin", NULL});
	list[0] = '\0';
	not_found(PJRT_KIND_TPU, (const char *const[]){"no libtpu.so plugin", NULL});
}
END_TEST

/* The folders' python3.* site-packages and dist-packages, in the search's order. */
START_TEST(search_folders)
{
	char search[1024];
	const char *dist = file("usr/lib/python3/dist-packages/libtpu/libtpu.so", "x");
	const char *site = file("venv/lib/python3.12/site-packages/libtpu/libtpu.so", "x");
	const char *cuda12 = file("conda/lib/python3.10/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so", "x");
	const char *cuda13;

	/* a *-packages folder that is neither is not looked in */
	file("odd/lib/python3.11/other-packages/libtpu/libtpu.so", "x");
	file("odd/lib/python3.11/other-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "x");
	snprintf(search, sizeof(search), "%s/odd/lib:%s/venv/lib:%s/usr/lib", tmp, tmp, tmp);
	cfg.pjrt_search = search;
	found(PJRT_KIND_TPU, site, "site-packages");
	not_found(PJRT_KIND_CUDA, (const char *const[]){"no JAX CUDA plugin in ACCELD_PJRT_SEARCH (", search, NULL});

	/* the first folder that holds one wins */
	snprintf(search, sizeof(search), "::%s/usr/lib:%s/venv/lib", tmp, tmp);
	found(PJRT_KIND_TPU, dist, "dist-packages");

	/* CUDA 13's plugin before CUDA 12's in one folder */
	snprintf(search, sizeof(search), "%s/conda/lib", tmp);
	found(PJRT_KIND_CUDA, cuda12, "site-packages");
	cuda13 = file("conda/lib/python3.10/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", "x");
	found(PJRT_KIND_CUDA, cuda13, "site-packages");
	/* the folder itself holds libtpu.so for TPUs only */
	file("conda/lib/libtpu.so", "x");
	found(PJRT_KIND_TPU, file("conda/lib/libtpu.so", NULL), "library folder");
	file("conda/lib/xla_cuda_plugin.so", "x");
	found(PJRT_KIND_CUDA, cuda13, "site-packages");
}
END_TEST

/* $VAR and a leading ~ are expanded from the environment; a folder whose variable is unset or empty is skipped. */
START_TEST(search_expands_variables)
{
	const char *site = file("env/lib/python3.11/site-packages/libtpu/libtpu.so", "x");
	const char *home = file("home/.local/lib/python3.11/site-packages/libtpu/libtpu.so", "x");

	cfg.pjrt_search = "$VIRTUAL_ENV/lib:~/.local/lib";
	var("HOME", file("home", NULL));
	found(PJRT_KIND_TPU, home, "site-packages");
	var("VIRTUAL_ENV", file("env", NULL));
	found(PJRT_KIND_TPU, site, "site-packages");
	var("VIRTUAL_ENV", "");
	found(PJRT_KIND_TPU, home, "site-packages");
	var("HOME", NULL);
	not_found(PJRT_KIND_TPU, (const char *const[]){"($VIRTUAL_ENV/lib:~/.local/lib)", NULL});
	/* a variable name alone is a folder too */
	cfg.pjrt_search = "$ACCELD_UNIT_PLUGINS";
	var("ACCELD_UNIT_PLUGINS", file("env/lib", NULL));
	found(PJRT_KIND_TPU, site, "site-packages");
}
END_TEST

/* Without an env function the search reads the process environment. */
START_TEST(search_reads_the_process_environment)
{
	struct pjrt_found f;
	const char *lib = file("proc/libtpu.so", "x");

	ck_assert(!pjrt_plugin_find(&cfg, NULL, PJRT_KIND_TPU, &f));
	setenv("TPU_LIBRARY_PATH", lib, 1);
	ck_assert(pjrt_plugin_find(&cfg, NULL, PJRT_KIND_TPU, &f));
	ck_assert_str_eq(f.path, lib);
	ck_assert_str_eq(f.source, "TPU_LIBRARY_PATH");
}
END_TEST

/* A long search says what it tried within its buffer. */
START_TEST(tried_is_bounded)
{
	char list[4096];
	size_t len = 0;
	struct pjrt_found f;

	for (int i = 0; i < 40; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%stpu:/nonexistent/number-%02d/libtpu.so",
					i ? "," : "", i);
	var("PJRT_NAMES_AND_LIBRARY_PATHS", list);
	ck_assert(!pjrt_plugin_find(&cfg, env_of, PJRT_KIND_TPU, &f));
	ck_assert_uint_lt(strlen(f.tried), sizeof(f.tried));
	ck_assert_ptr_nonnull(strstr(f.tried, "number-00"));
	ck_assert_ptr_null(strstr(f.tried, "number-39"));
}
END_TEST

START_TEST(describe_devices)
{
	struct device cpu;
	struct device tpu;
	struct device gpu;
	struct pjrt_view v;
	char list[2 * PATH_MAX + 16];
	char version[16];
	json_t *doc;

	snprintf(list, sizeof(list), "tpu=%s", fake);
	cfg.pjrt_plugins = list;
	pjrt_plugin_configure(&cfg);
	snprintf(version, sizeof(version), "%d.%d", PJRT_API_MAJOR, PJRT_API_MINOR);

	/* a device no plugin kind serves has no view */
	device_init(&cpu, DEVICE_CPU);
	ck_assert(!pjrt_plugin_view(&cpu, &v));

	/* a TPU counts by chip */
	device_init(&tpu, DEVICE_TPU);
	tpu.tpu.chip_index = 3;
	ck_assert(pjrt_plugin_view(&tpu, &v));
	ck_assert(v.found && v.usable);
	ck_assert_uint_eq(v.ordinal, 3);
	ck_assert_str_eq(v.plugin, fake);
	ck_assert_str_eq(v.source, "ACCELD_PJRT_PLUGINS");
	ck_assert_str_eq(v.api_version, ""); /* not loaded yet */

	/* NVIDIA GPUs: no plugin says why; one is told apart by the CUDA ordinal NVML worked out, or not served */
	device_init(&gpu, DEVICE_GPU);
	DEVICE_SET(gpu.vendor, "NVIDIA");
	ck_assert(pjrt_plugin_view(&gpu, &v));
	ck_assert(!v.found && !v.usable);
	ck_assert_msg(strncmp(v.why, "no cuda PJRT plugin found: ", 27) == 0 &&
			      strstr(v.why, "no JAX CUDA plugin") != NULL,
		      "%s", v.why);
	snprintf(list, sizeof(list), "tpu=%s,cuda=%s", fake, fake);
	ck_assert(pjrt_plugin_view(&gpu, &v));
	ck_assert(v.found && !v.usable);
	ck_assert_ptr_nonnull(strstr(v.why, "CUDA ordinal is unknown"));
	gpu.gpu.cuda_ordinal = 5;
	ck_assert(pjrt_plugin_view(&gpu, &v));
	ck_assert(v.usable);
	ck_assert_uint_eq(v.ordinal, 5);

	/* once loaded, what loading found comes with the view, and GET /devices shows it */
	ck_assert_ptr_nonnull(pjrt_plugin_load(fake)->api);
	ck_assert(pjrt_plugin_view(&tpu, &v));
	ck_assert_str_eq(v.api_version, version);
	ck_assert(v.usable);
	doc = pjrt_view_json(&v);
	ck_assert(json_is_true(json_object_get(doc, "usable")));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "api_version")), version);
	ck_assert_ptr_null(json_object_get(doc, "why"));
	json_decref(doc);
	pjrt_plugin_configure(NULL);
}
END_TEST

/* A device's view of path at ordinal, as detection keeps it. */
static struct pjrt_view view(const char *path, unsigned ordinal)
{
	struct pjrt_view p;

	memset(&p, 0, sizeof(p));
	p.found = p.usable = true;
	p.ordinal = ordinal;
	DEVICE_SET(p.plugin, path);
	pjrt_plugin_status(&p);
	return p;
}

START_TEST(records_status_reads)
{
	struct pjrt_view p;

	/* nothing known of a path yet: the view stays as it is */
	p = view("/opt/a.so", 0);
	ck_assert(p.usable);
	ck_assert_str_eq(p.api_version, "");

	pjrt_plugin_note_loaded("/opt/a.so", 0, 61, "");
	pjrt_plugin_note_platform("/opt/a.so", "tpu", "libtpu 0.0.21");
	pjrt_plugin_note_memory("/opt/a.so", 1, 16ull << 30, 1ull << 30);
	pjrt_plugin_note_problem("/opt/a.so", 1, "PJRT_Device_MemoryStats refused (UNIMPLEMENTED)");
	pjrt_plugin_note_memory("/opt/a.so", 16, 1, 1); /* beyond the ordinals kept: ignored */
	pjrt_plugin_note_problem("/opt/a.so", 99, "ignored");
	p = view("/opt/a.so", 1);
	ck_assert(p.usable);
	ck_assert_str_eq(p.api_version, "0.61");
	ck_assert_str_eq(p.platform, "tpu");
	ck_assert_str_eq(p.platform_version, "libtpu 0.0.21");
	ck_assert_uint_eq(p.memory_limit_bytes, 16ull << 30);
	ck_assert_uint_eq(p.memory_in_use_bytes, 1ull << 30);
	ck_assert_str_eq(p.note, "PJRT_Device_MemoryStats refused (UNIMPLEMENTED)");
	ck_assert_str_eq(p.why, "");
	/* figures are per ordinal */
	p = view("/opt/a.so", 0);
	ck_assert_uint_eq(p.memory_limit_bytes, 0);
	ck_assert_str_eq(p.note, "");
	p = view("/opt/a.so", 16);
	ck_assert_str_eq(p.api_version, "0.61");
	ck_assert_uint_eq(p.memory_limit_bytes, 0);

	/* a plugin loaded with a caveat: the device's own note first, else the plugin's */
	pjrt_plugin_note_loaded("/opt/a.so", 0, 200, "newer than acceld knows");
	ck_assert_str_eq(view("/opt/a.so", 0).note, "newer than acceld knows");
	ck_assert_str_eq(view("/opt/a.so", 1).note, "PJRT_Device_MemoryStats refused (UNIMPLEMENTED)");

	/* refused, then loaded again (another process's file at the same path after a restart of the backend) */
	pjrt_plugin_note_refused("/opt/a.so", "PJRT C API 0.40: too old");
	p = view("/opt/a.so", 0);
	ck_assert(!p.usable);
	ck_assert_str_eq(p.why, "PJRT C API 0.40: too old");
	pjrt_plugin_note_loaded("/opt/a.so", 0, 94, NULL);
	p = view("/opt/a.so", 0);
	ck_assert(p.usable);
	ck_assert_str_eq(p.why, "");
	ck_assert_str_eq(p.api_version, "0.94");

	/* a view that found no plugin is not touched */
	memset(&p, 0, sizeof(p));
	DEVICE_SET(p.plugin, "/opt/a.so");
	pjrt_plugin_status(&p);
	ck_assert_str_eq(p.api_version, "");
	ck_assert(!p.usable);

	/* other paths have records of their own */
	pjrt_plugin_note_platform("/opt/b.so", NULL, NULL);
	p = view("/opt/b.so", 0);
	ck_assert_str_eq(p.api_version, "");
	ck_assert_str_eq(p.platform, "");
	ck_assert(p.usable);
}
END_TEST

/* Eight paths are kept; each further one takes the record made longest ago (a tenth the second's, not the ninth's). */
START_TEST(records_are_bounded)
{
	char path[10][32];

	for (int i = 0; i < 10; i++) {
		snprintf(path[i], sizeof(path[i]), "/opt/plugin-%d.so", i);
		pjrt_plugin_note_loaded(path[i], 0, (unsigned)(50 + i), "");
	}
	ck_assert_str_eq(view(path[0], 0).api_version, "");
	ck_assert_str_eq(view(path[1], 0).api_version, "");
	for (int i = 2; i < 10; i++) {
		char want[16];

		snprintf(want, sizeof(want), "0.%d", 50 + i);
		ck_assert_str_eq(view(path[i], 0).api_version, want);
	}
}
END_TEST

START_TEST(error_code_names)
{
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_OK), "OK");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_CANCELLED), "CANCELLED");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_INVALID_ARGUMENT), "INVALID_ARGUMENT");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_NOT_FOUND), "NOT_FOUND");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_FAILED_PRECONDITION), "FAILED_PRECONDITION");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_UNIMPLEMENTED), "UNIMPLEMENTED");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_INTERNAL), "INTERNAL");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_UNAVAILABLE), "UNAVAILABLE");
	ck_assert_str_eq(pjrt_error_code_name(PJRT_Error_Code_UNAUTHENTICATED), "UNAUTHENTICATED");
	ck_assert_str_eq(pjrt_error_code_name(17), "?");
	ck_assert_str_eq(pjrt_error_code_name(-1), "?");
	ck_assert_str_eq(pjrt_error_code_name(INT_MIN), "?");
}
END_TEST

/* The stand-in plugin loads once per path, and its table is ready for PJRT_Client_Create. */
/* Copies the file at from to to, making the folders on the way. */
static void copy_file(const char *from, const char *to)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", to, from, to);
	ck_assert_int_eq(system(cmd), 0);
}

/* Before JAX's CUDA plugin, the NVIDIA libraries of its site-packages are loaded as JAX loads them (a fixture tree of
 * stand-in .so files: a pip-only CUDA). */
START_TEST(nvidia_libraries_beside_the_plugin)
{
	char sp[] = "/tmp/acceld-site-packages-XXXXXX", plugin[PATH_MAX], lib[PATH_MAX], nvml[PATH_MAX], cmd[PATH_MAX + 16];
	const struct pjrt_plugin *p;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(sp));
	snprintf(nvml, sizeof(nvml), "%.*s/libnvml.so", (int)(strrchr(fake, '/') - fake), fake);
	snprintf(plugin, sizeof(plugin), "%s/jax_plugins/xla_cuda13/xla_cuda_plugin.so", sp);
	copy_file(fake, plugin);
	snprintf(lib, sizeof(lib), "%s/nvidia/cu13/lib/libcudart.so.13", sp);
	copy_file(nvml, lib);
	snprintf(lib, sizeof(lib), "%s/nvidia/cudnn/lib/libcudnn.so.9", sp);
	copy_file(nvml, lib);
	/* one that is not a library: passed over, the plugin loads all the same */
	snprintf(lib, sizeof(lib), "%s/nvidia/cublas/lib/libcublas.so.12", sp);
	copy_file(nvml, lib);
	f = fopen(lib, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	p = pjrt_plugin_load(plugin);
	ck_assert_msg(p->api != NULL, "%s", p->why);
	snprintf(lib, sizeof(lib), "%s/nvidia/cu13/lib/libcudart.so.13", sp);
	ck_assert_ptr_nonnull(dlopen(lib, RTLD_NOW | RTLD_NOLOAD));
	snprintf(lib, sizeof(lib), "%s/nvidia/cudnn/lib/libcudnn.so.9", sp);
	ck_assert_ptr_nonnull(dlopen(lib, RTLD_NOW | RTLD_NOLOAD));
	snprintf(lib, sizeof(lib), "%s/nvidia/cublas/lib/libcublas.so.12", sp);
	ck_assert_ptr_null(dlopen(lib, RTLD_NOW | RTLD_NOLOAD));
	/* a plugin outside jax_plugins (libtpu) loads none */
	snprintf(lib, sizeof(lib), "%s/libtpu/libtpu.so", sp);
	copy_file(fake, lib);
	snprintf(plugin, sizeof(plugin), "%s/nvidia/cuda_runtime/lib/libcudart.so.12", sp);
	copy_file(nvml, plugin);
	ck_assert_ptr_nonnull(pjrt_plugin_load(lib)->api);
	ck_assert_ptr_null(dlopen(plugin, RTLD_NOW | RTLD_NOLOAD));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sp);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(load_the_fake_plugin)
{
	const struct pjrt_plugin *p = pjrt_plugin_load(fake);
	struct pjrt_view v;
	void *lib;
	long (*calls)(const char *);
	void *sym;
	char version[16];

	ck_assert_msg(p->api != NULL, "%s", p->why);
	ck_assert_str_eq(p->path, fake);
	ck_assert_int_eq(p->major, PJRT_API_MAJOR);
	ck_assert_int_eq(p->minor, PJRT_API_MINOR);
	ck_assert_str_eq(p->why, "");
	ck_assert_str_eq(p->note, "");
	ck_assert(p->api->PJRT_Client_Create != NULL);
	ck_assert_ptr_eq(pjrt_plugin_load(fake), p);
	v = view(fake, 0);
	ck_assert(v.usable);
	snprintf(version, sizeof(version), "%d.%d", PJRT_API_MAJOR, PJRT_API_MINOR);
	ck_assert_str_eq(v.api_version, version);
	/* GetPjrtApi and PJRT_Plugin_Initialize ran once */
	lib = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(lib);
	sym = dlsym(lib, "fake_pjrt_calls");
	ck_assert_ptr_nonnull(sym);
	memcpy(&calls, &sym, sizeof(calls));
	ck_assert_int_eq(calls("GetPjrtApi"), 1);
	ck_assert_int_eq(calls("PJRT_Plugin_Initialize"), 1);
	dlclose(lib);
}
END_TEST

/* A link to the stand-in plugin at a path of its own, so it is loaded anew (once per path) with the switches set. */
static const char *alias(const char *name)
{
	const char *path = file(name, NULL);

	ck_assert_int_eq(symlink(fake, path), 0);
	return path;
}

static void refused(const char *path, const char *const *texts)
{
	const struct pjrt_plugin *p = pjrt_plugin_load(path);
	struct pjrt_view v;

	ck_assert_ptr_nonnull(p);
	ck_assert_msg(p->api == NULL, "%s loaded", path);
	for (size_t i = 0; texts[i] != NULL; i++)
		ck_assert_msg(strstr(p->why, texts[i]) != NULL, "'%s' not in: %s", texts[i], p->why);
	/* the refusal stands for the path, and the device view says it */
	ck_assert_ptr_eq(pjrt_plugin_load(path), p);
	v = view(path, 0);
	ck_assert(!v.usable);
	ck_assert_str_eq(v.why, p->why);
}

START_TEST(refusals)
{
	char nvml[512];
	char real[PATH_MAX];

	refused(file("missing.so", NULL), (const char *const[]){"cannot load ", "missing.so", NULL});
	refused(file("text.so", "not a library\n"), (const char *const[]){"cannot load ", NULL});
	/* a shared library that is no plugin: the fake NVML */
	check_fake_path(nvml, sizeof(nvml), "nvml");
	ck_assert_ptr_nonnull(realpath(nvml, real));
	refused(real, (const char *const[]){"is not a PJRT plugin: it exports no GetPjrtApi", NULL});
	/* a process keeps four plugins, refused ones included */
	ck_assert_ptr_nonnull(pjrt_plugin_load(fake)->api);
	ck_assert_ptr_null(pjrt_plugin_load(alias("fifth.so")));
}
END_TEST

START_TEST(version_refusals)
{
	setenv("FAKE_PJRT_VERSION", "0.40", 1);
	refused(alias("old.so"),
		(const char *const[]){"refused: PJRT C API 0.40: acceld needs major 0, minor 45 or later", NULL});
	setenv("FAKE_PJRT_VERSION", "1.2", 1);
	refused(alias("major.so"), (const char *const[]){"PJRT C API 1.2: acceld needs major 0", NULL});
	setenv("FAKE_PJRT_VERSION", "0.56", 1);
	refused(alias("56.so"), (const char *const[]){"0.57 rearranged PJRT_Api", NULL});
	/* the oldest minor accepted */
	setenv("FAKE_PJRT_VERSION", "0.45", 1);
	ck_assert_ptr_nonnull(pjrt_plugin_load(alias("45.so"))->api);
}
END_TEST

START_TEST(table_refusals)
{
	char size[32];

	setenv("FAKE_PJRT_API_SIZE", "8", 1);
	refused(alias("tiny.so"), (const char *const[]){"its PJRT_Api is 8 bytes, too short to hold a version", NULL});
	snprintf(size, sizeof(size), "%zu", offsetof(PJRT_Api, PJRT_Client_Create));
	setenv("FAKE_PJRT_API_SIZE", size, 1);
	refused(alias("short.so"), (const char *const[]){"ends before PJRT_Client_Create", NULL});
	unsetenv("FAKE_PJRT_API_SIZE");
	setenv("FAKE_PJRT_INIT_FAIL", "1", 1);
	refused(alias("init.so"), (const char *const[]){"PJRT_Plugin_Initialize failed: fake plugin: initialization "
							"failed (FAKE_PJRT_INIT_FAIL)",
							NULL});
}
END_TEST

/* A minor newer than acceld has met is used, with a note the device shows, and a warning in the log. */
START_TEST(newer_minor_is_used_with_a_note)
{
	char version[16];
	const struct pjrt_plugin *p;
	struct check_capture cap;
	char *out;
	char *err;

	snprintf(version, sizeof(version), "0.%d", PJRT_NEWEST_CHECKED_MINOR + 1);
	setenv("FAKE_PJRT_VERSION", version, 1);
	check_capture_begin(&cap);
	p = pjrt_plugin_load(alias("new.so"));
	check_capture_end(&cap, &out, &err);
	ck_assert_ptr_nonnull(p->api);
	ck_assert_int_eq(p->minor, PJRT_NEWEST_CHECKED_MINOR + 1);
	ck_assert_msg(strstr(p->note, "newer than any acceld has met") != NULL, "%s", p->note);
	ck_assert_str_eq(view(p->path, 0).note, p->note);
	ck_assert_str_eq(view(p->path, 0).api_version, version);
	ck_assert_msg(strstr(err, "\"msg\":\"plugin newer than acceld knows\"") != NULL, "%s", err);
	free(out);
	free(err);
}
END_TEST

START_TEST(error_take)
{
	const struct pjrt_plugin *p = pjrt_plugin_load(fake);
	PJRT_Plugin_Initialize_Args init = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
	char msg[256] = "stale";
	char small[12];

	ck_assert_ptr_nonnull(p->api);
	ck_assert_int_eq(pjrt_error_take(p->api, NULL, msg, sizeof(msg)), PJRT_Error_Code_OK);
	ck_assert_str_eq(msg, "");
	setenv("FAKE_PJRT_INIT_FAIL", "1", 1);
	ck_assert_int_eq(pjrt_error_take(p->api, p->api->PJRT_Plugin_Initialize(&init), msg, sizeof(msg)),
			 PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(msg, "fake plugin: initialization failed (FAKE_PJRT_INIT_FAIL)");
	/* the message is cut to the buffer, or not read at all */
	ck_assert_int_eq(pjrt_error_take(p->api, p->api->PJRT_Plugin_Initialize(&init), small, sizeof(small)),
			 PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(small, "fake plugin");
	ck_assert_int_eq(pjrt_error_take(p->api, p->api->PJRT_Plugin_Initialize(&init), NULL, 0),
			 PJRT_Error_Code_INTERNAL);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pjrt_plugin");
	TCase *tc = tcase_create("pjrt_plugin");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, kinds);
	tcase_add_test(tc, search_order);
	tcase_add_test(tc, acceld_pjrt_plugins_decides);
	tcase_add_test(tc, tpu_library_path);
	tcase_add_test(tc, names_and_library_paths);
	tcase_add_test(tc, search_folders);
	tcase_add_test(tc, search_expands_variables);
	tcase_add_test(tc, search_reads_the_process_environment);
	tcase_add_test(tc, tried_is_bounded);
	tcase_add_test(tc, describe_devices);
	tcase_add_test(tc, records_status_reads);
	tcase_add_test(tc, records_are_bounded);
	tcase_add_test(tc, error_code_names);
	tcase_add_test(tc, load_the_fake_plugin);
	tcase_add_test(tc, nvidia_libraries_beside_the_plugin);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, version_refusals);
	tcase_add_test(tc, table_refusals);
	tcase_add_test(tc, newer_minor_is_used_with_a_note);
	tcase_add_test(tc, error_take);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
