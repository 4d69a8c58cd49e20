/*
 * Unit tests for report.c. Node Feature Discovery labels from snapshots built here: every label of a CPU, GPUs, a TPU
 * and a known cloud host, values cut to what NFD accepts (63 of [A-Za-z0-9._-], alphanumeric at both ends) and
 * labels with nothing left, or nothing known, left out; the features file written whole (0644, a comment line, no
 * temporary file left) or refused with why. `acceld report` called in-process on this host's CPU and the tpu-v6e-8
 * fixture, its output captured: the table (current and recommended devices as the preference and --allow-tpu say,
 * the host, a row per device, TPU, PJRT and price details, the probes; no endpoint named), --verbose (the stand-in
 * PJRT plugin loaded, its API version or refusal; every device in full; the settings in effect, durations and sizes
 * in their units), --json (the GET /devices document), --nfd (both spellings; a folder that is not there is exit 1),
 * and argument errors (exit 2) and --help (exit 0, report's own options, whatever the environment holds).
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check_cli.h"
#include "check_main.h"
#include "cli/cli.h"
#include "cli/report.h"
#include "detect/cloud.h"
#include "exec/backend/pjrt_abi.h"

#define NS REPORT_NFD_NS
#define GIB (1024ull * 1024ull * 1024ull)

static char tmp[64];
static struct config cfg;
static struct device devs[8];
static struct cloud_host host;
static struct detect_snapshot snap;
static struct check_cli_run r;

#define REPORT(...)                                                                                                \
	do {                                                                                                       \
		check_cli_release(&r);                                                                             \
		check_cli_call(&r, report_main, __VA_ARGS__, (const char *)NULL);                                  \
	} while (0)

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

static void setup(void)
{
	char err[256];

	check_tmpdir(tmp, sizeof(tmp), "report");
	check_cli_env(tmp, "tpu-v6e-8");
	ck_assert_int_eq(config_load(&cfg, 0, NULL, no_env, err, sizeof(err)), 0);
	memset(&snap, 0, sizeof(snap));
	snap.devices = devs;
	memset(&r, 0, sizeof(r));
}

static void teardown(void)
{
	config_release(&cfg);
	check_cli_release(&r);
	check_rmtree(tmp);
}

/* A host with a CPU, two NVIDIA GPUs, a TPU chip, on a known GCE Spot VM. */
static void full_host(void)
{
	struct device *d = devs;

	device_init(d, DEVICE_CPU);
	DEVICE_SET(d->id, "cpu:0");
	d->cpu.pus = 8;
	d->cpu.effective_cpus = 6.5;
	DEVICE_SET(d->cpu.isa, "avx512f");
	d->opencl.present = true;
	d++;
	for (int i = 0; i < 2; i++, d++) {
		device_init(d, DEVICE_GPU);
		snprintf(d->id, sizeof(d->id), "gpu:%d", i);
		DEVICE_SET(d->vendor, "NVIDIA");
		DEVICE_SET(d->model, "NVIDIA H100 80GB HBM3");
		DEVICE_SET(d->accelerator_type, "H100");
		d->memory_total_bytes = 80 * GIB;
		d->executable = i == 0;
	}
	device_init(d, DEVICE_TPU);
	DEVICE_SET(d->id, "tpu:0");
	DEVICE_SET(d->accelerator_type, "TPU-V6E");
	DEVICE_SET(d->tpu.generation, "v6e");
	DEVICE_SET(d->tpu.accelerator_type, "v6e-8");
	DEVICE_SET(d->tpu.topology, "2x4");
	d->tpu.chips = 8;
	d->tpu.worker_id = 0;
	snap.n = 4;
	cloud_host_init(&host);
	host.cloud = CLOUD_GCE;
	host.state = CLOUD_KNOWN;
	DEVICE_SET(host.instance_type, "ct6e-standard-8t");
	host.spot = 1;
	snap.host = &host;
}

/* The labels of the snapshot as one string (freed by the caller). */
static char *labels(void)
{
	FILE *f = tmpfile();
	char *text;

	ck_assert_ptr_nonnull(f);
	report_nfd_labels(&snap, &cfg, f);
	text = check_slurp(f);
	fclose(f);
	return text;
}

START_TEST(nfd_labels_of_a_full_host)
{
	char *text;

	full_host();
	text = labels();
	ck_assert_str_eq(text, NS "cpu-pus=8\n" NS "cpu-effective-cpus=6.5\n" NS "cpu-isa=avx512f\n" NS
			       "opencl=true\n" NS "gpu-count=2\n" NS "gpu-vendor=NVIDIA\n" NS "gpu-product=H100\n" NS
			       "gpu-memory-gib=80\n" NS "gpu-executable=true\n" NS "tpu-count=1\n" NS
			       "tpu-product=TPU-V6E\n" NS "tpu-generation=v6e\n" NS "tpu-accelerator-type=v6e-8\n" NS
			       "tpu-topology=2x4\n" NS "tpu-chips=8\n" NS "tpu-worker-id=0\n" NS
			       "preferred-device-type=tpu\n" NS "cloud=gce\n" NS
			       "cloud-instance-type=ct6e-standard-8t\n" NS "cloud-spot=true\n");
	free(text);

	/* TPUs not allowed: a GPU is preferred; on demand */
	cfg.allow_tpu = false;
	host.spot = 0;
	text = labels();
	ck_assert_ptr_nonnull(strstr(text, NS "preferred-device-type=gpu\n"));
	ck_assert_ptr_nonnull(strstr(text, NS "cloud-spot=false\n"));
	free(text);
}
END_TEST

/* What is not known is left out: no zeros, no empty values. */
START_TEST(nfd_labels_left_out)
{
	char *text;

	full_host();
	devs[0].cpu.pus = 0;
	devs[0].cpu.effective_cpus = NAN;
	devs[0].cpu.isa[0] = '\0';
	devs[0].opencl.present = false;
	devs[1].memory_total_bytes = 0;
	devs[1].executable = false;
	devs[3].tpu.topology[0] = '\0';
	devs[3].tpu.chips = 0;
	devs[3].tpu.worker_id = -1;
	host.spot = -1;
	text = labels();
	ck_assert_str_eq(text, NS "gpu-count=2\n" NS "gpu-vendor=NVIDIA\n" NS "gpu-product=H100\n" NS
			       "gpu-executable=false\n" NS "tpu-count=1\n" NS "tpu-product=TPU-V6E\n" NS
			       "tpu-generation=v6e\n" NS "tpu-accelerator-type=v6e-8\n" NS
			       "preferred-device-type=tpu\n" NS "cloud=gce\n" NS
			       "cloud-instance-type=ct6e-standard-8t\n");
	free(text);

	/* a cloud that is not known yet says nothing; no host at all neither */
	host.state = CLOUD_FAILED;
	text = labels();
	ck_assert_ptr_null(strstr(text, NS "cloud"));
	free(text);
	snap.host = NULL;
	text = labels();
	ck_assert_ptr_null(strstr(text, NS "cloud"));
	free(text);

	/* no device: no label */
	snap.n = 0;
	text = labels();
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

/* Values become what NFD accepts. */
START_TEST(nfd_label_values)
{
	char *text;
	char want[128];

	full_host();
	snap.n = 2; /* the CPU and one GPU */
	devs[1].accelerator_type[0] = '\0'; /* the model names the product then */
	DEVICE_SET(devs[1].model, "  NVIDIA  H100 (80GB) HBM3!! ");
	DEVICE_SET(devs[1].vendor, "!!!");
	DEVICE_SET(devs[0].cpu.isa, ".avx_512.f-");
	devs[1].memory_total_bytes = (uint64_t)(23.6 * (double)GIB); /* rounded to the nearest GiB */
	text = labels();
	ck_assert_msg(strstr(text, NS "gpu-product=NVIDIA-H100-80GB-HBM3\n") != NULL, "%s", text);
	ck_assert_msg(strstr(text, NS "gpu-vendor") == NULL, "%s", text);
	ck_assert_msg(strstr(text, NS "cpu-isa=avx_512.f\n") != NULL, "%s", text);
	ck_assert_msg(strstr(text, NS "gpu-memory-gib=24\n") != NULL, "%s", text);
	free(text);

	/* 63 characters at most */
	memset(devs[1].model, 'a', 100);
	devs[1].model[100] = '\0';
	devs[1].model[62] = 'z';
	text = labels();
	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), "%sgpu-product=%.63s\n", NS, devs[1].model);
	ck_assert_msg(strstr(text, want) != NULL, "%s", text);
	free(text);
}
END_TEST

START_TEST(nfd_file)
{
	static const char head[] = "# Node Feature Discovery local features, written by acceld report --nfd\n";
	char path[128];
	char *text;
	char *want;
	struct stat st;
	FILE *f;
	char err[512] = "";
	DIR *dir;
	struct dirent *e;
	unsigned entries = 0;

	full_host();
	snprintf(path, sizeof(path), "%s/features.d/acceld", tmp);
	check_write_file(path, "stale\n");
	ck_assert_int_eq(report_write_nfd(&snap, &cfg, path, err, sizeof(err)), 0);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	text = check_slurp(f);
	fclose(f);
	ck_assert_msg(strncmp(text, head, strlen(head)) == 0, "%s", text);
	want = labels();
	ck_assert_str_eq(text + strlen(head), want);
	free(want);
	free(text);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0644);
	/* the file replaced the old one, and nothing else is left in its folder */
	snprintf(path, sizeof(path), "%s/features.d", tmp);
	dir = opendir(path);
	ck_assert_ptr_nonnull(dir);
	for (e = readdir(dir); e != NULL; e = readdir(dir)) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_str_eq(e->d_name, "acceld");
		entries++;
	}
	closedir(dir);
	ck_assert_uint_eq(entries, 1);

	/* a folder that is not there */
	snprintf(path, sizeof(path), "%s/missing/acceld", tmp);
	ck_assert_int_eq(report_write_nfd(&snap, &cfg, path, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "cannot create a temporary file beside ", 38) == 0 && strstr(err, path) != NULL,
		      "%s", err);

	/* a path that is a folder: the rename fails and the temporary file goes */
	snprintf(path, sizeof(path), "%s/features.d", tmp);
	ck_assert_int_eq(report_write_nfd(&snap, &cfg, path, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "cannot rename onto ", 19) == 0, "%s", err);
	dir = opendir(tmp);
	ck_assert_ptr_nonnull(dir);
	for (e = readdir(dir); e != NULL; e = readdir(dir))
		ck_assert_msg(strstr(e->d_name, ".tmp-") == NULL, "left behind: %s", e->d_name);
	closedir(dir);
}
END_TEST

START_TEST(report_table)
{
	REPORT("--cloud", "none");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, "acceld report - ", 16) == 0, "%.200s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\nCurrent device:     tpu:0 (preference auto)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nRecommended device: tpu:0 (automatic order TPU > GPU > CPU; acceld "
					    "select weighs a policy too)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nHost:               off (ACCELD_CLOUD=none)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nHost price:         unknown: "));
	ck_assert_msg(strstr(r.out, "GET /") == NULL && strstr(r.out, "PUT /") == NULL, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\nID      TYPE VENDOR  MODEL "));
	ck_assert_ptr_nonnull(strstr(r.out, "\ncpu:0   cpu  "));
	for (int i = 0; i < 8; i++) {
		char row[128];

		snprintf(row, sizeof(row), "\ntpu:%d   tpu  Google  TPU v6e ", i);
		ck_assert_msg(strstr(r.out, row) != NULL, "no row tpu:%d", i);
		snprintf(row, sizeof(row), "\n  tpu:%d: TPU v6e, slice -, topology -, chip %d of 8\n", i, i);
		ck_assert_msg(strstr(r.out, row) != NULL, "no detail of tpu:%d", i);
	}
	ck_assert_ptr_nonnull(strstr(r.out, " 32.0 GiB/-  "));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  tpu:0: PCI 0000:00:04.0\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  tpu:0: pjrt: no tpu PJRT plugin found: PJRT is off "
					    "(ACCELD_PJRT_PLUGINS=none)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  tpu:0: price 2.700 USD/h per chip (table tpu-v6e"));
	ck_assert_ptr_nonnull(strstr(r.out, " package(s), "));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  cpu:0: caches"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nDetection sources:\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  tpu        ok       available     8 device view(s)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  nvml       ok       not present   0 device view(s)\n"));
	/* not verbose: no timings, no full devices, no settings */
	ck_assert_ptr_null(strstr(r.out, " took "));
	ck_assert_ptr_null(strstr(r.out, "Devices in full:"));
	ck_assert_ptr_null(strstr(r.out, "Settings in effect"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_MAX_BODY"));

	/* the configured preference, and TPUs not allowed */
	REPORT("--prefer", "gpu", "--allow-tpu", "false");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_ptr_nonnull(
		strstr(r.out, "\nCurrent device:     none (preference gpu: no such device on this host)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nRecommended device: cpu:0 (automatic order TPU > GPU > CPU, TPUs not "
					    "allowed; "));
	setenv("COMPUTE_PREFER", "cpu", 1);
	REPORT("--verbose", "--idle-timeout", "90s", "--max-body", "2MB");
	ck_assert_ptr_nonnull(strstr(r.out, "\nCurrent device:     cpu:0 (preference cpu)\n"));
	/* verbose: the settings in effect, a line each, durations and sizes as a config file gives them */
	ck_assert_ptr_nonnull(strstr(r.out, "\nSettings in effect (flag > environment > config file > default):\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_IDLE_TIMEOUT            90s\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_MAX_BODY                2MB\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_CONN_MEMORY             32KiB\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_RETENTION_MINUTE        336h\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_PJRT_PLUGINS            none\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  ACCELD_HEALTH_LISTEN           (unset)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  COMPUTE_PREFER                 cpu\n"));
}
END_TEST

/* --verbose loads the plugin each TPU would use, so its API version (or why it is refused) shows. */
/* -v loads the plugin in a worker process, never in the command's own: this test's binary is not acceld, so the
 * worker is the acceld of this build (ACCELD_BUILD's, as the fakes are found) */
static void worker_exe(void)
{
	const char *build = getenv("ACCELD_BUILD");
	char rel[PATH_MAX];
	char abs[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/acceld", build != NULL && build[0] != '\0' ? build : "build");
	ck_assert_msg(realpath(rel, abs) != NULL, "%s is not built", rel);
	setenv("ACCELD_WORKER_EXE", abs, 1);
}

START_TEST(report_verbose_loads_the_plugin)
{
	char rel[512];
	char fake[PATH_MAX];
	char setting[PATH_MAX + 8];
	char line[PATH_MAX + 128];

	check_fake_path(rel, sizeof(rel), "pjrt");
	ck_assert_ptr_nonnull(realpath(rel, fake));
	snprintf(setting, sizeof(setting), "tpu=%s", fake);
	setenv("ACCELD_PJRT_PLUGINS", setting, 1);
	setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
	worker_exe();

	/* not verbose: found, not loaded */
	REPORT(NULL);
	snprintf(line, sizeof(line), "\n  tpu:3: pjrt: %s (from ACCELD_PJRT_PLUGINS)\n", fake);
	ck_assert_msg(strstr(r.out, line) != NULL, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, " yes   pjrt\n")); /* the backends that run its jobs */

	REPORT("-v");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	snprintf(line, sizeof(line), "\n  tpu:3: pjrt: %s (from ACCELD_PJRT_PLUGINS), PJRT API %d.%d\n", fake,
		 PJRT_API_MAJOR, PJRT_API_MINOR);
	ck_assert_msg(strstr(r.out, line) != NULL, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\n             took "));
	ck_assert_ptr_nonnull(strstr(r.out, "\nDevices in full:\n{\n  \"id\": \"cpu:0\","));
	ck_assert_ptr_nonnull(strstr(r.out, "\n{\n  \"id\": \"tpu:7\","));
}
END_TEST

START_TEST(report_verbose_shows_a_refusal)
{
	char rel[512];
	char fake[PATH_MAX];
	char setting[PATH_MAX + 8];
	char line[2 * PATH_MAX + 160];

	check_fake_path(rel, sizeof(rel), "pjrt");
	ck_assert_ptr_nonnull(realpath(rel, fake));
	snprintf(setting, sizeof(setting), "tpu=%s", fake);
	setenv("ACCELD_PJRT_PLUGINS", setting, 1);
	setenv("FAKE_PJRT_VERSION", "0.40", 1);
	worker_exe();
	REPORT("--verbose");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	snprintf(line, sizeof(line), "\n  tpu:0: pjrt: %s (from ACCELD_PJRT_PLUGINS): refused: %s refused: PJRT C API "
		 "0.40: acceld needs major 0, minor 45 or later",
		 fake, fake);
	ck_assert_msg(strstr(r.out, line) != NULL, "%s", r.out);
}
END_TEST

START_TEST(report_json)
{
	json_t *doc;
	json_t *devices;

	REPORT("--json");
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_int_eq(r.out[strlen(r.out) - 1], '\n');
	doc = json_loads(r.out, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	devices = json_object_get(doc, "devices");
	ck_assert_uint_eq(json_array_size(devices), 9);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(devices, 0), "id")), "cpu:0");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(devices, 8), "id")), "tpu:7");
	ck_assert(json_is_array(json_object_get(doc, "probes")));
	ck_assert_ptr_nonnull(json_object_get(doc, "host"));
	json_decref(doc);
}
END_TEST

START_TEST(report_nfd)
{
	char path[128];
	char flag[160];
	char *text;
	FILE *f;

	snprintf(path, sizeof(path), "%s/features", tmp);
	REPORT("--nfd", path);
	ck_assert_msg(r.rc == CLI_EXIT_OK, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, "\n\nNode Feature Discovery labels written to ") != NULL && strstr(r.out, path),
		      "%s", r.out);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	text = check_slurp(f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, NS "tpu-count=8\n"));
	ck_assert_ptr_nonnull(strstr(text, NS "tpu-product=TPU-V6E\n"));
	ck_assert_ptr_nonnull(strstr(text, NS "preferred-device-type=tpu\n"));
	ck_assert_ptr_null(strstr(text, NS "gpu-"));
	free(text);

	/* with --json the document alone goes to stdout */
	unlink(path);
	snprintf(flag, sizeof(flag), "--nfd=%s", path);
	REPORT("--json", flag);
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_ptr_null(strstr(r.out, "Node Feature Discovery"));
	ck_assert_int_eq(access(path, R_OK), 0);

	/* a file that cannot be written: the report is printed, the exit is 1 */
	snprintf(path, sizeof(path), "%s/missing/features", tmp);
	REPORT("--nfd", path);
	ck_assert_int_eq(r.rc, CLI_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(r.out, "\nDetection sources:\n"));
	ck_assert_msg(strncmp(r.err, "acceld report: cannot create a temporary file beside ", 53) == 0, "%s", r.err);
}
END_TEST

START_TEST(report_usage)
{
	static const char usage[] = "usage: acceld report [--json] [-v] [--nfd PATH] [SETTINGS]";

	REPORT("--nfd");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld report: --nfd needs a file path\n", 39) == 0 &&
			      strncmp(r.err + 39, usage, strlen(usage)) == 0 &&
			      strstr(r.err, "(see acceld help report)\n") != NULL,
		      "%s", r.err);
	REPORT("--nfd", "");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(r.err, "--nfd needs a file path"));
	REPORT("--nfd=");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_msg(strncmp(r.err, "acceld report: unknown option '--nfd'", 37) == 0, "%s", r.err);
	REPORT("--table");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strncmp(r.err, "acceld report: unknown option '--table'", 39) == 0, "%s", r.err);
	setenv("ACCELD_CLOUD", "ibm", 1);
	REPORT("--json");
	ck_assert_int_eq(r.rc, CLI_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(r.err, "ACCELD_CLOUD"));
	/* the help even so: report's options and the settings it reads most, not every one */
	REPORT("--json", "--help");
	ck_assert_int_eq(r.rc, CLI_EXIT_OK);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strncmp(r.out, usage, strlen(usage)) == 0, "%.100s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, NS "*"));
	ck_assert_ptr_nonnull(strstr(r.out, "ACCELD_CLOUD"));
	ck_assert_ptr_null(strstr(r.out, "ACCELD_LISTEN"));
	setenv("ACCELD_CLOUD", "none", 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nfd_labels_of_a_full_host);
	tcase_add_test(tc, nfd_labels_left_out);
	tcase_add_test(tc, nfd_label_values);
	tcase_add_test(tc, nfd_file);
	tcase_add_test(tc, report_table);
	tcase_add_test(tc, report_verbose_loads_the_plugin);
	tcase_add_test(tc, report_verbose_shows_a_refusal);
	tcase_add_test(tc, report_json);
	tcase_add_test(tc, report_nfd);
	tcase_add_test(tc, report_usage);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
