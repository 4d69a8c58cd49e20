/* hwfile: bounded reads of sysfs-style files and PCI address normalising (see hwfile.h). */
#include "core/hwfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int vpath(char *path, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static int vpath(char *path, const char *fmt, va_list ap)
{
	int n = vsnprintf(path, HWFILE_PATH_MAX, fmt, ap);

	return n < 0 || n >= HWFILE_PATH_MAX ? -1 : 0;
}

/* Reads up to outsz - 1 bytes of the file; sysfs attributes are small, so one read is enough. */
static int read_small(const char *path, char *out, size_t outsz)
{
	int fd = -1;
	ssize_t n;
	int rc = -1;

	if (outsz == 0)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	do
		n = read(fd, out, outsz - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		goto out;
	out[n] = '\0';
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Reads the file named by fmt whole into out, without the white space that ends it. */
static int read_trimmed(char *out, size_t outsz, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

static int read_trimmed(char *out, size_t outsz, const char *fmt, va_list ap)
{
	char path[HWFILE_PATH_MAX];
	size_t len;

	if (vpath(path, fmt, ap) != 0 || read_small(path, out, outsz) != 0)
		return -1;
	len = strlen(out);
	while (len > 0 && isspace((unsigned char)out[len - 1]))
		out[--len] = '\0';
	return 0;
}

int hwfile_read_text(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = read_trimmed(out, outsz, fmt, ap);
	va_end(ap);
	return rc;
}

int hwfile_read_line(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;
	int rc;
	size_t lead;
	size_t len;

	va_start(ap, fmt);
	rc = read_trimmed(out, outsz, fmt, ap);
	va_end(ap);
	if (rc != 0)
		return -1;
	out[strcspn(out, "\n")] = '\0';
	len = strlen(out);
	while (len > 0 && isspace((unsigned char)out[len - 1]))
		out[--len] = '\0';
	lead = strspn(out, " \t\r\v\f");
	memmove(out, out + lead, len - lead + 1);
	return 0;
}

int hwfile_parse_field_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || (*end != '\0' && *end != ' ' && *end != '\n'))
		return -1;
	*out = v;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int base = 10;

	while (isspace((unsigned char)*s))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno != 0 || end == s)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

int hwfile_read_u64(uint64_t *out, const char *fmt, ...)
{
	char path[HWFILE_PATH_MAX];
	char text[64];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	if (rc != 0 || read_small(path, text, sizeof(text)) != 0)
		return -1;
	return parse_u64(text, out);
}

int hwfile_read_i64(int64_t *out, const char *fmt, ...)
{
	char path[HWFILE_PATH_MAX];
	char text[64];
	char *end;
	long long v;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	if (rc != 0 || read_small(path, text, sizeof(text)) != 0)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || end == text)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

int hwfile_link_base(char *out, size_t outsz, const char *fmt, ...)
{
	char path[HWFILE_PATH_MAX];
	char target[HWFILE_PATH_MAX];
	const char *base;
	va_list ap;
	ssize_t n;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	if (rc != 0)
		return -1;
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -1;
	target[n] = '\0';
	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (*base == '\0' || strlen(base) >= outsz)
		return -1;
	memcpy(out, base, strlen(base) + 1);
	return 0;
}

bool hwfile_exists(const char *fmt, ...)
{
	char path[HWFILE_PATH_MAX];
	struct stat st;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vpath(path, fmt, ap);
	va_end(ap);
	return rc == 0 && lstat(path, &st) == 0;
}

/* Reads 1..maxd hex digits; returns the count read, 0 when none. */
static size_t hex_field(const char *s, size_t maxd, unsigned *out)
{
	size_t i = 0;
	unsigned v = 0;

	while (i < maxd && isxdigit((unsigned char)s[i])) {
		int c = tolower((unsigned char)s[i]);

		v = v * 16 + (unsigned)(isdigit(c) ? c - '0' : c - 'a' + 10);
		i++;
	}
	*out = v;
	return i;
}

int hwfile_pci_normalise(const char *text, char *out, size_t outsz)
{
	unsigned f[4] = {0, 0, 0, 0};
	const char *p = text;
	const char *colon2;
	size_t n;
	int w;

	if (!text)
		return -1;
	/* a domain is present when the text has two colons */
	colon2 = strchr(p, ':');
	if (colon2 && strchr(colon2 + 1, ':')) {
		n = hex_field(p, 8, &f[0]);
		if (n == 0 || p[n] != ':' || f[0] > 0xffff)
			return -1;
		p += n + 1;
	}
	n = hex_field(p, 2, &f[1]);
	if (n == 0 || p[n] != ':')
		return -1;
	p += n + 1;
	n = hex_field(p, 2, &f[2]);
	if (n == 0 || p[n] != '.' || f[2] > 0x1f)
		return -1;
	p += n + 1;
	n = hex_field(p, 1, &f[3]);
	if (n == 0 || p[n] != '\0' || f[3] > 7)
		return -1;
	w = snprintf(out, outsz, "%04x:%02x:%02x.%x", f[0], f[1], f[2], f[3]);
	return w < 0 || (size_t)w >= outsz ? -1 : 0;
}
