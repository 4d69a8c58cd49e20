/*
 * hwfile: small reads of hardware description files (sysfs, device nodes) under a configurable root, and the PCI
 * address form acceld uses everywhere ("0000:65:00.0", lower case).
 *
 * Every function takes the full path as a printf format so callers can join a root and a relative path in one
 * call; nothing here allocates more than the caller's buffer, and a missing or unreadable file is simply "no
 * value" (-1), never an error worth logging.
 */
#ifndef ACCELD_HWFILE_H
#define ACCELD_HWFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HWFILE_PATH_MAX 512

/*
 * Reads the first line of a small file (at most outsz - 1 bytes) into out, without its newline and the white space
 * around it (drivers pad some attributes). Returns 0, or -1 when the path is too long or the file cannot be read.
 */
int hwfile_read_line(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Reads a small file whole (at most outsz - 1 bytes, several lines allowed: cgroup and /proc files) into out,
 * without the white space that ends it. Returns 0, or -1 when the path is too long or the file cannot be read.
 */
int hwfile_read_text(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses a decimal number that ends the text or is followed by a blank or a newline ("123 45" gives 123): the
 * fields of cgroup and /proc files. Returns 0, or -1. */
int hwfile_parse_field_u64(const char *s, uint64_t *out);

/* Reads a file holding one unsigned number, decimal or 0x-hex. Returns 0, or -1 (missing, empty, malformed). */
int hwfile_read_u64(uint64_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a file holding one signed decimal number (numa_node holds -1). Returns 0, or -1. */
int hwfile_read_i64(int64_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last path component of a symlink's target, into out. Returns 0, or -1 when it is not a readable link. */
int hwfile_link_base(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whether the path exists (any file type). */
bool hwfile_exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Parses a PCI address as drivers write it ("00000000:65:00.0", "0000:65:00.0", "65:00.0", any case) and writes
 * the canonical form "dddd:bb:dd.f" in lower case into out (at least 13 bytes). Returns 0, or -1 when the text is
 * not a PCI address.
 */
int hwfile_pci_normalise(const char *text, char *out, size_t outsz);

#endif
