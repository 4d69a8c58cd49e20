/*
 * http_int: what the two halves of http share; nothing outside src/http/ includes it (http.h is the interface).
 *
 *   http_resp.c    requests, responses and problems, deferred answers, request ids and names: no libmicrohttpd,
 *                  so handlers, their unit tests and the fuzzers use them without a server
 *   http_server.c  the server: libmicrohttpd glue, the connection table's hooks, listening, start and stop
 */
#ifndef ACCELD_HTTP_INT_H
#define ACCELD_HTTP_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "http/http.h"

struct MHD_Connection; /* libmicrohttpd's: only http_server.c sees inside it */

/*
 * A deferred answer. Two references: the finisher's (dropped by http_deferred_finish) and the connection's
 * (dropped when the request completes). mu orders suspend against resume: the connection is resumed only after
 * it was suspended, and an answer that arrives before the suspension is queued at once instead.
 */
struct http_deferred {
	pthread_mutex_t mu;
	int refs;
	bool suspended;
	bool finished;             /* the answer is in resp */
	bool taken;                /* the answer was queued */
	bool gone;                 /* the connection completed or the server stopped */
	struct MHD_Connection *conn;
	/*
	 * Resumes conn: libmicrohttpd's MHD_resume_connection, set with conn when the server suspends it. A hook rather
	 * than a call, so that http_resp.c, which finishes the answer, links without libmicrohttpd.
	 */
	void (*resume)(struct MHD_Connection *conn);
	struct http_server *srv;
	struct http_resp resp;
	char request_id[HTTP_REQUEST_ID_MAX + 1];
	struct http_deferred *prev, *next; /* the server's list */
};

/* Drops a reference to d; the last one frees d and the answer it still holds. */
void http_deferred_unref(struct http_deferred *d);

/* Moves src's answer into dst (dst's old body is released; src is left empty). */
void http_resp_move(struct http_resp *dst, struct http_resp *src);

/* The method a request names ("GET", ... as http_method_name writes them); HTTP_OTHER for any other. */
enum http_method http_method_of(const char *m);

#endif
