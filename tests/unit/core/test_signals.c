/*
 * Unit tests for signals.c: SIGTERM and SIGINT reach signals_wait through the self-pipe, and SIGPIPE no longer kills
 * the process. Each test runs in a child of its own (Check's fork mode), so the handlers it installs go with it.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "core/signals.h"

START_TEST(nothing_pending_is_zero)
{
	ck_assert_int_eq(signals_init(), 0);
	ck_assert_int_eq(signals_wait(0), 0);
}
END_TEST

START_TEST(term_and_int_are_reported_in_order)
{
	ck_assert_int_eq(signals_init(), 0);
	/* raise() runs the handler before it returns: the byte is in the pipe, no waiting involved */
	ck_assert_int_eq(raise(SIGTERM), 0);
	ck_assert_int_eq(raise(SIGINT), 0);
	ck_assert_int_eq(signals_wait(0), SIGTERM);
	ck_assert_int_eq(signals_wait(0), SIGINT);
	ck_assert_int_eq(signals_wait(0), 0); /* each signal is reported once */
}
END_TEST

START_TEST(init_twice_keeps_one_pipe)
{
	ck_assert_int_eq(signals_init(), 0);
	ck_assert_int_eq(raise(SIGTERM), 0);
	ck_assert_int_eq(signals_init(), 0); /* a second call neither fails nor loses what is pending */
	ck_assert_int_eq(signals_wait(0), SIGTERM);
}
END_TEST

START_TEST(a_closed_pipe_is_an_error_not_a_death)
{
	int fds[2];
	char b = 'x';

	ck_assert_int_eq(signals_init(), 0);
	ck_assert_int_eq(pipe(fds), 0);
	close(fds[0]);
	errno = 0;
	ck_assert_int_eq(write(fds[1], &b, 1), -1); /* SIGPIPE is ignored: the writer sees EPIPE and lives */
	ck_assert_int_eq(errno, EPIPE);
	close(fds[1]);
	ck_assert_int_eq(signals_wait(0), 0); /* and it is no termination */
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("signals");
	TCase *tc = tcase_create("signals");

	tcase_add_test(tc, nothing_pending_is_zero);
	tcase_add_test(tc, term_and_int_are_reported_in_order);
	tcase_add_test(tc, init_twice_keeps_one_pipe);
	tcase_add_test(tc, a_closed_pipe_is_an_error_not_a_death);
	suite_add_tcase(s, tc);
	return s;
}
