/* api_static: the dashboard page at /, built into the binary (or read from --static-dir while developing). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "app.h"
#include "core/buf.h"

#include "static_index_html.h"

#define STATIC_MAX (4 * 1024 * 1024)

static void no_release(void *arg)
{
	(void)arg;
}

/* Reads dir/index.html into a new buffer; returns NULL with errno set on failure. */
static char *read_index(const char *dir, size_t *len)
{
	char path[4200];
	char chunk[8192];
	struct buf b;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/index.html", dir);
	f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	buf_init(&b, STATIC_MAX);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf_append(&b, chunk, n) != 0) {
			buf_release(&b);
			fclose(f);
			errno = EFBIG;
			return NULL;
		}
	}
	fclose(f);
	return buf_detach(&b, len);
}

void api_static_index(struct app *app, struct http_req *req, struct http_resp *resp)
{
	(void)req;
	if (app->cfg.static_dir != NULL) {
		size_t len;
		char *body = read_index(app->cfg.static_dir, &len);

		if (body == NULL) {
			http_resp_problem(resp, REASON_NOT_FOUND, "no index.html in --static-dir %.200s: %s",
					  app->cfg.static_dir, strerror(errno));
			return;
		}
		http_resp_bytes(resp, 200, "text/html; charset=utf-8", body, len);
	} else {
		http_resp_shared(resp, 200, "text/html; charset=utf-8", (const char *)static_index_html,
				 sizeof(static_index_html) - 1, no_release, NULL);
	}
	http_resp_header(resp, "Cache-Control", "no-cache");
	http_resp_header(resp, "Content-Security-Policy",
			 "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:");
	http_resp_header(resp, "X-Content-Type-Options", "nosniff");
}
