/*
 * config: every setting of acceld, from flags > environment > config file > defaults.
 *
 * The settings are described once, in a table in config.c: each has a flag (--listen), an environment twin
 * (ACCELD_LISTEN, or the seeds' COMPUTE_* names), a type with its accepted values, a default and a help line.
 * Every value is validated when it is read; after config_load() the struct is not changed again.
 */
#ifndef ACCELD_CONFIG_H
#define ACCELD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum prefer { PREFER_AUTO, PREFER_CPU, PREFER_GPU, PREFER_TPU };

/* ACCELD_CLOUD: which cloud's metadata service to ask (auto: the one the DMI names, if any). */
enum cloud_choice { CLOUD_CHOICE_AUTO, CLOUD_CHOICE_NONE, CLOUD_CHOICE_GCE, CLOUD_CHOICE_AWS, CLOUD_CHOICE_AZURE };

struct config {
	char *listen;              /* "HOST:PORT" as given; split into listen_host and listen_port */
	char *listen_host;
	unsigned listen_port;
	char *health_listen;       /* "HOST:PORT" of the probes-and-metrics listener; NULL: none */
	char *health_listen_host;
	unsigned health_listen_port;
	char *db_path;
	int db_sync;               /* 0 normal, 1 full (PRAGMA synchronous) */
	char *config_file;
	int log_level;             /* enum log_level */
	bool access_log;
	unsigned threads;          /* HTTP worker threads; 0 = one per CPU the process may use */
	unsigned max_connections;
	unsigned max_connections_per_ip; /* 0 = no per-address limit */
	uint64_t idle_timeout_ms;
	uint64_t conn_memory;      /* bytes of request memory per connection (headers and buffers) */
	uint64_t max_body;         /* largest request body accepted, bytes */
	unsigned max_json_depth;
	uint64_t shutdown_grace_ms;
	char *token;               /* bearer token for mutating endpoints; secret */
	char *token_file;
	char *tls_cert;            /* PEM certificate chain file; with tls_key, serve HTTPS */
	char *tls_key;
	char *tls_cert_pem;        /* the files' contents, read when the configuration is loaded; secret (key) */
	char *tls_key_pem;
	char *static_dir;          /* NULL: the built-in dashboard; else a folder holding index.html */
	int prefer;                /* enum prefer */
	bool allow_tpu;
	unsigned tpu_batch_factor;
	unsigned gpu_batch_factor;
	unsigned cpu_batch_factor;
	char *sysfs_root;
	char *dev_root;
	char *proc_root;
	char *nvml_library;
	char *gce_metadata_url;
	int cloud;                 /* enum cloud_choice: auto (DMI decides), none, gce, aws, azure */
	char *aws_metadata_url;    /* EC2 instance metadata (IMDSv2) base URL */
	char *azure_metadata_url;  /* Azure IMDS base URL */
	uint64_t telemetry_interval_ms;
	uint64_t topology_interval_ms;
	uint64_t sample_interval_ms;
	char *prices_file;
	uint64_t retention_raw_ms;    /* how long raw samples, minute and hour rollups are kept */
	uint64_t retention_minute_ms;
	uint64_t retention_hour_ms;
	/* executor (exec/) */
	unsigned exec_max_elements;     /* float32 elements of all buffers of one job together */
	unsigned exec_queue_depth;      /* queued jobs per device */
	uint64_t exec_default_timeout_ms;
	uint64_t exec_max_timeout_ms;
	unsigned exec_recent_jobs;      /* jobs kept in memory for GET /run */
	char *pocl_cache_dir;           /* NULL: "pocl-cache" next to the database */
	/* PJRT plugins (pjrt_plugin.c) */
	char *pjrt_plugins;             /* "tpu=PATH,cuda=PATH", "none", or NULL (search) */
	char *pjrt_search;              /* folders to search, colon-separated, $VAR and ~ expanded */
	uint64_t pjrt_idle_ms;
	uint64_t pjrt_create_timeout_ms; /* a fresh worker's client creation (its first answer) gets this long */
	char *pjrt_cache_dir;          /* NULL: "pjrt-cache" next to the database */
	uint64_t pjrt_cache_bytes;      /* bound of the compile cache on disk; 0 turns it off */
	char *pjrt_tpu_lockfile;        /* the file libtpu takes its process lock on */
	/* health checks (devcheck.c) */
	uint64_t check_interval_ms;     /* a quick check of idle devices this often; 0: never */
	uint64_t check_max_age_ms;      /* a check's figures count for /select this long */
	uint64_t check_long_ms;         /* how long the long level keeps the device under load */
	unsigned check_warn_percent;    /* a figure below this % of the expected one warns */
	unsigned check_fail_percent;    /* below this % it fails */
	unsigned check_throttle_percent; /* long level: sustained throughput below this % of the first warns */
	unsigned check_clock_percent;   /* a clock during the check below this % of the maximum warns */
	uint64_t check_transfer_bytes;  /* the transfer test's bytes each way, at most */
	unsigned check_transfer_percent; /* transfers below this % of the link's rate warn */
};

/*
 * Loads the configuration. argv[0..argc) holds only option arguments ("--listen", "x", "--db=y"); a bare "--help"
 * makes it return 1. env is NULL for the process environment or a lookup function for tests. On a bad value it
 * returns -1 and writes a message naming the setting, the accepted values and what was given into err.
 */
typedef const char *(*config_getenv_fn)(const char *name);
int config_load(struct config *cfg, int argc, char **argv, config_getenv_fn env, char *err, size_t errsz);

/* Frees what config_load allocated; the struct may be loaded again afterwards. */
void config_release(struct config *cfg);

/* The effective configuration as a new JSON object, with secrets redacted (durations in ms, sizes in bytes). */
json_t *config_to_json(const struct config *cfg);

/*
 * Prints the effective configuration for a person: a line per setting, its environment name and its value as a
 * config file would give it (30s, 24h, 32KiB, "(unset)"), secrets redacted.
 */
void config_print(const struct config *cfg, FILE *out);

/* Prints every setting with its environment twin, default and accepted values, after a line on units. */
void config_usage(FILE *out);

/* Prints the settings named by flags (NULL-terminated, without "--": "prefer", "log-level") as config_usage does. */
void config_usage_of(FILE *out, const char *const *flags);

/* Prints what durations and sizes take (units, which are powers of 1000 and which of 1024): a help's note. */
void config_usage_units(FILE *out);

/*
 * The path ACCELD_PJRT_PLUGINS names for kind ("tpu", "cuda") into path: 0, or -1 when it names none (or the
 * setting is unset or "none"). With kind NULL, checks the setting's syntax only: 0 when it is well-formed.
 */
int config_plugin_path(const struct config *cfg, const char *kind, char *path, size_t pathsz);

/* Names of enum prefer values: "auto", "cpu", "gpu", "tpu". */
const char *config_prefer_name(int prefer);

/*
 * Parsers shared with request validation. Each returns 0, or -1 when the text is not of that form. A size's unit is
 * read in any case, its B optional: KiB, MiB, GiB, TiB are 1024^1..4 bytes, KB, MB, GB, TB 1000^1..4 (as in
 * Kubernetes quantities: 1Mi is 1048576, 1M is 1000000).
 */
/* The columns a help fits in (every command's --help and the settings' texts). */
#define CONFIG_HELP_WIDTH 100

/* How a size is written, for messages: the units config_parse_size reads, said once. */
#define CONFIG_SIZE_UNITS "KiB, MiB, GiB, TiB count in 1024s; KB, MB, GB, TB in 1000s"

/* The words config_parse_bool reads, for a problem's `accepted`. */
#define CONFIG_BOOL_VALUES "true, false, 1, 0, yes, no, on, off"

int config_parse_duration_ms(const char *text, uint64_t *ms);  /* "30", "30s", "500ms", "2m", "1h" */
int config_parse_size(const char *text, uint64_t *bytes);
/* How a count is written, for messages: the suffixes config_parse_count reads, said once. */
#define CONFIG_COUNT_UNITS "K, M, B (or G), T: thousands to trillions, with up to 3 decimals"
/* "7000000000", "7B", "6.7B", "70b", "1.5T", "100M": a count with an optional decimal suffix; 0 on success. */
int config_parse_count(const char *text, uint64_t *out);       /* "1048576", "64KiB", "64k", "2GB", "1TiB" */
int config_parse_bool(const char *text, bool *out);             /* true|false|1|0|yes|no|on|off */
int config_parse_u64(const char *text, uint64_t *out);          /* decimal digits only */

/*
 * A duration or size as the parsers above read it back, in the largest unit that holds it whole: "0s", "500ms",
 * "30s", "5m", "24h"; "8KiB", "256MiB", "1MB", "12345" (bytes). For messages and help; at most 24 bytes.
 */
void config_format_duration(uint64_t ms, char *out, size_t outsz);
void config_format_size(uint64_t bytes, char *out, size_t outsz);

#endif
