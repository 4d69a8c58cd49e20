/*
 * Unit tests of the PJRT backend (exec_pjrt.c) through the executor, against the stand-in plugin
 * (tests/fakes/pjrt.c): every kernel verified on a TPU and on a GPU, the program cache, precision on the GPU, a
 * device held by another process (409 DEVICE_BUSY, and the fallback), plugins refused at load (version), compile,
 * execution and memory failures, a program abandoned at its deadline with its client torn down, the idle close,
 * and no client, executable, buffer or event left behind. Each test runs in a process of its own (Check forks),
 * so the plugin's process-wide state starts afresh.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "core/clock.h"
#include "core/config.h"
#include "exec/exec.h"
#include "exec/backend/exec_cpu.h"
#include "exec/backend/pjrt_plugin.h"

static char lib_path[512];
static char plugins[1100];
static struct config cfg;
static struct device devs[3]; /* cpu:0, and tpu:0 or gpu:0, gpu:1 */
static uint64_t device_memory = 16ull << 30; /* what detection says each accelerator has */
static long (*fake_live)(const char *);
static long (*fake_calls)(const char *);
static long (*fake_bytes)(const char *);
static const char *(*fake_precision)(void);
static const char *(*fake_create_option)(const char *);
static long long (*fake_compile_option)(const char *);

static const char *const fake_vars[] = {
	"FAKE_PJRT_PLATFORM",	 "FAKE_PJRT_DEVICES",	  "FAKE_PJRT_KIND",	    "FAKE_PJRT_MEMORY",
	"FAKE_PJRT_VERSION",	 "FAKE_PJRT_API_SIZE",	  "FAKE_PJRT_INIT_FAIL",   "FAKE_PJRT_CREATE_FAIL",
	"FAKE_PJRT_BUSY",	 "FAKE_PJRT_BUSY_PID",	  "FAKE_PJRT_BUSY_DEVICES", "FAKE_PJRT_COMPILE_FAIL",
	"FAKE_PJRT_OOM",	 "FAKE_PJRT_EXEC_FAIL",	  "FAKE_PJRT_SLOW_MS",	    "FAKE_PJRT_NO_MEMSTATS",
	"FAKE_PJRT_WRONG_RESULT", "FAKE_PJRT_EXACT",	  "FAKE_PJRT_CC",	    "FAKE_PJRT_EXEC_OPTIONS_SIZE",
	"FAKE_PJRT_CORES_PER_CHIP", "FAKE_PJRT_HW_IDS",
};

static void resolve(void *lib, void *slot, size_t size, const char *name)
{
	void *sym = dlsym(lib, name);

	ck_assert_msg(sym != NULL, "%s not exported", name);
	memcpy(slot, &sym, size);
}

static void setup(void)
{
	const char *build = getenv("ACCELD_BUILD");
	char err[256];
	void *lib;

	/*
	 * Every variable a test flips while workers run exists from here on ("" is off for the fake), so flipping it
	 * replaces a value and never regrows the environment under a thread reading it; OpenBLAS, which sets and
	 * clears its variable while it loads, is loaded here too, as main's backend_prepare_all does before threads.
	 */
	for (size_t i = 0; i < sizeof(fake_vars) / sizeof(fake_vars[0]); i++)
		setenv(fake_vars[i], "", 1);
	exec_cpu_blas_prepare();
	snprintf(lib_path, sizeof(lib_path), "%s/fakes/libpjrt.so", build && *build ? build : "build");
	if (lib_path[0] != '/') {
		char cwd[256];

		ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
		memmove(lib_path + strlen(cwd) + 1, lib_path, strlen(lib_path) + 1);
		memcpy(lib_path, cwd, strlen(cwd));
		lib_path[strlen(cwd)] = '/';
	}
	/* the plugin is the same object the backend will dlopen: its test hooks count what the backend did */
	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib != NULL, "dlopen %s: %s", lib_path, dlerror());
	resolve(lib, &fake_live, sizeof(fake_live), "fake_pjrt_live");
	resolve(lib, &fake_calls, sizeof(fake_calls), "fake_pjrt_calls");
	resolve(lib, &fake_bytes, sizeof(fake_bytes), "fake_pjrt_bytes");
	resolve(lib, &fake_precision, sizeof(fake_precision), "fake_pjrt_last_precision");
	resolve(lib, &fake_create_option, sizeof(fake_create_option), "fake_pjrt_create_option");
	resolve(lib, &fake_compile_option, sizeof(fake_compile_option), "fake_pjrt_compile_option");
	ck_assert_int_eq(config_load(&cfg, 0, NULL, NULL, err, sizeof(err)), 0);
	cfg.pjrt_idle_ms = 60000;
	cfg.pjrt_cache_bytes = 0; /* no compile cache on disk, but where a test asks for one */
	/* both kinds' plugin is the fake (ACCELD_PJRT_PLUGINS) */
	snprintf(plugins, sizeof(plugins), "tpu=%s,cuda=%s", lib_path, lib_path);
	free(cfg.pjrt_plugins);
	cfg.pjrt_plugins = strdup(plugins);
	backend_pjrt.prepare(&cfg);
}

static void teardown(void)
{
	unsetenv("FAKE_NVML_PROCESSES");
	config_release(&cfg);
}

/* NVML is the fake (tests/fakes/nvml.c), so that acceld can ask it who runs on a GPU. */
static void use_fake_nvml(void)
{
	char path[600];

	snprintf(path, sizeof(path), "%s", lib_path);
	snprintf(strrchr(path, '/'), sizeof(path) - (size_t)(strrchr(path, '/') - path), "/libnvml.so");
	free(cfg.nvml_library);
	cfg.nvml_library = strdup(path);
}

/* cpu:0 and n accelerators of one kind, each served by the fake plugin */
static size_t make_devices(enum device_type type, unsigned n)
{
	static const char *const pci[] = {"0000:65:00.0", "0000:b3:00.0"};

	device_init(&devs[0], DEVICE_CPU);
	DEVICE_SET(devs[0].id, "cpu:0");
	for (unsigned i = 0; i < n; i++) {
		struct device *d = &devs[1 + i];

		device_init(d, type);
		snprintf(d->id, sizeof(d->id), "%s:%u", type == DEVICE_TPU ? "tpu" : "gpu", i);
		DEVICE_SET(d->vendor, type == DEVICE_TPU ? "Google" : "NVIDIA");
		DEVICE_SET(d->pci_bus_id, pci[i]);
		if (type == DEVICE_GPU) /* the NVML fake's first two GPUs, so that NVML can be asked about them */
			DEVICE_SET(d->uuid, i == 0 ? "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" :
						     "GPU-89a1c3e0-1111-2222-3333-444455556666");
		d->tpu.chip_index = i;
		d->gpu.cuda_ordinal = (int)i;
		d->memory_total_bytes = device_memory;
	}
	return 1 + n;
}

/* The real backend in this process: the daemon's "pjrt" (backend_pjrt_proxy) would start this test binary as its
 * worker process. */
static const struct backend_ops *const backends[] = {&backend_native, &backend_pjrt, &backend_opencl, NULL};

static struct exec *start(enum device_type type, unsigned n)
{
	struct exec_opts o;
	struct exec *ex = NULL;

	exec_opts_from_config(&cfg, &o);
	o.devices = devs;
	o.ndevices = make_devices(type, n);
	o.cpu_threads = 2;
	o.backends = backends;
	ck_assert_int_eq(exec_new(&o, &ex), ACCELD_OK);
	return ex;
}

/* Runs a job on the named devices (the first pinned unless fallback); returns the final job (unref it). */
static struct exec_job *run(struct exec *ex, enum kernel_id k, struct kernel_shape s, const char *dev,
			    const char *then, struct refusal *why)
{
	struct exec_request r;
	struct exec_job *job = NULL;

	exec_request_init(&r);
	r.kernel = k;
	r.shape = s;
	r.beta = k == KERNEL_SGEMM ? 0.5f : 0.0f;
	r.verify = true;
	exec_request_add_device(&r, dev);
	r.pinned = true;
	if (then != NULL) {
		exec_request_add_device(&r, then);
		r.fallback = true;
	}
	if (exec_submit(ex, &r, NULL, NULL, &job, why) != ACCELD_OK) {
		exec_request_release(&r);
		return NULL;
	}
	exec_job_wait(job);
	exec_request_release(&r);
	return job;
}

static const char *member(json_t *doc, const char *key)
{
	const char *s = json_string_value(json_object_get(doc, key));

	return s ? s : "";
}

/* Runs and checks success on dev with the pjrt backend; returns the job's document (decref it). */
static json_t *run_ok(struct exec *ex, enum kernel_id k, struct kernel_shape s, const char *dev)
{
	struct refusal why;
	struct exec_job *job = run(ex, k, s, dev, NULL, &why);
	json_t *doc;

	ck_assert_msg(job != NULL, "refused: %s", why.detail);
	doc = exec_job_json(job);
	ck_assert_msg(exec_job_state(job) == EXEC_SUCCEEDED, "%s: %s", kernel_name(k),
		      json_dumps(json_object_get(doc, "error"), 0));
	ck_assert_str_eq(member(doc, "backend"), "pjrt");
	ck_assert_str_eq(member(doc, "device"), dev);
	ck_assert_msg(json_is_true(json_object_get(doc, "verified")), "%s not verified", kernel_name(k));
	exec_job_unref(job);
	return doc;
}

static void wait_live_zero(void)
{
	for (int i = 0; i < 500 && fake_live("all") != 0; i++)
		usleep(10000);
	ck_assert_int_eq(fake_live("all"), 0);
}

/* What the device view says of the fake plugin (pjrt_plugin_status). */
static void plugin_status(struct pjrt_view *st)
{
	memset(st, 0, sizeof(*st));
	st->found = st->usable = true;
	DEVICE_SET(st->plugin, lib_path);
	pjrt_plugin_status(st);
}

static const struct kernel_shape shapes[KERNEL_COUNT] = {
	[KERNEL_SAXPY] = {.n = 1000}, [KERNEL_TRIAD] = {.n = 777},           [KERNEL_DOT] = {.n = 4099},
	[KERNEL_SGEMM] = {.m = 33, .n = 17, .k = 65}, [KERNEL_SOFTMAX] = {.m = 7, .n = 301},
};

START_TEST(every_kernel_on_a_tpu_and_cached)
{
	struct exec *ex;
	json_t *doc;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	ex = start(DEVICE_TPU, 2);
	ck_assert_ptr_nonnull(exec_device(ex, "tpu:1"));
	ck_assert_str_eq(exec_device_backend(ex, "tpu:1"), "pjrt");
	for (unsigned k = 0; k < KERNEL_COUNT; k++) {
		doc = run_ok(ex, (enum kernel_id)k, shapes[k], k % 2 ? "tpu:1" : "tpu:0");
		ck_assert(json_is_false(json_object_get(doc, "program_cached")));
		ck_assert(json_real_value(json_object_get(json_object_get(doc, "timing"), "compile_ms")) >= 0.0);
		json_decref(doc);
	}
	/* the same kernel and shape on the same device: the program comes from the cache */
	doc = run_ok(ex, KERNEL_SGEMM, shapes[KERNEL_SGEMM], "tpu:1");
	ck_assert(json_is_true(json_object_get(doc, "program_cached")));
	ck_assert_str_eq(member(doc, "precision"), "highest");
	json_decref(doc);
	/* one client for both chips, without options libtpu does not know */
	ck_assert_int_eq(fake_calls("PJRT_Client_Create"), 1);
	ck_assert_ptr_null(fake_create_option("preallocate"));
	/* the kernels alone: inputs this small are made on the host (EXEC_DEVICE_GENERATE_MIN_BYTES), and an output of
	 * 4,096 elements or fewer is its own sample */
	ck_assert_int_eq(fake_calls("PJRT_Client_Compile"), KERNEL_COUNT);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/*
 * A generated job makes its inputs on the device: only the scalars (alpha, each input's key, the sample's r0, rs,
 * c0 and cs) go up, and only the sample of the output comes back unless the output is asked for; a matrix's sample
 * (a grid of 64 rows x 64 columns) gathered by the stand-in verifies against the host's reference.
 */
START_TEST(generated_job_uploads_no_inputs)
{
	struct exec *ex;
	struct exec_request r;
	struct refusal why;
	struct exec_job *job;
	json_t *doc;
	long up, down;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	ex = start(DEVICE_GPU, 1);
	up = fake_bytes("upload");
	down = fake_bytes("download");
	doc = run_ok(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 100000}, "gpu:0");
	ck_assert_int_eq(fake_bytes("upload") - up, 4 + 2 * 4 + 4 * 8);
	ck_assert_int_eq(fake_bytes("download") - down, KERNEL_SAMPLE_MAX * 4);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "verification"), "checked")),
			 KERNEL_SAMPLE_MAX);
	ck_assert_double_eq(json_real_value(json_object_get(json_object_get(doc, "timing"), "transfer_bytes")),
			    4 + 2 * 4 + 4 * 8 + KERNEL_SAMPLE_MAX * 4);
	/* by direction, as the stand-in counted them */
	ck_assert_double_eq(json_real_value(json_object_get(json_object_get(doc, "timing"), "upload_bytes")),
			    4 + 2 * 4 + 4 * 8);
	ck_assert_double_eq(json_real_value(json_object_get(json_object_get(doc, "timing"), "download_bytes")),
			    KERNEL_SAMPLE_MAX * 4);
	json_decref(doc);
	down = fake_bytes("download");
	doc = run_ok(ex, KERNEL_SGEMM, (struct kernel_shape){.m = 300, .n = 200, .k = 64}, "gpu:0");
	ck_assert_int_eq(fake_bytes("download") - down, KERNEL_SAMPLE_MAX * 4);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "verification"), "checked")),
			 KERNEL_SAMPLE_MAX);
	ck_assert_str_eq(member(json_object_get(doc, "verification"), "method"),
			 "double-precision reference of 4096 sampled elements (64 rows x 64 columns)");
	json_decref(doc);
	/* asked for, the output comes back instead (the sample is taken from it); a full verification compares every
	 * element */
	exec_request_init(&r);
	r.kernel = KERNEL_SGEMM;
	r.shape = (struct kernel_shape){.m = 128, .n = 128, .k = 128};
	r.beta = 0.5f;
	r.verify = r.verify_full = true;
	r.full = true;
	exec_request_add_device(&r, "gpu:0");
	r.pinned = true;
	up = fake_bytes("upload");
	down = fake_bytes("download");
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_msg(json_is_true(json_object_get(doc, "verified")), "%s", json_dumps(doc, 0));
	ck_assert_str_eq(member(json_object_get(doc, "verification"), "mode"), "full");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "verification"), "checked")), 16384);
	ck_assert_int_eq(fake_bytes("upload") - up, 2 * 4 + 3 * 4);
	ck_assert_int_eq(fake_bytes("download") - down, 16384 * 4);
	json_decref(doc);
	exec_job_unref(job);
	/* inputs too small for a launch of the generator to pay are made on the host and copied */
	r.shape = (struct kernel_shape){.m = 40, .n = 30, .k = 20};
	r.full = r.verify_full = false;
	up = fake_bytes("upload");
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert(json_is_true(json_object_get(doc, "verified")));
	ck_assert_int_eq(fake_bytes("upload") - up, 2 * 4 + (40 * 20 + 20 * 30 + 40 * 30) * 4);
	json_decref(doc);
	exec_job_unref(job);
	exec_request_release(&r);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/*
 * Generated inputs stay on the device for the next run of the same seed and shape: it runs the kernel and the
 * gather alone (no generator), waits twice (the kernel, the sample's copy), and sends only its scalars. A run that needs their
 * memory has it.
 */
START_TEST(generated_inputs_stay_on_the_device)
{
	struct exec *ex;
	json_t *doc;
	long execs, up, waits;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_MEMORY", "64m", 1);
	device_memory = 64u << 20;
	ex = start(DEVICE_TPU, 1);
	/* two inputs of 8 MiB: a quarter of the 64 MiB free holds both */
	json_decref(run_ok(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 2u << 20}, "tpu:0"));
	ck_assert_int_eq(fake_live("buffers"), 2);
	execs = fake_calls("PJRT_LoadedExecutable_Execute");
	up = fake_bytes("upload");
	waits = fake_calls("PJRT_Event_Await") + fake_calls("PJRT_Event_OnReady");
	doc = run_ok(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 2u << 20}, "tpu:0");
	ck_assert_int_eq(fake_calls("PJRT_LoadedExecutable_Execute") - execs, 2);
	ck_assert_int_eq(fake_bytes("upload") - up, 4 + 4 * 8); /* alpha, the sample grid's r0, rs, c0, cs */
	ck_assert_int_le(fake_calls("PJRT_Event_Await") + fake_calls("PJRT_Event_OnReady") - waits, 2);
	json_decref(doc);
	/* another seed is made anew */
	execs = fake_calls("PJRT_LoadedExecutable_Execute");
	{
		struct exec_request r;
		struct refusal why;
		struct exec_job *job;

		exec_request_init(&r);
		r.kernel = KERNEL_SAXPY;
		r.shape = (struct kernel_shape){.n = 2u << 20};
		r.seed = 7;
		r.verify = true;
		exec_request_add_device(&r, "tpu:0");
		r.pinned = true;
		ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
		exec_job_wait(job);
		ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
		exec_job_unref(job);
		exec_request_release(&r);
	}
	ck_assert_int_eq(fake_calls("PJRT_LoadedExecutable_Execute") - execs, 4);
	/* 51.5 MiB with 16 MiB of resident inputs on a 64 MiB device: they make room */
	json_decref(run_ok(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 4608u << 10}, "tpu:0"));
	ck_assert_int_eq(fake_live("buffers"), 0);
	exec_free(ex);
	setenv("FAKE_PJRT_MEMORY", "", 1);
	device_memory = 16ull << 30;
	wait_live_zero();
}
END_TEST

START_TEST(gpus_are_matched_and_precision_said)
{
	struct exec *ex;
	json_t *doc;
	struct refusal why;
	struct exec_job *job;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	ex = start(DEVICE_GPU, 2);
	doc = run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:1");
	json_decref(doc);
	/* the CUDA plugin is told not to preallocate */
	ck_assert_str_eq(fake_create_option("preallocate"), "false");
	for (int p = 0; p < 3; p++) {
		struct exec_request r;

		exec_request_init(&r);
		r.kernel = KERNEL_SGEMM;
		r.shape = (struct kernel_shape){.m = 64, .n = 48, .k = 96};
		r.precision = (enum kernel_precision)p;
		r.verify = true;
		exec_request_add_device(&r, "gpu:0");
		r.pinned = true;
		ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
		exec_job_wait(job);
		doc = exec_job_json(job);
		ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
		ck_assert_str_eq(member(doc, "precision"), kernel_precision_name((enum kernel_precision)p));
		ck_assert_str_eq(member(doc, "precision_asked"), kernel_precision_name((enum kernel_precision)p));
		/* verified within the tolerance of what ran */
		ck_assert(json_is_true(json_object_get(doc, "verified")));
		ck_assert_str_eq(fake_precision(), p == 0 ? "HIGHEST" : "DEFAULT");
		json_decref(doc);
		exec_job_unref(job);
		exec_request_release(&r);
	}
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* On a TPU, TF32 is not a thing: the job runs float32 and says so. */
START_TEST(unsupported_precision_runs_highest)
{
	struct exec *ex;
	struct exec_request r;
	struct refusal why;
	struct exec_job *job;
	json_t *doc;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	ex = start(DEVICE_TPU, 1);
	exec_request_init(&r);
	r.kernel = KERNEL_SGEMM;
	r.shape = (struct kernel_shape){.m = 16, .n = 16, .k = 16};
	r.precision = KERNEL_PRECISION_TF32;
	exec_request_add_device(&r, "tpu:0");
	r.pinned = true;
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
	exec_job_wait(job);
	doc = exec_job_json(job);
	ck_assert_str_eq(member(doc, "precision_asked"), "tf32");
	ck_assert_str_eq(member(doc, "precision"), "highest");
	json_decref(doc);
	exec_job_unref(job);
	exec_free(ex);
}
END_TEST

START_TEST(busy_device_is_409_and_falls_back)
{
	struct exec *ex;
	struct refusal why;
	struct exec_job *job;
	char detail[512];
	json_t *doc;

	char lockfile[] = "/tmp/acceld-libtpu-lock-XXXXXX", who[64];
	int fd = mkstemp(lockfile), ready[2], done[2];
	pid_t holder;

	/* another process holds libtpu's lock (lockf, until it exits), and the plugin refuses as libtpu does */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	holder = fork();
	ck_assert_int_ge(holder, 0);
	if (holder == 0) {
		char c;

		if (lockf(fd, F_TLOCK, 0) != 0 || write(ready[1], "x", 1) != 1 || read(done[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], who, 1), 1);
	free(cfg.pjrt_tpu_lockfile);
	cfg.pjrt_tpu_lockfile = strdup(lockfile);
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_BUSY", "1", 1);
	snprintf(who, sizeof(who), "%ld", (long)holder);
	setenv("FAKE_PJRT_BUSY_PID", who, 1);
	ex = start(DEVICE_TPU, 1);
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 1u << 18}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_state(job), EXEC_FAILED);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_BUSY);
	ck_assert_int_eq(reason_status(REASON_DEVICE_BUSY), 409);
	snprintf(who, sizeof(who), "tpu:0 is held by process %ld (", (long)holder);
	ck_assert_msg(strstr(detail, who) != NULL && strstr(detail, lockfile) != NULL &&
		      strstr(detail, "already in use") != NULL, "%s", detail);
	exec_job_unref(job);
	ck_assert_int_eq(write(done[1], "x", 1), 1);
	waitpid(holder, NULL, 0);
	close(fd);
	unlink(lockfile);
	for (int i = 0; i < 2; i++) {
		close(ready[i]);
		close(done[i]);
	}
	/* allowed to, it moves on and says why */
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 1u << 18}, "tpu:0", "cpu:0", &why);
	doc = exec_job_json(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_SUCCEEDED);
	ck_assert_str_eq(member(doc, "device"), "cpu:0");
	ck_assert_str_eq(member(doc, "fallback_from"), "tpu:0");
	ck_assert_msg(strstr(member(doc, "fallback_reason"), "DEVICE_BUSY") != NULL, "%s",
		      member(doc, "fallback_reason"));
	json_decref(doc);
	exec_job_unref(job);
	/* once the other process lets go, the same device works */
	setenv("FAKE_PJRT_BUSY", "", 1);
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0"));
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* A plugin whose version does not fit is refused at load, never called further, and said. */
START_TEST(wrong_version_is_refused)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_VERSION", "0.40", 1);
	ex = start(DEVICE_TPU, 1);
	/* the worker opens the backend at start; the device then has no backend left */
	for (int i = 0; i < 500 && exec_device(ex, "tpu:0") != NULL; i++)
		usleep(10000);
	ck_assert_ptr_null(exec_device(ex, "tpu:0"));
	ck_assert_int_eq(fake_calls("PJRT_Plugin_Initialize"), 0);
	ck_assert_int_eq(fake_calls("PJRT_Client_Create"), 0);
	plugin_status(&st);
	ck_assert(!st.usable);
	ck_assert_msg(strstr(st.why, "0.40") != NULL && strstr(st.why, "minor 45") != NULL, "%s", st.why);
	exec_free(ex);
	setenv("FAKE_PJRT_VERSION", "", 1);
	setenv("FAKE_PJRT_INIT_FAIL", "1", 1);
	/* a plugin is loaded once per process: the refusal stands for the same path */
	ck_assert_ptr_null(pjrt_plugin_load(lib_path)->api);
}
END_TEST

START_TEST(failures_are_reasons)
{
	struct exec *ex;
	struct refusal why;
	struct exec_job *job;
	char detail[512];

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_MEMORY", "1m", 1);
	device_memory = 64u << 20;
	ex = start(DEVICE_TPU, 1);
	/* more than the runtime's memory: refused by what PJRT_Device_MemoryStats says */
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 1u << 18}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_EXCEEDS_DEVICE_MEMORY);
	ck_assert_msg(strstr(detail, "MemoryStats") != NULL, "%s", detail);
	exec_job_unref(job);
	setenv("FAKE_PJRT_MEMORY", "", 1);
	setenv("FAKE_PJRT_COMPILE_FAIL", "1", 1);
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 64}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_FAILURE);
	ck_assert_msg(strstr(detail, "compile") != NULL, "%s", detail);
	exec_job_unref(job);
	setenv("FAKE_PJRT_COMPILE_FAIL", "", 1);
	setenv("FAKE_PJRT_EXEC_FAIL", "async", 1);
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 64}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_FAILURE);
	exec_job_unref(job);
	setenv("FAKE_PJRT_EXEC_FAIL", "", 1);
	setenv("FAKE_PJRT_OOM", "execute", 1);
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 64}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_EXCEEDS_DEVICE_MEMORY);
	exec_job_unref(job);
	setenv("FAKE_PJRT_OOM", "", 1);
	/* a wrong result is caught by verification */
	setenv("FAKE_PJRT_WRONG_RESULT", "1", 1);
	job = run(ex, KERNEL_TRIAD, (struct kernel_shape){.n = 64}, "tpu:0", NULL, &why);
	{
		json_t *doc = exec_job_json(job);

		ck_assert(json_is_false(json_object_get(doc, "verified")));
		json_decref(doc);
	}
	exec_job_unref(job);
	setenv("FAKE_PJRT_WRONG_RESULT", "", 1);
	/* the job larger than what detection knows of the device is refused up front */
	ck_assert_ptr_null(run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 1u << 23}, "tpu:0", NULL, &why));
	ck_assert_int_eq(why.reason, REASON_EXCEEDS_DEVICE_MEMORY);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* A program still running at its deadline is abandoned: answered 504 at once, its client torn down when it ends. */
START_TEST(abandoned_program_retires_its_client)
{
	struct exec *ex;
	struct exec_request r;
	struct refusal why;
	struct exec_job *job;
	char detail[512];
	uint64_t t0;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_SLOW_MS", "1500", 1);
	ex = start(DEVICE_TPU, 1);
	exec_request_init(&r);
	r.kernel = KERNEL_SAXPY;
	r.shape.n = 64;
	r.timeout_ms = 300;
	exec_request_add_device(&r, "tpu:0");
	r.pinned = true;
	t0 = clock_mono_ns();
	ck_assert_int_eq(exec_submit(ex, &r, NULL, NULL, &job, &why), ACCELD_OK);
	exec_job_wait(job);
	ck_assert_int_eq(exec_job_state(job), EXEC_TIMED_OUT);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_TIMED_OUT);
	exec_job_unref(job);
	/* the worker is free long before the program ends: the device takes (and refuses) the next job meanwhile */
	setenv("FAKE_PJRT_SLOW_MS", "", 1);
	job = run(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 64}, "tpu:0", NULL, &why);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), REASON_DEVICE_BUSY);
	ck_assert_msg(strstr(detail, "abandoned") != NULL, "%s", detail);
	ck_assert_msg(clock_mono_ns() - t0 < 1400000000ull, "the refusal waited for the abandoned program");
	exec_job_unref(job);
	/* once it ends, its buffers and the client go, and the next job opens a new client */
	wait_live_zero();
	json_decref(run_ok(ex, KERNEL_SAXPY, (struct kernel_shape){.n = 64}, "tpu:0"));
	ck_assert_int_eq(fake_calls("PJRT_Client_Create"), 2);
	exec_request_release(&r);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* Without jobs for ACCELD_PJRT_IDLE the client closes, letting other processes have the devices. */
START_TEST(idle_client_closes)
{
	struct exec *ex;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	cfg.pjrt_idle_ms = 200;
	backend_pjrt.prepare(&cfg);
	ex = start(DEVICE_TPU, 1);
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0"));
	ck_assert_int_eq(fake_live("clients"), 1);
	for (int i = 0; i < 300 && fake_live("clients") != 0; i++)
		usleep(10000);
	ck_assert_int_eq(fake_live("all"), 0);
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0"));
	ck_assert_int_eq(fake_calls("PJRT_Client_Create"), 2);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* The job's error detail, for a job that must fail with reason. */
static void fails_with(struct exec *ex, const char *dev, enum reason reason, const char *says)
{
	struct refusal why;
	struct exec_job *job = run(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], dev, NULL, &why);
	char detail[512];

	ck_assert_msg(job != NULL, "refused: %s", why.detail);
	ck_assert_int_eq(exec_job_state(job), EXEC_FAILED);
	ck_assert_int_eq(exec_job_error(job, detail, sizeof(detail)), reason);
	ck_assert_msg(strstr(detail, says) != NULL, "'%s' not in '%s'", says, detail);
	exec_job_unref(job);
}

/* The CUDA client is told which GPUs acceld runs jobs on: those of its devices, by CUDA ordinal. */
START_TEST(the_cuda_client_takes_the_gpus_acceld_serves)
{
	struct exec *ex;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "3", 1);
	make_devices(DEVICE_GPU, 2);
	ex = start(DEVICE_GPU, 2);
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "gpu:1"));
	ck_assert_str_eq(fake_create_option("visible_devices"), "0,1");
	ck_assert_str_eq(fake_create_option("preallocate"), "false");
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/*
 * A GPU held by another process fails its own jobs only. The CUDA plugin keeps the GPUs of a process's first client
 * (XLA's ClientLibrary), so the first client opens without the held one, and that one stays out until a restart.
 */
START_TEST(a_held_gpu_fails_only_its_own_jobs)
{
	char procs[64];
	struct exec *ex;

	/* gpu:1 is held (exclusive-process mode) by this test's parent, as NVML says */
	use_fake_nvml();
	snprintf(procs, sizeof(procs), "1:%ld", (long)getppid());
	setenv("FAKE_NVML_PROCESSES", procs, 1);
	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	setenv("FAKE_PJRT_BUSY_DEVICES", "1", 1);
	ex = start(DEVICE_GPU, 2);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	/* one client, asked for both: the plugin skipped the held one itself */
	ck_assert_str_eq(fake_create_option("visible_devices"), "0,1");
	ck_assert_int_eq(fake_calls("PJRT_Client_Create"), 1);
	snprintf(procs, sizeof(procs), "held by process %ld", (long)getppid());
	fails_with(ex, "gpu:1", REASON_DEVICE_BUSY, procs);
	/* the other process lets go: the plugin still keeps gpu:1 out in this process, and acceld says so */
	setenv("FAKE_PJRT_BUSY_DEVICES", "", 1);
	unsetenv("FAKE_NVML_PROCESSES");
	fails_with(ex, "gpu:1", REASON_DEVICE_FAILURE, "left gpu:1 (CUDA ordinal 1) out");
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "gpu:0"));
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* A lone GPU held elsewhere: the plugin finds no device at all; NVML names the holder, or it is a device error. */
START_TEST(a_lone_held_gpu_names_its_holder)
{
	char procs[64];
	struct exec *ex;

	use_fake_nvml();
	snprintf(procs, sizeof(procs), "0:%ld", (long)getppid());
	setenv("FAKE_NVML_PROCESSES", procs, 1);
	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_BUSY_DEVICES", "0", 1);
	ex = start(DEVICE_GPU, 1);
	snprintf(procs, sizeof(procs), "gpu:0 is held by process %ld", (long)getppid());
	fails_with(ex, "gpu:0", REASON_DEVICE_BUSY, procs);
	fails_with(ex, "gpu:0", REASON_DEVICE_BUSY, "no supported devices found for platform CUDA");
	/* NVML lists nobody: the plugin's failure is the device's */
	unsetenv("FAKE_NVML_PROCESSES");
	fails_with(ex, "gpu:0", REASON_DEVICE_FAILURE, "no supported devices found for platform CUDA");
	/* nothing was kept: once free, the GPU opens */
	setenv("FAKE_PJRT_BUSY_DEVICES", "", 1);
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "gpu:0"));
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* The device at the GPU's CUDA ordinal must agree with what NVML says of the GPU, or it is another device. */
START_TEST(a_gpu_that_disagrees_with_nvml_is_refused)
{
	struct exec *ex;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_CC", "8.0", 1);
	make_devices(DEVICE_GPU, 1);
	ex = start(DEVICE_GPU, 1);
	/* start() describes the devices afresh: NVML's compute capability goes in before the worker opens */
	exec_free(ex);
	for (size_t i = 1; i < 2; i++)
		DEVICE_SET(devs[i].gpu.compute_capability, "9.0");
	{
		struct exec_opts o;

		exec_opts_from_config(&cfg, &o);
		o.devices = devs;
		o.ndevices = 2;
		o.cpu_threads = 2;
		o.backends = backends;
		ck_assert_int_eq(exec_new(&o, &ex), ACCELD_OK);
	}
	fails_with(ex, "gpu:0", REASON_UNSUPPORTED, "compute capability 8.0, NVML says 9.0");
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* A PJRT device with far less memory than NVML's GPU (a MIG instance named in CUDA_VISIBLE_DEVICES) is not it. */
START_TEST(a_gpu_of_other_memory_is_refused)
{
	struct exec *ex;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_MEMORY", "10g", 1);
	device_memory = 80ull << 30;
	ex = start(DEVICE_GPU, 1);
	fails_with(ex, "gpu:0", REASON_UNSUPPORTED, "a MIG instance?");
	exec_free(ex);
	device_memory = 16ull << 30;
	wait_live_zero();
}
END_TEST

/* MemoryStats at 0.113's size, its figures kept for the device; a refusal is said with the device, not hidden. */
START_TEST(memory_figures_or_a_note)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	ex = start(DEVICE_GPU, 1);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	plugin_status(&st);
	/* the CUDA allocator's limit: 0.75 of 16 GiB */
	ck_assert_uint_eq(st.memory_limit_bytes, 12ull << 30);
	ck_assert_str_eq(st.note, "");
	ck_assert_int_eq(PJRT_Device_MemoryStats_Args_STRUCT_SIZE, 201);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

START_TEST(memory_stats_refused_is_noted)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_NO_MEMSTATS", "1", 1);
	ex = start(DEVICE_GPU, 1);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	plugin_status(&st);
	ck_assert_uint_eq(st.memory_limit_bytes, 0);
	ck_assert_msg(strstr(st.note, "PJRT_Device_MemoryStats refused (UNIMPLEMENTED)") != NULL, "%s", st.note);
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* 0.56 is refused: 0.57 rearranged PJRT_Api. */
START_TEST(minor_56_is_refused)
{
	struct pjrt_view st;

	setenv("FAKE_PJRT_VERSION", "0.56", 1);
	ck_assert_ptr_null(pjrt_plugin_load(lib_path)->api);
	plugin_status(&st);
	ck_assert(!st.usable);
	ck_assert_msg(strstr(st.why, "0.57 rearranged PJRT_Api") != NULL, "%s", st.why);
}
END_TEST

/* A plugin newer than acceld has met is used with a note; if it wants larger structs, its jobs say so. */
/* The stand-in answers as the real CUDA plugin 0.115 does by default (1144-byte table, 144-byte PJRT_ExecuteOptions);
 * as a 0.94 plugin (624-byte table, 112-byte options) it is driven with 0.94's struct, and without the compile
 * cache's slots when its table ends before them. */
START_TEST(the_real_plugins_version_and_the_old_one)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	ex = start(DEVICE_GPU, 1);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	plugin_status(&st);
	ck_assert_str_eq(st.api_version, "0.115");
	ck_assert_str_eq(st.note, "");
	exec_free(ex);
	wait_live_zero();
}
END_TEST

START_TEST(an_old_plugin_gets_its_own_options_size)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_VERSION", "0.94", 1);
	setenv("FAKE_PJRT_API_SIZE", "624", 1);
	ex = start(DEVICE_GPU, 1);
	/* the fake refuses a PJRT_ExecuteOptions of another size than 0.94's 112 bytes here (below its own is refused,
	 * and acceld sends exactly 0.94's) */
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	plugin_status(&st);
	ck_assert_str_eq(st.api_version, "0.94");
	exec_free(ex);
	wait_live_zero();
}
END_TEST

START_TEST(a_newer_plugin_is_used_with_a_note)
{
	struct exec *ex;
	struct pjrt_view st;

	setenv("FAKE_PJRT_PLATFORM", "cuda", 1);
	setenv("FAKE_PJRT_VERSION", "0.130", 1);
	ex = start(DEVICE_GPU, 1);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "gpu:0"));
	plugin_status(&st);
	ck_assert(st.usable);
	ck_assert_msg(strstr(st.note, "0.130 is newer than any acceld has met (0.115)") != NULL, "%s", st.note);
	/* its PJRT_ExecuteOptions grew past what acceld knows */
	setenv("FAKE_PJRT_EXEC_OPTIONS_SIZE", "160", 1);
	fails_with(ex, "gpu:0", REASON_UNSUPPORTED, "the plugin speaks PJRT 0.130");
	exec_free(ex);
	wait_live_zero();
}
END_TEST

/* Before 0.97, PJRT_ExecuteOptions ends at incarnation_ids: acceld sends that size to such a plugin. */
START_TEST(execute_options_sized_by_version)
{
	ck_assert_uint_eq(pjrt_execute_options_size(94), 112);
	ck_assert_uint_eq(pjrt_execute_options_size(96), 112);
	ck_assert_uint_eq(pjrt_execute_options_size(97), PJRT_ExecuteOptions_STRUCT_SIZE);
	ck_assert_uint_eq(pjrt_execute_options_size(115), 144);
}
END_TEST

/* A program compiled once is loaded from the cache on disk by a later host (a new process, in service). */
START_TEST(compiled_programs_outlive_their_process)
{
	char dir[] = "/tmp/acceld-pjrt-cache-XXXXXX", cmd[80];
	long compiles, loads, saves;
	struct exec *ex;
	json_t *job;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	free(cfg.pjrt_cache_dir);
	cfg.pjrt_cache_dir = strdup(dir);
	cfg.pjrt_cache_bytes = 1 << 20;
	backend_pjrt.prepare(&cfg);
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	ex = start(DEVICE_TPU, 1);
	compiles = fake_calls("PJRT_Client_Compile");
	loads = fake_calls("PJRT_Executable_DeserializeAndLoad");
	saves = fake_calls("PJRT_Executable_Serialize");
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0"));
	ck_assert_int_eq(fake_calls("PJRT_Client_Compile"), compiles + 1);
	ck_assert_int_eq(fake_calls("PJRT_Executable_Serialize"), saves + 1);
	exec_free(ex); /* the host and its client go, as a worker's do */
	wait_live_zero();
	ex = start(DEVICE_TPU, 1);
	job = run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0");
	ck_assert(json_is_true(json_object_get(job, "program_cached")));
	json_decref(job);
	ck_assert_int_eq(fake_calls("PJRT_Client_Compile"), compiles + 1);
	ck_assert_int_eq(fake_calls("PJRT_Executable_DeserializeAndLoad"), loads + 1);
	exec_free(ex);
	wait_live_zero();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* TPU chips of two TensorCores: chip 1 is the second chip's first core whether ids count chips or cores. */
static void second_chip_is_found(const char *hw_ids)
{
	struct exec *ex;

	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	setenv("FAKE_PJRT_DEVICES", "2", 1);
	setenv("FAKE_PJRT_CORES_PER_CHIP", "2", 1);
	setenv("FAKE_PJRT_HW_IDS", hw_ids, 1);
	ex = start(DEVICE_TPU, 2);
	json_decref(run_ok(ex, KERNEL_SAXPY, shapes[KERNEL_SAXPY], "tpu:1"));
	ck_assert_int_eq(fake_compile_option("device_id"), 2); /* devices 0, 1 are chip 0's cores */
	json_decref(run_ok(ex, KERNEL_DOT, shapes[KERNEL_DOT], "tpu:0"));
	ck_assert_int_eq(fake_compile_option("device_id"), 0);
	exec_free(ex);
	wait_live_zero();
}

START_TEST(tpu_ids_counting_cores)
{
	second_chip_is_found("cores");
}
END_TEST

START_TEST(tpu_ids_counting_chips)
{
	second_chip_is_found("chips");
}
END_TEST

/* CUDA's ordinals follow the PCI order acceld's ids do, whatever order the caller's environment asked for. */
START_TEST(cuda_counts_in_pci_order)
{
	setenv("CUDA_DEVICE_ORDER", "FASTEST_FIRST", 1);
	backend_pjrt.prepare(&cfg);
	ck_assert_str_eq(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	unsetenv("CUDA_DEVICE_ORDER");
	backend_pjrt.prepare(&cfg);
	ck_assert_str_eq(getenv("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("exec_pjrt");
	TCase *tc = tcase_create("fake plugin");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_kernel_on_a_tpu_and_cached);
	tcase_add_test(tc, generated_job_uploads_no_inputs);
	tcase_add_test(tc, generated_inputs_stay_on_the_device);
	tcase_add_test(tc, cuda_counts_in_pci_order);
	tcase_add_test(tc, gpus_are_matched_and_precision_said);
	tcase_add_test(tc, unsupported_precision_runs_highest);
	tcase_add_test(tc, busy_device_is_409_and_falls_back);
	tcase_add_test(tc, wrong_version_is_refused);
	tcase_add_test(tc, failures_are_reasons);
	tcase_add_test(tc, abandoned_program_retires_its_client);
	tcase_add_test(tc, idle_client_closes);
	tcase_add_test(tc, the_cuda_client_takes_the_gpus_acceld_serves);
	tcase_add_test(tc, a_held_gpu_fails_only_its_own_jobs);
	tcase_add_test(tc, a_lone_held_gpu_names_its_holder);
	tcase_add_test(tc, a_gpu_that_disagrees_with_nvml_is_refused);
	tcase_add_test(tc, a_gpu_of_other_memory_is_refused);
	tcase_add_test(tc, memory_figures_or_a_note);
	tcase_add_test(tc, memory_stats_refused_is_noted);
	tcase_add_test(tc, minor_56_is_refused);
	tcase_add_test(tc, a_newer_plugin_is_used_with_a_note);
	tcase_add_test(tc, the_real_plugins_version_and_the_old_one);
	tcase_add_test(tc, an_old_plugin_gets_its_own_options_size);
	tcase_add_test(tc, execute_options_sized_by_version);
	tcase_add_test(tc, tpu_ids_counting_cores);
	tcase_add_test(tc, tpu_ids_counting_chips);
	tcase_add_test(tc, compiled_programs_outlive_their_process);
	suite_add_tcase(s, tc);
	return s;
}
