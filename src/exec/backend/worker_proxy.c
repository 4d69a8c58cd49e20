/*
 * worker_proxy: the daemon's side of a backend that runs in a worker process (see worker_proxy.h).
 *
 * Each proxied kind has at most one current worker (struct wproc). A worker is started on a device's first run
 * (posix_spawn of /proc/self/exe, never a fork: OpenCL implementations hang in a child forked after their
 * initialisation), its stderr read by a monitor thread that logs its lines, keeps the last few, ends it when it
 * idles and reaps it. A device's state (struct wdev) holds a channel to the worker it last used and the memfd its
 * buffers travel in; when that worker is gone, the next run opens a channel to a new one.
 *
 * Locking: kind->mu guards the kind's current worker, every wproc of the kind and the counters; runs wait on their
 * channel outside it.
 */
#include "exec/backend/worker_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mem.h"
#include "exec/backend/worker_proto.h"

extern char **environ;

#define TAIL_LINES 4
#define TAIL_LINE_MAX 240
#define GRACE_MS 500                 /* SIGTERM, then SIGKILL after this */
#define HELLO_LIMIT_MS 10000         /* a worker that has not said hello by then is refused */
#define CRASH_WAIT_MS 3000           /* how long a run waits for its dead worker to be reaped */
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
#define ATTACHED_MAX 64
#define SHM_MIN (1u << 20)
#define ARGS_MAX 32

struct wkind;

struct wproc {
	struct wkind *kind;
	pid_t pid;
	int ctl;                     /* the control socket (daemon's end) */
	int errfd;                   /* the read end of its stderr */
	int wake[2];                 /* the monitor looks again */
	pthread_t monitor;
	unsigned refs;               /* the monitor, kind->cur, each channel */
	unsigned inflight;           /* runs sent and not answered */
	uint64_t last_used_ns;
	uint64_t kill_at_ns;         /* SIGKILL then, if it has not exited (0: none) */
	bool retiring;               /* takes no new channels */
	bool exited;
	int status;                  /* waitpid's */
	int cause;                   /* enum worker_cause acceld ended it for; -1: none */
	char tail[TAIL_LINES][TAIL_LINE_MAX];
	unsigned ntail;              /* lines kept so far (the last TAIL_LINES) */
	char partial[TAIL_LINE_MAX]; /* a line not ended yet */
	size_t npartial;
};

struct wkind {
	const char *name;
	const struct backend_ops *real;
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* a worker exited */
	struct wproc *cur;
	const struct config *cfg;
	uint64_t idle_ns;
	struct device attached[ATTACHED_MAX];
	size_t nattached;
	unsigned crashes;            /* in a row, since the last run that was answered */
	uint64_t backoff_until_ns;
	uint64_t starts;
	uint64_t exits[WORKER_CAUSE_COUNT];
	pid_t last_pid;
	char last_exit[160];         /* "killed by signal 6 (SIGABRT)", "exited with status 0" */
	int last_cause;              /* -1: none yet */
};

/* A device's state: its channel to a worker and the memory its buffers travel in. */
struct wdev {
	struct wkind *kind;
	struct device dev;
	unsigned threads;
	struct wproc *proc;
	int chan;
	bool answered;               /* the channel has answered a run (the backend is up in that worker) */
	struct wshm shm;
	bool shm_sent;               /* the worker of this channel has the memfd */
	void *facts;                 /* a buffer of the kind's facts (FACTS_MAX) */
};

#define FACTS_MAX (256u * 1024u)

static struct wkind kinds[] = {
	{.name = "pjrt", .real = &backend_pjrt, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	 .idle_ns = 30000000000ull, .last_cause = -1},
	{.name = "opencl", .real = &backend_opencl, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	 .idle_ns = 30000000000ull, .last_cause = -1},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *const cause_names[WORKER_CAUSE_COUNT] = {"idle", "deadline", "crash", "start"};

const char *worker_cause_name(enum worker_cause c)
{
	return (unsigned)c < WORKER_CAUSE_COUNT ? cause_names[c] : "?";
}

const struct backend_ops *worker_proxy_real(const char *name)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return kinds[i].real;
	return NULL;
}

size_t worker_proxy_counts(struct worker_counts *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NKINDS && n < max; i++, n++) {
		pthread_mutex_lock(&kinds[i].mu);
		out[n].backend = kinds[i].name;
		out[n].starts = kinds[i].starts;
		memcpy(out[n].exits, kinds[i].exits, sizeof(out[n].exits));
		pthread_mutex_unlock(&kinds[i].mu);
	}
	return n;
}

/* --- a worker's life --- */

static void proc_unref(struct wproc *p)
{
	if (--p->refs > 0)
		return;
	close(p->ctl);
	close(p->errfd);
	close(p->wake[0]);
	close(p->wake[1]);
	free(p);
}

static void proc_wake(struct wproc *p)
{
	char c = 1;

	if (write(p->wake[1], &c, 1) < 0) {
		/* a full pipe already wakes it */
	}
}

/* Ends p for cause (kind->mu held): no new channels, its control socket shut (it exits), a kill after the grace. */
static void proc_retire(struct wproc *p, enum worker_cause cause, bool term)
{
	struct wkind *k = p->kind;

	if (p->retiring || p->exited)
		return;
	p->retiring = true;
	p->cause = (int)cause;
	if (k->cur == p) {
		k->cur = NULL;
		p->refs--; /* kind->cur's reference; the monitor still holds one */
	}
	shutdown(p->ctl, SHUT_RDWR);
	if (term)
		kill(p->pid, SIGTERM);
	p->kill_at_ns = clock_mono_ns() + (uint64_t)(term ? GRACE_MS : 2000) * 1000000ull;
	proc_wake(p);
}

/* "killed by signal 6 (SIGABRT)", "exited with status 3". */
static void describe_status(int status, char *out, size_t outsz)
{
	if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));

		snprintf(out, outsz, "killed by signal %d (SIG%s)", WTERMSIG(status), abbrev ? abbrev : "?");
	} else
		snprintf(out, outsz, "exited with status %d", WEXITSTATUS(status));
}

/* Keeps a line of the worker's stderr and passes it on to the log. */
static void keep_line(struct wproc *p, const char *line, size_t len)
{
	char text[TAIL_LINE_MAX];

	if (len == 0)
		return;
	snprintf(text, sizeof(text), "%.*s", (int)(len < sizeof(text) - 1 ? len : sizeof(text) - 1), line);
	log_fields(LOGL_INFO, "worker", "worker said",
		   (struct log_field[]){LOG_S("backend", p->kind->name), LOG_I("pid", p->pid), LOG_S("line", text)}, 3);
	pthread_mutex_lock(&p->kind->mu);
	if (p->ntail == TAIL_LINES)
		memmove(p->tail[0], p->tail[1], sizeof(p->tail[0]) * (TAIL_LINES - 1));
	else
		p->ntail++;
	snprintf(p->tail[p->ntail - 1], sizeof(p->tail[0]), "%s", text);
	pthread_mutex_unlock(&p->kind->mu);
}

/* Reads what the worker wrote to stderr; false at its end. */
static bool read_stderr(struct wproc *p)
{
	char buf[4096];
	ssize_t n = read(p->errfd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0) {
		keep_line(p, p->partial, p->npartial);
		p->npartial = 0;
		return false;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			keep_line(p, p->partial, p->npartial);
			p->npartial = 0;
		} else if (p->npartial < sizeof(p->partial) - 1)
			p->partial[p->npartial++] = buf[i];
	}
	return true;
}

static void *monitor_main(void *arg)
{
	struct wproc *p = arg;
	struct wkind *k = p->kind;
	bool open_err = true;
	int status = 0;
	enum worker_cause cause;
	char how[160];

	for (;;) {
		struct pollfd fds[2] = {{.fd = p->errfd, .events = POLLIN}, {.fd = p->wake[0], .events = POLLIN}};
		uint64_t now = clock_mono_ns();
		uint64_t wait_ns = 1000000000ull;
		pid_t r;

		pthread_mutex_lock(&k->mu);
		if (!p->retiring && p->inflight == 0 && now - p->last_used_ns >= k->idle_ns)
			proc_retire(p, WORKER_CAUSE_IDLE, false);
		if (!p->retiring && p->inflight == 0 && k->idle_ns - (now - p->last_used_ns) < wait_ns)
			wait_ns = k->idle_ns - (now - p->last_used_ns);
		if (p->kill_at_ns != 0 && now >= p->kill_at_ns) {
			kill(p->pid, SIGKILL);
			p->kill_at_ns = 0;
		}
		if (p->kill_at_ns != 0 && p->kill_at_ns - now < wait_ns)
			wait_ns = p->kill_at_ns - now;
		pthread_mutex_unlock(&k->mu);
		if (!open_err) {
			/* stderr closed: the process is ending; reap it without blocking so a kill can still follow */
			r = waitpid(p->pid, &status, WNOHANG);
			if (r == p->pid || (r < 0 && errno == ECHILD))
				break;
			if (wait_ns > 50000000ull)
				wait_ns = 50000000ull;
			fds[0].fd = -1;
		}
		if (poll(fds, 2, (int)(wait_ns / 1000000ull) + 1) > 0) {
			if (fds[1].revents & POLLIN) {
				char drain[64];

				if (read(p->wake[0], drain, sizeof(drain)) < 0) {
					/* nothing to drain */
				}
			}
			if (open_err && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
				open_err = read_stderr(p);
		}
	}
	describe_status(status, how, sizeof(how));
	pthread_mutex_lock(&k->mu);
	p->exited = true;
	p->status = status;
	if (p->cause >= 0)
		cause = (enum worker_cause)p->cause;
	else
		cause = WORKER_CAUSE_CRASH;
	if (cause == WORKER_CAUSE_CRASH) {
		uint64_t ms = BACKOFF_FIRST_MS;

		k->crashes++;
		/* the first crash costs its jobs only; from the second in a row, starts wait 1 s, 2 s, ... 60 s */
		for (unsigned i = 2; i < k->crashes && ms < BACKOFF_MAX_MS; i++)
			ms *= 2;
		if (ms > BACKOFF_MAX_MS)
			ms = BACKOFF_MAX_MS;
		k->backoff_until_ns = k->crashes >= 2 ? clock_mono_ns() + ms * 1000000ull : 0;
	}
	k->exits[cause]++;
	k->last_cause = (int)cause;
	k->last_pid = p->pid;
	snprintf(k->last_exit, sizeof(k->last_exit), "%s", how);
	if (k->cur == p) {
		k->cur = NULL;
		p->refs--;
	}
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	log_fields(cause == WORKER_CAUSE_CRASH ? LOGL_ERROR : LOGL_INFO, "worker", "worker ended",
		   (struct log_field[]){LOG_S("backend", k->name), LOG_I("pid", p->pid), LOG_S("cause", cause_names[cause]),
					LOG_S("status", how)},
		   4);
	pthread_mutex_lock(&k->mu);
	proc_unref(p);
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

/* TPU_* for a worker on a host of a slice of several: libtpu would wait for every host; it runs on this host's
 * chips alone, as single-host tests on pod workers do. Adds to env (n entries so far, cap max). */
static size_t tpu_local_env(const struct wkind *k, char **env, size_t n, size_t max, char store[3][96])
{
	const struct device *d = NULL;
	unsigned slice = 1;
	unsigned x = 0;
	unsigned y = 0;
	const char *bounds;

	for (size_t i = 0; i < k->nattached && d == NULL; i++)
		if (k->attached[i].type == DEVICE_TPU)
			d = &k->attached[i];
	if (d == NULL || d->tpu.chips == 0 || n + 3 > max)
		return n;
	for (const char *t = d->tpu.topology; *t != '\0'; t++) {
		if (*t >= '0' && *t <= '9')
			x = x * 10 + (unsigned)(*t - '0');
		else {
			slice *= x ? x : 1;
			x = 0;
			y++;
		}
	}
	slice *= x ? x : 1;
	if (y == 0 || slice <= d->tpu.chips)
		return n; /* one host holds the whole slice */
	bounds = d->tpu.chips >= 8 ? "2,4,1" : d->tpu.chips >= 4 ? "2,2,1" : d->tpu.chips >= 2 ? "1,2,1" : "1,1,1";
	snprintf(store[0], 96, "TPU_PROCESS_BOUNDS=1,1,1");
	snprintf(store[1], 96, "TPU_CHIPS_PER_PROCESS_BOUNDS=%s", bounds);
	snprintf(store[2], 96, "TPU_VISIBLE_CHIPS=");
	for (unsigned i = 0; i < d->tpu.chips && i < 16; i++) {
		size_t len = strlen(store[2]);

		snprintf(store[2] + len, 96 - len, "%s%u", i ? "," : "", i);
	}
	env[n++] = store[0];
	env[n++] = store[1];
	env[n++] = store[2];
	return n;
}

/*
 * fd moved to 10 or above (close-on-exec), so that the spawn's dup2 onto 0 to 3 never meets a descriptor already
 * there: dup2 of a descriptor onto itself would leave its close-on-exec flag set, and the worker without it.
 */
static int high_fd(int fd)
{
	int moved;

	if (fd < 0 || fd >= 10)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	close(fd);
	return moved;
}

/* Starts the kind's worker and waits for its hello (kind->mu held). NULL with a message when it cannot. */
static struct wproc *proc_start(struct wkind *k, char *err, size_t errsz)
{
	struct wproc *p = xcalloc(1, sizeof(*p));
	int ctl[2] = {-1, -1};
	int errp[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	sigset_t dfl;
	const char *argv[ARGS_MAX];
	char cache_bytes[32];
	size_t na = 0;
	size_t nenv = 0;
	size_t nout = 0;
	char **env = NULL;
	char tpu[3][96];
	const char *exe;
	char *tpu_env[3];
	size_t ntpu;
	struct wmsg_hello hello;
	char stamp[sizeof(hello.stamp)];
	int got_fd;
	long len;
	struct pollfd pfd;
	int rc;

	p->kind = k;
	p->ctl = p->errfd = p->wake[0] = p->wake[1] = -1;
	p->cause = -1;
	if (getenv("ACCELD_WORKER_CHILD") != NULL) {
		/* a worker never starts workers (nor does a binary that is not acceld, started as one by mistake) */
		snprintf(err, errsz, "a %s worker cannot start from inside a worker", k->name);
		free(p);
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) != 0 || pipe2(errp, O_CLOEXEC) != 0 ||
	    pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		snprintf(err, errsz, "cannot start a %s worker: %s", k->name, strerror(errno));
		goto fail;
	}
	ctl[1] = high_fd(ctl[1]);
	errp[1] = high_fd(errp[1]);
	if (ctl[1] < 0 || errp[1] < 0) {
		snprintf(err, errsz, "cannot start a %s worker: %s", k->name, strerror(errno));
		goto fail;
	}
	argv[na++] = "acceld";
	argv[na++] = "worker";
	argv[na++] = k->name;
	/* the worker's own client never idles: the daemon ends the whole process instead */
	argv[na++] = "--pjrt-idle";
	argv[na++] = "24h";
	if (k->cfg != NULL && k->cfg->pjrt_plugins != NULL) {
		argv[na++] = "--pjrt-plugins";
		argv[na++] = k->cfg->pjrt_plugins;
	}
	if (k->cfg != NULL && k->cfg->pjrt_search != NULL) {
		argv[na++] = "--pjrt-search";
		argv[na++] = k->cfg->pjrt_search;
	}
	/* what the worker's own work reads: the compile cache (beside the database by default), who holds a device */
	if (k->cfg != NULL) {
		config_format_size(k->cfg->pjrt_cache_bytes, cache_bytes, sizeof(cache_bytes));
		argv[na++] = "--pjrt-cache-bytes";
		argv[na++] = cache_bytes;
		if (k->cfg->db_path != NULL) {
			argv[na++] = "--db";
			argv[na++] = k->cfg->db_path;
		}
		if (k->cfg->pjrt_cache_dir != NULL) {
			argv[na++] = "--pjrt-cache-dir";
			argv[na++] = k->cfg->pjrt_cache_dir;
		}
		if (k->cfg->pjrt_tpu_lockfile != NULL) {
			argv[na++] = "--pjrt-tpu-lockfile";
			argv[na++] = k->cfg->pjrt_tpu_lockfile;
		}
		if (k->cfg->nvml_library != NULL) {
			argv[na++] = "--nvml-library";
			argv[na++] = k->cfg->nvml_library;
		}
	}
	argv[na] = NULL;
	while (environ[nenv] != NULL)
		nenv++;
	env = xcalloc(nenv + 5, sizeof(*env));
	ntpu = tpu_local_env(k, tpu_env, 0, 3, tpu);
	for (size_t i = 0; i < nenv; i++) {
		bool tpu_var = strncmp(environ[i], "TPU_PROCESS_BOUNDS=", 19) == 0 ||
			       strncmp(environ[i], "TPU_CHIPS_PER_PROCESS_BOUNDS=", 29) == 0 ||
			       strncmp(environ[i], "TPU_VISIBLE_CHIPS=", 18) == 0;

		/* on a host of a multi-host slice, the local bounds replace the caller's */
		if (ntpu == 0 || !tpu_var)
			env[nout++] = environ[i];
	}
	for (size_t i = 0; i < ntpu; i++)
		env[nout++] = tpu_env[i];
	env[nout++] = (char *)(uintptr_t)"ACCELD_WORKER_CHILD=1";
	env[nout] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawn_file_actions_adddup2(&fa, ctl[1], 3);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigfillset(&dfl);
	sigdelset(&dfl, SIGKILL);
	sigdelset(&dfl, SIGSTOP);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	exe = getenv("ACCELD_WORKER_EXE");
	rc = posix_spawn(&p->pid, exe != NULL && exe[0] != '\0' ? exe : "/proc/self/exe", &fa, &attr,
			 (char *const *)(uintptr_t)argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(env);
	close(ctl[1]);
	close(errp[1]);
	ctl[1] = errp[1] = -1;
	p->ctl = ctl[0];
	p->errfd = errp[0];
	ctl[0] = errp[0] = -1;
	if (rc != 0) {
		snprintf(err, errsz, "cannot start a %s worker: %s", k->name, strerror(rc));
		goto fail;
	}
	k->starts++;
	k->last_pid = p->pid;
	p->refs = 2; /* the monitor's and kind->cur's */
	p->last_used_ns = clock_mono_ns();
	if (pthread_create(&p->monitor, NULL, monitor_main, p) != 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		k->exits[WORKER_CAUSE_START]++;
		snprintf(err, errsz, "cannot watch a %s worker", k->name);
		goto fail;
	}
	pthread_detach(p->monitor);
	pfd = (struct pollfd){.fd = p->ctl, .events = POLLIN};
	len = poll(&pfd, 1, HELLO_LIMIT_MS) == 1 ? wproto_recv(p->ctl, &hello, sizeof(hello), &got_fd) : -1;
	if (len > 0 && got_fd >= 0)
		close(got_fd);
	wproto_stamp(stamp, sizeof(stamp));
	hello.stamp[sizeof(hello.stamp) - 1] = '\0';
	if (len != (long)sizeof(hello) || hello.type != WMSG_HELLO || hello.magic != WPROTO_MAGIC ||
	    strcmp(hello.stamp, stamp) != 0) {
		snprintf(err, errsz, "the %s worker (pid %d) %s", k->name, (int)p->pid,
			 len == (long)sizeof(hello) ? "is another build of acceld than the daemon: refused"
						    : "did not say hello: refused");
		p->refs--; /* never kind->cur */
		proc_retire(p, WORKER_CAUSE_START, true);
		return NULL;
	}
	for (size_t i = 0; i < k->nattached; i++) {
		struct wmsg_device m = {.type = WMSG_ATTACH, .dev = k->attached[i]};

		wproto_send(p->ctl, &m, sizeof(m), -1);
	}
	k->cur = p;
	log_fields(LOGL_INFO, "worker", "worker started",
		   (struct log_field[]){LOG_S("backend", k->name), LOG_I("pid", p->pid)}, 2);
	return p;
fail:
	for (int i = 0; i < 2; i++) {
		if (ctl[i] >= 0)
			close(ctl[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	if (p->ctl >= 0)
		close(p->ctl);
	if (p->errfd >= 0)
		close(p->errfd);
	if (p->wake[0] >= 0)
		close(p->wake[0]);
	if (p->wake[1] >= 0)
		close(p->wake[1]);
	free(p);
	return NULL;
}

/* --- a device's channel --- */

static void proc_busy(struct wdev *d, bool begin, bool answered);

/* Drops d's channel (kind->mu held). */
static void chan_drop(struct wdev *d)
{
	if (d->proc == NULL)
		return;
	close(d->chan);
	d->chan = -1;
	proc_unref(d->proc);
	d->proc = NULL;
	d->answered = false;
	d->shm_sent = false;
}

/* What ended d's worker, for a run that lost it (kind->mu held, the worker reaped or given up on). */
static void lost_message(struct wdev *d, struct wproc *p, char *err, size_t errsz)
{
	char how[160];
	size_t len;

	if (!p->exited)
		snprintf(how, sizeof(how), "closed its channel");
	else
		describe_status(p->status, how, sizeof(how));
	if (p->cause == WORKER_CAUSE_DEADLINE)
		len = (size_t)snprintf(err, errsz, "the %s worker (pid %d) that ran it was ended (%s) because a job on "
				       "another device ran past its deadline", d->kind->name, (int)p->pid, how);
	else
		len = (size_t)snprintf(err, errsz, "the %s worker (pid %d) running it on %s ended: %s", d->kind->name,
				       (int)p->pid, d->dev.id, how);
	if (p->ntail > 0 && len < errsz) {
		len += (size_t)snprintf(err + len, errsz - len, "; its last lines on stderr:");
		for (unsigned i = 0; i < p->ntail && len < errsz; i++)
			len += (size_t)snprintf(err + len, errsz - len, " %s%s", p->tail[i],
						i + 1 < p->ntail ? " |" : "");
	}
}

/* The worker of d died or closed the channel: waits (a little) for it to be reaped, says so in err. */
static enum acceld_err chan_lost(struct wdev *d, char *err, size_t errsz)
{
	struct wkind *k = d->kind;
	struct wproc *p = d->proc;
	/* k->cv is on the default clock */
	struct timespec ts = clock_deadline(CLOCK_REALTIME, (uint64_t)CRASH_WAIT_MS * 1000000ull);

	pthread_mutex_lock(&k->mu);
	while (!p->exited && pthread_cond_timedwait(&k->cv, &k->mu, &ts) == 0)
		;
	lost_message(d, p, err, errsz);
	if (p->inflight > 0)
		p->inflight--;
	chan_drop(d);
	pthread_mutex_unlock(&k->mu);
	return ACCELD_ECRASHED;
}

/*
 * Waits for d's answer until limit_ns (0: none), learning the facts that come before it. 1: answered (in *a),
 * 0: the limit passed, -1: the channel was lost.
 */
static int await_answer(struct wdev *d, uint64_t limit_ns, struct wmsg_answer *a)
{
	for (;;) {
		struct pollfd pfd = {.fd = d->chan, .events = POLLIN};
		uint64_t now = clock_mono_ns();
		int ms = -1;
		int fd = -1;
		long n;

		if (limit_ns != 0) {
			if (now >= limit_ns)
				return 0;
			ms = (int)((limit_ns - now) / 1000000ull) + 1;
		}
		n = poll(&pfd, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			continue;
		if (n < 0)
			return -1;
		n = wproto_recv(d->chan, d->facts, FACTS_MAX, &fd);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			return -1;
		if ((size_t)n >= sizeof(struct wmsg_facts_head) && *(uint32_t *)d->facts == WMSG_FACTS) {
			struct wmsg_facts_head h;

			memcpy(&h, d->facts, sizeof(h));
			if (d->kind->real->learn != NULL && h.len == (size_t)n - sizeof(h))
				d->kind->real->learn((char *)d->facts + sizeof(h), h.len);
			continue;
		}
		if ((size_t)n != sizeof(*a) || *(uint32_t *)d->facts != WMSG_ANSWER)
			return -1; /* not this protocol */
		memcpy(a, d->facts, sizeof(*a));
		a->err[sizeof(a->err) - 1] = '\0';
		return 1;
	}
}

/* Sends an OPEN or INSPECT of d's device and waits for its answer. */
/*
 * When a fresh worker's first answer is due: it includes creating the client, which on a TPU slice of several hosts
 * waits for every host (--pjrt-create-timeout, 120 s by default).
 */
static uint64_t first_limit_ns(const struct wkind *k)
{
	uint64_t ms = k->cfg != NULL ? k->cfg->pjrt_create_timeout_ms : 120000;

	return clock_mono_ns() + ms * 1000000ull;
}

/* Ends d's worker and drops its channel (a run of it counted ended); returns the pid it had. */
static pid_t worker_end(struct wdev *d)
{
	struct wkind *k = d->kind;
	pid_t pid;

	pthread_mutex_lock(&k->mu);
	pid = d->proc->pid;
	proc_retire(d->proc, WORKER_CAUSE_DEADLINE, true);
	if (d->proc->inflight > 0)
		d->proc->inflight--;
	chan_drop(d);
	pthread_mutex_unlock(&k->mu);
	return pid;
}

/* The reason a fresh worker (pid) that gave no first answer within the client creation limit was ended. */
static enum acceld_err first_limit_passed(struct wdev *d, pid_t pid, char *err, size_t errsz)
{
	const struct wkind *k = d->kind;

	snprintf(err, errsz, "the %s worker (pid %d) did not create its client for %s within the client creation limit "
		 "(--pjrt-create-timeout, %" PRIu64 " ms; on a TPU slice of several hosts, libtpu waits for every host); "
		 "it was ended", k->name, (int)pid, d->dev.id, k->cfg != NULL ? k->cfg->pjrt_create_timeout_ms : 120000);
	return ACCELD_EDEVICE;
}

static enum acceld_err chan_ask(struct wdev *d, uint32_t type, uint64_t limit_ns, char *err, size_t errsz)
{
	struct wmsg_device m = {.type = type, .threads = d->threads, .dev = d->dev};
	struct wmsg_answer a;
	int got;

	if (wproto_send(d->chan, &m, sizeof(m), -1) != 0)
		return chan_lost(d, err, errsz);
	got = await_answer(d, limit_ns, &a);
	if (got < 0)
		return chan_lost(d, err, errsz);
	if (got == 0)
		return first_limit_passed(d, worker_end(d), err, errsz);
	if (a.rc != ACCELD_OK)
		snprintf(err, errsz, "%s", a.err);
	return (enum acceld_err)a.rc;
}

/*
 * Gives d a channel to the kind's current worker (started when there is none) with its device open in it, and
 * counts a run of it begun (in the same hold of kind->mu, so an idle end cannot come between): the caller ends it
 * with proc_busy(d, false, ...). On an error nothing is counted.
 */
static enum acceld_err chan_ready(struct wdev *d, char *err, size_t errsz)
{
	struct wkind *k = d->kind;
	struct wproc *p;
	int sv[2];
	struct wmsg_channel m = {.type = WMSG_CHANNEL};
	uint64_t now = clock_mono_ns();
	enum acceld_err rc;

	pthread_mutex_lock(&k->mu);
	if (d->proc != NULL && (d->proc->retiring || d->proc->exited))
		chan_drop(d);
	if (d->proc != NULL) {
		d->proc->inflight++;
		pthread_mutex_unlock(&k->mu);
		return ACCELD_OK;
	}
	p = k->cur;
	if (p == NULL && k->backoff_until_ns > now) {
		snprintf(err, errsz, "the %s worker crashed %u times in a row (last: %s); the next start waits %" PRIu64
			 " ms more", k->name, k->crashes, k->last_exit, (uint64_t)((k->backoff_until_ns - now) / 1000000u));
		pthread_mutex_unlock(&k->mu);
		return ACCELD_ECRASHED;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errsz, "cannot open a channel to the %s worker: %s", k->name, strerror(errno));
		pthread_mutex_unlock(&k->mu);
		return ACCELD_EDEVICE;
	}
	for (int tries = 0;; tries++) {
		if (p == NULL)
			p = proc_start(k, err, errsz);
		if (p == NULL) {
			close(sv[0]);
			close(sv[1]);
			pthread_mutex_unlock(&k->mu);
			return ACCELD_EDEVICE;
		}
		if (wproto_send(p->ctl, &m, sizeof(m), sv[1]) == 0)
			break;
		/* it died and is not reaped yet (its monitor counts the crash): a fresh one, once */
		p->retiring = true;
		if (k->cur == p) {
			k->cur = NULL;
			p->refs--;
		}
		p = NULL;
		if (tries > 0) {
			close(sv[0]);
			close(sv[1]);
			snprintf(err, errsz, "the %s worker took no channel", k->name);
			pthread_mutex_unlock(&k->mu);
			return ACCELD_ECRASHED;
		}
	}
	close(sv[1]);
	d->chan = sv[0];
	d->proc = p;
	p->refs++;
	d->shm_sent = false;
	d->answered = false;
	p->inflight++;
	pthread_mutex_unlock(&k->mu);
	rc = chan_ask(d, WMSG_OPEN, first_limit_ns(k), err, errsz);
	if (rc != ACCELD_OK && rc != ACCELD_ECRASHED) /* a lost channel was dropped, its count with it */
		proc_busy(d, false, false);
	return rc;
}

/* Marks a run of d's worker begun (true) or ended; an ended one may let an idle-0 worker go. */
static void proc_busy(struct wdev *d, bool begin, bool answered)
{
	struct wkind *k = d->kind;
	struct wproc *p = d->proc;

	pthread_mutex_lock(&k->mu);
	if (p != NULL) {
		if (begin)
			p->inflight++;
		else if (p->inflight > 0)
			p->inflight--;
		p->last_used_ns = clock_mono_ns();
		if (!begin && answered)
			k->crashes = 0;
		if (!begin && p->inflight == 0 && k->idle_ns == 0)
			proc_retire(p, WORKER_CAUSE_IDLE, false);
	}
	pthread_mutex_unlock(&k->mu);
}

static enum acceld_err proxy_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				 size_t errsz)
{
	struct wdev *d = state;
	struct wmsg_run m;
	struct wmsg_answer a;
	struct backend_buffer b[BACKEND_WORK_BUFFERS_MAX];
	size_t need;
	size_t nb;
	uint64_t limit;
	int got;
	enum acceld_err rc = chan_ready(d, err, errsz);

	if (rc != ACCELD_OK)
		return rc;
	memset(&m, 0, sizeof(m));
	m.type = WMSG_RUN;
	need = wproto_layout(w, m.off, &m.nbuf);
	if (need > d->shm.size || d->shm.map == NULL) {
		size_t size = need < SHM_MIN ? SHM_MIN : need;

		if (wshm_create(&d->shm, size) != 0) {
			proc_busy(d, false, false);
			snprintf(err, errsz, "cannot make %zu bytes of shared memory: %s", size, strerror(errno));
			return ACCELD_ENOMEM;
		}
		d->shm_sent = false;
	}
	nb = backend_work_buffers(w, b);
	for (size_t i = 0; i < nb; i++)
		if (b[i].in != NULL && *b[i].in != NULL)
			memcpy((char *)d->shm.map + m.off[i], *b[i].in, b[i].bytes);
	m.shm_size = d->shm.size;
	m.work = *w;
	if (wproto_send(d->chan, &m, sizeof(m), d->shm_sent ? -1 : d->shm.fd) != 0)
		return chan_lost(d, err, errsz);
	d->shm_sent = true;
	limit = w->deadline_ns;
	if (!d->answered) {
		uint64_t first = first_limit_ns(d->kind);

		if (limit == 0 || first < limit)
			limit = first;
	}
	got = await_answer(d, limit, &a);
	if (got < 0)
		return chan_lost(d, err, errsz);
	if (got == 0) {
		bool past_deadline = w->deadline_ns != 0 && clock_mono_ns() >= w->deadline_ns;
		pid_t pid = worker_end(d);

		if (past_deadline) {
			snprintf(err, errsz, "ran past its deadline on %s; its %s worker (pid %d) was ended, which frees "
				 "the device", d->dev.id, d->kind->name, (int)pid);
			return ACCELD_ETIMEOUT;
		}
		return first_limit_passed(d, pid, err, errsz);
	}
	d->answered = true;
	proc_busy(d, false, true);
	rc = (enum acceld_err)a.rc;
	if (rc != ACCELD_OK) {
		snprintf(err, errsz, "%s", a.err);
		return rc;
	}
	for (size_t i = 0; i < nb; i++)
		if (b[i].out != NULL && *b[i].out != NULL)
			memcpy(*b[i].out, (char *)d->shm.map + m.off[i], b[i].bytes);
	*t = a.timing;
	w->value = a.value;
	w->precision = (enum kernel_precision)a.precision;
	return ACCELD_OK;
}

static struct wdev *wdev_new(struct wkind *k, const struct device *dev, unsigned threads)
{
	struct wdev *d = xcalloc(1, sizeof(*d));

	d->kind = k;
	d->dev = *dev;
	d->threads = threads;
	d->chan = -1;
	d->shm = (struct wshm)WSHM_INIT;
	d->facts = xmalloc(FACTS_MAX);
	return d;
}

static void wdev_free(struct wdev *d)
{
	pthread_mutex_lock(&d->kind->mu);
	chan_drop(d);
	pthread_mutex_unlock(&d->kind->mu);
	wshm_release(&d->shm);
	free(d->facts);
	free(d);
}

/*
 * Opens dev in the kind's worker (started for it), so that what the backend says when it loads (a plugin refused)
 * is known from the start; the worker lets go after the idle time. Only a refusal of the device fails the open: a
 * worker that cannot start now may start for a later run.
 */
static enum acceld_err proxy_open(struct wkind *k, const struct device *dev, unsigned threads, void **state,
				  char *err, size_t errsz)
{
	struct wdev *d = wdev_new(k, dev, threads);
	enum acceld_err rc = chan_ready(d, err, errsz);

	if (rc == ACCELD_EUNSUPPORTED) {
		wdev_free(d);
		return rc;
	}
	if (rc == ACCELD_OK)
		proc_busy(d, false, false); /* its idle time counts from now */
	*state = d;
	return ACCELD_OK;
}

static void proxy_close(void *state)
{
	wdev_free(state);
}

static void proxy_attach(struct wkind *k, const struct device *dev)
{
	if (k->real->attach == NULL)
		return;
	k->real->attach(dev); /* the daemon's half keeps what it needs (a CUDA ordinal) */
	pthread_mutex_lock(&k->mu);
	if (k->nattached < ATTACHED_MAX)
		k->attached[k->nattached++] = *dev;
	pthread_mutex_unlock(&k->mu);
}

static void proxy_prepare(struct wkind *k, const struct config *cfg)
{
	k->cfg = cfg;
	k->idle_ns = cfg->pjrt_idle_ms * 1000000ull;
	if (k->real->prepare != NULL)
		k->real->prepare(cfg); /* settings only: the real backends load nothing at prepare */
}

/* The real describe, with the worker's state under "worker". */
static json_t *proxy_describe(struct wkind *k, const struct device *dev)
{
	json_t *doc = k->real->describe != NULL ? k->real->describe(dev) : NULL;
	json_t *wk;
	uint64_t now = clock_mono_ns();

	if (doc == NULL || !json_is_object(doc))
		return doc;
	wk = json_object();
	pthread_mutex_lock(&k->mu);
	json_object_set_new(wk, "state", json_string(k->cur != NULL ? "running"
						     : k->backoff_until_ns > now ? "backing_off" : "stopped"));
	if (k->cur != NULL)
		json_object_set_new(wk, "pid", json_integer(k->cur->pid));
	json_object_set_new(wk, "starts", json_integer((json_int_t)k->starts));
	json_object_set_new(wk, "crashes_in_a_row", json_integer(k->crashes));
	if (k->last_cause >= 0) {
		json_object_set_new(wk, "last_pid", json_integer(k->last_pid));
		json_object_set_new(wk, "last_exit", json_string(k->last_exit));
		json_object_set_new(wk, "last_cause", json_string(cause_names[k->last_cause]));
	}
	if (k->backoff_until_ns > now)
		json_object_set_new(wk, "backoff_ms", json_integer((json_int_t)((k->backoff_until_ns - now) / 1000000ull)));
	pthread_mutex_unlock(&k->mu);
	json_object_set_new(doc, "worker", wk);
	return doc;
}

/* As describe, after a worker loaded what the backend runs on for dev (the daemon or command loads nothing). */
static json_t *proxy_inspect(struct wkind *k, const struct device *dev)
{
	struct wdev *d;
	char err[WPROTO_ERR_MAX];

	if (k->real->describe == NULL || !k->real->serves(dev))
		return proxy_describe(k, dev);
	d = wdev_new(k, dev, 1);
	if (chan_ready(d, err, sizeof(err)) == ACCELD_OK &&
	    chan_ask(d, WMSG_INSPECT, first_limit_ns(k), err, sizeof(err)) !=
		    ACCELD_ECRASHED)
		proc_busy(d, false, false);
	wdev_free(d);
	return proxy_describe(k, dev);
}

/* --- the proxies, one per kind --- */

#define K_PJRT (&kinds[0])

static void pjrt_prepare(const struct config *cfg)
{
	proxy_prepare(K_PJRT, cfg);
}

static bool pjrt_serves(const struct device *dev)
{
	return backend_pjrt.serves(dev);
}

static void pjrt_attach(const struct device *dev)
{
	proxy_attach(K_PJRT, dev);
}

static json_t *pjrt_describe(const struct device *dev)
{
	return proxy_describe(K_PJRT, dev);
}

static json_t *pjrt_inspect(const struct device *dev)
{
	return proxy_inspect(K_PJRT, dev);
}

static enum acceld_err pjrt_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	return proxy_open(K_PJRT, dev, threads, state, err, errsz);
}

static enum acceld_err pjrt_admit(const struct device *dev, enum kernel_id k, const struct kernel_shape *s,
				  enum reason *reason, char *detail, size_t detailsz)
{
	return backend_pjrt.admit(dev, k, s, reason, detail, detailsz);
}

static double pjrt_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	return backend_pjrt.reference(dev, k, source);
}

static bool pjrt_runs(enum kernel_id k)
{
	return backend_pjrt.runs(k);
}

/* what the real backend says of itself, its open, run, close and inspect in a worker */
const struct backend_ops backend_pjrt_proxy = {
	.name = "pjrt",
	.serves_what = "TPUs and NVIDIA GPUs with a PJRT plugin (libtpu, JAX's CUDA plugin)",
	.rank = 10,
	.serves = pjrt_serves,
	.prepare = pjrt_prepare,
	.admit = pjrt_admit,
	.reference = pjrt_reference,
	.runs = pjrt_runs,
	.attach = pjrt_attach,
	.describe = pjrt_describe,
	.inspect = pjrt_inspect,
	.open = pjrt_open,
	.run = proxy_run,
	.close = proxy_close,
	.on_device = true, /* as backend_pjrt: generated inputs made in the worker's device, outputs left there */
};

/* --- OpenCL: in a worker on devices that are not CPUs, in the daemon on PoCL's CPU device --- */

#define K_OPENCL (&kinds[1])

bool worker_proxy_opencl_all(void)
{
	const char *v = getenv("ACCELD_OPENCL_WORKER");

	return v != NULL && strcmp(v, "all") == 0;
}

/* A device's OpenCL state: the real backend's, here or in the worker. */
struct osplit {
	bool remote;
	void *state;
};

static void opencl_prepare(const struct config *cfg)
{
	proxy_prepare(K_OPENCL, cfg); /* the real prepare too: PoCL's CPU device runs here */
}

static bool opencl_serves(const struct device *dev)
{
	return backend_opencl.serves(dev);
}

static enum acceld_err opencl_admit(const struct device *dev, enum kernel_id k, const struct kernel_shape *s,
				    enum reason *reason, char *detail, size_t detailsz)
{
	return backend_opencl.admit(dev, k, s, reason, detail, detailsz);
}

static double opencl_reference(const struct device *dev, enum kernel_id k, const char **source)
{
	return backend_opencl.reference != NULL ? backend_opencl.reference(dev, k, source) : 1.0;
}

static bool opencl_runs(enum kernel_id k)
{
	return backend_opencl.runs == NULL || backend_opencl.runs(k);
}

/* a GPU vendor's driver keeps a context (and memory) on the device: only PoCL's CPU device stays here */
static enum acceld_err opencl_open(const struct device *dev, unsigned threads, void **state, char *err, size_t errsz)
{
	struct osplit *s = xcalloc(1, sizeof(*s));
	enum acceld_err rc;

	s->remote = dev->type != DEVICE_CPU || worker_proxy_opencl_all();
	rc = s->remote ? proxy_open(K_OPENCL, dev, threads, &s->state, err, errsz)
		       : backend_opencl.open(dev, threads, &s->state, err, errsz);
	if (rc != ACCELD_OK) {
		free(s);
		return rc;
	}
	*state = s;
	return ACCELD_OK;
}

static enum acceld_err opencl_run(void *state, struct kernel_work *w, struct backend_timing *t, char *err,
				  size_t errsz)
{
	struct osplit *s = state;

	return s->remote ? proxy_run(s->state, w, t, err, errsz) : backend_opencl.run(s->state, w, t, err, errsz);
}

static void opencl_close(void *state)
{
	struct osplit *s = state;

	if (s->remote)
		proxy_close(s->state);
	else
		backend_opencl.close(s->state);
	free(s);
}

/* one backend as users see it ("opencl"), whichever process runs a device's jobs */
const struct backend_ops backend_opencl_proxy = {
	.name = "opencl",
	.serves_what = "devices with an OpenCL view",
	.rank = 20,
	.serves = opencl_serves,
	.prepare = opencl_prepare,
	.admit = opencl_admit,
	.open = opencl_open,
	.run = opencl_run,
	.close = opencl_close,
	.reference = opencl_reference,
	.runs = opencl_runs,
	.on_device = true, /* as backend_opencl, in the daemon or in a worker */
};
