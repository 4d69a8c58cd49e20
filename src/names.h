/*
 * names: looking a word up in an enum's table of names (the table indexed by the value), for the parsers of the
 * service's enumerations (log levels, job states, metrics, check levels and verdicts, precisions).
 */
#ifndef ACCELD_NAMES_H
#define ACCELD_NAMES_H

#include <stddef.h>

/* The index of text among the n names (NULL entries never match), or -1: none of them, or text NULL. */
int names_find(const char *const *names, size_t n, const char *text);

#endif
