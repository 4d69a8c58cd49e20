/*
 * names: an enum's table of names (indexed by the value) read both ways, for the service's enumerations (log
 * levels, job states, metrics and tiers, check levels, states and verdicts, precisions, PJRT plugin kinds).
 */
#ifndef ACCELD_NAMES_H
#define ACCELD_NAMES_H

#include <stddef.h>

/* The name of value v among the n names, or "?" when v is not below n. */
const char *names_at(const char *const *names, size_t n, unsigned v);

/* The index of text among the n names (NULL entries never match), or -1: none of them, or text NULL. */
int names_find(const char *const *names, size_t n, const char *text);

#endif
