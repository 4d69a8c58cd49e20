/*
 * cli: what every command of the acceld binary shares: its exit codes, its help, how it loads the configuration and
 * how loud it logs, and the words its messages use.
 *
 * Every command (serve, report, select, batch, run, check, version, routes, reasons) ends with one of three codes:
 * 0 when it did what was asked (--help included), 1 when it ran and failed or found what it reports (no device
 * meets the constraints, a job failed or was not verified, a file could not be written), 2 when the command line or
 * the configuration is wrong (an unknown option, a bad value of a setting from a flag, the environment or the config
 * file); the message on stderr names what is wrong.
 *
 * A command's output is stdout, for a person (text) or a script (--json); its log is JSON lines on stderr, at warn
 * unless its command line asks for more. serve alone logs at the configured level: its log is its output.
 */
#ifndef ACCELD_CLI_H
#define ACCELD_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "core/config.h"
#include "core/err.h"

struct detect;
struct detect_snapshot;

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,  /* the command failed, or found what it reports */
	CLI_EXIT_USAGE = 2, /* bad usage or a bad configuration */
};

/* How loud a command logs on stderr (cli_load_config). */
enum cli_logging {
	CLI_LOG_CONFIGURED, /* the configured level (--log-level, ACCELD_LOG_LEVEL, the file; info by default): serve */
	CLI_LOG_QUIET,      /* warn, or quieter when the settings say so; --log-level on the command line wins */
	CLI_LOG_VERBOSE,    /* info (a command's -v); --log-level on the command line wins */
};

/*
 * Whether argv (a command's arguments) asks for help: "--help" or "-h" anywhere. A command asks before it reads its
 * arguments or a setting, prints its help on stdout and ends with CLI_EXIT_OK, so a missing argument or a bad value
 * in the environment never hides the help.
 */
bool cli_help_asked(int argc, char **argv);

/*
 * The end of a command's help: the settings it reads most (flags without "--", NULL-terminated; config is added),
 * as config_usage writes them, and where the others are listed (acceld help settings). The log level is said on the
 * command's -v line instead: a command logs at warn unless its command line asks (cli_load_config).
 */
void cli_help_settings(FILE *out, const char *const *flags);

/*
 * Loads the configuration of a command from its setting arguments (argv holds only those: "--listen", "x",
 * "--db=y"; no help request, see cli_help_asked), the environment and the config file, and sets the log level as
 * logging says. Returns true when cfg is loaded; the caller releases it with config_release. Otherwise cfg is
 * released already and *exit_code is CLI_EXIT_USAGE, after "acceld COMMAND: what is wrong" on stderr.
 */
bool cli_load_config(struct config *cfg, const char *command, int argc, char **argv, enum cli_logging logging,
		     int *exit_code);

/*
 * Copies msg, a text of a module the service shares (a request parser's error, a refusal, a price's source), into
 * out in the command line's words: each of fields (NULL-terminated; NULL for none), the API's names of what the
 * command takes as flags ("min_memory_bytes"), becomes its flag ("--min-memory-bytes"), and the endpoints a text
 * points to become the commands or settings that do the same here ("see GET /devices": "see acceld report"). Text
 * in single quotes (a value as given) is left alone; out is cut to outsz.
 */
void cli_words(const char *msg, const char *const *fields, char *out, size_t outsz);

/* --- the request commands (select, batch, plan): a request's fields as flags, then one probe of the devices --- */

/* Sets one request field from text (select_request_set, batch_request_set, plan_params_set). */
typedef enum acceld_err (*cli_set_fn)(void *req, const char *name, const char *value, char *err, size_t errsz);

/* What a request command takes and does with it. */
struct cli_kind {
	const char *name;           /* "select", "batch", "plan" */
	const char *const *flags;   /* the request fields taken as flags (--min-memory-bytes, --min_memory_bytes) */
	const char *const *bools;   /* those of them that may stand alone, meaning true */
	const char *const *sizes;   /* those that are sizes, said so when refused; NULL for none */
	bool json;                  /* the command takes --json */
	void (*init)(void *req, const struct config *cfg);
	cli_set_fn set;
	const char *(*accepted)(const char *field); /* a field's accepted values, for messages */
	void (*help)(FILE *out);
};

/* A request command's state from cli_request_start to cli_request_finish. */
struct cli_request {
	struct config cfg;
	struct detect *det;
	const struct detect_snapshot *snap; /* the devices, probed once */
	char **fields;
	const char **values;
	size_t nfields;
	bool json;                  /* --json was given */
};

/*
 * Starts a request command: answers --help (k->help), takes -v and --json out, the fields (as flags: --name V,
 * --name=V, a bool alone) into req through k->init and k->set, the rest as settings (cli_load_config), then probes
 * the devices. Returns -1 to go on, else the exit code (CLI_EXIT_OK after the help, CLI_EXIT_USAGE after
 * "acceld NAME: ..." on stderr naming the flag and what it takes); cli_request_finish releases c either way.
 */
int cli_request_start(struct cli_request *c, const struct cli_kind *k, int argc, char **argv, void *req);

/* Releases what cli_request_start took. */
void cli_request_finish(struct cli_request *c);

/* Prints doc (stolen) on stdout as indented JSON and a newline. */
void cli_print_json(json_t *doc);

/*
 * The device registry a command works from, without the service: the backends prepared (backend_prepare_all,
 * once, before any thread), then detect_new's, told as the service's is that a device runs jobs when a built-in
 * backend serves it, and what the backends say of each device (backend.h).
 */
struct detect *cli_detect_new(const struct config *cfg);

#endif
