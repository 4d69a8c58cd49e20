/*
 * jobparams: a job request as POST /run (its JSON body) and `acceld run` (its flags) take it: the one table of its
 * fields, in the order messages list them, with what each takes and its limit, the flag that gives it on the command
 * line and its help, and the kernel field (kernel.h) it needs. The body's parser, the command's flags and its help
 * all read it; the kernel's sizes and inputs are the kernel table's, where the device may go is selection's.
 */
#ifndef ACCELD_JOBPARAMS_H
#define ACCELD_JOBPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/reason.h"
#include "exec/exec.h"

#define JOBPARAMS_MAX 32             /* rows of the table at most: a caller may keep a flag per row */
#define JOBPARAMS_MAX_SIZE (1ull << 40) /* n, m, k in a body beyond this are refused before any arithmetic */

/* What a field takes; the caller handles the kinds marked so (they need the registry, selection or the sizes). */
enum jobparam_kind {
	JOBPARAM_KERNEL,    /* a kernel's name */
	JOBPARAM_DEVICE,    /* a device id (the caller: the registry) */
	JOBPARAM_PLACEMENT, /* a field of the selection, select_request_set_json (the caller) */
	JOBPARAM_BOOL,
	JOBPARAM_BACKEND,   /* a built-in backend's name */
	JOBPARAM_FLOAT,     /* a finite float32 */
	JOBPARAM_SIZE,      /* a size of the kernel, from 1 */
	JOBPARAM_PRECISION, /* enum kernel_precision's name */
	JOBPARAM_INPUTS,    /* an object of inline inputs (the caller: their shapes need every size) */
	JOBPARAM_GENERATE,  /* {seed}; the flag gives the seed alone */
	JOBPARAM_RETURN,    /* summary or full; the flag is full */
	JOBPARAM_VERIFY,    /* true (by sample), false or "full"; the flag is true */
	JOBPARAM_TIMEOUT,   /* milliseconds, from 1 to the configured maximum */
};

struct jobparam {
	const char *name;        /* the body's field */
	enum jobparam_kind kind;
	unsigned kernel_param;   /* the enum kernel_param the kernel must take; 0: every kernel */
	const char *flag;        /* `acceld run`'s flag; NULL: none */
	bool flag_switch;        /* the flag takes no value (sets true, or return full) */
	const char *accepted;    /* what the flag takes, for messages; NULL: the built-in backends' names */
	const char *usage;       /* the help line's flag and value ("--seed S"); NULL: the flag is not listed */
	const char *help;        /* its text; a %s there takes help_kernels' words */
	unsigned help_kernels;   /* enum kernel_param bits: %s is their owners' words (kernel_param_owners) ... */
	bool help_names;         /* ... or the names of the kernels that take them all (kernel_names_join) */
};

/* Where the fields of one request go. */
struct jobparams {
	struct exec_request req;
	bool wait;                 /* POST /run: answer when the job has ended (the default) */
	bool fallback_given;
	uint64_t max_timeout_ms;   /* timeout_ms's limit (ACCELD_EXEC_MAX_TIMEOUT); 0: none */
};

/* Why a value was refused: the problem's reason, a message that does not name the field, and the values to list as
 * `accepted` ("" none). */
struct jobparams_refusal {
	enum reason reason;
	char subpath[48];          /* below the field, where the refused value is (".seed"); "" the field itself */
	char detail[256];
	char accepted[160];
};

/* The table, in the order messages list the fields; count rows. */
extern const struct jobparam jobparams_table[];
extern const size_t jobparams_count;

/* The body's field names, NULL-terminated, in table order (for http_req_check_body). */
const char *const *jobparams_names(void);

/* The row of the body's field name, or of the flag ("--n"); NULL when there is none. */
const struct jobparam *jobparams_field(const char *name);
const struct jobparam *jobparams_flag(const char *flag);

/* An exec_request_init'ed request, wait true, max_timeout_ms 0. Release with exec_request_release(&p->req). */
void jobparams_init(struct jobparams *p);

/*
 * Sets field f from a JSON value. Handles every kind but DEVICE, PLACEMENT and INPUTS (false with nothing set in
 * why's detail: the caller's); GENERATE takes the object {seed}. Returns true, or false with why filled.
 */
bool jobparams_set_json(struct jobparams *p, const struct jobparam *f, json_t *v, struct jobparams_refusal *why);

/* A float32 as the float fields take it (inline inputs' numbers too): a JSON number within float32's range; NaN and
 * Infinity are refused however they are written. */
bool jobparams_json_float(json_t *v, float *out, struct jobparams_refusal *why);

/*
 * Sets field f from a flag's text (NULL for a switch). Handles the kinds with a flag but DEVICE (the caller's);
 * GENERATE takes the seed. Returns 0, or -1 when the text is not one f->accepted names.
 */
int jobparams_set_text(struct jobparams *p, const struct jobparam *f, const char *text);

/*
 * Help: the lines of the fields with a usage, "  %-19s %s\n", those with a value first, then the switches, each in
 * table order.
 */
void jobparams_help(FILE *out);

#endif
