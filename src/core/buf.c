/* buf: capped growable byte buffer. */
#include "core/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
}

static int buf_reserve(struct buf *b, size_t extra)
{
	size_t need;
	size_t alloc;

	if (extra > b->max - b->len)
		return -1;
	need = b->len + extra + 1;
	if (need <= b->alloc)
		return 0;
	alloc = b->alloc ? b->alloc : 256;
	while (alloc < need)
		alloc = alloc > (size_t)-1 / 2 ? need : alloc * 2;
	b->data = xrealloc(b->data, alloc);
	b->alloc = alloc;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n) != 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list copy;
	int n;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0 || buf_reserve(b, (size_t)n) != 0)
		return -1;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *data = b->data;

	if (data == NULL)
		data = xstrdup("");
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	return data;
}

void buf_release(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
}
