/* Unit tests for conns.c: budgets, the choice of a connection to close, and request deadlines, on fake sockets. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check_main.h"
#include "http/conns.h"

#define MS 1000000ull
#define S 1000000000ull
#define NFD 64

/* The fake kernel: what each descriptor's client has sent, and which descriptors were cut. */
static struct conns_peer peers[NFD];
static bool known[NFD];
static bool was_cut[NFD];
static unsigned ncut;

static bool fake_peer(void *ctx, int fd, struct conns_peer *out)
{
	(void)ctx;
	if (!known[fd])
		return false;
	*out = peers[fd];
	return true;
}

static void fake_cut(void *ctx, int fd)
{
	(void)ctx;
	ck_assert_msg(!was_cut[fd], "fd %d cut twice", fd);
	was_cut[fd] = true;
	ncut++;
}

static const struct conns_ops fake_ops = {fake_peer, fake_cut, NULL};

static void reset(void)
{
	memset(peers, 0, sizeof(peers));
	memset(was_cut, 0, sizeof(was_cut));
	for (int i = 0; i < NFD; i++)
		known[i] = true; /* a connection has sent nothing unless a test says so */
	ncut = 0;
}

static struct conns *table(unsigned max, unsigned per_addr, uint64_t window_ns)
{
	reset();
	return conns_new(&(struct conns_opts){.max = max, .max_per_addr = per_addr, .request_window_ns = window_ns,
					      .ops = &fake_ops});
}

/* Opens fd from 10.0.0.host at now. */
static struct conn *open_from(struct conns *t, int fd, int host, uint64_t now)
{
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(0x0a000000u | (unsigned)host);
	return conns_open(t, fd, (const struct sockaddr *)&sa, sizeof(sa), now);
}

/* A connection that has been answered once at `at` and idles since. */
static struct conn *idle_at(struct conns *t, int fd, uint64_t opened, uint64_t at)
{
	struct conn *c = open_from(t, fd, fd, opened);

	ck_assert_ptr_nonnull(c);
	conns_request_line(t, c, opened);
	conns_headers(t, c, opened);
	conns_received(t, c, opened);
	conns_answered(t, c, at);
	return c;
}

static struct conns_stats stats_of(struct conns *t)
{
	struct conns_stats st;

	conns_stats(t, &st);
	return st;
}

START_TEST(under_the_budget_nothing_is_closed)
{
	struct conns *t = table(3, 0, 0);

	for (int fd = 1; fd <= 3; fd++)
		ck_assert_ptr_nonnull(open_from(t, fd, fd, 10 * S));
	ck_assert_uint_eq(ncut, 0);
	ck_assert_uint_eq(stats_of(t).open, 3);
	ck_assert_uint_eq(stats_of(t).max, 3);
	conns_free(t);
}
END_TEST

START_TEST(the_longest_wait_goes_first)
{
	struct conns *t = table(4, 0, 0);
	struct conns_stats st;

	idle_at(t, 1, 0, 1 * S);                       /* idle since 1 s */
	ck_assert_ptr_nonnull(open_from(t, 2, 2, 2 * S)); /* silent since 2 s */
	idle_at(t, 3, 0, 3 * S);                       /* idle since 3 s */
	ck_assert_ptr_nonnull(open_from(t, 4, 4, 4 * S)); /* silent since 4 s */
	ck_assert_ptr_nonnull(open_from(t, 5, 5, 10 * S));
	ck_assert(was_cut[1]);
	ck_assert_ptr_nonnull(open_from(t, 6, 6, 10 * S));
	ck_assert(was_cut[2]);
	ck_assert_ptr_nonnull(open_from(t, 7, 7, 10 * S));
	ck_assert(was_cut[3]);
	ck_assert_ptr_nonnull(open_from(t, 8, 8, 10 * S));
	ck_assert(was_cut[4]);
	ck_assert_uint_eq(ncut, 4);
	st = stats_of(t);
	ck_assert_uint_eq(st.evicted[CONNS_EVICTED_IDLE_KEEPALIVE], 2);
	ck_assert_uint_eq(st.evicted[CONNS_EVICTED_INCOMPLETE_REQUEST], 2);
	ck_assert_uint_eq(st.open, 4);
	conns_free(t);
}
END_TEST

START_TEST(a_just_answered_client_keeps_its_connection)
{
	struct conns *t = table(2, 0, 0);

	ck_assert_ptr_nonnull(open_from(t, 1, 1, 0)); /* silent for long */
	idle_at(t, 2, 9 * S, 10 * S);                   /* answered a moment ago */
	ck_assert_ptr_nonnull(open_from(t, 3, 3, 10 * S + 1 * MS));
	ck_assert(was_cut[1]);
	ck_assert(!was_cut[2]);
	/* nothing older qualifies (fd 3's request is arriving): the idle one goes, however fresh */
	peers[3].bytes_in = 10;
	ck_assert_ptr_nonnull(open_from(t, 4, 4, 10 * S + 2 * MS));
	ck_assert(was_cut[2]);
	ck_assert_uint_eq(stats_of(t).evicted[CONNS_EVICTED_IDLE_KEEPALIVE], 1);
	conns_free(t);
}
END_TEST

START_TEST(a_silent_connection_makes_room_oldest_first)
{
	struct conns *t = table(2, 0, 0);

	ck_assert_ptr_nonnull(open_from(t, 1, 1, 0));
	ck_assert_ptr_nonnull(open_from(t, 2, 2, 1 * MS));
	/* nothing received from either: the one that has waited longer goes, however short the wait */
	ck_assert_ptr_nonnull(open_from(t, 3, 3, 2 * MS));
	ck_assert(was_cut[1]);
	ck_assert(!was_cut[2]);
	/* one whose first bytes are in is spared; the newcomer is never its own victim */
	peers[2].bytes_in = 20;
	ck_assert_ptr_nonnull(open_from(t, 4, 4, 3 * MS));
	ck_assert(was_cut[3]);
	peers[4].bytes_in = 20;
	ck_assert_ptr_null(open_from(t, 5, 5, 4 * MS));
	ck_assert(was_cut[5]);
	ck_assert_uint_eq(stats_of(t).evicted[CONNS_EVICTED_INCOMPLETE_REQUEST], 2);
	ck_assert_uint_eq(stats_of(t).refused[CONNS_REFUSED_LIMIT], 1);
	conns_free(t);
}
END_TEST

START_TEST(a_request_arriving_in_good_time_is_spared)
{
	struct conns *t = table(1, 0, 0);

	ck_assert_ptr_nonnull(open_from(t, 1, 1, 0));
	peers[1].bytes_in = 3; /* "GET" of a request line still arriving */
	ck_assert_ptr_null(open_from(t, 2, 2, 1 * S));
	ck_assert(!was_cut[1]);
	/* unknown to the kernel: spared too */
	known[1] = false;
	ck_assert_ptr_null(open_from(t, 3, 3, 1 * S));
	ck_assert(!was_cut[1]);
	/* the line and headers have had their grace */
	ck_assert_ptr_nonnull(open_from(t, 4, 4, CONNS_GRACE_MS * MS));
	ck_assert(was_cut[1]);
	conns_free(t);
}
END_TEST

START_TEST(headers_have_a_grace_from_the_request_line_after_idling)
{
	struct conns *t = table(1, 0, 0);
	struct conn *c = idle_at(t, 1, 0, 1 * S);

	conns_request_line(t, c, 10 * S); /* ten seconds of idling, then a request begins */
	ck_assert_ptr_null(open_from(t, 2, 2, 11 * S));
	ck_assert(!was_cut[1]);
	ck_assert_ptr_nonnull(open_from(t, 3, 3, 10 * S + CONNS_GRACE_MS * MS));
	ck_assert(was_cut[1]);
	ck_assert_uint_eq(stats_of(t).evicted[CONNS_EVICTED_INCOMPLETE_REQUEST], 1);
	conns_free(t);
}
END_TEST

START_TEST(a_body_is_spared_while_it_flows)
{
	struct conns *t = table(1, 0, 0);
	struct conn *c = open_from(t, 1, 1, 0);

	conns_request_line(t, c, 0);
	conns_headers(t, c, 0);
	peers[1].bytes_in = 5000;
	peers[1].quiet_ms = 100; /* long under way, but a piece came 100 ms ago */
	ck_assert_ptr_null(open_from(t, 2, 2, 30 * S));
	ck_assert(!was_cut[1]);
	peers[1].quiet_ms = CONNS_GRACE_MS; /* stalled */
	ck_assert_ptr_nonnull(open_from(t, 3, 3, 31 * S));
	ck_assert(was_cut[1]);
	conns_free(t);
}
END_TEST

START_TEST(a_received_request_is_never_closed)
{
	struct conns *t = table(2, 0, 0);
	struct conn *a = open_from(t, 1, 1, 0);
	struct conn *b = open_from(t, 2, 2, 0);

	conns_headers(t, a, 0);
	conns_received(t, a, 0);
	conns_headers(t, b, 0);
	conns_received(t, b, 0);
	ck_assert_ptr_null(open_from(t, 3, 3, 100 * S));
	ck_assert_ptr_null(open_from(t, 4, 4, 100 * S));
	ck_assert_uint_eq(stats_of(t).refused[CONNS_REFUSED_LIMIT], 2);
	ck_assert(!was_cut[1] && !was_cut[2]);
	/* answered: idle, and so the next to go */
	conns_answered(t, a, 101 * S);
	ck_assert_ptr_nonnull(open_from(t, 5, 5, 101 * S));
	ck_assert(was_cut[1]);
	ck_assert_uint_eq(stats_of(t).open, 2);
	conns_free(t);
}
END_TEST

START_TEST(an_address_makes_room_among_its_own)
{
	struct conns *t = table(10, 2, 0);

	ck_assert_ptr_nonnull(open_from(t, 1, 2, 0)); /* 10.0.0.2: the oldest of all */
	ck_assert_ptr_nonnull(open_from(t, 2, 1, 1 * S));
	ck_assert_ptr_nonnull(open_from(t, 3, 1, 2 * S));
	ck_assert_ptr_nonnull(open_from(t, 4, 1, 5 * S)); /* 10.0.0.1 is at its budget: its own oldest goes */
	ck_assert(was_cut[2]);
	ck_assert(!was_cut[1]);
	ck_assert(!was_cut[3]);
	ck_assert_uint_eq(ncut, 1);
	ck_assert_uint_eq(stats_of(t).evicted[CONNS_EVICTED_INCOMPLETE_REQUEST], 1);
	ck_assert_uint_eq(stats_of(t).open, 3);
	conns_free(t);
}
END_TEST

START_TEST(an_address_with_only_busy_connections_is_refused)
{
	struct conns *t = table(10, 2, 0);

	for (int fd = 1; fd <= 2; fd++) {
		struct conn *c = open_from(t, fd, 1, 0);

		conns_headers(t, c, 0);
		conns_received(t, c, 0);
	}
	ck_assert_ptr_nonnull(open_from(t, 3, 2, 0));
	ck_assert_ptr_null(open_from(t, 4, 1, 50 * S));
	ck_assert(was_cut[4]);
	ck_assert(!was_cut[3]); /* the other address's silent connection is not a candidate */
	ck_assert_uint_eq(stats_of(t).refused[CONNS_REFUSED_PER_IP], 1);
	ck_assert_ptr_nonnull(open_from(t, 5, 3, 50 * S)); /* other addresses still get in */
	ck_assert_uint_eq(stats_of(t).open, 4);
	conns_free(t);
}
END_TEST

START_TEST(closing_gives_the_slots_back)
{
	struct conns *t = table(2, 1, 0);
	struct conn *a = open_from(t, 1, 1, 0);

	conns_received(t, a, 0);
	ck_assert_ptr_null(open_from(t, 2, 1, 0));
	conns_close(t, a);
	ck_assert_uint_eq(stats_of(t).open, 0);
	ck_assert_ptr_nonnull(open_from(t, 3, 1, 0)); /* the address's count went back to 0 */
	conns_close(t, NULL);
	conns_free(t);
}
END_TEST

START_TEST(a_cut_entry_ignores_later_reports)
{
	struct conns *t = table(1, 0, 0);
	struct conn *a = open_from(t, 1, 1, 0);

	ck_assert_ptr_nonnull(open_from(t, 2, 2, 1 * S)); /* a is silent: it goes */
	ck_assert(was_cut[1]);
	/* the server may still report on it before it sees the end of the stream */
	conns_request_line(t, a, 1 * S);
	conns_headers(t, a, 1 * S);
	conns_received(t, a, 1 * S);
	conns_answered(t, a, 1 * S);
	ck_assert_uint_eq(stats_of(t).open, 1);
	ck_assert_uint_eq(conns_reap(t, 100 * S), 0);
	conns_close(t, a);
	ck_assert_uint_eq(stats_of(t).open, 1);
	conns_free(t);
}
END_TEST

START_TEST(late_requests_are_cut_at_their_deadline)
{
	struct conns *t = table(10, 0, 10 * S);
	struct conn *b;
	struct conn *c;

	ck_assert_ptr_nonnull(open_from(t, 1, 1, 0));
	b = open_from(t, 2, 2, 0);
	conns_received(t, b, 1 * S);
	c = idle_at(t, 3, 0, 5 * S);
	conns_request_line(t, c, 12 * S); /* the request line does not move the deadline */
	ck_assert_uint_eq(conns_reap(t, 10 * S), 0);
	ck_assert_uint_eq(conns_reap(t, 10 * S + 1), 1);
	ck_assert(was_cut[1]);
	ck_assert_uint_eq(conns_reap(t, 15 * S + 1), 1);
	ck_assert(was_cut[3]);
	ck_assert_uint_eq(conns_reap(t, 1000 * S), 0); /* a request being answered has no deadline */
	ck_assert(!was_cut[2]);
	ck_assert_uint_eq(stats_of(t).timed_out, 2);
	ck_assert_uint_eq(stats_of(t).open, 1);
	conns_answered(t, b, 1000 * S);
	ck_assert_uint_eq(conns_reap(t, 1010 * S + 1), 1);
	conns_free(t);
}
END_TEST

START_TEST(kernel_lookups_per_choice_are_bounded)
{
	struct conns *t = table(CONNS_MAX_PROBES + 1, 0, 0);

	/* connections whose request line is still arriving, each worth a look-up, then one silent connection */
	for (int fd = 1; fd <= CONNS_MAX_PROBES; fd++) {
		ck_assert_ptr_nonnull(open_from(t, fd, fd, (uint64_t)fd * MS));
		peers[fd].bytes_in = 1;
	}
	ck_assert_ptr_nonnull(open_from(t, CONNS_MAX_PROBES + 1, 0, 40 * MS));
	ck_assert_ptr_null(open_from(t, CONNS_MAX_PROBES + 2, 0, 500 * MS));
	ck_assert(!was_cut[CONNS_MAX_PROBES + 1]);
	conns_free(t);
}
END_TEST

START_TEST(cause_names)
{
	ck_assert_str_eq(conns_refusal_name(CONNS_REFUSED_LIMIT), "limit");
	ck_assert_str_eq(conns_refusal_name(CONNS_REFUSED_PER_IP), "per_ip");
	ck_assert_str_eq(conns_eviction_name(CONNS_EVICTED_IDLE_KEEPALIVE), "idle_keepalive");
	ck_assert_str_eq(conns_eviction_name(CONNS_EVICTED_INCOMPLETE_REQUEST), "incomplete_request");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("conns");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, under_the_budget_nothing_is_closed);
	tcase_add_test(tc, the_longest_wait_goes_first);
	tcase_add_test(tc, a_just_answered_client_keeps_its_connection);
	tcase_add_test(tc, a_silent_connection_makes_room_oldest_first);
	tcase_add_test(tc, a_request_arriving_in_good_time_is_spared);
	tcase_add_test(tc, headers_have_a_grace_from_the_request_line_after_idling);
	tcase_add_test(tc, a_body_is_spared_while_it_flows);
	tcase_add_test(tc, a_received_request_is_never_closed);
	tcase_add_test(tc, an_address_makes_room_among_its_own);
	tcase_add_test(tc, an_address_with_only_busy_connections_is_refused);
	tcase_add_test(tc, closing_gives_the_slots_back);
	tcase_add_test(tc, a_cut_entry_ignores_later_reports);
	tcase_add_test(tc, late_requests_are_cut_at_their_deadline);
	tcase_add_test(tc, kernel_lookups_per_choice_are_bounded);
	tcase_add_test(tc, cause_names);
	suite_add_tcase(s, tc);
	return s;
}
