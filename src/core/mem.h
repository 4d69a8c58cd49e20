/*
 * mem: allocation with the service's one out-of-memory policy.
 *
 * acceld treats a failed small allocation as fatal: it logs one line and aborts, which is the honest thing for a
 * daemon whose supervisor restarts it. Allocations whose size comes from a request are never made through these
 * helpers before the size has been checked against a limit; large job buffers use plain malloc and report
 * ACCELD_ENOMEM instead.
 */
#ifndef ACCELD_MEM_H
#define ACCELD_MEM_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Copies src into dst of size dstsz, always NUL-terminated; returns 0, or -1 when src was truncated. */
int strlcpy_checked(char *dst, const char *src, size_t dstsz);

#endif
