/* signals: a self-pipe for SIGTERM and SIGINT. */
#include "core/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int pipe_fd[2] = {-1, -1};

static void on_signal(int signo)
{
	unsigned char b = (unsigned char)signo;
	int saved = errno;

	/* a full pipe already holds a pending signal; nothing is lost by dropping this byte */
	if (write(pipe_fd[1], &b, 1) < 0)
		errno = saved;
	errno = saved;
}

int signals_init(void)
{
	struct sigaction sa;

	if (pipe_fd[0] < 0 && pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int signals_wait(int timeout_ms)
{
	struct pollfd pfd = {.fd = pipe_fd[0], .events = POLLIN};
	unsigned char b;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	if (read(pipe_fd[0], &b, 1) != 1)
		return 0;
	return b;
}
