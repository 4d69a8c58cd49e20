/* config: the settings table, their parsers and the precedence flags > env > file > defaults. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/mem.h"

enum opt_type { OPT_STR, OPT_PATH, OPT_UINT, OPT_DURATION, OPT_SIZE, OPT_BOOL, OPT_ENUM, OPT_LISTEN };

#define OPT_SECRET 1u

struct opt {
	const char *flag;
	const char *env;
	enum opt_type type;
	size_t offset;
	const char *def;     /* default as text; NULL = unset */
	uint64_t min, max;   /* numbers: accepted range (durations in ms, sizes in bytes) */
	const char *choices; /* OPT_ENUM: "a|b|c", stored as the index */
	unsigned flags;
	const char *help;
};

#define F(field) offsetof(struct config, field)

static const struct opt opts[] = {
	{"listen", "ACCELD_LISTEN", OPT_LISTEN, F(listen), "127.0.0.1:9470", 0, 0, NULL, 0,
	 "address to serve on, HOST:PORT ([::1]:PORT for IPv6, :PORT for every interface; port 0 picks a free port)"},
	{"health-listen", "ACCELD_HEALTH_LISTEN", OPT_LISTEN, F(health_listen), NULL, 0, 0, NULL, 0,
	 "a second address serving only /livez, /readyz, /healthz and /metrics, with connections of its own "
	 "(plain HTTP; unset: none)"},
	{"db", "ACCELD_DB", OPT_PATH, F(db_path), "var/acceld.db", 0, 0, NULL, 0, "SQLite database file"},
	{"db-sync", "ACCELD_DB_SYNC", OPT_ENUM, F(db_sync), "normal", 0, 0, "normal|full", 0,
	 "durability: normal keeps every answered job through a process crash (a journal, then batched commits), "
	 "full also through power loss (no journal; each commit synced)"},
	{"config", "ACCELD_CONFIG", OPT_PATH, F(config_file), NULL, 0, 0, NULL, 0,
	 "file of NAME=VALUE lines (names as the environment variables); flags and environment win over it"},
	{"log-level", "ACCELD_LOG_LEVEL", OPT_ENUM, F(log_level), "info", 0, 0, "debug|info|warn|error", 0,
	 "lowest level logged"},
	{"access-log", "ACCELD_ACCESS_LOG", OPT_BOOL, F(access_log), "true", 0, 0, NULL, 0,
	 "one log line per HTTP request"},
	{"threads", "ACCELD_THREADS", OPT_UINT, F(threads), "0", 0, 256, NULL, 0,
	 "HTTP worker threads (0 = one per usable CPU)"},
	{"max-connections", "ACCELD_MAX_CONNECTIONS", OPT_UINT, F(max_connections), "1024", 1, 65536, NULL, 0,
	 "open connections at most"},
	{"max-connections-per-ip", "ACCELD_MAX_CONNECTIONS_PER_IP", OPT_UINT, F(max_connections_per_ip), "256", 0,
	 65536, NULL, 0, "open connections per client address at most (0 = no limit)"},
	{"idle-timeout", "ACCELD_IDLE_TIMEOUT", OPT_DURATION, F(idle_timeout_ms), "30s", 1000, 3600000, NULL, 0,
	 "close a connection idle this long, or whose request has not arrived whole within it"},
	{"conn-memory", "ACCELD_CONN_MEMORY", OPT_SIZE, F(conn_memory), "32KiB", 8192, 1048576, NULL, 0,
	 "memory per connection for headers and buffers (bounds the header size)"},
	{"max-body", "ACCELD_MAX_BODY", OPT_SIZE, F(max_body), "1MiB", 1024, 268435456, NULL, 0,
	 "largest request body accepted (413 beyond)"},
	{"max-json-depth", "ACCELD_MAX_JSON_DEPTH", OPT_UINT, F(max_json_depth), "32", 2, 512, NULL, 0,
	 "deepest nesting accepted in a JSON body"},
	{"shutdown-grace", "ACCELD_SHUTDOWN_GRACE", OPT_DURATION, F(shutdown_grace_ms), "10s", 0, 3600000, NULL, 0,
	 "time in-flight requests get to finish after SIGTERM"},
	{"token", "ACCELD_TOKEN", OPT_STR, F(token), NULL, 0, 0, NULL, OPT_SECRET,
	 "bearer token required by mutating endpoints"},
	{"token-file", "ACCELD_TOKEN_FILE", OPT_PATH, F(token_file), NULL, 0, 0, NULL, 0,
	 "file holding the bearer token"},
	{"tls-cert", "ACCELD_TLS_CERT", OPT_PATH, F(tls_cert), NULL, 0, 0, NULL, 0,
	 "PEM certificate (chain) file: serve HTTPS instead of HTTP (needs --tls-key)"},
	{"tls-key", "ACCELD_TLS_KEY", OPT_PATH, F(tls_key), NULL, 0, 0, NULL, 0,
	 "PEM private key file for --tls-cert"},
	{"static-dir", "ACCELD_STATIC_DIR", OPT_PATH, F(static_dir), NULL, 0, 0, NULL, 0,
	 "serve the dashboard from this folder's index.html instead of the built-in copy (for development)"},
	{"prefer", "COMPUTE_PREFER", OPT_ENUM, F(prefer), "auto", 0, 0, "auto|cpu|gpu|tpu", 0,
	 "default device preference (auto = TPU > GPU > CPU)"},
	{"allow-tpu", "COMPUTE_ALLOW_TPU", OPT_BOOL, F(allow_tpu), "true", 0, 0, NULL, 0,
	 "whether TPUs may be chosen"},
	{"tpu-batch-factor", "COMPUTE_TPU_BATCH_FACTOR", OPT_UINT, F(tpu_batch_factor), "128", 1, 65536, NULL, 0,
	 "batch multiplier on TPUs"},
	{"gpu-batch-factor", "ACCELD_GPU_BATCH_FACTOR", OPT_UINT, F(gpu_batch_factor), "4", 1, 65536, NULL, 0,
	 "batch multiplier on GPUs"},
	{"cpu-batch-factor", "ACCELD_CPU_BATCH_FACTOR", OPT_UINT, F(cpu_batch_factor), "1", 1, 65536, NULL, 0,
	 "batch multiplier on CPUs"},
	{"sysfs-root", "ACCELD_SYSFS_ROOT", OPT_PATH, F(sysfs_root), "/sys", 0, 0, NULL, 0,
	 "root of sysfs (tests point it at a fixture tree)"},
	{"dev-root", "ACCELD_DEV_ROOT", OPT_PATH, F(dev_root), "/dev", 0, 0, NULL, 0, "root of device nodes"},
	{"proc-root", "ACCELD_PROC_ROOT", OPT_PATH, F(proc_root), "/proc", 0, 0, NULL, 0, "root of procfs"},
	{"nvml-library", "ACCELD_NVML_LIBRARY", OPT_PATH, F(nvml_library), "libnvidia-ml.so.1", 0, 0, NULL, 0,
	 "NVML shared library loaded at run time"},
	{"gce-metadata-url", "ACCELD_GCE_METADATA_URL", OPT_STR, F(gce_metadata_url),
	 "http://metadata.google.internal/computeMetadata/v1", 0, 0, NULL, 0,
	 "GCE metadata server, asked only on Google hosts"},
	{"cloud", "ACCELD_CLOUD", OPT_ENUM, F(cloud), "auto", 0, 0, "auto|none|gce|aws|azure", 0,
	 "whose metadata service tells the host's machine type and Spot status (auto: the cloud the DMI names)"},
	{"aws-metadata-url", "ACCELD_AWS_METADATA_URL", OPT_STR, F(aws_metadata_url), "http://169.254.169.254", 0, 0,
	 NULL, 0, "EC2 instance metadata service (IMDSv2), asked only on EC2 hosts"},
	{"azure-metadata-url", "ACCELD_AZURE_METADATA_URL", OPT_STR, F(azure_metadata_url), "http://169.254.169.254",
	 0, 0, NULL, 0, "Azure instance metadata service, asked only on Azure hosts"},
	{"telemetry-interval", "ACCELD_TELEMETRY_INTERVAL", OPT_DURATION, F(telemetry_interval_ms), "5s", 100,
	 3600000, NULL, 0, "how often device telemetry is refreshed"},
	{"topology-interval", "ACCELD_TOPOLOGY_INTERVAL", OPT_DURATION, F(topology_interval_ms), "5m", 1000,
	 86400000, NULL, 0, "how often devices are re-probed"},
	{"sample-interval", "ACCELD_SAMPLE_INTERVAL", OPT_DURATION, F(sample_interval_ms), "10s", 100, 3600000,
	 NULL, 0, "how often utilization samples are stored"},
	{"prices-file", "ACCELD_PRICES_FILE", OPT_PATH, F(prices_file), NULL, 0, 0, NULL, 0,
	 "prices overriding the built-in table"},
	{"retention-raw", "ACCELD_RETENTION_RAW", OPT_DURATION, F(retention_raw_ms), "24h", 60000, 2592000000ull, NULL,
	 0, "how long raw samples are kept"},
	{"retention-minute", "ACCELD_RETENTION_MINUTE", OPT_DURATION, F(retention_minute_ms), "336h", 3600000,
	 31622400000ull, NULL, 0, "how long minute rollups are kept (336h = 14 days)"},
	{"retention-hour", "ACCELD_RETENTION_HOUR", OPT_DURATION, F(retention_hour_ms), "9600h", 86400000,
	 315360000000ull, NULL, 0, "how long hour rollups are kept (9600h = 400 days)"},
	{"exec-max-elements", "ACCELD_EXEC_MAX_ELEMENTS", OPT_UINT, F(exec_max_elements), "268435456", 1, 4000000000u,
	 NULL, 0, "float32 elements one /run job may use in all its buffers (413 beyond)"},
	{"exec-queue-depth", "ACCELD_EXEC_QUEUE_DEPTH", OPT_UINT, F(exec_queue_depth), "64", 1, 100000, NULL, 0,
	 "jobs waiting per device (429 beyond)"},
	{"exec-default-timeout", "ACCELD_EXEC_DEFAULT_TIMEOUT", OPT_DURATION, F(exec_default_timeout_ms), "60s", 1,
	 3600000, NULL, 0, "timeout of a /run job that names none"},
	{"exec-max-timeout", "ACCELD_EXEC_MAX_TIMEOUT", OPT_DURATION, F(exec_max_timeout_ms), "10m", 1, 86400000,
	 NULL, 0, "longest timeout_ms a /run job may ask for"},
	{"exec-recent-jobs", "ACCELD_EXEC_RECENT_JOBS", OPT_UINT, F(exec_recent_jobs), "256", 1, 100000, NULL, 0,
	 "finished jobs kept in memory for GET /run"},
	{"pocl-cache-dir", "ACCELD_POCL_CACHE_DIR", OPT_PATH, F(pocl_cache_dir), NULL, 0, 0, NULL, 0,
	 "where PoCL keeps built OpenCL programs (default: pocl-cache next to the database)"},
	{"pjrt-plugins", "ACCELD_PJRT_PLUGINS", OPT_STR, F(pjrt_plugins), NULL, 0, 0, NULL, 0,
	 "PJRT plugins to use, KIND=PATH[,KIND=PATH] with KIND tpu or cuda (first match wins over the search); "
	 "none: no PJRT"},
	{"pjrt-search", "ACCELD_PJRT_SEARCH", OPT_STR, F(pjrt_search),
	 "$VIRTUAL_ENV/lib:~/.local/lib:/usr/local/lib:/usr/lib:/lib:/opt/conda/lib", 0, 0, NULL, 0,
	 "folders searched for libtpu.so and JAX's plugins (python3.*/site-packages and dist-packages below each)"},
	{"pjrt-idle", "ACCELD_PJRT_IDLE", OPT_DURATION, F(pjrt_idle_ms), "30s", 0, 86400000, NULL, 0,
	 "a worker process (PJRT's, OpenCL's on GPUs: it holds its devices) ends after this long without jobs (0: after every "
	 "job)"},
	{"pjrt-create-timeout", "ACCELD_PJRT_CREATE_TIMEOUT", OPT_DURATION, F(pjrt_create_timeout_ms), "120s", 1,
	 86400000, NULL, 0,
	 "a fresh worker that has not created its client after this long is ended and its job fails (on a TPU slice "
	 "of several hosts, libtpu waits for every host)"},
	{"pjrt-tpu-lockfile", "ACCELD_PJRT_TPU_LOCKFILE", OPT_PATH, F(pjrt_tpu_lockfile), "/tmp/libtpu_lockfile", 0, 0,
	 NULL, 0, "the file libtpu takes its one-process lock on (libtpu's own path; another only to test): its owner "
	 "is named when a TPU is held"},
	{"pjrt-cache-dir", "ACCELD_PJRT_CACHE_DIR", OPT_PATH, F(pjrt_cache_dir), NULL, 0, 0, NULL, 0,
	 "where compiled PJRT programs are kept across processes (default: pjrt-cache next to the database)"},
	{"pjrt-cache-bytes", "ACCELD_PJRT_CACHE_BYTES", OPT_SIZE, F(pjrt_cache_bytes), "1GiB", 0, 1099511627776ull, NULL,
	 0, "bound of the PJRT compile cache on disk; the least recently used programs go first (0 = no cache)"},
	{"check-interval", "ACCELD_CHECK_INTERVAL", OPT_DURATION, F(check_interval_ms), "0", 0, 2592000000ull, NULL, 0,
	 "run a quick health check on each idle device this often (0 = never)"},
	{"check-max-age", "ACCELD_CHECK_MAX_AGE", OPT_DURATION, F(check_max_age_ms), "24h", 0, 31622400000ull, NULL, 0,
	 "how long a health check's measured figures count for /select (0 = never)"},
	{"check-long-duration", "ACCELD_CHECK_LONG_DURATION", OPT_DURATION, F(check_long_ms), "60s", 5000, 3600000,
	 NULL, 0, "how long the long health check keeps a device under sustained load"},
	{"check-warn-percent", "ACCELD_CHECK_WARN_PERCENT", OPT_UINT, F(check_warn_percent), "25", 0, 100, NULL, 0,
	 "a health check warns when a measured figure is below this percentage of the expected one"},
	{"check-fail-percent", "ACCELD_CHECK_FAIL_PERCENT", OPT_UINT, F(check_fail_percent), "10", 0, 100, NULL, 0,
	 "a health check fails when a measured figure is below this percentage of the expected one"},
	{"check-throttle-percent", "ACCELD_CHECK_THROTTLE_PERCENT", OPT_UINT, F(check_throttle_percent), "90", 0, 100,
	 NULL, 0, "the long check warns when sustained throughput falls below this percentage of the first runs'"},
	{"check-clock-percent", "ACCELD_CHECK_CLOCK_PERCENT", OPT_UINT, F(check_clock_percent), "50", 0, 100, NULL, 0,
	 "a health check warns when the device's clock under load is below this percentage of its maximum"},
	{"check-transfer-percent", "ACCELD_CHECK_TRANSFER_PERCENT", OPT_UINT, F(check_transfer_percent), "10", 0, 100,
	 NULL, 0, "a health check's transfer test warns below this percentage of the PCIe link's rate (a healthy H200 "
	 "reached 18.8 % up and 31.7 % down through PJRT)"},
	{"check-transfer-bytes", "ACCELD_CHECK_TRANSFER_BYTES", OPT_SIZE, F(check_transfer_bytes), "256MiB", 65536,
	 4294967296ull, NULL, 0, "bytes a health check's transfer test moves each way between host and accelerator"},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static void set_str(struct config *cfg, const struct opt *o, const char *v)
{
	char **slot = (char **)((char *)cfg + o->offset);

	free(*slot);
	*slot = v ? xstrdup(v) : NULL;
}

int config_parse_u64(const char *text, uint64_t *out)
{
	uint64_t v = 0;

	if (text == NULL || *text == '\0')
		return -1;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	return 0;
}

/* Splits "123unit" into the number and the unit; the number must be digits only. */
static int split_unit(const char *text, uint64_t *num, const char **unit)
{
	char digits[24];
	size_t n = 0;

	while (text[n] >= '0' && text[n] <= '9')
		n++;
	if (n == 0 || n >= sizeof(digits))
		return -1;
	memcpy(digits, text, n);
	digits[n] = '\0';
	*unit = text + n;
	return config_parse_u64(digits, num);
}

struct unit {
	const char *name;
	uint64_t mult;
};

/* Parses "<digits><unit>" with one of units (n of them; nocase: in any case) and scales it, refusing overflow. */
static int parse_units(const char *text, const struct unit *units, size_t n, bool nocase, uint64_t *out)
{
	uint64_t num;
	const char *unit;

	if (split_unit(text, &num, &unit) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((nocase ? strcasecmp(unit, units[i].name) : strcmp(unit, units[i].name)) != 0)
			continue;
		if (num > UINT64_MAX / units[i].mult)
			return -1;
		*out = num * units[i].mult;
		return 0;
	}
	return -1;
}

#define KIB 1024ull
#define KB 1000ull

static const struct unit duration_units[] = {{"", 1000}, {"s", 1000}, {"ms", 1}, {"m", 60000}, {"h", 3600000}};

/* The units with a B first, largest first: a size is written in the first that divides it (config_format_size). */
static const struct unit size_units[] = {
	{"TiB", KIB * KIB * KIB * KIB}, {"TB", KB * KB * KB * KB}, {"GiB", KIB * KIB * KIB}, {"GB", KB * KB * KB},
	{"MiB", KIB * KIB},             {"MB", KB * KB},           {"KiB", KIB},             {"KB", KB},
	{"Ti", KIB * KIB * KIB * KIB},  {"T", KB * KB * KB * KB},  {"Gi", KIB * KIB * KIB},  {"G", KB * KB * KB},
	{"Mi", KIB * KIB},              {"M", KB * KB},            {"Ki", KIB},              {"K", KB},
	{"B", 1},                       {"", 1},
};

#define NUNITS(u) (sizeof(u) / sizeof((u)[0]))

int config_parse_duration_ms(const char *text, uint64_t *ms)
{
	return parse_units(text, duration_units, NUNITS(duration_units), false, ms);
}

int config_parse_size(const char *text, uint64_t *bytes)
{
	return parse_units(text, size_units, NUNITS(size_units), true, bytes);
}

/* Digits, then (with a suffix) up to 3 decimals and K, M, B (or G), T. */
int config_parse_count(const char *text, uint64_t *out)
{
	size_t whole = strspn(text, "0123456789");
	size_t nfrac = 0;
	const char *p = text + whole, *frac = NULL;
	uint64_t w = 0, f = 0, mult = 1, step;

	if (whole == 0 || whole > 20) /* UINT64_MAX has 20 digits; more overflow below */
		return -1;
	if (*p == '.') {
		frac = p + 1;
		nfrac = strspn(frac, "0123456789");
		if (nfrac == 0 || nfrac > 3)
			return -1;
		p = frac + nfrac;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k': case 'K':
		mult = 1000ull;
		break;
	case 'm': case 'M':
		mult = 1000000ull;
		break;
	case 'b': case 'B': case 'g': case 'G':
		mult = 1000000000ull;
		break;
	case 't': case 'T':
		mult = 1000000000000ull;
		break;
	default:
		return -1;
	}
	if ((*p != '\0' && p[1] != '\0') || (frac != NULL && mult == 1))
		return -1;
	for (size_t i = 0; i < whole; i++) {
		if (w > (UINT64_MAX - (uint64_t)(text[i] - '0')) / 10)
			return -1;
		w = w * 10 + (uint64_t)(text[i] - '0');
	}
	for (size_t i = 0; i < nfrac; i++)
		f = f * 10 + (uint64_t)(frac[i] - '0');
	if (w > UINT64_MAX / mult)
		return -1;
	/* a decimal's worth of the unit: mult is at least 1000 wherever there are decimals (at most 3), so whole */
	step = mult;
	for (size_t i = 0; i < nfrac; i++)
		step /= 10;
	if (w * mult > UINT64_MAX - f * step)
		return -1;
	*out = w * mult + f * step;
	return 0;
}

void config_format_duration(uint64_t ms, char *out, size_t outsz)
{
	/* the largest unit that holds it whole; 0 reads as seconds */
	if (ms == 0)
		snprintf(out, outsz, "0s");
	else if (ms % 3600000 == 0)
		snprintf(out, outsz, "%lluh", (unsigned long long)(ms / 3600000));
	else if (ms % 60000 == 0)
		snprintf(out, outsz, "%llum", (unsigned long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(out, outsz, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(out, outsz, "%llums", (unsigned long long)ms);
}

void config_format_size(uint64_t bytes, char *out, size_t outsz)
{
	/* the largest unit that divides it: 8KiB, 256MiB, 1MB, 14GB; a size no unit divides stays in bytes */
	for (size_t i = 0; bytes != 0 && i < 8; i++) {
		if (bytes % size_units[i].mult == 0) {
			snprintf(out, outsz, "%llu%s", (unsigned long long)(bytes / size_units[i].mult),
				 size_units[i].name);
			return;
		}
	}
	snprintf(out, outsz, "%llu", (unsigned long long)bytes);
}

int config_parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"true", "1", "yes", "on"};
	static const char *const no[] = {"false", "0", "no", "off"};

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* Index of text among "a|b|c" choices, or -1. */
static int enum_index(const char *choices, const char *text)
{
	size_t len = strlen(text);
	int idx = 0;
	const char *p = choices;

	while (*p) {
		const char *end = strchr(p, '|');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, text, n) == 0)
			return idx;
		idx++;
		p += n;
		if (*p == '|')
			p++;
	}
	return -1;
}

const char *config_prefer_name(int prefer)
{
	static const char *const names[] = {"auto", "cpu", "gpu", "tpu"};

	return prefer >= 0 && prefer < 4 ? names[prefer] : "auto";
}

/* Splits "host:port", "[v6]:port", or ":port" for every IPv4 interface (0.0.0.0), as Go's and Prometheus's listen
 * addresses read it. */
static int parse_listen(const char *text, char **host, unsigned *port)
{
	const char *colon;
	const char *h = text;
	size_t hlen;
	uint64_t p;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (close == NULL || close[1] != ':')
			return -1;
		h = text + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || memchr(text, ':', (size_t)(colon - text)) != NULL)
			return -1;
		hlen = (size_t)(colon - text);
	}
	if (hlen == 0 && h == text) { /* ":port" */
		h = "0.0.0.0";
		hlen = strlen(h);
	}
	if (hlen == 0 || hlen > 253 || config_parse_u64(colon + 1, &p) != 0 || p > 65535)
		return -1;
	free(*host);
	*host = xstrndup(h, hlen);
	*port = (unsigned)p;
	return 0;
}

/* The accepted values of o in words, ranges in natural units; brief leaves out the examples (a help says them once). */
static void describe_accepted(const struct opt *o, bool brief, char *out, size_t outsz)
{
	char lo[32];
	char hi[32];

	switch (o->type) {
	case OPT_UINT:
		snprintf(out, outsz, "an integer from %llu to %llu", (unsigned long long)o->min,
			 (unsigned long long)o->max);
		break;
	case OPT_DURATION:
		config_format_duration(o->min, lo, sizeof(lo));
		config_format_duration(o->max, hi, sizeof(hi));
		snprintf(out, outsz, "a duration from %s to %s%s", lo, hi,
			 brief ? "" : ", such as 30s, 500ms, 2m or 1h (a bare number is seconds)");
		break;
	case OPT_SIZE:
		config_format_size(o->min, lo, sizeof(lo));
		config_format_size(o->max, hi, sizeof(hi));
		snprintf(out, outsz, "a size from %s to %s%s", lo, hi,
			 brief ? "" : ", such as 65536, 64KiB or 1MB (" CONFIG_SIZE_UNITS ")");
		break;
	case OPT_BOOL:
		snprintf(out, outsz, "true|false (also 1|0, yes|no, on|off)");
		break;
	case OPT_ENUM:
		snprintf(out, outsz, "one of %s", o->choices);
		break;
	case OPT_LISTEN:
		snprintf(out, outsz, "HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:9470, [::1]:9470 or :9470 (every "
				     "interface)");
		break;
	case OPT_STR:
	case OPT_PATH:
		snprintf(out, outsz, "a non-empty text of at most 4096 bytes");
		break;
	}
}

static int fail(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return -1;
}

/* Validates text for o and stores it; source names where it came from, for the message. */
static int set_opt(struct config *cfg, const struct opt *o, const char *text, const char *source, char *err,
		   size_t errsz)
{
	char *base = (char *)cfg;
	uint64_t v = 0;
	bool b;
	int idx;
	int ok = 0;
	char accepted[256];

	switch (o->type) {
	case OPT_STR:
	case OPT_PATH:
		ok = *text != '\0' && strlen(text) <= 4096;
		if (ok)
			set_str(cfg, o, text);
		break;
	case OPT_UINT:
		ok = config_parse_u64(text, &v) == 0 && v >= o->min && v <= o->max;
		if (ok)
			*(unsigned *)(base + o->offset) = (unsigned)v;
		break;
	case OPT_DURATION:
		ok = config_parse_duration_ms(text, &v) == 0 && v >= o->min && v <= o->max;
		if (ok)
			*(uint64_t *)(base + o->offset) = v;
		break;
	case OPT_SIZE:
		ok = config_parse_size(text, &v) == 0 && v >= o->min && v <= o->max;
		if (ok)
			*(uint64_t *)(base + o->offset) = v;
		break;
	case OPT_BOOL:
		ok = config_parse_bool(text, &b) == 0;
		if (ok)
			*(bool *)(base + o->offset) = b;
		break;
	case OPT_ENUM:
		idx = enum_index(o->choices, text);
		ok = idx >= 0;
		if (ok)
			*(int *)(base + o->offset) = idx;
		break;
	case OPT_LISTEN:
		ok = o->offset == F(health_listen)
			     ? parse_listen(text, &cfg->health_listen_host, &cfg->health_listen_port) == 0
			     : parse_listen(text, &cfg->listen_host, &cfg->listen_port) == 0;
		if (ok)
			set_str(cfg, o, text);
		break;
	}
	if (ok)
		return 0;
	describe_accepted(o, false, accepted, sizeof(accepted));
	return fail(err, errsz, "invalid value for --%s (%s) from %s: '%.200s' given; expected %s", o->flag, o->env,
		    source, o->flags & OPT_SECRET ? "[redacted]" : text, accepted);
}

static const struct opt *find_opt(const char *name)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (strcmp(opts[i].flag, name) == 0 || strcmp(opts[i].env, name) == 0)
			return &opts[i];
	return NULL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Reads NAME=VALUE lines; '#' starts a comment line; a value may be wrapped in double quotes. */
static int load_file(struct config *cfg, const char *path, char *err, size_t errsz)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	char source[4200];
	int lineno = 0;
	int rc = 0;

	if (f == NULL)
		return fail(err, errsz, "cannot read config file '%s' (--config, ACCELD_CONFIG): %s", path,
			    strerror(errno));
	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *s = trim(line);
		char *eq;
		char *name;
		char *value;
		const struct opt *o;

		lineno++;
		if (*s == '\0' || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (eq == NULL) {
			rc = fail(err, errsz, "%s:%d: expected NAME=VALUE", path, lineno);
			break;
		}
		*eq = '\0';
		name = trim(s);
		value = trim(eq + 1);
		if (value[0] == '"' && strlen(value) >= 2 && value[strlen(value) - 1] == '"') {
			value[strlen(value) - 1] = '\0';
			value++;
		}
		o = find_opt(name);
		if (o == NULL || o->offset == F(config_file)) {
			rc = fail(err, errsz, "%s:%d: unknown setting '%.100s' (see acceld help settings)", path,
				  lineno, name);
			break;
		}
		snprintf(source, sizeof(source), "%s:%d", path, lineno);
		rc = set_opt(cfg, o, value, source, err, errsz);
	}
	fclose(f);
	return rc;
}

/* Reads the token file: one line, surrounding white space dropped, at most 4 KiB. */
static int load_token_file(struct config *cfg, char *err, size_t errsz)
{
	FILE *f = fopen(cfg->token_file, "r");
	char text[4098];
	size_t n;
	char *t;

	if (f == NULL)
		return fail(err, errsz, "cannot read token file '%s' (--token-file, ACCELD_TOKEN_FILE): %s",
			    cfg->token_file, strerror(errno));
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	if (n > 4096)
		return fail(err, errsz, "token file '%s' is over 4096 bytes", cfg->token_file);
	t = trim(text);
	if (*t == '\0' || strpbrk(t, "\r\n") != NULL)
		return fail(err, errsz, "token file '%s' must hold one non-empty line", cfg->token_file);
	free(cfg->token);
	cfg->token = xstrdup(t);
	return 0;
}

/* Reads a PEM file of at most 1 MiB holding a "-----BEGIN ...<label>-----" block into *out (owned). */
static int read_pem(const char *path, const char *setting, const char *label, char **out, char *err, size_t errsz)
{
	FILE *f = fopen(path, "r");
	struct buf b;
	char chunk[4096];
	size_t n;
	int rc = 0;

	if (f == NULL)
		return fail(err, errsz, "cannot read %s '%s': %s", setting, path, strerror(errno));
	buf_init(&b, 1024 * 1024);
	while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_append(&b, chunk, n) != 0)
			rc = fail(err, errsz, "%s '%s' is over 1 MiB", setting, path);
	fclose(f);
	if (rc == 0 && (b.data == NULL || strstr(b.data, "-----BEGIN ") == NULL || strstr(b.data, label) == NULL))
		rc = fail(err, errsz, "%s '%s' holds no PEM %s", setting, path, label);
	if (rc != 0) {
		buf_release(&b);
		return rc;
	}
	free(*out);
	*out = buf_detach(&b, NULL);
	return 0;
}

int config_load(struct config *cfg, int argc, char **argv, config_getenv_fn env, char *err, size_t errsz)
{
	const char *config_path = NULL;
	const char *token_flag = NULL;
	int rc = 0;

	if (env == NULL)
		env = (config_getenv_fn)getenv;
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; rc == 0 && i < NOPTS; i++)
		if (opts[i].def)
			rc = set_opt(cfg, &opts[i], opts[i].def, "the default", err, errsz);
	if (rc != 0)
		return rc;

	/* the config file is named by a flag or the environment, and is read before both */
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config_path = argv[i + 1];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			config_path = argv[i] + 9;
	}
	if (config_path == NULL)
		config_path = env("ACCELD_CONFIG");
	if (config_path != NULL && *config_path != '\0') {
		set_str(cfg, find_opt("config"), config_path);
		if (load_file(cfg, config_path, err, errsz) != 0)
			return -1;
	}

	for (size_t i = 0; i < NOPTS; i++) {
		const char *v = env(opts[i].env);
		if (v == NULL || opts[i].offset == F(config_file))
			continue;
		if (set_opt(cfg, &opts[i], v, "the environment", err, errsz) != 0)
			return -1;
	}

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *value;
		const char *eq;
		char name[64];
		const struct opt *o;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
			return 1;
		if (strncmp(arg, "--", 2) != 0)
			return fail(err, errsz, "unexpected argument '%.200s' (see --help)", arg);
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", (int)(eq ? (size_t)(eq - arg - 2) : strlen(arg + 2)), arg + 2);
		o = find_opt(name);
		if (o == NULL || strcmp(o->flag, name) != 0)
			return fail(err, errsz, "unknown option '--%.60s' (see --help)", name);
		if (eq) {
			value = eq + 1;
		} else if (o->type == OPT_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
			value = "true";
		} else {
			if (i + 1 >= argc)
				return fail(err, errsz, "option --%s needs a value", o->flag);
			value = argv[++i];
		}
		if (o->offset == F(token))
			token_flag = value;
		if (set_opt(cfg, o, value, "the command line", err, errsz) != 0)
			return -1;
	}

	if (cfg->health_listen != NULL && cfg->health_listen_port != 0 &&
	    cfg->health_listen_port == cfg->listen_port && strcmp(cfg->health_listen_host, cfg->listen_host) == 0)
		return fail(err, errsz, "--health-listen (ACCELD_HEALTH_LISTEN) must differ from --listen "
					"(ACCELD_LISTEN); both are %s", cfg->listen);
	if (cfg->check_fail_percent > cfg->check_warn_percent)
		return fail(err, errsz, "--check-fail-percent (ACCELD_CHECK_FAIL_PERCENT) %u is above "
					"--check-warn-percent (ACCELD_CHECK_WARN_PERCENT) %u; a failure must be worse "
					"than a warning", cfg->check_fail_percent, cfg->check_warn_percent);
	if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL))
		return fail(err, errsz, "set both --tls-cert (ACCELD_TLS_CERT) and --tls-key (ACCELD_TLS_KEY), or neither");
	if (cfg->pjrt_plugins != NULL && config_plugin_path(cfg, NULL, NULL, 0) != 0)
		return fail(err, errsz, "invalid --pjrt-plugins (ACCELD_PJRT_PLUGINS) '%.200s'; accepted: none, or "
				      "KIND=PATH[,KIND=PATH] with KIND tpu or cuda and an absolute or relative PATH",
			    cfg->pjrt_plugins);
	if (cfg->tls_cert != NULL && (read_pem(cfg->tls_cert, "--tls-cert (ACCELD_TLS_CERT)", "CERTIFICATE",
					       &cfg->tls_cert_pem, err, errsz) != 0 ||
				      read_pem(cfg->tls_key, "--tls-key (ACCELD_TLS_KEY)", "PRIVATE KEY",
					       &cfg->tls_key_pem, err, errsz) != 0))
		return -1;
	if (cfg->token_file != NULL) {
		if (token_flag != NULL || env("ACCELD_TOKEN") != NULL)
			return fail(err, errsz, "set either --token (ACCELD_TOKEN) or --token-file (ACCELD_TOKEN_FILE), "
					      "not both");
		if (load_token_file(cfg, err, errsz) != 0)
			return -1;
	}
	return 0;
}

int config_plugin_path(const struct config *cfg, const char *kind, char *path, size_t pathsz)
{
	const char *s = cfg->pjrt_plugins;
	int rc = kind == NULL ? 0 : -1;

	if (s == NULL || strcmp(s, "none") == 0)
		return kind == NULL ? 0 : -1;
	while (*s != '\0') {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		size_t klen = eq ? (size_t)(eq - s) : 0;
		size_t plen = eq ? len - klen - 1 : 0;

		if (eq == NULL || plen == 0 || memchr(eq + 1, '=', plen) != NULL ||
		    !((klen == 3 && strncmp(s, "tpu", 3) == 0) || (klen == 4 && strncmp(s, "cuda", 4) == 0)))
			return -1;
		if (kind != NULL && rc != 0 && strlen(kind) == klen && strncmp(s, kind, klen) == 0) {
			if (plen >= pathsz)
				return -1;
			memcpy(path, eq + 1, plen);
			path[plen] = '\0';
			rc = 0;
		}
		s += len;
		if (*s == ',')
			s++;
	}
	return rc;
}

void config_release(struct config *cfg)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].type == OPT_STR || opts[i].type == OPT_PATH || opts[i].type == OPT_LISTEN)
			set_str(cfg, &opts[i], NULL);
	free(cfg->listen_host);
	cfg->listen_host = NULL;
	free(cfg->health_listen_host);
	cfg->health_listen_host = NULL;
	free(cfg->tls_cert_pem);
	free(cfg->tls_key_pem);
	cfg->tls_cert_pem = NULL;
	cfg->tls_key_pem = NULL;
}

static const char *enum_name(const struct opt *o, int idx, char *out, size_t outsz)
{
	const char *p = o->choices;

	for (int i = 0; i < idx && p; i++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	if (p == NULL)
		return "?";
	snprintf(out, outsz, "%.*s", (int)strcspn(p, "|"), p);
	return out;
}

/* The value of setting o in cfg as the config file takes it (30s, 64KiB), "(unset)" or "[redacted]", into out. */
static void value_text(const struct config *cfg, const struct opt *o, char *out, size_t outsz)
{
	const char *base = (const char *)cfg;

	switch (o->type) {
	case OPT_STR:
	case OPT_PATH:
	case OPT_LISTEN: {
		const char *s = *(char *const *)(base + o->offset);

		snprintf(out, outsz, "%s", s == NULL ? "(unset)" : o->flags & OPT_SECRET ? "[redacted]" : s);
		break;
	}
	case OPT_UINT:
		snprintf(out, outsz, "%u", *(const unsigned *)(base + o->offset));
		break;
	case OPT_DURATION:
		config_format_duration(*(const uint64_t *)(base + o->offset), out, outsz);
		break;
	case OPT_SIZE:
		config_format_size(*(const uint64_t *)(base + o->offset), out, outsz);
		break;
	case OPT_BOOL:
		snprintf(out, outsz, "%s", *(const bool *)(base + o->offset) ? "true" : "false");
		break;
	case OPT_ENUM:
		enum_name(o, *(const int *)(base + o->offset), out, outsz);
		break;
	}
}

json_t *config_to_json(const struct config *cfg)
{
	json_t *obj = json_object();
	const char *base = (const char *)cfg;

	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		json_t *v = NULL;
		char name[32];

		switch (o->type) {
		case OPT_STR:
		case OPT_PATH:
		case OPT_LISTEN: {
			const char *s = *(char *const *)(base + o->offset);

			if (s == NULL)
				v = json_null();
			else
				v = json_string(o->flags & OPT_SECRET ? "[redacted]" : s);
			break;
		}
		case OPT_UINT:
			v = json_integer(*(const unsigned *)(base + o->offset));
			break;
		case OPT_DURATION:
		case OPT_SIZE:
			v = json_integer((json_int_t)*(const uint64_t *)(base + o->offset));
			break;
		case OPT_BOOL:
			v = json_boolean(*(const bool *)(base + o->offset));
			break;
		case OPT_ENUM:
			v = json_string(enum_name(o, *(const int *)(base + o->offset), name, sizeof(name)));
			break;
		}
		json_object_set_new(obj, o->env, v);
	}
	return obj;
}

void config_print(const struct config *cfg, FILE *out)
{
	for (size_t i = 0; i < NOPTS; i++) {
		char value[4200];

		value_text(cfg, &opts[i], value, sizeof(value));
		fprintf(out, "  %-30s %s\n", opts[i].env, value);
	}
}

/* Writes text at indent, its words wrapped before CONFIG_HELP_WIDTH columns (a word longer than a line stands alone). */
static void print_wrapped(FILE *out, int indent, const char *text)
{
	int col = 0;

	while (*text != '\0') {
		size_t word = strcspn(text, " ");

		if (col > 0 && col + 1 + (int)word > CONFIG_HELP_WIDTH) {
			fputc('\n', out);
			col = 0;
		}
		if (col == 0)
			col = fprintf(out, "%*s", indent, "");
		else
			col += fprintf(out, " ");
		col += fprintf(out, "%.*s", (int)word, text);
		text += word;
		text += strspn(text, " ");
	}
	if (col > 0)
		fputc('\n', out);
}

/* One setting of a help: its flag, environment twin and default, then what it does and what it takes. */
static void usage_one(FILE *out, const struct opt *o)
{
	char accepted[256];
	char text[1024];

	describe_accepted(o, true, accepted, sizeof(accepted));
	/* a default too long for the line goes below it */
	if (o->def != NULL && 2 + 2 + 24 + 1 + 30 + 1 + 8 + strlen(o->def) > CONFIG_HELP_WIDTH)
		fprintf(out, "  --%-24s %s\n      default %s\n", o->flag, o->env, o->def);
	else
		fprintf(out, "  --%-24s %-30s default %s\n", o->flag, o->env, o->def ? o->def : "(unset)");
	snprintf(text, sizeof(text), "%s; %s", o->help, accepted);
	print_wrapped(out, 6, text);
}

void config_usage_units(FILE *out)
{
	print_wrapped(out, 0, "Durations take ms, s, m, h (a bare number is seconds). Sizes take KiB, MiB, GiB, TiB "
			      "(powers of 1024) or KB, MB, GB, TB (powers of 1000), in any case, the B optional: "
			      "64KiB = 64Ki = 65536 bytes, 64KB = 64k = 64000.");
}

void config_usage(FILE *out)
{
	fprintf(out, "Settings (flag, environment twin, default); precedence: flag > environment > file > default\n");
	config_usage_units(out);
	for (size_t i = 0; i < NOPTS; i++)
		usage_one(out, &opts[i]);
}

void config_usage_of(FILE *out, const char *const *flags)
{
	for (size_t i = 0; flags[i] != NULL; i++) {
		const struct opt *o = find_opt(flags[i]);

		if (o != NULL)
			usage_one(out, o);
	}
}
