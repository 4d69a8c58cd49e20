/*
 * conns: the connection table of one listener, its budgets, request deadlines and the choice of a connection to
 * close when a budget is full.
 *
 * Each connection waiting on its client sits in one of two lists, both in the order their waits began, so the
 * oldest candidates are at the heads and a choice walks the two together: idle (answered, no request line since)
 * and pending (no whole request yet: new, reading headers, reading a body). A connection whose request is in sits
 * in the busy list, and one that has been cut in the cut list until the server closes it. Per-address counts live
 * in a binary tree (tsearch) keyed by the address bytes.
 */
#include "http/conns.h"

#include <netinet/in.h>
#include <pthread.h>
#include <search.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <linux/tcp.h>

#include "core/mem.h"

#define MS 1000000ull

enum phase {
	PHASE_NEW,   /* opened, no request line yet */
	PHASE_HEAD,  /* request line in, headers not */
	PHASE_BODY,  /* headers in, body not */
	PHASE_BUSY,  /* the whole request is in */
	PHASE_IDLE,  /* answered, no request line since */
};

enum { LIST_PENDING, LIST_IDLE, LIST_BUSY, LIST_CUT, LIST_COUNT };

struct addr_key {
	sa_family_t family;
	unsigned char bytes[16];
};

struct addr_count {
	struct addr_key key;
	unsigned n;
};

struct conn {
	int fd;
	enum phase phase;
	int list;                  /* LIST_*, or -1 while on none */
	bool cut;                  /* cut (on LIST_CUT until the server closes it): no longer counted */
	uint64_t since_ns;         /* the current wait began: opening, request line after idling, or the answer */
	uint64_t deadline_ns;      /* the request must be in by then (0: no deadline) */
	struct addr_count *addr;   /* NULL when the address is not counted */
	struct conn *prev, *next;
};

struct conn_list {
	struct conn *head, *tail;
};

struct conns {
	pthread_mutex_t mu;
	struct conns_opts opts;
	struct conns_ops ops;
	struct conn_list lists[LIST_COUNT];
	void *addrs;               /* tsearch tree of struct addr_count */
	struct conns_stats stats;
};

/* --- the real sockets --- */

static bool sock_peer(void *ctx, int fd, struct conns_peer *out)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	(void)ctx;
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return false; /* not TCP, or a kernel older than 4.1 */
	out->bytes_in = ti.tcpi_bytes_received;
	out->quiet_ms = ti.tcpi_last_data_recv;
	return true;
}

static void sock_cut(void *ctx, int fd)
{
	(void)ctx;
	shutdown(fd, SHUT_RDWR);
}

static const struct conns_ops sock_ops = {sock_peer, sock_cut, NULL};

/* --- lists and addresses (called with t->mu held) --- */

static void list_remove(struct conns *t, struct conn *c)
{
	struct conn_list *l;

	if (c->list < 0)
		return;
	l = &t->lists[c->list];
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
	c->list = -1;
}

static void list_append(struct conns *t, struct conn *c, int list)
{
	struct conn_list *l = &t->lists[list];

	list_remove(t, c);
	c->list = list;
	c->prev = l->tail;
	c->next = NULL;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
}

static int addr_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct addr_count *)a)->key, &((const struct addr_count *)b)->key,
		      sizeof(struct addr_key));
}

/* The key of a client address; false for a family that is not counted per address. */
static bool addr_key_of(const struct sockaddr *sa, socklen_t len, struct addr_key *key)
{
	memset(key, 0, sizeof(*key));
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		key->family = AF_INET;
		memcpy(key->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		key->family = AF_INET6;
		memcpy(key->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

/* The count of key's connections, made at 0 when it has none. */
static struct addr_count *addr_get(struct conns *t, const struct addr_key *key)
{
	struct addr_count probe = {.key = *key};
	void **slot = tfind(&probe, &t->addrs, addr_cmp);
	struct addr_count *a;

	if (slot != NULL)
		return *slot;
	a = xcalloc(1, sizeof(*a));
	a->key = *key;
	slot = tsearch(a, &t->addrs, addr_cmp);
	if (slot == NULL)
		abort(); /* tsearch allocates its node: the out-of-memory policy of mem.h */
	return a;
}

static void addr_put(struct conns *t, struct addr_count *a)
{
	if (a == NULL || --a->n > 0)
		return;
	tdelete(a, &t->addrs, addr_cmp);
	free(a);
}

/* The connection leaves the table's counts and is cut; its entry stays on LIST_CUT until conns_close. */
static void cut(struct conns *t, struct conn *c)
{
	list_append(t, c, LIST_CUT);
	c->cut = true;
	addr_put(t, c->addr);
	c->addr = NULL;
	t->stats.open--;
	t->ops.cut(t->ops.ctx, c->fd);
}

/* --- choosing a connection to close --- */

/*
 * Whether c, waiting on its client, may be closed to make room at now. *probes counts the kernel look-ups left
 * for this choice; a connection that would need one when none is left is spared.
 */
static bool late(struct conns *t, const struct conn *c, uint64_t now, unsigned *probes)
{
	uint64_t waited = now > c->since_ns ? now - c->since_ns : 0;
	struct conns_peer p;

	switch (c->phase) {
	case PHASE_IDLE:
		return true;
	case PHASE_NEW:
		if (waited >= CONNS_GRACE_MS * MS)
			return true;
		if (*probes == 0)
			return false;
		(*probes)--;
		return t->ops.peer(t->ops.ctx, c->fd, &p) && p.bytes_in == 0; /* has sent nothing at all */
	case PHASE_HEAD:
		return waited >= CONNS_GRACE_MS * MS;
	case PHASE_BODY:
		if (waited < CONNS_GRACE_MS * MS || *probes == 0)
			return false;
		(*probes)--;
		return t->ops.peer(t->ops.ctx, c->fd, &p) && p.quiet_ms >= CONNS_GRACE_MS; /* the body has stalled */
	case PHASE_BUSY:
		return false;
	}
	return false;
}

/*
 * The connection to close to make room for self: of those that qualify, the one whose wait began first; only
 * addr's when addr is not NULL. NULL when none qualifies. *cause tells which kind it is.
 */
static struct conn *victim(struct conns *t, const struct addr_count *addr, const struct conn *self, uint64_t now,
			   enum conns_eviction *cause)
{
	unsigned probes = CONNS_MAX_PROBES;
	struct conn *idle = t->lists[LIST_IDLE].head;

	/* both lists are in the order waits began; an idle connection always qualifies, so only the first counts */
	while (idle != NULL && (idle == self || (addr != NULL && idle->addr != addr)))
		idle = idle->next;
	*cause = CONNS_EVICTED_IDLE_KEEPALIVE;
	for (struct conn *c = t->lists[LIST_PENDING].head; c != NULL; c = c->next) {
		if (idle != NULL && idle->since_ns <= c->since_ns)
			break;
		if (c != self && (addr == NULL || c->addr == addr) && late(t, c, now, &probes)) {
			*cause = CONNS_EVICTED_INCOMPLETE_REQUEST;
			return c;
		}
	}
	return idle;
}

/* Closes one connection (of addr, when not NULL) in favour of self; false when none may be closed. */
static bool make_room(struct conns *t, const struct addr_count *addr, const struct conn *self, uint64_t now)
{
	enum conns_eviction cause = CONNS_EVICTED_IDLE_KEEPALIVE;
	struct conn *v = victim(t, addr, self, now, &cause);

	if (v == NULL)
		return false;
	cut(t, v);
	t->stats.evicted[cause]++;
	return true;
}

/* --- the table --- */

struct conns *conns_new(const struct conns_opts *opts)
{
	struct conns *t = xcalloc(1, sizeof(*t));

	pthread_mutex_init(&t->mu, NULL);
	t->opts = *opts;
	t->ops = opts->ops != NULL ? *opts->ops : sock_ops;
	t->opts.ops = NULL;
	t->stats.max = opts->max;
	return t;
}

void conns_free(struct conns *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < LIST_COUNT; i++) {
		struct conn *next;

		for (struct conn *c = t->lists[i].head; c != NULL; c = next) {
			next = c->next;
			free(c);
		}
	}
	tdestroy(t->addrs, free);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

struct conn *conns_open(struct conns *t, int fd, const struct sockaddr *addr, socklen_t addrlen, uint64_t now)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	struct addr_key key;
	int refused = -1;

	c->fd = fd;
	c->phase = PHASE_NEW;
	c->list = -1;
	c->since_ns = now;
	c->deadline_ns = t->opts.request_window_ns ? now + t->opts.request_window_ns : 0;
	pthread_mutex_lock(&t->mu);
	list_append(t, c, LIST_PENDING);
	t->stats.open++;
	if (t->opts.max_per_addr > 0 && addr_key_of(addr, addrlen, &key)) {
		c->addr = addr_get(t, &key);
		c->addr->n++;
		if (c->addr->n > t->opts.max_per_addr && !make_room(t, c->addr, c, now))
			refused = CONNS_REFUSED_PER_IP;
	}
	if (refused < 0 && t->stats.open > t->opts.max && !make_room(t, NULL, c, now))
		refused = CONNS_REFUSED_LIMIT;
	if (refused >= 0) {
		cut(t, c);
		list_remove(t, c);
		t->stats.refused[refused]++;
		free(c);
		c = NULL;
	}
	pthread_mutex_unlock(&t->mu);
	return c;
}

/* A request has begun on c (called with t->mu held). */
static void request_begun(struct conns *t, struct conn *c, uint64_t now)
{
	if (c->phase == PHASE_IDLE) {
		/* idling was the client's right; from here its request has the grace to arrive */
		c->phase = PHASE_HEAD;
		c->since_ns = now;
		list_append(t, c, LIST_PENDING);
	} else if (c->phase == PHASE_NEW) {
		c->phase = PHASE_HEAD; /* its wait began when it opened */
	}
}

void conns_request_line(struct conns *t, struct conn *c, uint64_t now)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!c->cut)
		request_begun(t, c, now);
	pthread_mutex_unlock(&t->mu);
}

void conns_headers(struct conns *t, struct conn *c, uint64_t now)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!c->cut && c->phase != PHASE_BUSY) {
		request_begun(t, c, now);
		c->phase = PHASE_BODY;
	}
	pthread_mutex_unlock(&t->mu);
}

void conns_received(struct conns *t, struct conn *c, uint64_t now)
{
	(void)now;
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!c->cut) {
		c->phase = PHASE_BUSY;
		list_append(t, c, LIST_BUSY);
	}
	pthread_mutex_unlock(&t->mu);
}

void conns_answered(struct conns *t, struct conn *c, uint64_t now)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!c->cut) {
		c->phase = PHASE_IDLE;
		c->since_ns = now;
		c->deadline_ns = t->opts.request_window_ns ? now + t->opts.request_window_ns : 0;
		list_append(t, c, LIST_IDLE);
	}
	pthread_mutex_unlock(&t->mu);
}

void conns_close(struct conns *t, struct conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&t->mu);
	if (!c->cut) {
		/* closed by the server or the client: it leaves the counts without being cut */
		addr_put(t, c->addr);
		t->stats.open--;
	}
	list_remove(t, c);
	pthread_mutex_unlock(&t->mu);
	free(c);
}

unsigned conns_reap(struct conns *t, uint64_t now)
{
	static const int lists[] = {LIST_PENDING, LIST_IDLE};
	unsigned n = 0;

	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct conn *next;

		for (struct conn *c = t->lists[lists[i]].head; c != NULL; c = next) {
			next = c->next;
			if (c->deadline_ns != 0 && now > c->deadline_ns) {
				cut(t, c);
				n++;
			}
		}
	}
	t->stats.timed_out += n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void conns_stats(struct conns *t, struct conns_stats *out)
{
	pthread_mutex_lock(&t->mu);
	*out = t->stats;
	pthread_mutex_unlock(&t->mu);
}

const char *conns_refusal_name(enum conns_refusal r)
{
	switch (r) {
	case CONNS_REFUSED_LIMIT: return "limit";
	case CONNS_REFUSED_PER_IP: return "per_ip";
	case CONNS_REFUSED_COUNT: break;
	}
	return "unknown";
}

const char *conns_eviction_name(enum conns_eviction e)
{
	switch (e) {
	case CONNS_EVICTED_IDLE_KEEPALIVE: return "idle_keepalive";
	case CONNS_EVICTED_INCOMPLETE_REQUEST: return "incomplete_request";
	case CONNS_EVICTED_COUNT: break;
	}
	return "unknown";
}
