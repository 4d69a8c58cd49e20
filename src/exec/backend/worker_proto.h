/*
 * worker_proto: what the daemon and a backend's worker process (worker_proxy.c, worker_main.c) say to each other,
 * and the shared memory a run's buffers travel in.
 *
 * Both ends are the same binary (the daemon starts /proc/self/exe), so struct device, struct kernel_work and
 * struct backend_timing travel as raw bytes; the worker's first message (WMSG_HELLO) carries the build's version
 * and the sizes of what travels raw (wproto_stamp), and the daemon refuses a worker whose stamp differs. Every message is one
 * SOCK_SEQPACKET datagram of a fixed struct that starts with its type, except WMSG_FACTS (a header, then the
 * backend's facts). A file descriptor (a channel's socket, a memfd) rides along as SCM_RIGHTS. Inputs and outputs
 * never go through the socket: a run names where each buffer lies in the channel's memfd.
 */
#ifndef ACCELD_WORKER_PROTO_H
#define ACCELD_WORKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/backend.h"

enum wmsg_type {
	WMSG_HELLO = 1, /* worker -> daemon, control socket: its stamp */
	WMSG_ATTACH,    /* daemon -> worker, control: a device the backend serves (attach), before any channel */
	WMSG_CHANNEL,   /* daemon -> worker, control: a new channel's socket (SCM_RIGHTS) */
	WMSG_OPEN,      /* daemon -> worker, channel: open the device (the backend's open) */
	WMSG_RUN,       /* daemon -> worker, channel: run one kernel_work; a new memfd may ride along */
	WMSG_INSPECT,   /* daemon -> worker, channel: load what the backend runs on for the device (inspect) */
	WMSG_FACTS,     /* worker -> daemon, channel: the backend's facts changed (before an answer) */
	WMSG_ANSWER,    /* worker -> daemon, channel: how an open, run or inspect ended */
};

#define WPROTO_MAGIC 0x61636377u /* "accw" */
#define WPROTO_ERR_MAX 640

struct wmsg_hello {
	uint32_t type;
	uint32_t magic;
	char stamp[96]; /* version, commit, struct sizes: wproto_stamp */
	int32_t pid;
};

/* WMSG_ATTACH, WMSG_OPEN, WMSG_INSPECT: a device as detection describes it (raw bytes: same binary). */
struct wmsg_device {
	uint32_t type;
	uint32_t threads;
	struct device dev;
};

struct wmsg_channel {
	uint32_t type;
};

#define WPROTO_NOWHERE UINT64_MAX /* a buffer left out (its pointer NULL) */

/* WMSG_RUN: the work's scalars as raw bytes (its pointers mean nothing on the other side) and where each of its
 * buffers (backend_work_buffers' order) lies in the channel's shared memory. */
struct wmsg_run {
	uint32_t type;
	uint32_t nbuf;
	uint64_t shm_size;                        /* of the memfd the offsets are in */
	uint64_t off[BACKEND_WORK_BUFFERS_MAX];   /* WPROTO_NOWHERE: left out */
	struct kernel_work work;
};

struct wmsg_answer {
	uint32_t type;
	int32_t rc;                               /* enum acceld_err */
	struct backend_timing timing;
	double value;
	int32_t precision;
	char err[WPROTO_ERR_MAX];
};

struct wmsg_facts_head {
	uint32_t type;
	uint32_t len; /* bytes of facts that follow */
};

/*
 * The build's stamp: "0.1.0 d<sizeof device> w<sizeof kernel_work> t<sizeof timing> a<answer> r<run>": what the raw
 * bytes depend on (the commit and build time are left out: a unit test's worker is the acceld built beside it).
 */
void wproto_stamp(char *out, size_t outsz);

/*
 * Sends one message of len bytes on a SOCK_SEQPACKET socket, with fd (>= 0) as SCM_RIGHTS. Returns 0, or -1 with
 * errno (EPIPE: the other end is gone). Retries EINTR; never raises SIGPIPE.
 */
int wproto_send(int sock, const void *msg, size_t len, int fd);

/*
 * Receives one message into buf (cap bytes) and at most one descriptor into *fd (-1 when none; it is O_CLOEXEC).
 * Returns its length, 0 when the other end closed, -1 with errno on error (EMSGSIZE: longer than cap).
 */
long wproto_recv(int sock, void *buf, size_t cap, int *fd);

/* A run's shared memory: one memfd, mapped read-write. */
struct wshm {
	int fd;
	void *map;
	size_t size;
};

#define WSHM_INIT {.fd = -1, .map = NULL, .size = 0}

/* Makes a memfd of size bytes (sealed against shrinking) and maps it. Returns 0, or -1 with errno. */
int wshm_create(struct wshm *s, size_t size);

/* Maps fd (taken: closed by wshm_release) of size bytes. Returns 0, or -1 with errno (fd closed). */
int wshm_adopt(struct wshm *s, int fd, size_t size);

/* Unmaps and closes; s is WSHM_INIT after. */
void wshm_release(struct wshm *s);

/*
 * Lays out w's buffers (backend_work_buffers) one after another, 64-byte aligned: offsets into off (WPROTO_NOWHERE
 * for a NULL pointer), the count into *nbuf; returns the bytes they need together.
 */
size_t wproto_layout(struct kernel_work *w, uint64_t *off, uint32_t *nbuf);

/*
 * Points w's buffers into map (of size bytes) at the offsets of a WMSG_RUN (a left-out one NULL). False when an
 * offset, a size or the count disagrees with w's kernel and sizes: nothing is trusted that does not fit.
 */
bool wproto_place(struct kernel_work *w, const uint64_t *off, uint32_t nbuf, void *map, size_t size);

#endif
