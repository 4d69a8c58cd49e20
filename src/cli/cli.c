/* cli: the commands' exit codes, help, configuration loading, logging and words (see cli.h). */
#include "cli/cli.h"

#include <ctype.h>
#include <string.h>

#include "core/log.h"
#include "detect/detect.h"
#include "exec/backend.h"

bool cli_help_asked(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	return false;
}

void cli_help_settings(FILE *out, const char *const *flags)
{
	static const char *const always[] = {"config", NULL};

	fprintf(out, "\nSettings it reads (flag > environment > config file > default; every setting: "
		     "acceld help settings):\n");
	config_usage_of(out, flags);
	config_usage_of(out, always);
}

/* Whether the command line names the log level itself ("--log-level warn", "--log-level=debug"). */
static bool names_log_level(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--log-level") == 0 || strncmp(argv[i], "--log-level=", 12) == 0)
			return true;
	return false;
}

bool cli_load_config(struct config *cfg, const char *command, int argc, char **argv, enum cli_logging logging,
		     int *exit_code)
{
	char err[1024] = "";
	int rc = config_load(cfg, argc, argv, NULL, err, sizeof(err));
	enum log_level level;

	if (rc == 0) {
		level = (enum log_level)cfg->log_level;
		/* a command's stderr is read by a person: the service's ACCELD_LOG_LEVEL is not asked of it */
		if (logging != CLI_LOG_CONFIGURED && !names_log_level(argc, argv))
			level = logging == CLI_LOG_VERBOSE ? LOGL_INFO : level > LOGL_WARN ? level : LOGL_WARN;
		log_set_level(level);
		return true;
	}
	config_release(cfg);
	if (rc > 0) /* config_load's --help: the commands answer it first (cli_help_asked), so it is not a setting */
		snprintf(err, sizeof(err), "%s", "--help is not a setting (see acceld help)");
	fprintf(stderr, "acceld %s: %s\n", command, err);
	*exit_code = CLI_EXIT_USAGE;
	return false;
}

/* The endpoints shared texts point to, and what a command line says instead. */
static const struct {
	const char *api;
	const char *cli;
} endpoint_words[] = {
	{"GET /devices", "acceld report"},
	{"PUT /cost/prices or ACCELD_PRICES_FILE", "acceld serve --prices-file (ACCELD_PRICES_FILE)"},
	{"PUT /cost/prices", "acceld serve --prices-file"},
};

/* Whether name starts at text + i as a whole word or phrase (not inside another name or a longer path). */
static bool word_at(const char *text, size_t i, const char *name, size_t len)
{
	char before = i > 0 ? text[i - 1] : ' ';
	char after;

	if (strncmp(text + i, name, len) != 0)
		return false;
	after = text[i + len]; /* within text: its first len bytes from i are name's */
	return !isalnum((unsigned char)before) && before != '_' && before != '-' && !isalnum((unsigned char)after) &&
	       after != '_' && after != '/';
}

/* Appends text[0..len) to out at *n, as far as outsz holds it; with flag, as "--" and the name, '-' for '_'. */
static void put(char *out, size_t outsz, size_t *n, const char *text, size_t len, bool flag)
{
	for (size_t j = 0; j < len + (flag ? 2 : 0) && *n + 1 < outsz; j++) {
		char c = !flag ? text[j] : j < 2 ? '-' : text[j - 2];

		out[(*n)++] = flag && c == '_' ? '-' : c;
	}
}

void cli_words(const char *msg, const char *const *fields, char *out, size_t outsz)
{
	size_t n = 0;
	bool quoted = false;

	for (size_t i = 0; msg[i] != '\0' && n + 1 < outsz;) {
		size_t len = 0;

		/* a quote opens or closes a value; an apostrophe inside a word (a device's) does neither */
		if (msg[i] == '\'' && !(i > 0 && isalnum((unsigned char)msg[i - 1]) &&
					isalnum((unsigned char)msg[i + 1])))
			quoted = !quoted;
		for (size_t e = 0; !quoted && e < sizeof(endpoint_words) / sizeof(endpoint_words[0]); e++) {
			len = strlen(endpoint_words[e].api);
			if (word_at(msg, i, endpoint_words[e].api, len)) {
				put(out, outsz, &n, endpoint_words[e].cli, strlen(endpoint_words[e].cli), false);
				break;
			}
			len = 0;
		}
		for (size_t f = 0; !quoted && len == 0 && fields != NULL && fields[f] != NULL; f++) {
			if (word_at(msg, i, fields[f], strlen(fields[f]))) {
				len = strlen(fields[f]);
				put(out, outsz, &n, fields[f], len, true);
			}
		}
		if (len == 0)
			out[n++] = msg[i++];
		else
			i += len;
	}
	out[n] = '\0';
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
