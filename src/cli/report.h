/*
 * report: the `acceld report` command. It probes the devices once and prints them as a readable table, as the
 * GET /devices JSON (--json), with every probe's findings and errors, the devices in full and the settings in effect
 * (--verbose), and can write a Node Feature Discovery local features file (--nfd PATH).
 */
#ifndef ACCELD_REPORT_H
#define ACCELD_REPORT_H

#include <stdio.h>

#include "detect/detect.h"

/* The prefix of every Node Feature Discovery label acceld writes (a sub-namespace NFD accepts by default). */
#define REPORT_NFD_NS "acceld.feature.node.kubernetes.io/"

/* Runs the command; argv holds only the arguments after "report". Returns the process exit code. */
int report_main(int argc, char **argv);

/* Writes the NFD labels for the snapshot as "name=value" lines to out. */
void report_nfd_labels(const struct detect_snapshot *snap, const struct config *cfg, FILE *out);

/*
 * Writes the NFD features file at path atomically (a temporary file in the same folder, then rename). Returns 0,
 * or -1 with a message in err.
 */
int report_write_nfd(const struct detect_snapshot *snap, const struct config *cfg, const char *path, char *err,
		     size_t errsz);

#endif
