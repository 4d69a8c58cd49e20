/*
 * worker_main: a backend's worker process. The main thread reads the control socket (devices to attach, new
 * channels); each channel gets a thread that opens its device and runs what the daemon sends, its buffers in the
 * shared memory the daemon made. The end of the control socket (the daemon let it go, or died) ends the process at
 * once, without running the plugins' destructors: nothing of it is left holding a device.
 */
#include "exec/backend/worker_main.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"
#include "exec/backend/worker_proto.h"
#include "exec/backend/worker_proxy.h"

#define CTL_FD 3

static const struct backend_ops *real;
static pthread_mutex_t facts_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t facts_since;

/* Sends the backend's facts when they changed since they were last sent (by any channel). */
static void send_facts(int chan, void *buf, size_t cap)
{
	struct wmsg_facts_head h = {.type = WMSG_FACTS};
	size_t len;

	if (real->facts == NULL)
		return;
	pthread_mutex_lock(&facts_mu);
	len = real->facts(&facts_since, (char *)buf + sizeof(h), cap - sizeof(h));
	pthread_mutex_unlock(&facts_mu);
	if (len == 0)
		return;
	h.len = (uint32_t)len;
	memcpy(buf, &h, sizeof(h));
	wproto_send(chan, buf, sizeof(h) + len, -1);
}

static void answer(int chan, void *facts, size_t cap, struct wmsg_answer *a)
{
	send_facts(chan, facts, cap);
	a->type = WMSG_ANSWER;
	wproto_send(chan, a, sizeof(*a), -1);
}

#define FACTS_CAP (256u * 1024u)

static void *channel_main(void *arg)
{
	int chan = (int)(intptr_t)arg;
	void *state = NULL;
	struct wshm shm = WSHM_INIT;
	void *buf = xmalloc(FACTS_CAP);
	union {
		struct wmsg_device dev;
		struct wmsg_run run;
	} *m = xmalloc(sizeof(*m));

	for (;;) {
		struct wmsg_answer a;
		int fd = -1;
		long n = wproto_recv(chan, m, sizeof(*m), &fd);
		uint32_t type;

		if (n <= 0) {
			if (fd >= 0)
				close(fd);
			break;
		}
		memset(&a, 0, sizeof(a));
		memcpy(&type, m, sizeof(type));
		if ((type == WMSG_OPEN || type == WMSG_INSPECT) && n == (long)sizeof(m->dev)) {
			if (type == WMSG_INSPECT) {
				json_t *doc = real->inspect != NULL ? real->inspect(&m->dev.dev) : NULL;

				json_decref(doc);
			} else if (state == NULL)
				a.rc = real->open(&m->dev.dev, m->dev.threads, &state, a.err, sizeof(a.err));
			if (fd >= 0)
				close(fd);
			answer(chan, buf, FACTS_CAP, &a);
			continue;
		}
		if (type != WMSG_RUN || n != (long)sizeof(m->run)) {
			if (fd >= 0)
				close(fd);
			break; /* not this protocol */
		}
		if (fd >= 0 && wshm_adopt(&shm, fd, (size_t)m->run.shm_size) != 0) {
			a.rc = ACCELD_ENOMEM;
			snprintf(a.err, sizeof(a.err), "the worker cannot map the job's shared memory: %s", strerror(errno));
		} else if (state == NULL) {
			a.rc = ACCELD_EDEVICE;
			snprintf(a.err, sizeof(a.err), "the device is not open in the worker");
		} else if (!wproto_place(&m->run.work, m->run.off, m->run.nbuf, shm.map, shm.size)) {
			a.rc = ACCELD_EINVAL;
			snprintf(a.err, sizeof(a.err), "the run's buffers do not fit its shared memory");
		} else {
			a.timing = (struct backend_timing){0};
			m->run.work.host_mem = shm.map;
			m->run.work.host_mem_size = shm.size;
			a.rc = real->run(state, &m->run.work, &a.timing, a.err, sizeof(a.err));
			a.value = m->run.work.value;
			a.precision = (int32_t)m->run.work.precision;
		}
		answer(chan, buf, FACTS_CAP, &a);
	}
	if (state != NULL)
		real->close(state);
	wshm_release(&shm);
	close(chan);
	free(m);
	free(buf);
	return NULL;
}

int worker_main(int argc, char **argv)
{
	struct config cfg;
	struct stat st;
	char err[1024];
	struct wmsg_hello hello = {.type = WMSG_HELLO, .magic = WPROTO_MAGIC};
	struct wmsg_device m;

	if (fstat(CTL_FD, &st) != 0 || !S_ISSOCK(st.st_mode) || argc < 2) {
		fprintf(stderr, "acceld worker: acceld starts this itself, with the socket it gives it; it is no command "
				"to run\n");
		return 2;
	}
	real = worker_proxy_real(argv[1]);
	if (real == NULL) {
		fprintf(stderr, "acceld worker: no backend runs in a worker under the name '%.64s'\n", argv[1]);
		return 2;
	}
	memset(&cfg, 0, sizeof(cfg));
	if (config_load(&cfg, argc - 2, argv + 2, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "acceld worker: %s\n", err);
		return 2;
	}
	log_set_level((enum log_level)cfg.log_level);
	if (real->prepare != NULL)
		real->prepare(&cfg);
	wproto_stamp(hello.stamp, sizeof(hello.stamp));
	hello.pid = (int32_t)getpid();
	if (wproto_send(CTL_FD, &hello, sizeof(hello), -1) != 0)
		return 1;
	for (;;) {
		int fd = -1;
		long n = wproto_recv(CTL_FD, &m, sizeof(m), &fd);
		pthread_t t;

		if (n <= 0)
			break;
		if (m.type == WMSG_ATTACH && n == (long)sizeof(m) && real->attach != NULL)
			real->attach(&m.dev);
		if (m.type == WMSG_CHANNEL && fd >= 0) {
			if (pthread_create(&t, NULL, channel_main, (void *)(intptr_t)fd) == 0)
				pthread_detach(t);
			else
				close(fd);
			fd = -1;
		}
		if (fd >= 0)
			close(fd);
	}
	/* the daemon let go (or is gone): end now; the process's end frees the device, its lock and its memory */
	fflush(stderr);
	_exit(0);
}
