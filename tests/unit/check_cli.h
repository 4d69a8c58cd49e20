/*
 * check_cli: what the unit tests of the commands (tests/unit/cli/) and of the service's wiring (test_app.c) share: an
 * environment cleared of what acceld and the libraries it loads read, with detection kept to this host's CPU (or a
 * fixture tree); a temporary folder; and a command called in-process with its stdout and stderr captured through
 * temporary files.
 *
 * Check runs each test in a child process of its own, so what a test changes in the environment, in the file
 * descriptors or in acceld's process-wide state (the log level, a loaded plugin) ends with it. Header only: the
 * Makefile links each test with check_main.o and check_api.o alone.
 */
#ifndef ACCELD_CHECK_CLI_H
#define ACCELD_CHECK_CLI_H

#include <check.h>
#include <ftw.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define CHECK_CLI_ARGS 64

/* A command's answer: its exit code, and what it wrote (NUL-terminated, owned; free with check_cli_release). */
struct check_cli_run {
	int rc;
	char *out;
	char *err;
};

/* Makes a fresh folder /tmp/acceld-<what>-XXXXXX into path (at least 64 bytes). */
static inline void check_tmpdir(char *path, size_t pathsz, const char *what)
{
	snprintf(path, pathsz, "/tmp/acceld-%s-XXXXXX", what);
	ck_assert_ptr_nonnull(mkdtemp(path));
}

static inline int check_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1;
}

/* Removes the folder at path and everything below it (links are removed, not followed). */
static inline void check_rmtree(const char *path)
{
	if (path[0] != '\0')
		nftw(path, check_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes text into the file at path, creating the folders above it. */
static inline void check_write_file(const char *path, const char *text)
{
	char dir[1024];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		ck_assert_msg(mkdir(dir, 0755) == 0 || access(dir, F_OK) == 0, "mkdir %s", dir);
		*p = '/';
	}
	f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot create %s", path);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Clears every variable that acceld or a library it loads reads (settings, accelerator runtimes, OpenCL's ICD
 * loader, OpenBLAS, hwloc, the fakes' switches, a Python virtualenv; the runner's ACCELD_BUILD stays), then keeps
 * detection to this host: no NVML library, no PJRT plugin, no cloud metadata service, no OpenCL platform (an empty
 * vendors folder below tmp), and the sysfs and /dev roots in tmp (empty) or in tests/fixtures/<fixture>/{sys,dev}.
 * tmp must exist.
 */
static inline void check_cli_env(const char *tmp, const char *fixture)
{
	static const char *const prefixes[] = {"ACCELD_", "COMPUTE_", "TPU_", "PJRT_", "CUDA_", "HIP_", "ROCR_",
					       "OCL_ICD_", "POCL_", "OPENBLAS_", "OMP_", "HWLOC_", "FAKE_",
					       "VIRTUAL_ENV="};
	char names[256][128];
	size_t n = 0;
	char path[512];

	for (char **e = environ; *e != NULL && n < sizeof(names) / sizeof(names[0]); e++) {
		size_t len = strcspn(*e, "=");

		/* the test runner's own settings (tests/run.py): acceld never reads them */
		if (strncmp(*e, "ACCELD_BUILD=", 13) == 0 || strncmp(*e, "ACCELD_BIN=", 11) == 0)
			continue;
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			if (strncmp(*e, prefixes[i], strlen(prefixes[i])) == 0 && len < sizeof(names[0])) {
				memcpy(names[n], *e, len);
				names[n++][len] = '\0';
				break;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		unsetenv(names[i]);
	setenv("ACCELD_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
	setenv("ACCELD_PJRT_PLUGINS", "none", 1);
	setenv("ACCELD_CLOUD", "none", 1);
	snprintf(path, sizeof(path), "%s/icd", tmp);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	setenv("OCL_ICD_VENDORS", path, 1);
	if (fixture != NULL) {
		snprintf(path, sizeof(path), "tests/fixtures/%s/sys", fixture);
		ck_assert_msg(access(path, F_OK) == 0, "no fixture %s (run from the repository root)", path);
		setenv("ACCELD_SYSFS_ROOT", path, 1);
		snprintf(path, sizeof(path), "tests/fixtures/%s/dev", fixture);
		setenv("ACCELD_DEV_ROOT", path, 1);
	} else {
		snprintf(path, sizeof(path), "%s/sys", tmp);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		setenv("ACCELD_SYSFS_ROOT", path, 1);
		snprintf(path, sizeof(path), "%s/dev", tmp);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		setenv("ACCELD_DEV_ROOT", path, 1);
	}
}

/* The whole of the file f, from its start, as a new string. */
static inline char *check_slurp(FILE *f)
{
	long len;
	char *text;

	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	rewind(f);
	text = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
	text[len] = '\0';
	return text;
}

/* Starts sending fds 1 and 2 into temporary files; check_capture_end takes them back. */
struct check_capture {
	FILE *out, *err;
	int saved_out, saved_err;
};

static inline void check_capture_begin(struct check_capture *c)
{
	fflush(stdout);
	fflush(stderr);
	c->out = tmpfile();
	c->err = tmpfile();
	ck_assert(c->out != NULL && c->err != NULL);
	c->saved_out = dup(STDOUT_FILENO);
	c->saved_err = dup(STDERR_FILENO);
	ck_assert(c->saved_out >= 0 && c->saved_err >= 0);
	ck_assert_int_ge(dup2(fileno(c->out), STDOUT_FILENO), 0);
	ck_assert_int_ge(dup2(fileno(c->err), STDERR_FILENO), 0);
}

/* Restores fds 1 and 2 and returns what was written to each (new strings). */
static inline void check_capture_end(struct check_capture *c, char **out, char **err)
{
	fflush(stdout);
	fflush(stderr);
	dup2(c->saved_out, STDOUT_FILENO);
	dup2(c->saved_err, STDERR_FILENO);
	close(c->saved_out);
	close(c->saved_err);
	*out = check_slurp(c->out);
	*err = check_slurp(c->err);
	fclose(c->out);
	fclose(c->err);
}

/* Calls a command's entry point with argv[0..argc) (copied, so the command may keep or change them) into r. */
static inline void check_cli_callv(struct check_cli_run *r, int (*fn)(int argc, char **argv), int argc,
				   const char *const *args)
{
	char **argv = calloc((size_t)argc + 1, sizeof(*argv));
	struct check_capture c;

	ck_assert_ptr_nonnull(argv);
	for (int i = 0; i < argc; i++)
		argv[i] = strdup(args[i]);
	check_capture_begin(&c);
	r->rc = fn(argc, argv);
	check_capture_end(&c, &r->out, &r->err);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

/*
 * Calls a command's entry point (report_main, cli_select_main, ...) with the arguments that follow, up to a NULL,
 * and fills r with its exit code and output.
 */
static inline void check_cli_call(struct check_cli_run *r, int (*fn)(int argc, char **argv), ...)
{
	const char *argv[CHECK_CLI_ARGS];
	int argc = 0;
	const char *a;
	va_list ap;

	va_start(ap, fn);
	for (a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *)) {
		ck_assert_int_lt(argc, CHECK_CLI_ARGS);
		argv[argc++] = a;
	}
	va_end(ap);
	check_cli_callv(r, fn, argc, argv);
}

/* The fake library lib<name>.so that the Makefile builds ($ACCELD_BUILD/fakes, build/fakes by default). */
static inline void check_fake_path(char *path, size_t pathsz, const char *name)
{
	const char *build = getenv("ACCELD_BUILD");

	snprintf(path, pathsz, "%s/fakes/lib%s.so", build != NULL && build[0] != '\0' ? build : "build", name);
	ck_assert_msg(access(path, R_OK) == 0, "%s is not built (make unit)", path);
}

static inline void check_cli_release(struct check_cli_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* A command's stdout parsed as JSON into *doc (the document before it released), failing the test when it is not. */
static inline json_t *check_cli_json(const struct check_cli_run *r, json_t **doc)
{
	json_error_t e;

	json_decref(*doc);
	*doc = json_loads(r->out, 0, &e);
	ck_assert_msg(*doc != NULL, "%s: %.300s", e.text, r->out);
	return *doc;
}

#endif
