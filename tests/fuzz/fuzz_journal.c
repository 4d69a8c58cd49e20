/*
 * libFuzzer harness: a line of the store's journal (journal.c's decoder), which a power loss can leave cut short or
 * filled with zeros. Whatever the bytes, a decoded record must hold terminated strings, and encoding it again must
 * give one line that decodes to the same record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *s, size_t cap)
{
	if (memchr(s, '\0', cap) == NULL)
		abort();
}

static int ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_job a, b;
	char line[JOURNAL_LINE_MAX];
	size_t len;

	if (!journal_decode((const char *)data, size, &a))
		return 0;
	terminated(a.id, sizeof(a.id));
	terminated(a.device, sizeof(a.device));
	terminated(a.kernel, sizeof(a.kernel));
	terminated(a.backend, sizeof(a.backend));
	terminated(a.state, sizeof(a.state));
	terminated(a.reason, sizeof(a.reason));
	terminated(a.error, sizeof(a.error));
	len = journal_encode(&a, line, sizeof(line));
	if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) != NULL)
		abort();
	if (!journal_decode(line, len - 1, &b) || a.finished_ms != b.finished_ms || a.n != b.n || a.k != b.k)
		abort();
	/* text comes back as it was, unless cutting it to its field split a UTF-8 sequence ('?' then) */
	if (ascii(a.id) && strcmp(a.id, b.id) != 0)
		abort();
	if (ascii(a.error) && strcmp(a.error, b.error) != 0)
		abort();
	return 0;
}
