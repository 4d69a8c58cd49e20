/*
 * cli_run: `acceld run KERNEL`, the command-line twin of POST /run. It probes the devices once, starts the
 * executor, runs one job to completion and prints it (a line of text, or the JSON POST /run would answer).
 */
#ifndef ACCELD_CLI_RUN_H
#define ACCELD_CLI_RUN_H

/*
 * argv holds the arguments after "run": the kernel, then its sizes as POST /run takes them (--n N, the kernel's own
 * n; --m M and --k K where the kernel has them; or --square N for the N x N matrices of those with m), --device
 * ID, --backend native|opencl|pjrt, --alpha A, --beta B, --s S (each where the kernel takes it), --precision P,
 * --seed S, --timeout-ms T, --verify, --full, --json, -v, and any setting (--prefer among them). --help anywhere
 * prints run's help. Returns 0 when the job succeeded (and verified, when asked), 1 when it did not or was refused,
 * 2 on bad usage.
 */
int cli_run_main(int argc, char **argv);

/* The command's line in the general help, with the kernel table's examples: "run a kernel once: run ... --n 1048576,
 * ...". Static storage. */
const char *cli_run_summary(void);

#endif
