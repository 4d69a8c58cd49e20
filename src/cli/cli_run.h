/*
 * cli_run: `acceld run KERNEL`, the command-line twin of POST /run. It probes the devices once, starts the
 * executor, runs one job to completion and prints it (a line of text, or the JSON POST /run would answer).
 */
#ifndef ACCELD_CLI_RUN_H
#define ACCELD_CLI_RUN_H

/*
 * argv holds the arguments after "run": the kernel, then --n N, --m M, --k K, --device ID, --backend
 * native|opencl|pjrt, --alpha A, --beta B, --s S, --precision P, --seed S, --timeout-ms T, --verify, --full, --json,
 * -v, and any setting (--prefer among them). --help anywhere prints run's help. Returns 0 when the job succeeded
 * (and verified, when asked), 1 when it did not or was refused, 2 on bad usage.
 */
int cli_run_main(int argc, char **argv);

#endif
