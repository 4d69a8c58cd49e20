/*
 * err: the one error enum of acceld, its names and its HTTP mapping.
 *
 * Domain modules return enum acceld_err and put results in out-parameters; the HTTP layer maps an error to a
 * reason of the reason table (reason.h), which gives its status, in one place (acceld_err_to_reason).
 */
#ifndef ACCELD_ERR_H
#define ACCELD_ERR_H

#include <stddef.h>

#include <jansson.h>

#include "core/reason.h"

enum acceld_err {
	ACCELD_OK = 0,
	ACCELD_EINVAL,         /* a value is malformed or out of range (400) */
	ACCELD_ENOTFOUND,      /* the named thing does not exist (404) */
	ACCELD_ECONFLICT,      /* no device meets the constraints (409) */
	ACCELD_ETOOLARGE,      /* the request or job exceeds a limit (413) */
	ACCELD_EUNPROCESSABLE, /* well-formed but impossible, e.g. model larger than memory (422) */
	ACCELD_EBUSY,          /* a queue is full; retry later (429) */
	ACCELD_EUNAVAILABLE,   /* draining, or a dependency is down (503) */
	ACCELD_ETIMEOUT,       /* a job overran its deadline (504) */
	ACCELD_EUNSUPPORTED,   /* the device cannot do this (422) */
	ACCELD_EDEVICE,        /* the device failed: build error, out of resources (502) */
	ACCELD_EIO,            /* an I/O or database error (500) */
	ACCELD_ENOMEM,         /* out of memory (503) */
	ACCELD_EHELD,          /* the device is held by another process, or still finishing abandoned work (409) */
	ACCELD_EDEVMEM,        /* the job does not fit the device's memory as its runtime reports it (413) */
	ACCELD_ECRASHED,       /* the worker process running the job died (502) */
	ACCELD_ERR_COUNT
};

/* Lower-case phrase for logs and messages, e.g. "not found". Never NULL. */
const char *acceld_err_str(enum acceld_err err);

/* The reason a problem answer for the error names (REASON_INTERNAL for ACCELD_OK or a value outside the enum). */
enum reason acceld_err_to_reason(enum acceld_err err);

/* The name of that reason, e.g. "NOT_FOUND"; "OK" for ACCELD_OK. Never NULL. */
const char *acceld_err_reason(enum acceld_err err);

/* HTTP status for the error (the status of its reason); 200 for ACCELD_OK. */
int acceld_err_http(enum acceld_err err);

/*
 * Why a domain module refused a request (a job, a health check, a price): the error, the reason its problem answer
 * names (which gives the status), a detail in words, and members to add to the problem. One struct for every
 * module; the HTTP layer and the commands answer it.
 */
struct refusal {
	enum acceld_err err;
	enum reason reason;
	char detail[512];
	json_t *extra;              /* members to add to the problem (owned; may be NULL) */
};

/* Fills r: err, reason and the detail. r->extra is left as it is. */
void refusal_set(struct refusal *r, enum acceld_err err, enum reason reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Releases r->extra; r may be used again. */
void refusal_release(struct refusal *r);

#endif
