/*
 * libFuzzer harness: the tpu-env text of the GCE metadata server (probe_tpu_env_parse), and the accelerator type
 * and topology it carries (probe_tpu_type_parse, probe_tpu_topology_check). A parse that succeeds must leave
 * values that pass those checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "detect/probe_tpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tpu_env env;
	char gen[16];
	unsigned chips;

	if (probe_tpu_env_parse((const char *)data, size, &env) != 0) {
		if (env.accelerator_type[0] != '\0' || env.topology[0] != '\0' || env.worker_id != -1 ||
		    env.name[0] != '\0')
			abort(); /* a refused document leaves nothing behind */
		return 0;
	}
	if (env.accelerator_type[0] != '\0' && probe_tpu_type_parse(env.accelerator_type, gen, sizeof(gen), &chips) != 0)
		abort(); /* the parser accepts only known accelerator types */
	if (env.topology[0] != '\0' && probe_tpu_topology_check(env.topology) != 0)
		abort(); /* the parser accepts only valid topologies */
	if (size > 0) {
		/* the same text as a type and a topology name: neither may read past it */
		char *s = malloc(size + 1);

		memcpy(s, data, size);
		s[size] = '\0';
		(void)probe_tpu_type_parse(s, gen, sizeof(gen), &chips);
		(void)probe_tpu_topology_check(s);
		free(s);
	}
	return 0;
}
