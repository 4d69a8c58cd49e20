/* api_health: /livez, /readyz (and /healthz), /version. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/buf.h"
#include "core/mem.h"
#include "store/store.h"
#include "core/jsonval.h"
#include "core/version.h"

void api_livez(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"verbose", NULL};

	(void)app;
	if (!http_req_check_query(req, resp, allowed))
		return;
	/* one check, the process answering; verbose lists it as Kubernetes' own /livez?verbose does */
	if (http_req_query(req, "verbose") != NULL)
		http_resp_text(resp, 200, "[+]ping ok\nlivez check passed\n");
	else
		http_resp_text(resp, 200, "ok\n");
}

struct check {
	const char *name;
	bool ok;
	char why[256];
};

/* Fills checks[] and returns how many there are. */
static size_t ready_checks(struct app *app, struct check checks[3])
{
	checks[0] = (struct check){.name = "startup", .ok = atomic_load(&app->started)};
	if (!checks[0].ok)
		snprintf(checks[0].why, sizeof(checks[0].why), "start-up work still running");
	checks[1] = (struct check){.name = "database"};
	/* app->store is published by the start-up flag: not read before it */
	if (checks[0].ok)
		checks[1].ok = store_healthy(app->store, checks[1].why, sizeof(checks[1].why));
	else
		snprintf(checks[1].why, sizeof(checks[1].why), "not opened yet");
	checks[2] = (struct check){.name = "shutdown", .ok = !atomic_load(&app->draining)};
	if (!checks[2].ok)
		snprintf(checks[2].why, sizeof(checks[2].why), "draining after a termination signal");
	return 3;
}

void api_readyz(struct app *app, struct http_req *req, struct http_resp *resp)
{
	static const char *const allowed[] = {"verbose", "exclude", NULL};
	struct check checks[3];
	size_t n = ready_checks(app, checks);
	bool verbose = http_req_query(req, "verbose") != NULL;
	const char *exclude = http_req_query(req, "exclude");
	struct buf text;
	json_t *lines;
	bool ok = true;
	char failed[512] = "";
	size_t flen = 0;

	if (!http_req_check_query(req, resp, allowed))
		return;
	if (exclude != NULL) {
		char names[128] = "";
		size_t i, len = 0;

		for (i = 0; i < n && strcmp(exclude, checks[i].name) != 0; i++)
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", checks[i].name);
		if (i == n) {
			http_resp_param_problem(resp, REASON_INVALID_VALUE, "exclude",
						"exclude names a check: '%.64s' is none of %s", exclude, names);
			http_resp_accepted(resp, names);
			return;
		}
	}
	buf_init(&text, 8192);
	lines = json_array();
	for (size_t i = 0; i < n; i++) {
		char line[320];
		bool skipped = exclude != NULL && strcmp(exclude, checks[i].name) == 0;

		if (checks[i].ok || skipped)
			snprintf(line, sizeof(line), "[+]%s ok%s", checks[i].name, skipped ? " (excluded)" : "");
		else
			snprintf(line, sizeof(line), "[-]%s failed: %s", checks[i].name, checks[i].why);
		if (!checks[i].ok && !skipped) {
			ok = false;
			flen += (size_t)snprintf(failed + flen, flen < sizeof(failed) ? sizeof(failed) - flen : 0,
						 "%s%s", flen ? "; " : "", line + 3);
		}
		buf_printf(&text, "%s\n", line);
		json_array_append_new(lines, json_string(line));
	}
	if (ok) {
		if (verbose) {
			char *body;
			size_t len;

			buf_printf(&text, "%s check passed\n", req->path + 1);
			body = buf_detach(&text, &len);
			http_resp_bytes(resp, 200, "text/plain; charset=utf-8", body, len);
		} else {
			http_resp_text(resp, 200, "ok\n");
		}
		json_decref(lines);
	} else {
		json_t *doc = http_resp_problem(resp, REASON_NOT_READY, "%s", failed);

		json_object_set_new(doc, "checks", lines);
	}
	buf_release(&text);
}

/* The version never changes while the process runs: it is serialised once. */
static char *version_body;
static size_t version_len;
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void version_serialise(void)
{
	json_t *v = app_version_json();
	char *text = jsonval_dumps(v, JSON_COMPACT);
	size_t len = strlen(text);

	version_body = xrealloc(text, len + 2);
	version_body[len] = '\n';
	version_body[len + 1] = '\0';
	version_len = len + 1;
	json_decref(v);
}

static void no_release(void *arg)
{
	(void)arg;
}

void api_version(struct app *app, struct http_req *req, struct http_resp *resp)
{
	(void)app;
	(void)req;
	pthread_once(&version_once, version_serialise);
	http_resp_shared(resp, 200, "application/json", version_body, version_len, no_release, NULL);
}
