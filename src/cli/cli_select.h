/*
 * cli_select: the `acceld select` and `acceld batch` commands. Each probes the devices once and prints what
 * GET /select or GET /batch-config would answer: select as JSON, or export lines with --format env; batch for a
 * person (the batch size first, then the steps), or as JSON with --json. Sizes take units (16GiB, 14GB).
 */
#ifndef ACCELD_CLI_SELECT_H
#define ACCELD_CLI_SELECT_H

/*
 * Runs `acceld select`; argv holds only the arguments after "select": request fields as --policy, --device,
 * --min-memory-bytes, --executable, --kernel, --format, --tpu-scope, then -v and any setting (--prefer and
 * --allow-tpu among them). --help anywhere prints select's help. Returns the exit code: 0, 1 when no device can be
 * chosen, 2 on bad usage.
 */
int cli_select_main(int argc, char **argv);

/*
 * Runs `acceld batch` (--device, --base, --model-bytes, --params, --dtype, --sample-bytes, --mode, --reserve,
 * --json, -v and any setting). Returns 0, 1 when the batch cannot be computed (unknown device, model too large),
 * 2 on bad usage.
 */
int cli_batch_main(int argc, char **argv);

#endif
