/*
 * cli_check: `acceld check`, the command-line twin of POST /devices/{id}/check. It probes the devices once, starts
 * the executor and runs a health check (devcheck.h) of one device or of every device acceld runs jobs on, one after
 * the other, and prints each (a few lines of text, or the JSON the API shows). Nothing is written to the history:
 * it serves as a Kubernetes startup probe or a node-validation Job, beside or before the service.
 */
#ifndef ACCELD_CLI_CHECK_H
#define ACCELD_CLI_CHECK_H

/*
 * argv holds the arguments after "check": --device ID, --level quick|long, --duration D (long; 5s to 1h, a bare
 * number is seconds), --backend native|opencl|pjrt, --json, -v, and any setting (the thresholds among them); --help
 * anywhere prints check's help. Returns 0 when every checked device passes, 1 when one warns or fails, 2 when no
 * check can run (bad usage or configuration, an unknown device, one no backend runs jobs on, no such device at all,
 * the executor not starting).
 */
int cli_check_main(int argc, char **argv);

#endif
