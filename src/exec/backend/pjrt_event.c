/* Errors, events and buffers of a PJRT plugin: taking, waiting (with a deadline) and destroying. */
#include "exec/backend/pjrt_event.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/mem.h"
#include "exec/backend/pjrt_plugin.h"

int pjrt_take(const PJRT_Api *api, PJRT_Error *e, const char *what, char *err, size_t errsz)
{
	char msg[512];
	int code = pjrt_error_take(api, e, msg, sizeof(msg));

	if (code != PJRT_Error_Code_OK)
		snprintf(err, errsz, "%.120s: %.380s", what, msg);
	return code;
}

void pjrt_destroy_event(const PJRT_Api *api, PJRT_Event *ev)
{
	PJRT_Event_Destroy_Args a = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};

	if (ev != NULL)
		pjrt_error_take(api, api->PJRT_Event_Destroy(&a), NULL, 0);
}

void pjrt_destroy_buffer(const PJRT_Api *api, PJRT_Buffer *b)
{
	PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b};

	if (b != NULL)
		pjrt_error_take(api, api->PJRT_Buffer_Destroy(&a), NULL, 0);
}

int pjrt_await(const PJRT_Api *api, PJRT_Event *ev, const char *what, char *err, size_t errsz)
{
	PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
	int code = pjrt_take(api, api->PJRT_Event_Await(&a), what, err, errsz);

	pjrt_destroy_event(api, ev);
	return code;
}

bool pjrt_event_ready(const PJRT_Api *api, PJRT_Event *ev)
{
	PJRT_Event_IsReady_Args a = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = ev};

	return pjrt_error_take(api, api->PJRT_Event_IsReady(&a), NULL, 0) != PJRT_Error_Code_OK || a.is_ready;
}

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	bool abandoned;              /* the run gave up: the callback destroys what it is given */
	PJRT_Error *error;
	const PJRT_Api *api;
	atomic_int refs;
};

static void waiter_unref(struct waiter *wt)
{
	if (atomic_fetch_sub(&wt->refs, 1) != 1)
		return;
	pthread_cond_destroy(&wt->cv);
	pthread_mutex_destroy(&wt->mu);
	free(wt);
}

static void on_ready(PJRT_Error *error, void *arg)
{
	struct waiter *wt = arg;

	pthread_mutex_lock(&wt->mu);
	wt->done = true;
	if (wt->abandoned)
		pjrt_error_take(wt->api, error, NULL, 0);
	else
		wt->error = error;
	pthread_cond_broadcast(&wt->cv);
	pthread_mutex_unlock(&wt->mu);
	waiter_unref(wt);
}

int pjrt_await_until(const PJRT_Api *api, PJRT_Event *ev, uint64_t deadline_ns, int *code, char *err,
		       size_t errsz)
{
	PJRT_Event_OnReady_Args r = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .event = ev,
				     .callback = on_ready};
	struct waiter *wt;
	pthread_condattr_t ca;
	int ready;

	if (deadline_ns == 0 || !pjrt_api_has(api, PJRT_Event_OnReady)) {
		*code = pjrt_await(api, ev, "the program failed", err, errsz);
		return 1;
	}
	wt = xcalloc(1, sizeof(*wt));
	pthread_mutex_init(&wt->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wt->cv, &ca);
	pthread_condattr_destroy(&ca);
	wt->api = api;
	atomic_init(&wt->refs, 2);
	r.user_arg = wt;
	if (pjrt_error_take(api, api->PJRT_Event_OnReady(&r), NULL, 0) != PJRT_Error_Code_OK) {
		waiter_unref(wt);
		waiter_unref(wt);
		*code = pjrt_await(api, ev, "the program failed", err, errsz);
		return 1;
	}
	pthread_mutex_lock(&wt->mu);
	while (!wt->done) {
		uint64_t now = clock_mono_ns();
		struct timespec ts;

		if (now >= deadline_ns)
			break;
		ts = clock_deadline(CLOCK_MONOTONIC, deadline_ns - now);
		pthread_cond_timedwait(&wt->cv, &wt->mu, &ts);
	}
	ready = wt->done;
	if (ready) {
		*code = pjrt_take(api, wt->error, "the program failed", err, errsz);
		wt->error = NULL;
	} else {
		wt->abandoned = true;
	}
	pthread_mutex_unlock(&wt->mu);
	waiter_unref(wt);
	if (ready)
		pjrt_destroy_event(api, ev);
	return ready;
}

