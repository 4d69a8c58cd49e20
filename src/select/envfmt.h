/*
 * envfmt: environment variables as `export NAME='value'` lines that are safe to eval in sh.
 *
 * Every value is single-quoted, with each ' written as '\'' (close, escaped quote, reopen), so no character of a
 * value -- quotes, newlines, $, `, backslashes -- can end the quoting early. Names must match [A-Z_][A-Z0-9_]*.
 */
#ifndef ACCELD_ENVFMT_H
#define ACCELD_ENVFMT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/buf.h"

#define ENVFMT_MAX_VARS 24
#define ENVFMT_NAME_MAX 64
#define ENVFMT_VALUE_MAX 512

struct envfmt_var {
	char name[ENVFMT_NAME_MAX];
	char value[ENVFMT_VALUE_MAX];
};

/* An ordered set of variables in caller's storage; setting a name again replaces its value in place. */
struct envfmt {
	struct envfmt_var vars[ENVFMT_MAX_VARS];
	size_t n;
};

void envfmt_init(struct envfmt *e);

/* True when name matches [A-Z_][A-Z0-9_]* and is shorter than ENVFMT_NAME_MAX. */
bool envfmt_name_valid(const char *name);

/*
 * Sets name to value (both copied). Returns 0, or -1 when the name is invalid, the value is ENVFMT_VALUE_MAX bytes
 * or longer, or the set is full.
 */
int envfmt_set(struct envfmt *e, const char *name, const char *value);

/* The value of name, or NULL. The pointer is borrowed from e. */
const char *envfmt_get(const struct envfmt *e, const char *name);

/* Appends value single-quoted for sh to b. Returns 0, or -1 when b's cap would be exceeded. */
int envfmt_quote(struct buf *b, const char *value);

/* Appends one `export NAME='value'` line. Returns 0, or -1 on an invalid name or when b's cap is exceeded. */
int envfmt_export_line(struct buf *b, const char *name, const char *value);

/* Every variable as export lines, in order, as a new NUL-terminated text the caller frees; *len gets its length. */
char *envfmt_to_text(const struct envfmt *e, size_t *len);

/* Every variable as a new JSON object {NAME: value}, in order. */
json_t *envfmt_to_json(const struct envfmt *e);

#endif
