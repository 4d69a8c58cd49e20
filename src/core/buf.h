/*
 * buf: a growable byte buffer that always carries a maximum size.
 *
 * The contents are kept NUL-terminated so text can be used in place. buf_append refuses (returns -1, leaving the
 * buffer unchanged) when the result would exceed the cap, so input never grows a buffer without bound.
 */
#ifndef ACCELD_BUF_H
#define ACCELD_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data;   /* NULL until the first append; owned */
	size_t len;   /* bytes used, not counting the terminating NUL */
	size_t alloc; /* bytes allocated */
	size_t max;   /* the most len may reach */
};

/* Initialises an empty buffer in caller's storage with the given cap. */
void buf_init(struct buf *b, size_t max);

/* Appends n bytes; returns 0, or -1 when the cap would be exceeded. */
int buf_append(struct buf *b, const void *data, size_t n);

/* Appends formatted text; returns 0, or -1 when the cap would be exceeded. */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Hands the contents to the caller (free() them) and resets the buffer; never NULL. */
char *buf_detach(struct buf *b, size_t *len);

/* Frees the contents and resets the buffer. */
void buf_release(struct buf *b);

#endif
