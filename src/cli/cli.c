/* cli: the commands' exit codes and configuration loading (see cli.h). */
#include "cli/cli.h"

#include "core/log.h"
#include "detect/detect.h"
#include "exec/backend.h"

bool cli_load_config(struct config *cfg, const char *command, int argc, char **argv, void (*usage)(FILE *out),
		     int *exit_code)
{
	char err[1024] = "";
	int rc = config_load(cfg, argc, argv, NULL, err, sizeof(err));

	if (rc == 0) {
		log_set_level((enum log_level)cfg->log_level);
		return true;
	}
	config_release(cfg);
	if (rc > 0) {
		if (usage != NULL) {
			usage(stdout);
		} else {
			printf("usage: acceld %s ... [SETTINGS]\n\n", command);
			config_usage(stdout);
		}
		*exit_code = CLI_EXIT_OK;
		return false;
	}
	fprintf(stderr, "acceld %s: %s\n", command, err);
	*exit_code = CLI_EXIT_USAGE;
	return false;
}

struct detect *cli_detect_new(const struct config *cfg)
{
	struct detect *det;

	backend_prepare_all(cfg); /* before any thread: what the backends set process-wide (their search, BLAS) */
	det = detect_new(cfg, NULL, 0);
	detect_set_executable(det, backend_serves_any, NULL);
	detect_set_describe(det, backend_describe_device, NULL);
	return det;
}
