/*
 * conns: the open connections of one HTTP listener, their budgets (in total and per client address), the deadline
 * by which a request must have arrived whole, and which connection is closed to make room when the table is full.
 *
 * The server reports each connection's life to the table: opened, request line read, headers read, whole request
 * read, answered (then idle until the next request line), closed. The table knows no HTTP library; it works on
 * socket descriptors, and what it needs from the kernel (bytes a client has sent, time since its last byte) and
 * how it ends a connection go through struct conns_ops, so unit tests drive it with a fake clock and fake sockets.
 *
 * When a new connection would pass a budget, one connection that is waiting on its client is closed in its place,
 * the one that has waited longest (since it opened, since its last answer, or since its request line after an
 * idle spell) among those that qualify:
 *   - an idle keep-alive connection (answered, no request line since), at once;
 *   - a new connection that has sent nothing at all, at once;
 *   - a connection without a whole request once it is late: one whose request line and headers are not in within
 *     CONNS_GRACE_MS, one whose body has stalled (nothing received) for CONNS_GRACE_MS.
 * A connection whose whole request is in (being answered, or waiting on a job) is never chosen, nor one whose
 * request is still arriving in good time. When no connection qualifies, the new connection is refused (closed at
 * once). For the per-address budget only that address's connections are candidates. Closing a connection cuts
 * it (shutdown of both directions); the server sees the end of the stream and closes it as it would any other.
 * Oldest first means a client that has just connected or just been answered keeps its connection while older idle
 * or silent ones remain, as nginx drains its reusable connections; silent connections get no grace, so a flood
 * that replaces its connections as fast as they are closed cannot keep every one of them too young to go.
 *
 * Thread-safe: every call takes the table's mutex for a moment. A cut may run a system call per candidate
 * examined (at most CONNS_MAX_PROBES per choice); nothing else does I/O.
 */
#ifndef ACCELD_CONNS_H
#define ACCELD_CONNS_H

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#define CONNS_GRACE_MS 2000   /* a request's line and headers arrive within this; a body never pauses this long */
#define CONNS_MAX_PROBES 32   /* kernel look-ups per choice of a connection to close */

/* Why a new connection was refused. */
enum conns_refusal {
	CONNS_REFUSED_LIMIT,   /* the listener's budget is full and no connection could make room */
	CONNS_REFUSED_PER_IP,  /* the client address's budget is full and none of its connections could */
	CONNS_REFUSED_COUNT
};

/* Why a connection was closed to make room for a new one. */
enum conns_eviction {
	CONNS_EVICTED_IDLE_KEEPALIVE,      /* answered, and idle since */
	CONNS_EVICTED_INCOMPLETE_REQUEST,  /* silent, or its request late */
	CONNS_EVICTED_COUNT
};

/* Counters since the table was made, and the connections open now (cut ones not counted). */
struct conns_stats {
	unsigned open;
	unsigned max;
	uint64_t refused[CONNS_REFUSED_COUNT];
	uint64_t evicted[CONNS_EVICTED_COUNT];
	uint64_t timed_out;                /* cut because the request had not arrived whole by its deadline */
};

/* What the kernel knows of a connection's client side. */
struct conns_peer {
	uint64_t bytes_in;   /* bytes received from the client so far */
	uint64_t quiet_ms;   /* milliseconds since the client last sent data (since the connection opened if never) */
};

struct conns_ops {
	/* Fills out for the connection on fd; false when it cannot be known (the connection is then spared). */
	bool (*peer)(void *ctx, int fd, struct conns_peer *out);
	/* Ends the connection on fd in both directions; the server closes it when it sees the end of the stream. */
	void (*cut)(void *ctx, int fd);
	void *ctx;
};

struct conns_opts {
	unsigned max;                 /* connections at most, at least 1 */
	unsigned max_per_addr;        /* per client address; 0 = no limit */
	uint64_t request_window_ns;   /* a request must arrive whole within this of its window opening; 0 = none */
	const struct conns_ops *ops;  /* copied; NULL: TCP_INFO and shutdown(2) on the real sockets */
};

struct conns;
struct conn;

/* A new, empty table; never NULL (see mem.h). Free with conns_free. */
struct conns *conns_new(const struct conns_opts *opts);

/* Frees the table and every entry still in it; NULL is allowed. The entries' pointers are invalid afterwards. */
void conns_free(struct conns *t);

/*
 * A connection opened on fd from addr (addrlen bytes; NULL when unknown, which no per-address budget counts) at
 * now (monotonic ns). Makes room when a budget is full. Returns the connection's entry, owned by the table until
 * conns_close, or NULL when it was refused: then it has been cut already and the table keeps nothing of it.
 */
struct conn *conns_open(struct conns *t, int fd, const struct sockaddr *addr, socklen_t addrlen, uint64_t now);

/* The request line of the next request has arrived. Every call below ignores a NULL or cut entry. */
void conns_request_line(struct conns *t, struct conn *c, uint64_t now);

/* The request's headers are in; its body (if any) follows. */
void conns_headers(struct conns *t, struct conn *c, uint64_t now);

/* The whole request is in: from now on the connection is never cut for room or lateness until it is answered. */
void conns_received(struct conns *t, struct conn *c, uint64_t now);

/* The answer has gone out: the connection is idle, and the next request's window opens now. */
void conns_answered(struct conns *t, struct conn *c, uint64_t now);

/* The server has closed the connection (it must not have closed the descriptor yet): the entry is freed. */
void conns_close(struct conns *t, struct conn *c);

/* Cuts every connection whose request has not arrived whole by its deadline; returns how many. */
unsigned conns_reap(struct conns *t, uint64_t now);

/* The counters and the connections open now. */
void conns_stats(struct conns *t, struct conns_stats *out);

/* Label values: "limit", "per_ip"; "idle_keepalive", "incomplete_request". */
const char *conns_refusal_name(enum conns_refusal r);
const char *conns_eviction_name(enum conns_eviction e);

#endif
