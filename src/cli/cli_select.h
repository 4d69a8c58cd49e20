/*
 * cli_select: the `acceld select` and `acceld batch` commands. Each probes the devices once and prints what
 * GET /select or GET /batch-config would answer (JSON, or export lines with --format env).
 */
#ifndef ACCELD_CLI_SELECT_H
#define ACCELD_CLI_SELECT_H

/*
 * Runs `acceld select`; argv holds only the arguments after "select": request fields as --policy, --device,
 * --min-memory-bytes, --executable, --kernel, --format, --tpu-scope, and any setting (--prefer and --allow-tpu
 * among them). Returns the exit code: 0, 1 when no device can be chosen, 2 on bad usage.
 */
int cli_select_main(int argc, char **argv);

/* Runs `acceld batch` (--device, --base, --model-bytes, --params, --dtype, --sample-bytes, --mode, --reserve,
 * and any setting). Returns 0, 1 when the batch cannot be computed (unknown device, model too large), 2 on bad
 * usage. */
int cli_batch_main(int argc, char **argv);

#endif
