/* plan_names: the words of a plan's enumerations both ways (through core/names), dtype bits, a torus's notation. */
#include "plan/plan_names.h"

#include <string.h>

#include "core/names.h"
#include "plan/plan_text.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const kind_names[] = {"cpu", "gpu", "tpu"};
static const char *const mode_names[] = {"infer", "train"};
static const char *const optimizer_names[] = {"adam", "sgd_momentum", "sgd", "adafactor"};
static const char *const remat_names[] = {"none", "selective", "full", "auto"};
static const char *const hint_names[] = {"devices", "dtype",  "remat",       "flash_attention",
					 "batch",   "memory", "global_batch"};

const char *plan_kind_name(enum plan_kind k)
{
	return names_at(kind_names, COUNT(kind_names), k);
}

const char *plan_dtype_name(enum plan_dtype d)
{
	return d == PLAN_DTYPE_AUTO ? "bf16" : dtype_name((enum dtype)d); /* AUTO shows as what it becomes */
}

const char *plan_mode_name(enum plan_mode m)
{
	return names_at(mode_names, COUNT(mode_names), m);
}

const char *plan_optimizer_name(enum plan_optimizer o)
{
	return names_at(optimizer_names, COUNT(optimizer_names), o);
}

const char *plan_remat_name(enum plan_remat r)
{
	return names_at(remat_names, COUNT(remat_names), r);
}

const char *plan_hint_name(enum plan_hint_kind h)
{
	return names_at(hint_names, COUNT(hint_names), h);
}

int plan_kind_parse(const char *text, enum plan_kind *out)
{
	int i = names_find(kind_names, COUNT(kind_names), text);

	if (i < 0)
		return -1;
	*out = (enum plan_kind)i;
	return 0;
}

int plan_dtype_parse(const char *text, enum plan_dtype *out)
{
	enum dtype d;

	if (!dtype_parse(text, &d))
		return -1;
	*out = (enum plan_dtype)d;
	return 0;
}

int plan_mode_parse(const char *text, enum plan_mode *out)
{
	int i = names_find(mode_names, COUNT(mode_names), text);

	if (i < 0)
		return -1;
	*out = (enum plan_mode)i;
	return 0;
}

int plan_optimizer_parse(const char *text, enum plan_optimizer *out)
{
	int i = names_find(optimizer_names, COUNT(optimizer_names), text);

	if (i < 0 && text && strcmp(text, "adamw") == 0)
		i = PLAN_ADAM;
	if (i < 0 && text && strcmp(text, "momentum") == 0)
		i = PLAN_SGD_MOMENTUM;
	if (i < 0)
		return -1;
	*out = (enum plan_optimizer)i;
	return 0;
}

int plan_remat_parse(const char *text, enum plan_remat *out)
{
	int i = names_find(remat_names, COUNT(remat_names), text);

	if (i < 0)
		return -1;
	*out = (enum plan_remat)i;
	return 0;
}

int plan_torus_parse(const char *text, unsigned torus[3])
{
	unsigned dims[3] = {0, 0, 0};
	size_t n = 0;
	const char *p = text;

	if (text == NULL)
		return -1;
	for (;;) {
		size_t len = strspn(p, "0123456789");
		unsigned v = 0;

		if (len == 0 || len > 4 || n == 3)
			return -1;
		for (size_t i = 0; i < len; i++)
			v = v * 10 + (unsigned)(p[i] - '0');
		if (v == 0 || v > 1024)
			return -1;
		dims[n++] = v;
		p += len;
		if (*p == '\0')
			break;
		if (*p != 'x')
			return -1;
		p++;
	}
	memcpy(torus, dims, sizeof(dims));
	return 0;
}

unsigned plan_torus_chips(const unsigned t[3])
{
	unsigned n = 1;

	if (t[0] == 0)
		return 0;
	for (int i = 0; i < 3; i++)
		n *= t[i] ? t[i] : 1;
	return n;
}

void plan_torus_text(const unsigned torus[3], char *out, size_t outsz)
{
	if (torus[2])
		plan_put(out, outsz, "%ux%ux%u", torus[0], torus[1], torus[2]);
	else if (torus[1])
		plan_put(out, outsz, "%ux%u", torus[0], torus[1]);
	else
		plan_put(out, outsz, "%u", torus[0]);
}

const char *plan_remat_phrase(enum plan_remat r)
{
	return r == PLAN_REMAT_NONE ? "no rematerialization" : r == PLAN_REMAT_SELECTIVE ? "selective rematerialization"
											 : "full rematerialization";
}

unsigned plan_dtype_bits(enum plan_dtype d)
{
	return d == PLAN_DTYPE_AUTO ? 16 : dtype_bits((enum dtype)d);
}

bool plan_torus_grow(unsigned torus[3])
{
	unsigned n = torus[2] ? 3 : 2, lo = 0;

	if (torus[0] == 0 || (n == 2 && torus[1] == 0))
		return false;
	for (unsigned i = 1; i < n; i++)
		if (torus[i] < torus[lo])
			lo = i;
	if (torus[lo] >= 16)
		return false;
	torus[lo] *= 2;
	/* ascending, as GCP writes topologies (2x2x4, 4x8) */
	for (unsigned i = 0; i + 1 < n; i++)
		for (unsigned j = 0; j + 1 < n - i; j++)
			if (torus[j] > torus[j + 1]) {
				unsigned t = torus[j];

				torus[j] = torus[j + 1];
				torus[j + 1] = t;
			}
	return true;
}

unsigned plan_torus_per_host(const unsigned torus[3], unsigned chips, unsigned single_host)
{
	/* v5e and v6e (2D tori) put 8 chips on a single-host slice's VM, 4 on each host of a bigger one (GKE's
	 * ct5lp-hightpu-4t and ct6e-standard-4t; ct5lp-hightpu-8t and ct6e-standard-8t are single-host only) */
	if (torus[0] && torus[1] && torus[2] == 0 && chips > 8)
		return 4;
	return single_host < chips ? single_host : chips;
}
