/* plan_int: what plan.c and plan_env.c share; included by nothing outside src/select/plan*.c. */
#ifndef ACCELD_PLAN_INT_H
#define ACCELD_PLAN_INT_H

#include <stddef.h>

/* Text into a fixed field, cut at its end when longer (the figures that matter lead each sentence). */
void plan_put(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
