/* envfmt: shell-safe `export NAME='value'` lines and the variable set behind them. */
#include "select/envfmt.h"

#include <string.h>

#include "core/mem.h"

void envfmt_init(struct envfmt *e)
{
	memset(e, 0, sizeof(*e));
}

bool envfmt_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= ENVFMT_NAME_MAX)
		return false;
	if (!((name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++) {
		char c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int envfmt_set(struct envfmt *e, const char *name, const char *value)
{
	struct envfmt_var *v = NULL;

	if (!envfmt_name_valid(name) || strlen(value) >= ENVFMT_VALUE_MAX)
		return -1;
	for (size_t i = 0; i < e->n && v == NULL; i++)
		if (strcmp(e->vars[i].name, name) == 0)
			v = &e->vars[i];
	if (v == NULL) {
		if (e->n >= ENVFMT_MAX_VARS)
			return -1;
		v = &e->vars[e->n++];
		strlcpy_checked(v->name, name, sizeof(v->name));
	}
	strlcpy_checked(v->value, value, sizeof(v->value));
	return 0;
}

const char *envfmt_get(const struct envfmt *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->vars[i].name, name) == 0)
			return e->vars[i].value;
	return NULL;
}

int envfmt_quote(struct buf *b, const char *value)
{
	const char *p = value;

	if (buf_append(b, "'", 1) != 0)
		return -1;
	while (*p) {
		size_t n = strcspn(p, "'");

		if (n > 0 && buf_append(b, p, n) != 0)
			return -1;
		p += n;
		if (*p == '\'') {
			/* inside single quotes nothing is special, so leave them, add an escaped quote, re-enter */
			if (buf_append(b, "'\\''", 4) != 0)
				return -1;
			p++;
		}
	}
	return buf_append(b, "'", 1);
}

int envfmt_export_line(struct buf *b, const char *name, const char *value)
{
	if (!envfmt_name_valid(name))
		return -1;
	if (buf_printf(b, "export %s=", name) != 0 || envfmt_quote(b, value) != 0)
		return -1;
	return buf_append(b, "\n", 1);
}

char *envfmt_to_text(const struct envfmt *e, size_t *len)
{
	struct buf b;

	/* the worst case quadruples every value byte (each ' becomes '\''), plus the fixed parts */
	buf_init(&b, ENVFMT_MAX_VARS * (ENVFMT_NAME_MAX + 4 * ENVFMT_VALUE_MAX + 16));
	for (size_t i = 0; i < e->n; i++)
		envfmt_export_line(&b, e->vars[i].name, e->vars[i].value);
	return buf_detach(&b, len);
}

json_t *envfmt_to_json(const struct envfmt *e)
{
	json_t *o = json_object();

	for (size_t i = 0; i < e->n; i++)
		json_object_set_new(o, e->vars[i].name, json_string(e->vars[i].value));
	return o;
}
