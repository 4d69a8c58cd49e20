/* mem: allocation helpers that abort on exhaustion (see mem.h for the policy). */
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t size)
{
	fprintf(stderr, "{\"level\":\"error\",\"severity\":\"CRITICAL\",\"msg\":\"out of memory allocating %zu bytes\"}\n",
		size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		oom(size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom(n * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);

	if (p == NULL)
		oom(size);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

int strlcpy_checked(char *dst, const char *src, size_t dstsz)
{
	size_t len = strlen(src);

	if (dstsz == 0)
		return -1;
	if (len >= dstsz) {
		memcpy(dst, src, dstsz - 1);
		dst[dstsz - 1] = '\0';
		return -1;
	}
	memcpy(dst, src, len + 1);
	return 0;
}
