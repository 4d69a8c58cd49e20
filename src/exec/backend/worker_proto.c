/* worker_proto: the messages between the daemon and a backend's worker process, and their shared memory. */
#include "exec/backend/worker_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/version.h"

#define ALIGN 64u

void wproto_stamp(char *out, size_t outsz)
{
	snprintf(out, outsz, "%.16s d%zu w%zu t%zu a%zu r%zu", version_string(), sizeof(struct device),
		 sizeof(struct kernel_work), sizeof(struct backend_timing), sizeof(struct wmsg_answer),
		 sizeof(struct wmsg_run));
}

int wproto_send(int sock, const void *msg, size_t len, int fd)
{
	struct iovec iov = {.iov_base = (void *)(uintptr_t)msg, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

long wproto_recv(int sock, void *buf, size_t cap, int *fd)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		size_t nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got); /* one descriptor a message: more is not this protocol */
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		errno = EMSGSIZE;
		return -1;
	}
	return (long)n;
}

int wshm_create(struct wshm *s, size_t size)
{
	int fd = memfd_create("acceld-work", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return wshm_adopt(s, fd, size);
}

int wshm_adopt(struct wshm *s, int fd, size_t size)
{
	void *map = size > 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;

	if (map == MAP_FAILED) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	wshm_release(s);
	s->fd = fd;
	s->map = map;
	s->size = size;
	return 0;
}

void wshm_release(struct wshm *s)
{
	if (s->map != NULL)
		munmap(s->map, s->size);
	if (s->fd >= 0)
		close(s->fd);
	*s = (struct wshm)WSHM_INIT;
}

size_t wproto_layout(struct kernel_work *w, uint64_t *off, uint32_t *nbuf)
{
	struct backend_buffer b[BACKEND_WORK_BUFFERS_MAX];
	size_t n = backend_work_buffers(w, b);
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		bool present = b[i].in != NULL ? *b[i].in != NULL : *b[i].out != NULL;

		off[i] = present ? at : WPROTO_NOWHERE;
		if (present)
			at += (b[i].bytes + ALIGN - 1) / ALIGN * ALIGN;
	}
	*nbuf = (uint32_t)n;
	return at;
}

bool wproto_place(struct kernel_work *w, const uint64_t *off, uint32_t nbuf, void *map, size_t size)
{
	struct backend_buffer b[BACKEND_WORK_BUFFERS_MAX];
	size_t n = backend_work_buffers(w, b);

	if (n != nbuf)
		return false;
	for (size_t i = 0; i < n; i++) {
		void *p = NULL;

		if (off[i] != WPROTO_NOWHERE) {
			if (off[i] > size || b[i].bytes > size - off[i] || off[i] % ALIGN != 0)
				return false;
			p = (char *)map + off[i];
		}
		if (b[i].in != NULL)
			*b[i].in = p;
		else
			*b[i].out = p;
	}
	return true;
}
