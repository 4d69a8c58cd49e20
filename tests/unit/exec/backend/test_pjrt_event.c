/*
 * Unit tests for pjrt_event.c against a plugin of this file's own (the few calls it makes): an error taken into a
 * message, waiting for an event for ever and until a deadline (the event left to the caller when it passes, and
 * its status destroyed when it comes later), readiness, and destroying nothing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "core/clock.h"
#include "exec/backend/pjrt_event.h"

struct PJRT_Error {
	PJRT_Error_Code code;
	char msg[64];
};

struct PJRT_Event {
	pthread_mutex_t mu;
	bool ready;
	PJRT_Error_Code code; /* its status once ready */
	PJRT_Event_OnReadyCallback cb;
	void *arg;
};

static PJRT_Api api;
static atomic_int live_errors, live_events;

static PJRT_Error *error_new(PJRT_Error_Code code, const char *msg)
{
	PJRT_Error *e;

	if (code == PJRT_Error_Code_OK)
		return NULL;
	e = calloc(1, sizeof(*e));
	e->code = code;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	atomic_fetch_add(&live_errors, 1);
	return e;
}

static void error_destroy(PJRT_Error_Destroy_Args *a)
{
	if (a->error != NULL)
		atomic_fetch_sub(&live_errors, 1);
	free(a->error);
}

static void error_message(PJRT_Error_Message_Args *a)
{
	a->message = a->error->msg;
	a->message_size = strlen(a->error->msg);
}

static PJRT_Error *error_code(PJRT_Error_GetCode_Args *a)
{
	a->code = a->error->code;
	return NULL;
}

static PJRT_Event *event_new(void)
{
	PJRT_Event *ev = calloc(1, sizeof(*ev));

	pthread_mutex_init(&ev->mu, NULL);
	atomic_fetch_add(&live_events, 1);
	return ev;
}

/* Makes ev ready with code: its callback, if one waits, gets the status. */
static void event_fire(PJRT_Event *ev, PJRT_Error_Code code)
{
	PJRT_Event_OnReadyCallback cb;
	void *arg;

	pthread_mutex_lock(&ev->mu);
	ev->ready = true;
	ev->code = code;
	cb = ev->cb;
	arg = ev->arg;
	pthread_mutex_unlock(&ev->mu);
	if (cb != NULL)
		cb(error_new(code, "the program failed on the device"), arg);
}

static PJRT_Error *event_destroy(PJRT_Event_Destroy_Args *a)
{
	pthread_mutex_destroy(&a->event->mu);
	free(a->event);
	atomic_fetch_sub(&live_events, 1);
	return NULL;
}

static PJRT_Error *event_is_ready(PJRT_Event_IsReady_Args *a)
{
	pthread_mutex_lock(&a->event->mu);
	a->is_ready = a->event->ready;
	pthread_mutex_unlock(&a->event->mu);
	return NULL;
}

static PJRT_Error *event_await(PJRT_Event_Await_Args *a)
{
	for (;;) { /* these tests' events are fired before or by another thread */
		pthread_mutex_lock(&a->event->mu);
		if (a->event->ready) {
			PJRT_Error_Code code = a->event->code;

			pthread_mutex_unlock(&a->event->mu);
			return error_new(code, "the program failed on the device");
		}
		pthread_mutex_unlock(&a->event->mu);
		usleep(1000);
	}
}

static PJRT_Error *event_on_ready(PJRT_Event_OnReady_Args *a)
{
	bool now;

	pthread_mutex_lock(&a->event->mu);
	now = a->event->ready;
	a->event->cb = a->callback;
	a->event->arg = a->user_arg;
	pthread_mutex_unlock(&a->event->mu);
	if (now)
		a->callback(error_new(a->event->code, "the program failed on the device"), a->user_arg);
	return NULL;
}

static int buffers_destroyed;

static PJRT_Error *buffer_destroy(PJRT_Buffer_Destroy_Args *a)
{
	(void)a;
	buffers_destroyed++;
	return NULL;
}

static void setup(void)
{
	memset(&api, 0, sizeof(api));
	api.struct_size = sizeof(api);
	api.PJRT_Error_Destroy = (PJRT_Error_Destroy *)error_destroy;
	api.PJRT_Error_Message = (PJRT_Error_Message *)error_message;
	api.PJRT_Error_GetCode = error_code;
	api.PJRT_Event_Destroy = event_destroy;
	api.PJRT_Event_IsReady = event_is_ready;
	api.PJRT_Event_Await = event_await;
	api.PJRT_Event_OnReady = event_on_ready;
	api.PJRT_Buffer_Destroy = buffer_destroy;
	atomic_store(&live_errors, 0);
	atomic_store(&live_events, 0);
}

START_TEST(an_error_becomes_a_message)
{
	char err[128] = "";

	ck_assert_int_eq(pjrt_take(&api, NULL, "copy", err, sizeof(err)), PJRT_Error_Code_OK);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(pjrt_take(&api, error_new(PJRT_Error_Code_RESOURCE_EXHAUSTED, "Out of memory"), "copy", err,
				   sizeof(err)),
			 PJRT_Error_Code_RESOURCE_EXHAUSTED);
	ck_assert_str_eq(err, "copy: Out of memory");
	ck_assert_int_eq(atomic_load(&live_errors), 0);
}
END_TEST

START_TEST(awaited_for_ever_and_destroyed)
{
	PJRT_Event *ev = event_new();
	char err[128] = "";

	ck_assert(!pjrt_event_ready(&api, ev));
	event_fire(ev, PJRT_Error_Code_INTERNAL);
	ck_assert(pjrt_event_ready(&api, ev));
	ck_assert_int_eq(pjrt_await(&api, ev, "the kernel", err, sizeof(err)), PJRT_Error_Code_INTERNAL);
	ck_assert_str_eq(err, "the kernel: the program failed on the device");
	ck_assert_int_eq(atomic_load(&live_events), 0);
	/* deadline 0: for ever, by PJRT_Event_Await */
	ev = event_new();
	event_fire(ev, PJRT_Error_Code_OK);
	{
		int code = -1;

		ck_assert_int_eq(pjrt_await_until(&api, ev, 0, &code, err, sizeof(err)), 1);
		ck_assert_int_eq(code, PJRT_Error_Code_OK);
	}
	ck_assert_int_eq(atomic_load(&live_events), 0);
	ck_assert_int_eq(atomic_load(&live_errors), 0);
}
END_TEST

static void *fire_later(void *arg)
{
	usleep(20000);
	event_fire(arg, PJRT_Error_Code_OK);
	return NULL;
}

START_TEST(ready_before_the_deadline)
{
	PJRT_Event *ev = event_new();
	pthread_t t;
	int code = -1;
	char err[128] = "";

	ck_assert_int_eq(pthread_create(&t, NULL, fire_later, ev), 0);
	ck_assert_int_eq(pjrt_await_until(&api, ev, clock_mono_ns() + 60ull * 1000000000ull, &code, err, sizeof(err)), 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(code, PJRT_Error_Code_OK);
	ck_assert_int_eq(atomic_load(&live_events), 0);
}
END_TEST

/* The deadline passes first: the event stays the caller's; its status, when it comes, is destroyed with nobody
 * waiting. */
START_TEST(the_deadline_passes_first)
{
	PJRT_Event *ev = event_new();
	int code = -1;
	char err[128] = "";

	ck_assert_int_eq(pjrt_await_until(&api, ev, clock_mono_ns() + 5000000ull, &code, err, sizeof(err)), 0);
	ck_assert_int_eq(atomic_load(&live_events), 1);
	event_fire(ev, PJRT_Error_Code_INTERNAL);
	ck_assert_int_eq(atomic_load(&live_errors), 0);
	pjrt_destroy_event(&api, ev);
	ck_assert_int_eq(atomic_load(&live_events), 0);
}
END_TEST

START_TEST(nothing_to_destroy)
{
	buffers_destroyed = 0;
	pjrt_destroy_event(&api, NULL);
	pjrt_destroy_buffer(&api, NULL);
	ck_assert_int_eq(buffers_destroyed, 0);
	pjrt_destroy_buffer(&api, (PJRT_Buffer *)&api);
	ck_assert_int_eq(buffers_destroyed, 1);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("pjrt_event");
	TCase *tc = tcase_create("events");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, an_error_becomes_a_message);
	tcase_add_test(tc, awaited_for_ever_and_destroyed);
	tcase_add_test(tc, ready_before_the_deadline);
	tcase_add_test(tc, the_deadline_passes_first);
	tcase_add_test(tc, nothing_to_destroy);
	suite_add_tcase(s, tc);
	return s;
}
