/* backend: the built-in list and the lookups the executor, detection and the request parsers share. */
#include "exec/backend.h"

#include <stdio.h>
#include <string.h>

const struct backend_ops *const backend_builtin[] = {
	&backend_native,
	&backend_pjrt,
	&backend_opencl,
	NULL,
};

const struct backend_ops *backend_find(const struct backend_ops *const *list, const char *name)
{
	for (size_t i = 0; list[i] != NULL && name != NULL; i++)
		if (strcmp(list[i]->name, name) == 0)
			return list[i];
	return NULL;
}

const struct backend_ops *backend_default(const struct backend_ops *const *list, const struct device *dev)
{
	const struct backend_ops *best = NULL;

	for (size_t i = 0; list[i] != NULL; i++)
		if (list[i]->serves(dev) && (best == NULL || list[i]->rank < best->rank))
			best = list[i];
	return best;
}

void backend_describe(const struct backend_ops *const *list, char *out, size_t outsz)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; list[i] != NULL && len < outsz; i++)
		len += (size_t)snprintf(out + len, outsz - len, "%s%s serves %s", i ? "; " : "", list[i]->name,
					list[i]->serves_what);
}

void backend_names(const struct backend_ops *const *list, char *out, size_t outsz)
{
	size_t len = 0;

	out[0] = '\0';
	for (size_t i = 0; list[i] != NULL && len < outsz; i++)
		len += (size_t)snprintf(out + len, outsz - len, "%s%s", i ? ", " : "", list[i]->name);
}

void backend_prepare_all(const struct config *cfg)
{
	for (size_t i = 0; backend_builtin[i] != NULL; i++)
		if (backend_builtin[i]->prepare != NULL)
			backend_builtin[i]->prepare(cfg);
}

double backend_reference(const struct backend_ops *ops, const struct device *dev, enum kernel_id k,
			 const char **source)
{
	double f = ops != NULL && ops->reference != NULL ? ops->reference(dev, k, source) : 1.0;

	/* 1.0 (or nonsense) leaves the spec figure as it is, and nothing to say of it */
	if (!(f > 0.0 && f < 1.0)) {
		*source = NULL;
		return 1.0;
	}
	return f;
}
