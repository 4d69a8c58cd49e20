/* backend: the built-in list and the lookups the executor, detection and the request parsers share. */
#include "exec/backend.h"

#include <stdio.h>
#include <string.h>

const struct backend_ops *const backend_builtin[] = {
	&backend_native,
	&backend_pjrt_proxy, /* PJRT runs in a worker process: the daemon never maps a plugin (worker_proxy.h) */
	&backend_opencl_proxy, /* OpenCL on a GPU in a worker process, on PoCL's CPU device here */
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

void backend_libraries(const struct backend_ops *const *list, json_t *out)
{
	if (list == NULL)
		list = backend_builtin;
	for (size_t i = 0; list[i] != NULL; i++)
		if (list[i]->libraries != NULL)
			list[i]->libraries(out);
}

size_t backend_work_buffers(struct kernel_work *w, struct backend_buffer *out)
{
	struct kernel_shape s = {.m = w->m, .n = w->n, .k = w->k};
	size_t n = 0;

	for (unsigned i = 0; i < KERNEL_MAX_INPUTS; i++) {
		uint64_t len = kernel_input_len(w->kernel, &s, i);

		if (len > 0)
			out[n++] = (struct backend_buffer){.in = &w->in[i], .bytes = (size_t)len * sizeof(float)};
	}
	if (kernel_output_rank(w->kernel) > 0)
		out[n++] = (struct backend_buffer){.out = &w->out,
						   .bytes = (size_t)kernel_output_len(w->kernel, &s) * sizeof(float)};
	/* the output's sample that sampled verification compares (NULL, and left out, when none is asked) */
	if (w->nsample > 0)
		out[n++] = (struct backend_buffer){.out = &w->sample, .bytes = w->nsample * sizeof(float)};
	return n;
}

const char *backend_memory_name(enum backend_memory m)
{
	switch (m) {
	case BACKEND_MEMORY_PAGEABLE:
		return "pageable";
	case BACKEND_MEMORY_PINNED:
		return "pinned";
	case BACKEND_MEMORY_UNKNOWN:
		break;
	}
	return NULL;
}

bool backend_runs(const struct backend_ops *ops, enum kernel_id k)
{
	return (unsigned)k < KERNEL_COUNT && (ops->runs == NULL || ops->runs(k));
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

void backend_describe_device(void *ctx, const struct device *dev, json_t *doc)
{
	const struct backend_ops *const *list = ctx ? (const struct backend_ops *const *)ctx : backend_builtin;
	const struct backend_ops *serving[16];
	json_t *names = json_array();
	size_t n = 0;

	for (size_t i = 0; list[i] != NULL; i++) {
		json_t *view = list[i]->describe ? list[i]->describe(dev) : NULL;

		if (view != NULL)
			json_object_set_new(doc, list[i]->name, view);
		if (n < sizeof(serving) / sizeof(serving[0]) && list[i]->serves(dev))
			serving[n++] = list[i];
	}
	/* in rank order: the default first */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && serving[j]->rank < serving[j - 1]->rank; j--) {
			const struct backend_ops *t = serving[j];

			serving[j] = serving[j - 1];
			serving[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(names, json_string(serving[i]->name));
	json_object_set_new(doc, "backends", names);
}

bool backend_serves_any(void *ctx, const struct device *dev)
{
	return backend_default(ctx ? (const struct backend_ops *const *)ctx : backend_builtin, dev) != NULL;
}
