/*
 * reason: every problem reason the HTTP API answers, with its status and title, in one table.
 *
 * A problem+json answer names its reason (UPPER_SNAKE, e.g. INVALID_PARAMETER); the status and the title come from
 * this table, so a reason is always sent with the same status. api/openapi.yaml lists the same table (x-reasons),
 * and the contract test compares the two through `acceld reasons`.
 */
#ifndef ACCELD_REASON_H
#define ACCELD_REASON_H

#include <stdbool.h>

enum reason {
	/* 400: the request is malformed */
	REASON_INVALID_PARAMETER,   /* a query or body parameter has a bad value */
	REASON_MISSING_PARAMETER,   /* a required query parameter is missing */
	REASON_UNKNOWN_PARAMETER,   /* a query parameter the route does not take */
	REASON_DUPLICATE_PARAMETER, /* a query parameter given twice */
	REASON_TOO_MANY_PARAMETERS, /* more query parameters than HTTP_MAX_QUERY */
	REASON_TOO_MANY_POINTS,     /* a history or cost window holds too many points */
	REASON_INVALID_TIME,        /* start_time or end_time is not RFC 3339 */
	REASON_INVALID_WINDOW,      /* end_time is not after start_time */
	REASON_BEYOND_RETENTION,    /* the window starts before the oldest kept data */
	REASON_EMPTY_BODY,          /* a JSON body was expected */
	REASON_MALFORMED_JSON,      /* the body is not valid JSON */
	REASON_JSON_TOO_DEEP,       /* the body nests deeper than --max-json-depth */
	REASON_UNKNOWN_FIELD,       /* a body field the route does not take */
	REASON_MISSING_FIELD,       /* a required body field is missing */
	REASON_INVALID_TYPE,        /* a body field has the wrong JSON type */
	REASON_INVALID_VALUE,       /* a body field has a bad value */
	REASON_NOT_A_NUMBER,        /* NaN or Infinity where a finite number is needed */
	REASON_LENGTH_MISMATCH,     /* an inline array does not match the sizes */
	REASON_ROW_LENGTH_MISMATCH, /* the rows of an inline matrix differ in length */
	REASON_TOO_MANY_ELEMENTS,   /* an inline array larger than the sizes or the cap */
	REASON_NOT_APPLICABLE,      /* a field the kernel does not take */
	REASON_CONFLICTING_FIELDS,  /* two fields that exclude each other */
	/* 401 */
	REASON_UNAUTHORIZED,        /* a mutating route without the bearer token */
	/* 404 */
	REASON_NOT_FOUND,           /* no resource at the path, or no such device */
	REASON_UNKNOWN_DEVICE,      /* a job names a device the executor does not have */
	REASON_JOB_NOT_FOUND,       /* no such job */
	REASON_CHECK_NOT_FOUND,     /* no such health check of the device */
	/* 405 */
	REASON_METHOD_NOT_ALLOWED,  /* a known path, another method */
	/* 409 */
	REASON_NO_MATCHING_DEVICE,  /* no device meets the constraints */
	REASON_DEVICE_CHANGED,      /* the id now names other hardware */
	REASON_NOT_CANCELLABLE,     /* the job is no longer queued */
	REASON_CANCELLED,           /* the job was cancelled */
	REASON_DEVICE_BUSY,         /* another process holds the device (a TPU's libtpu lock, an exclusive GPU) */
	REASON_CHECK_RUNNING,       /* a health check of the device is already running */
	/* 413 */
	REASON_BODY_TOO_LARGE,      /* the body is over --max-body */
	REASON_TOO_LARGE,           /* a request exceeds a limit */
	REASON_JOB_TOO_LARGE,       /* a job's buffers exceed ACCELD_EXEC_MAX_ELEMENTS */
	REASON_EXCEEDS_DEVICE_ALLOCATION, /* a buffer exceeds the device's largest allocation */
	REASON_OUTPUT_TOO_LARGE,    /* return=full with too many output elements */
	REASON_EXCEEDS_DEVICE_MEMORY, /* the job's buffers exceed the device memory its runtime reports */
	/* 415 */
	REASON_UNSUPPORTED_MEDIA_TYPE, /* a body that is not JSON */
	/* 422 */
	REASON_UNSATISFIABLE,       /* well-formed but impossible (a model larger than memory) */
	REASON_UNSUPPORTED,         /* the device cannot run this */
	REASON_WOULD_TIME_OUT,      /* a job cannot finish within its timeout */
	/* 429 */
	REASON_BUSY,                /* busy; retry later */
	REASON_QUEUE_FULL,          /* the device's job queue is full */
	/* 500 */
	REASON_INTERNAL,            /* a bug: the answer could not be built */
	REASON_IO_ERROR,            /* an I/O or database error */
	/* 502 */
	REASON_DEVICE_FAILURE,      /* the device failed (build error, out of resources) */
	REASON_BACKEND_CRASHED,     /* the worker process running the job died (a signal, an exit) */
	/* 503 */
	REASON_STARTING,            /* start-up work is still running */
	REASON_SHUTTING_DOWN,       /* draining after SIGTERM */
	REASON_NOT_READY,           /* /readyz: a readiness check failed */
	REASON_UNAVAILABLE,         /* a service the route needs is not running (member `service`) */
	REASON_OUT_OF_MEMORY,       /* out of memory */
	REASON_INTERRUPTED,         /* a job's acceld stopped (crash, kill -9) before it finished: in the history */
	/* 504 */
	REASON_TIMED_OUT,           /* a job overran its timeout */
	REASON_COUNT
};

/* "INVALID_PARAMETER". Never NULL ("INTERNAL" for a value outside the enum). */
const char *reason_name(enum reason r);

/* The HTTP status the reason is always answered with (500 for a value outside the enum). */
int reason_status(enum reason r);

/* A short title that does not change between occurrences ("Invalid parameter"), for the problem's title. */
const char *reason_title(enum reason r);

/* The reason named name (exact, UPPER_SNAKE); false when the table has none. */
bool reason_parse(const char *name, enum reason *out);

#endif
