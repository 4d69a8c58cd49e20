/*
 * cli_plan: the `acceld plan` command. It probes the devices once and prints what GET /plan would answer: for a
 * person (whether it fits, the mesh, the batch, the memory per device with its formulas, what would fit when
 * nothing does, the multi-host environment), the document with --json, or export lines with --format env.
 */
#ifndef ACCELD_CLI_PLAN_H
#define ACCELD_CLI_PLAN_H

/*
 * Runs `acceld plan`; argv holds only the arguments after "plan": GET /plan's fields as flags (--model,
 * --params, --layers, ..., --devices, --hosts, --memory-bytes with units, --format), --json, -v and any setting.
 * --help anywhere prints plan's help. Returns the exit code: 0 the model fits, 1 nothing fits (the suggestions say
 * what would) or the devices cannot be planned for (an unknown id, an unknown memory), 2 on bad usage.
 */
int cli_plan_main(int argc, char **argv);

#endif
