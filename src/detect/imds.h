/*
 * imds: one short HTTP request to a cloud's instance metadata service (GCE's metadata server, EC2's IMDSv2,
 * Azure's IMDS), the one place acceld speaks HTTP as a client. libcurl does the protocol; this module bounds it:
 * plain http only, no proxy, no redirects, a hard timeout, a capped body, no signals.
 */
#ifndef ACCELD_IMDS_H
#define ACCELD_IMDS_H

#include <stddef.h>

#define IMDS_MAX_BYTES 65536 /* the largest answer accepted; a longer one fails the request */
#define IMDS_MAX_HEADERS 4

struct imds_request {
	const char *method;                      /* "GET" (NULL too) or "PUT" */
	const char *url;
	const char *headers[IMDS_MAX_HEADERS];   /* "Name: value" lines; unused slots NULL */
	long timeout_ms;                         /* for connecting and the whole exchange; <= 0 fails at once */
};

/* An answer: body NUL-terminated in data (IMDS_MAX_BYTES + 1 bytes, owned by the caller), its HTTP status. */
struct imds_answer {
	char *data;
	size_t len;
	long status;                             /* 0 when no answer came */
};

/*
 * Sends req and reads the answer into a (its data buffer must hold IMDS_MAX_BYTES + 1 bytes). Returns 0 for an
 * answer with status 200; otherwise -1 with why set ("HTTP status 401", "Timeout was reached", ...) and
 * a->status the status received, or 0.
 */
int imds_request(const struct imds_request *req, struct imds_answer *a, char *why, size_t whysz);

#endif
