/*
 * libFuzzer harness: a prices file (ACCELD_PRICES_FILE) read the way the service reads it at start-up, through
 * cost_new on a file holding the input. A bad file must be refused with a message naming where it is wrong.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cost/cost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct cost *c = NULL;
	char err[512];

	if (fd < 0) {
		fd = memfd_create("prices.json", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	err[0] = '\0';
	if (cost_new(NULL, path, &c, err, sizeof(err)) == ACCELD_OK)
		cost_free(c);
	else if (strstr(err, "prices file") == NULL)
		abort(); /* every refusal says what was wrong */
	return 0;
}
