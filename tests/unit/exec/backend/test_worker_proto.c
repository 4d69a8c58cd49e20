/* The worker protocol: the one list of a work item's buffers, their layout in shared memory, messages with a
 * descriptor, and a memfd mapped on both sides. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_main.h"
#include "exec/backend/worker_proto.h"

START_TEST(work_buffers_listed_once)
{
	float x[4];
	float out[4];
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 4, .in = {x, NULL}, .out = out};
	struct backend_buffer b[BACKEND_WORK_BUFFERS_MAX];

	/* saxpy: x, y, and its output; y left out is still listed (its pointer NULL) */
	ck_assert_uint_eq(backend_work_buffers(&w, b), 3);
	ck_assert_ptr_eq(b[0].in, &w.in[0]);
	ck_assert_ptr_eq(b[1].in, &w.in[1]);
	ck_assert_ptr_eq(b[2].out, &w.out);
	ck_assert_uint_eq(b[2].bytes, 4 * sizeof(float));
	/* dot: a scalar output goes to value, not a buffer */
	w.kernel = KERNEL_DOT;
	ck_assert_uint_eq(backend_work_buffers(&w, b), 2);
	ck_assert_ptr_null(b[1].out);
	/* sgemm: a (m x k), b (k x n), c (m x n), the product (m x n) */
	w = (struct kernel_work){.kernel = KERNEL_SGEMM, .m = 2, .n = 3, .k = 5};
	ck_assert_uint_eq(backend_work_buffers(&w, b), 4);
	ck_assert_uint_eq(b[0].bytes, 10 * sizeof(float));
	ck_assert_uint_eq(b[1].bytes, 15 * sizeof(float));
	ck_assert_uint_eq(b[3].bytes, 6 * sizeof(float));
}
END_TEST

START_TEST(layout_and_place)
{
	float x[10];
	float out[10];
	char map[4096];
	struct kernel_work w = {.kernel = KERNEL_SAXPY, .n = 10, .in = {x, NULL}, .out = out};
	uint64_t off[BACKEND_WORK_BUFFERS_MAX];
	uint32_t nbuf;
	size_t need = wproto_layout(&w, off, &nbuf);

	ck_assert_uint_eq(nbuf, 3);
	ck_assert_uint_eq(off[0], 0);
	ck_assert(off[1] == WPROTO_NOWHERE);
	ck_assert_uint_eq(off[2], 64); /* 40 bytes, 64-aligned */
	ck_assert_uint_eq(need, 128);
	/* the other side points the work into its mapping */
	ck_assert(wproto_place(&w, off, nbuf, map, sizeof(map)));
	ck_assert_ptr_eq(w.in[0], (float *)(void *)map);
	ck_assert_ptr_null(w.in[1]);
	ck_assert_ptr_eq(w.out, (float *)(void *)(map + 64));
	/* nothing that does not fit is trusted */
	ck_assert(!wproto_place(&w, off, nbuf, map, 100));
	ck_assert(!wproto_place(&w, off, 2, map, sizeof(map)));
	off[2] = 65;
	ck_assert(!wproto_place(&w, off, nbuf, map, sizeof(map)));
	off[2] = UINT64_MAX - 8;
	ck_assert(!wproto_place(&w, off, nbuf, map, sizeof(map)));
}
END_TEST

START_TEST(messages_carry_a_descriptor_and_shared_memory_round_trips)
{
	int sv[2];
	struct wshm a = WSHM_INIT;
	struct wshm b = WSHM_INIT;
	struct wmsg_run m = {.type = WMSG_RUN, .nbuf = 3, .shm_size = 8192};
	struct wmsg_run got;
	int fd = -1;
	char small[8];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	ck_assert_int_eq(wshm_create(&a, 8192), 0);
	memcpy(a.map, "inputs", 7);
	m.off[1] = 4096;
	ck_assert_int_eq(wproto_send(sv[0], &m, sizeof(m), a.fd), 0);
	ck_assert_int_eq(wproto_recv(sv[1], &got, sizeof(got), &fd), (long)sizeof(got));
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_eq(got.off[1], 4096);
	ck_assert_int_eq(wshm_adopt(&b, fd, (size_t)got.shm_size), 0);
	ck_assert_str_eq((char *)b.map, "inputs");
	memcpy((char *)b.map + 4096, "output", 7); /* the worker writes, the daemon reads */
	ck_assert_str_eq((char *)a.map + 4096, "output");
	/* a message longer than the reader's buffer is refused, not cut */
	ck_assert_int_eq(wproto_send(sv[0], &m, sizeof(m), -1), 0);
	ck_assert_int_eq(wproto_recv(sv[1], small, sizeof(small), &fd), -1);
	ck_assert_int_eq(fd, -1);
	/* the other end gone: 0, and sending says so without a signal */
	close(sv[0]);
	ck_assert_int_eq(wproto_recv(sv[1], &got, sizeof(got), &fd), 0);
	ck_assert_int_eq(wproto_send(sv[1], &m, sizeof(m), -1), -1);
	close(sv[1]);
	wshm_release(&a);
	wshm_release(&b);
	ck_assert_int_eq(a.fd, -1);
	ck_assert_ptr_null(b.map);
}
END_TEST

START_TEST(stamp_names_the_build_and_sizes)
{
	char s[96];
	char want[32];

	wproto_stamp(s, sizeof(s));
	snprintf(want, sizeof(want), " d%zu w%zu", sizeof(struct device), sizeof(struct kernel_work));
	ck_assert_ptr_nonnull(strstr(s, want));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("worker_proto");
	TCase *tc = tcase_create("worker_proto");

	tcase_add_test(tc, work_buffers_listed_once);
	tcase_add_test(tc, layout_and_place);
	tcase_add_test(tc, messages_carry_a_descriptor_and_shared_memory_round_trips);
	tcase_add_test(tc, stamp_names_the_build_and_sizes);
	suite_add_tcase(s, tc);
	return s;
}
