/*
 * pjrt_event: a PJRT plugin's errors, events and buffers as the backend waits on and lets go of them: an error taken
 * into a message, an event awaited (for ever, or until a deadline, leaving it to the caller when the deadline
 * passes first), and events and buffers destroyed. Only the API table is needed, so each works on any plugin.
 */
#ifndef ACCELD_PJRT_EVENT_H
#define ACCELD_PJRT_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/backend/pjrt_abi.h"

/* Takes a PJRT error into err as "what: message" (nothing for none); returns its code. */
int pjrt_take(const PJRT_Api *api, PJRT_Error *e, const char *what, char *err, size_t errsz);

/* Destroy an event or a buffer; NULL is nothing. A buffer's memory goes once the programs reading it are done. */
void pjrt_destroy_event(const PJRT_Api *api, PJRT_Event *ev);
void pjrt_destroy_buffer(const PJRT_Api *api, PJRT_Buffer *b);

/* Waits for ev, destroys it, and takes its status into err; returns the code. */
int pjrt_await(const PJRT_Api *api, PJRT_Event *ev, const char *what, char *err, size_t errsz);

/* Whether ev is ready (an event the plugin cannot say of counts as ready). */
bool pjrt_event_ready(const PJRT_Api *api, PJRT_Event *ev);

/*
 * Waits for ev until deadline_ns on the monotonic clock (0: for ever). Returns 1 when it is ready (its status taken
 * into err: the code in *code; ev destroyed), 0 when the deadline passed first (ev is left to the caller).
 */
int pjrt_await_until(const PJRT_Api *api, PJRT_Event *ev, uint64_t deadline_ns, int *code, char *err,
		     size_t errsz);

#endif
