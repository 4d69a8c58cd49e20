/*
 * cli: what every command of the acceld binary shares: its exit codes and how it loads the configuration.
 *
 * Every command (serve, report, select, batch, run, version, routes) ends with one of three codes: 0 when it did
 * what was asked (--help included), 1 when it ran and failed or found what it reports (no device meets the
 * constraints, a job failed or was not verified, a file could not be written), 2 when the command line or the
 * configuration is wrong (an unknown option, a bad value of a setting from a flag, the environment or the config
 * file); the message on stderr names what is wrong.
 */
#ifndef ACCELD_CLI_H
#define ACCELD_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "core/config.h"

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,  /* the command failed, or found what it reports */
	CLI_EXIT_USAGE = 2, /* bad usage or a bad configuration */
};

/*
 * Loads the configuration of a command from its setting arguments (argv holds only those: "--listen", "x",
 * "--db=y"), the environment and the config file, and sets the log level it names. Returns true when cfg is loaded;
 * the caller releases it with config_release. Otherwise cfg is released already and *exit_code says how the
 * command ends: CLI_EXIT_OK after --help printed usage(stdout) (the settings alone when usage is NULL), or
 * CLI_EXIT_USAGE after "acceld COMMAND: what is wrong" on stderr.
 */
bool cli_load_config(struct config *cfg, const char *command, int argc, char **argv, void (*usage)(FILE *out),
		     int *exit_code);

/*
 * The device registry a command works from, without the service: the backends prepared (backend_prepare_all,
 * once, before any thread), then detect_new's, told as the service's is that a device runs jobs when a built-in
 * backend serves it, and what the backends say of each device (backend.h).
 */
struct detect *cli_detect_new(const struct config *cfg);

#endif
