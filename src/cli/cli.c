/* cli: the commands' exit codes, help, configuration loading, logging and words (see cli.h). */
#include "cli/cli.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "core/jsonval.h"
#include "core/log.h"
#include "core/mem.h"
#include "detect/detect.h"
#include "exec/backend.h"

#define SIZE_ACCEPTED "a size such as 16GiB, 16GB or 17179869184 (" CONFIG_SIZE_UNITS ")"

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

	if (rc == 0 && !cost_file_check(cfg->prices_file, err, sizeof(err)))
		rc = -1; /* a prices file the command cannot read is a bad setting, said as such */
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

static bool in_list(const char *const *list, const char *name)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

/*
 * Takes the request fields (--min-memory-bytes X, --kernel=NAME) out of argv into fields/values and puts every
 * other argument, in order, into rest. A flag named in bools may stand alone (meaning true). Returns 0, or -1 with
 * a message in err.
 */
static int split_args(int argc, char **argv, const char *const *flags, const char *const *bools, char **fields,
		      const char **values, size_t *nfields, char **rest, int *nrest, char *err, size_t errsz)
{
	*nfields = 0;
	*nrest = 0;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t len;
		char name[40];

		if (strncmp(arg, "--", 2) != 0) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if (len == 0 || len >= sizeof(name)) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		memcpy(name, arg + 2, len);
		name[len] = '\0';
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		if (!in_list(flags, name)) {
			rest[(*nrest)++] = argv[i];
			continue;
		}
		fields[*nfields] = xstrdup(name);
		if (eq) {
			values[*nfields] = eq + 1;
		} else if (in_list(bools, name) && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
			values[*nfields] = "true";
		} else if (i + 1 < argc) {
			values[*nfields] = argv[++i];
		} else {
			snprintf(err, errsz, "option --%.40s needs a value", arg + 2);
			(*nfields)++;
			return -1;
		}
		(*nfields)++;
	}
	return 0;
}

/* Takes -v, --verbose and --json (when json is not NULL) out of argv[0..*argc), keeping the order of the rest. */
static void take_switches(int *argc, char **argv, bool *verbose, bool *json)
{
	int n = 0;

	for (int i = 0; i < *argc; i++) {
		if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0)
			*verbose = true;
		else if (json != NULL && strcmp(argv[i], "--json") == 0)
			*json = true;
		else
			argv[n++] = argv[i];
	}
	*argc = n;
}

int cli_request_start(struct cli_request *c, const struct cli_kind *k, int argc, char **argv, void *req)
{
	char **args = xcalloc((size_t)argc + 1, sizeof(*args));
	char **rest = xcalloc((size_t)argc + 1, sizeof(*rest));
	char err[1024] = "";
	bool verbose = false;
	int nrest;
	int rc;
	bool loaded;

	memset(c, 0, sizeof(*c));
	c->fields = xcalloc((size_t)argc + 1, sizeof(*c->fields));
	c->values = xcalloc((size_t)argc + 1, sizeof(*c->values));
	if (cli_help_asked(argc, argv)) {
		k->help(stdout);
		rc = CLI_EXIT_OK;
		goto out;
	}
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	take_switches(&argc, args, &verbose, k->json ? &c->json : NULL);
	rc = CLI_EXIT_USAGE;
	if (split_args(argc, args, k->flags, k->bools, c->fields, c->values, &c->nfields, rest, &nrest, err,
		       sizeof(err)) != 0) {
		fprintf(stderr, "acceld %s: %s\n", k->name, err);
		goto out;
	}
	loaded = cli_load_config(&c->cfg, k->name, nrest, rest, verbose ? CLI_LOG_VERBOSE : CLI_LOG_QUIET, &rc);
	if (!loaded)
		goto out;
	k->init(req, &c->cfg);
	for (size_t i = 0; i < c->nfields; i++) {
		const char *name = c->fields[i];

		if (k->set(req, name, c->values[i], err, sizeof(err)) != ACCELD_OK) {
			/* the flag's own name and accepted values, not the API field's */
			fprintf(stderr, "acceld %s: invalid --", k->name);
			for (const char *p = name; *p != '\0'; p++)
				fputc(*p == '_' ? '-' : *p, stderr);
			fprintf(stderr, " '%.64s'; accepted: %s\n", c->values[i],
				k->sizes != NULL && in_list(k->sizes, name) ? SIZE_ACCEPTED : k->accepted(name));
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	c->det = cli_detect_new(&c->cfg);
	c->snap = detect_acquire(c->det);
	rc = -1;
out:
	free(args);
	free(rest);
	return rc;
}

void cli_request_finish(struct cli_request *c)
{
	if (c->snap)
		detect_release(c->snap);
	detect_free(c->det);
	for (size_t i = 0; i < c->nfields; i++)
		free(c->fields[i]);
	free(c->fields);
	free(c->values);
	config_release(&c->cfg);
}

void cli_print_json(json_t *doc)
{
	jsonval_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
}
