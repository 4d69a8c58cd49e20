/*
 * The worker process's loop, driven as the daemon drives it: a forked child runs worker_main on a control socket
 * (descriptor 3) with the stand-in plugin; the test says hello, opens a TPU over a channel and runs saxpy with its
 * buffers in shared memory, learning what loading the plugin said before the answer.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "exec/backend/worker_main.h"
#include "exec/backend/worker_proto.h"

static char plugins[600];

static void plugin_setting(void)
{
	const char *build = getenv("ACCELD_BUILD");
	char cwd[256];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	if (build != NULL && build[0] == '/')
		snprintf(plugins, sizeof(plugins), "tpu=%s/fakes/libpjrt.so", build);
	else
		snprintf(plugins, sizeof(plugins), "tpu=%s/%s/fakes/libpjrt.so", cwd, build && *build ? build : "build");
}

/* A child running worker_main on one end of a control socket; the other end in *ctl. */
static pid_t start_worker(int *ctl)
{
	int sv[2];
	pid_t pid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = {"worker", "pjrt", "--pjrt-plugins", plugins, NULL};

		close(sv[0]); /* the daemon's end: its close is what ends the worker */
		dup2(sv[1], 3);
		setenv("FAKE_PJRT_PLATFORM", "tpu", 1);
		setenv("FAKE_PJRT_DEVICES", "1", 1);
		_exit(worker_main(4, argv));
	}
	close(sv[1]);
	*ctl = sv[0];
	return pid;
}

START_TEST(refuses_without_its_socket)
{
	char *argv[] = {"worker", "pjrt", NULL};
	int fd = open("/dev/null", O_RDONLY);

	ck_assert_int_ge(fd, 0);
	dup2(fd, 3); /* descriptor 3 is no socket */
	ck_assert_int_eq(worker_main(2, argv), 2);
	close(fd);
}
END_TEST

START_TEST(runs_a_job_in_shared_memory)
{
	struct wmsg_hello hello;
	struct wmsg_device dev = {.type = WMSG_OPEN, .threads = 1};
	struct wmsg_channel ch = {.type = WMSG_CHANNEL};
	struct wmsg_run run = {.type = WMSG_RUN};
	struct wmsg_answer a;
	struct wshm shm = WSHM_INIT;
	static char buf[256 * 1024];
	char stamp[96];
	float x[8];
	float y[8];
	float out[8];
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 8, .alpha = 2.0f, .in = {x, y}, .out = out};
	bool facts = false;
	int ctl;
	int chan[2];
	int fd;
	int status;
	long n;
	pid_t pid;

	plugin_setting();
	pid = start_worker(&ctl);
	ck_assert_int_eq(wproto_recv(ctl, &hello, sizeof(hello), &fd), (long)sizeof(hello));
	wproto_stamp(stamp, sizeof(stamp));
	ck_assert_str_eq(hello.stamp, stamp);
	ck_assert_int_eq(hello.pid, pid);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, chan), 0);
	ck_assert_int_eq(wproto_send(ctl, &ch, sizeof(ch), chan[1]), 0);
	close(chan[1]);
	device_init(&dev.dev, DEVICE_TPU);
	DEVICE_SET(dev.dev.id, "tpu:0");
	DEVICE_SET(dev.dev.vendor, "Google");
	ck_assert_int_eq(wproto_send(chan[0], &dev, sizeof(dev), -1), 0);
	/* the open loads the plugin: its facts come before the answer */
	for (;;) {
		n = wproto_recv(chan[0], buf, sizeof(buf), &fd);
		ck_assert_int_gt(n, 0);
		if (*(uint32_t *)(void *)buf != WMSG_FACTS)
			break;
		facts = true;
	}
	ck_assert(facts);
	ck_assert_int_eq(n, (long)sizeof(a));
	memcpy(&a, buf, sizeof(a));
	ck_assert_msg(a.rc == ACCELD_OK, "%s", a.err);
	for (int i = 0; i < 8; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	ck_assert_int_eq(wshm_create(&shm, wproto_layout(&w, run.off, &run.nbuf)), 0);
	memcpy((char *)shm.map + run.off[0], x, sizeof(x));
	memcpy((char *)shm.map + run.off[1], y, sizeof(y));
	run.shm_size = shm.size;
	run.work = w;
	ck_assert_int_eq(wproto_send(chan[0], &run, sizeof(run), shm.fd), 0);
	do
		n = wproto_recv(chan[0], buf, sizeof(buf), &fd);
	while (n > 0 && *(uint32_t *)(void *)buf == WMSG_FACTS);
	ck_assert_int_eq(n, (long)sizeof(a));
	memcpy(&a, buf, sizeof(a));
	ck_assert_msg(a.rc == ACCELD_OK, "%s", a.err);
	memcpy(out, (char *)shm.map + run.off[2], sizeof(out));
	for (int i = 0; i < 8; i++)
		ck_assert_float_eq_tol(out[i], 2.0f * (float)i + 1.0f, 1e-6f);
	/* the control socket's end ends the worker at once, with status 0 */
	close(ctl);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(chan[0]);
	wshm_release(&shm);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("worker_main");
	TCase *tc = tcase_create("worker_main");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, refuses_without_its_socket);
	tcase_add_test(tc, runs_a_job_in_shared_memory);
	suite_add_tcase(s, tc);
	return s;
}
