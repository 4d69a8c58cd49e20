/* report: `acceld report` - the devices as a table, as JSON, verbosely, or as Node Feature Discovery labels. */
#include "cli/report.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "detect/cloud.h"
#include "core/config.h"
#include "core/jsonval.h"
#include "detect/detect.h"
#include "cost/hostprice.h"
#include "core/mem.h"
#include "exec/backend.h"
#include "select/select.h"

#define GIB 1073741824.0

struct report_opts {
	bool json;
	bool verbose;
	const char *nfd;
};

static void report_help(FILE *out)
{
	static const char *const settings[] = {"prefer", "allow-tpu", "cloud", "pjrt-plugins", "nvml-library", NULL};

	fprintf(out, "usage: acceld report [--json] [-v] [--nfd PATH] [SETTINGS]\n"
		     "\n"
		     "Probes the devices once and prints them: the device acceld would choose, the host, a row\n"
		     "per device and what each probe found. Exit status: 0 done, 1 the --nfd file cannot be\n"
		     "written, 2 bad usage.\n"
		     "\n"
		     "Options:\n"
		     "  --json         print the devices as GET /devices answers them\n"
		     "  -v, --verbose  add every probe's findings and errors, the devices in full and the settings in\n"
		     "                 effect; log at info on stderr (default: warn; --log-level L for another)\n"
		     "  --nfd PATH     also write a Node Feature Discovery features file (labels\n"
		     "                 " REPORT_NFD_NS "*)\n");
	cli_help_settings(out, settings);
}

/* Takes report's own options out of argv; the rest (settings) go to the configuration. Returns 0, or -1. */
static int split_args(int argc, char **argv, struct report_opts *o, char **rest, int *nrest)
{
	*nrest = 0;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			o->json = true;
		} else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
			o->verbose = true;
		} else if (strcmp(argv[i], "--nfd") == 0) {
			if (i + 1 >= argc || argv[i + 1][0] == '\0') {
				fprintf(stderr, "acceld report: --nfd needs a file path\n");
				return -1;
			}
			o->nfd = argv[++i];
		} else if (strncmp(argv[i], "--nfd=", 6) == 0 && argv[i][6] != '\0') {
			o->nfd = argv[i] + 6;
		} else {
			rest[(*nrest)++] = argv[i];
		}
	}
	return 0;
}

static const struct device *first_of(const struct detect_snapshot *s, enum device_type t)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->devices[i].type == t)
			return &s->devices[i];
	return NULL;
}

/*
 * The device GET /select names for prefer (and the configured allow_tpu, no other constraint), or NULL when the host
 * has no device of a named kind (selection would fall back to another kind).
 */
static const struct device *choice(const struct detect_snapshot *s, const struct config *cfg, int prefer)
{
	struct select_request req;
	struct select_result res;
	const struct device *d = NULL;

	select_request_init(&req, cfg);
	req.prefer = prefer;
	if (select_choose(s->devices, s->n, &req, NULL, 0, &res) == ACCELD_OK && !res.fell_back)
		d = res.device;
	select_result_release(&res);
	return d;
}

/* The device the configured preference points at. */
static const struct device *preferred(const struct detect_snapshot *s, const struct config *cfg)
{
	return choice(s, cfg, cfg->prefer);
}

/* The automatic order's choice: TPU (when allowed) > GPU > CPU. */
static const struct device *recommended(const struct detect_snapshot *s, const struct config *cfg)
{
	return choice(s, cfg, PREFER_AUTO);
}

/* "native" or "pjrt,opencl": the backends that run jobs on d, the default first (backend.h). */
static void backends_text(const struct device *d, char *out, size_t outsz)
{
	json_t *doc = json_object();
	size_t len = 0;
	size_t i;
	json_t *v;

	backend_describe_device(NULL, d, doc);
	out[0] = '\0';
	json_array_foreach(json_object_get(doc, "backends"), i, v)
	{
		if (len < outsz)
			len += (size_t)snprintf(out + len, outsz - len, "%s%s", i ? "," : "", json_string_value(v));
	}
	if (len == 0)
		snprintf(out, outsz, "-");
	json_decref(doc);
}

static void num_or_dash(char *out, size_t outsz, double v, int decimals)
{
	if (isnan(v))
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%.*f", decimals, v);
}

static void bytes_or_dash(char *out, size_t outsz, uint64_t v)
{
	if (v == 0)
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%.1f GiB", (double)v / GIB);
}

static const char *or_dash(const char *s)
{
	return s[0] != '\0' ? s : "-";
}

static void print_cpu_detail(const struct device *d, FILE *out)
{
	static const char *const names[4] = {"L1d", "L2", "L3", "L4"};
	char quota[32];

	if (isnan(d->cpu.quota_cpus))
		snprintf(quota, sizeof(quota), "none");
	else
		snprintf(quota, sizeof(quota), "%.2f CPUs", d->cpu.quota_cpus);
	fprintf(out, "  %s: %u package(s), %u core(s), %u PU(s), %u NUMA node(s); cpuset %s; quota %s; "
		     "effective CPUs %.2f; ISA %s\n",
		d->id, d->cpu.packages, d->cpu.cores, d->cpu.pus, d->cpu.numa_nodes, or_dash(d->cpu.cpuset), quota,
		isnan(d->cpu.effective_cpus) ? 0.0 : d->cpu.effective_cpus, or_dash(d->cpu.isa));
	fprintf(out, "  %s: caches", d->id);
	for (int i = 0; i < 4; i++)
		if (d->cpu.cache_bytes[i] != 0)
			fprintf(out, " %s %llu KiB", names[i], (unsigned long long)(d->cpu.cache_bytes[i] / 1024));
	fputc('\n', out);
}

/* A string member of o, or "" when it has none. */
static const char *member(const json_t *o, const char *name)
{
	const char *v = json_string_value(json_object_get(o, name));

	return v != NULL ? v : "";
}

/*
 * What each backend says of d (its describe: a PJRT plugin found, what loading it said, or why none serves d);
 * verbosely what it says once loaded (its inspect), so its API version (or its refusal) is known too.
 */
static void print_backend_views(const struct device *d, bool verbose, FILE *out)
{
	for (size_t i = 0; backend_builtin[i] != NULL; i++) {
		const struct backend_ops *b = backend_builtin[i];
		json_t *v = verbose && b->inspect != NULL ? b->inspect(d) : b->describe != NULL ? b->describe(d) : NULL;
		const char *api = member(v, "api_version");
		const char *platform = member(v, "platform");
		bool usable = json_is_true(json_object_get(v, "usable"));

		if (v == NULL)
			continue;
		if (!json_is_true(json_object_get(v, "found")))
			fprintf(out, "  %s: %s: %s\n", d->id, b->name, member(v, "why"));
		else
			fprintf(out, "  %s: %s: %s (from %s)%s%s%s%s%s%s\n", d->id, b->name, member(v, "plugin"),
				member(v, "source"), api[0] ? ", PJRT API " : "", api, platform[0] ? ", platform " : "",
				platform, !usable ? ": refused: " : "", !usable ? member(v, "why") : "");
		json_decref(v);
	}
}

/* The host: which cloud VM, its price (built-in table; overrides are the service's) and the split. */
static void print_host(const struct detect_snapshot *s, FILE *out)
{
	const struct cloud_host *h = s->host;
	const char *billing;
	double applied;
	char source[sizeof(s->host_price.source) + 64];

	if (h == NULL) {
		fputc('\n', out);
		return;
	}
	cli_words(s->host_price.source, NULL, source, sizeof(source));
	applied = hostprice_applied(h->spot, s->host_price.usd_per_hour, s->host_price.usd_per_hour_spot, &billing);
	if (h->state == CLOUD_KNOWN)
		fprintf(out, "Host:               %s %s in %s%s%s, %s\n", cloud_kind_name(h->cloud), h->instance_type,
			h->zone[0] ? h->zone : h->region, h->note[0] ? "; " : "", h->note,
			h->spot == 1 ? "Spot" : h->spot == 0 ? "on demand" : "Spot or on demand unknown");
	else
		fprintf(out, "Host:               %s (%s)%s%s\n", cloud_state_name(h->state), h->detected_by,
			h->note[0] ? "; " : "", h->note);
	if (isfinite(applied))
		fprintf(out, "Host price:         %.4f USD/h %s (%s); split: %s\n\n", applied,
			strcmp(billing, "spot") == 0 ? "Spot" : "on demand", source, s->host_price.split_rule);
	else
		fprintf(out, "Host price:         unknown: %s\n\n", source);
}

static void print_table(const struct detect_snapshot *s, const struct config *cfg, bool verbose, FILE *out)
{
	char when[CLOCK_RFC3339_LEN];
	const struct device *rec = recommended(s, cfg);
	const struct device *cur = preferred(s, cfg);
	double probed_ms = 0;

	/* the time the sources took to find the devices, the figures "Detection sources" lists under -v */
	for (size_t i = 0; i < s->nprobes; i++)
		probed_ms += s->probes[i].result.duration_ms;
	clock_rfc3339(s->taken_at_ms, when);
	fprintf(out, "acceld report - %s, snapshot %llu, devices found in %.1f ms\n\n", when,
		(unsigned long long)s->generation, probed_ms);
	fprintf(out, "Current device:     %s (preference %s%s)\n", cur ? cur->id : "none",
		config_prefer_name(cfg->prefer), cur ? "" : ": no such device on this host");
	fprintf(out, "Recommended device: %s (automatic order TPU > GPU > CPU%s; acceld select weighs a policy too)\n",
		rec ? rec->id : "none", cfg->allow_tpu ? "" : ", TPUs not allowed");
	print_host(s, out);

	fprintf(out, "%-7s %-4s %-7s %-34s %-9s %-21s %-10s %-10s %-5s %s\n", "ID", "TYPE", "VENDOR", "MODEL", "ACCEL",
		"MEMORY TOTAL/AVAIL", "FP32 TF", "BF16 TF", "RUN", "BACKENDS");
	for (size_t i = 0; i < s->n; i++) {
		const struct device *d = &s->devices[i];
		char total[24];
		char avail[24];
		char mem[48];
		char fp32[16];
		char bf16[16];
		char backends[160];

		bytes_or_dash(total, sizeof(total), d->memory_total_bytes);
		bytes_or_dash(avail, sizeof(avail), d->memory_available_bytes);
		snprintf(mem, sizeof(mem), "%s/%s", total, avail);
		num_or_dash(fp32, sizeof(fp32), d->peak.fp32_tflops, 2);
		num_or_dash(bf16, sizeof(bf16), d->peak.bf16_tflops, 1);
		backends_text(d, backends, sizeof(backends));
		fprintf(out, "%-7s %-4s %-7.7s %-34.34s %-9.9s %-21s %-10s %-10s %-5s %s\n", d->id,
			device_type_name(d->type), or_dash(d->vendor), or_dash(d->model), or_dash(d->accelerator_type),
			mem, fp32, bf16, d->executable ? "yes" : "no", backends);
	}
	fputc('\n', out);
	for (size_t i = 0; i < s->n; i++) {
		const struct device *d = &s->devices[i];

		if (d->type == DEVICE_CPU)
			print_cpu_detail(d, out);
		if (d->pci_bus_id[0] != '\0')
			fprintf(out, "  %s: PCI %s\n", d->id, d->pci_bus_id);
		if (d->type == DEVICE_TPU)
			fprintf(out, "  %s: TPU %s, slice %s, topology %s, chip %u of %u\n", d->id,
				or_dash(d->tpu.generation), or_dash(d->tpu.accelerator_type), or_dash(d->tpu.topology),
				d->tpu.chip_index, d->tpu.chips);
		if (d->opencl.present)
			fprintf(out, "  %s: OpenCL %s on %s (%s)\n", d->id, or_dash(d->opencl.name),
				or_dash(d->opencl.platform), or_dash(d->opencl.version));
		print_backend_views(d, verbose, out);
		if (d->peak.source[0] != '\0')
			fprintf(out, "  %s: peak from %s\n", d->id, d->peak.source);
		if (!isnan(d->price.usd_per_hour))
			fprintf(out, "  %s: price %.3f USD/h per %s (%s)\n", d->id, d->price.usd_per_hour,
				or_dash(d->price.unit), d->price.source);
	}
	/* the detection sources (a device's seen_by); the job backends are the BACKENDS column */
	fprintf(out, "\nDetection sources:\n");
	for (size_t i = 0; i < s->nprobes; i++) {
		const struct probe_result *r = &s->probes[i].result;

		fprintf(out, "  %-10s %-8s %-13s %u device view(s)%s%s\n", s->probes[i].name, r->ok ? "ok" : "FAILED",
			r->available ? "available" : "not present", r->found, verbose && r->why[0] ? "; " : "",
			verbose ? r->why : "");
		if (verbose)
			fprintf(out, "  %-10s took %.2f ms\n", "", r->duration_ms);
	}
	if (verbose) {
		fprintf(out, "\nDevices in full:\n");
		for (size_t i = 0; i < s->n; i++) {
			json_t *dj = device_to_json(&s->devices[i]);

			jsonval_dumpf(dj, out, JSON_INDENT(2));
			fputc('\n', out);
			json_decref(dj);
		}
	}
	if (verbose) {
		fprintf(out, "\nSettings in effect (flag > environment > config file > default):\n");
		config_print(cfg, out);
	}
}

/* --- Node Feature Discovery --- */

/* A label value: at most 63 of [A-Za-z0-9._-], starting and ending with a letter or digit; "" when none is left. */
static void label_value(const char *in, char *out, size_t outsz)
{
	size_t n = 0;
	size_t limit = outsz - 1 < 63 ? outsz - 1 : 63;

	for (const char *p = in; *p && n < limit; p++) {
		char c = *p;

		if (!isalnum((unsigned char)c) && c != '.' && c != '_' && c != '-')
			c = '-';
		if (n == 0 && !isalnum((unsigned char)c))
			continue;
		if (c == '-' && n > 0 && out[n - 1] == '-')
			continue;
		out[n++] = c;
	}
	while (n > 0 && !isalnum((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
}

static void label(FILE *out, const char *name, const char *value)
{
	char v[64];

	label_value(value, v, sizeof(v));
	if (v[0] != '\0')
		fprintf(out, "%s%s=%s\n", REPORT_NFD_NS, name, v);
}

static void label_u(FILE *out, const char *name, unsigned long long value)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu", value);
	label(out, name, v);
}

void report_nfd_labels(const struct detect_snapshot *snap, const struct config *cfg, FILE *out)
{
	const struct device *cpu = first_of(snap, DEVICE_CPU);
	const struct device *gpu = first_of(snap, DEVICE_GPU);
	const struct device *tpu = first_of(snap, DEVICE_TPU);
	const struct device *rec = recommended(snap, cfg);
	unsigned ngpu = 0;
	unsigned ntpu = 0;
	bool opencl = false;

	for (size_t i = 0; i < snap->n; i++) {
		ngpu += snap->devices[i].type == DEVICE_GPU;
		ntpu += snap->devices[i].type == DEVICE_TPU;
		opencl = opencl || snap->devices[i].opencl.present;
	}
	if (cpu != NULL) {
		char eff[32];

		if (cpu->cpu.pus != 0)
			label_u(out, "cpu-pus", cpu->cpu.pus);
		if (!isnan(cpu->cpu.effective_cpus)) {
			snprintf(eff, sizeof(eff), "%g", cpu->cpu.effective_cpus);
			label(out, "cpu-effective-cpus", eff);
		}
		label(out, "cpu-isa", cpu->cpu.isa);
	}
	if (opencl)
		label(out, "opencl", "true");
	if (gpu != NULL) {
		label_u(out, "gpu-count", ngpu);
		label(out, "gpu-vendor", gpu->vendor);
		label(out, "gpu-product", gpu->accelerator_type[0] ? gpu->accelerator_type : gpu->model);
		if (gpu->memory_total_bytes != 0)
			label_u(out, "gpu-memory-gib",
				(unsigned long long)((double)gpu->memory_total_bytes / GIB + 0.5));
		label(out, "gpu-executable", gpu->executable ? "true" : "false");
	}
	if (tpu != NULL) {
		label_u(out, "tpu-count", ntpu);
		label(out, "tpu-product", tpu->accelerator_type);
		label(out, "tpu-generation", tpu->tpu.generation);
		label(out, "tpu-accelerator-type", tpu->tpu.accelerator_type);
		label(out, "tpu-topology", tpu->tpu.topology);
		if (tpu->tpu.chips != 0)
			label_u(out, "tpu-chips", tpu->tpu.chips);
		if (tpu->tpu.worker_id >= 0)
			label_u(out, "tpu-worker-id", (unsigned long long)tpu->tpu.worker_id);
	}
	if (rec != NULL)
		label(out, "preferred-device-type", device_type_name(rec->type));
	if (snap->host != NULL && snap->host->state == CLOUD_KNOWN) {
		label(out, "cloud", cloud_kind_name(snap->host->cloud));
		label(out, "cloud-instance-type", snap->host->instance_type);
		if (snap->host->spot >= 0)
			label(out, "cloud-spot", snap->host->spot ? "true" : "false");
	}
}

int report_write_nfd(const struct detect_snapshot *snap, const struct config *cfg, const char *path, char *err,
		     size_t errsz)
{
	char *tmp = NULL;
	size_t plen = strlen(path);
	FILE *f = NULL;
	int fd;
	int rc = -1;

	tmp = xmalloc(plen + 16);
	snprintf(tmp, plen + 16, "%s.tmp-XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errsz, "cannot create a temporary file beside %.200s: %s", path, strerror(errno));
		free(tmp);
		return -1;
	}
	f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		snprintf(err, errsz, "cannot open %.200s: %s", tmp, strerror(errno));
		goto out;
	}
	fprintf(f, "# Node Feature Discovery local features, written by acceld report --nfd\n");
	report_nfd_labels(snap, cfg, f);
	if (fflush(f) != 0 || fchmod(fileno(f), 0644) != 0 || fsync(fileno(f)) != 0) {
		snprintf(err, errsz, "cannot write %.200s: %s", tmp, strerror(errno));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		snprintf(err, errsz, "cannot write %.200s: %s", tmp, strerror(errno));
		goto out;
	}
	f = NULL;
	/* readers (nfd-worker) see the old file or the new one, never half of one */
	if (rename(tmp, path) != 0) {
		snprintf(err, errsz, "cannot rename onto %.200s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f != NULL)
		fclose(f);
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

int report_main(int argc, char **argv)
{
	struct report_opts o = {0};
	struct config cfg;
	struct detect *det = NULL;
	const struct detect_snapshot *snap = NULL;
	struct cloud_host host;
	char **rest = xcalloc((size_t)argc + 1, sizeof(*rest));
	char err[1024];
	int nrest;
	int rc = CLI_EXIT_OK;
	bool loaded;

	if (cli_help_asked(argc, argv)) {
		report_help(stdout);
		free(rest);
		return CLI_EXIT_OK;
	}
	if (split_args(argc, argv, &o, rest, &nrest) != 0) {
		fprintf(stderr, "usage: acceld report [--json] [-v] [--nfd PATH] [SETTINGS] (see acceld help "
				"report)\n");
		free(rest);
		return CLI_EXIT_USAGE;
	}
	loaded = cli_load_config(&cfg, "report", nrest, rest, o.verbose ? CLI_LOG_VERBOSE : CLI_LOG_QUIET, &rc);
	free(rest);
	if (!loaded)
		return rc;
	det = cli_detect_new(&cfg);
	/* a command asks the metadata service in line: it is not serving requests */
	cloud_learn(&cfg, &host);
	detect_set_host(det, &host, hostprice_for_registry, NULL);
	snap = detect_acquire(det);
	if (o.json) {
		fwrite(snap->json, 1, snap->json_len, stdout);
		fputc('\n', stdout);
	} else {
		print_table(snap, &cfg, o.verbose, stdout);
	}
	if (o.nfd != NULL) {
		if (report_write_nfd(snap, &cfg, o.nfd, err, sizeof(err)) != 0) {
			fprintf(stderr, "acceld report: %s\n", err);
			rc = CLI_EXIT_FAIL;
		} else if (!o.json) {
			printf("\nNode Feature Discovery labels written to %s\n", o.nfd);
		}
	}
	detect_release(snap);
	detect_free(det);
	config_release(&cfg);
	return rc;
}
