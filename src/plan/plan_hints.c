/* plan_hints: what would fit when nothing does, each with the mesh it gives. */
#include "plan/plan_hints.h"

#include <string.h>

#include "plan/plan_mesh.h"
#include "plan/plan_names.h"
#include "plan/plan_shape.h"
#include "plan/plan_text.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ULL(x) ((unsigned long long)(x))
#define GIB (1024ull * 1024ull * 1024ull)
#define PLAN_MAX_DEVICE_GIB (1ull << 20) /* 1 PiB: the memory hint looks no further */

static struct plan_hint *add_hint(struct plan_result *out, enum plan_hint_kind kind, uint64_t value,
				  const struct plan_mesh *m)
{
	struct plan_hint *h;

	if (out->nhints == PLAN_MAX_HINTS)
		return NULL;
	h = &out->hints[out->nhints++];
	h->kind = kind;
	h->value = value;
	h->mesh = *m;
	return h;
}

static bool fits_with(const struct plan_request *req, struct plan_candidate *best)
{
	struct plan_ctx c;

	plan_resolve(req, &c);
	return plan_search(&c, NULL, best) == 1;
}

/*
 * The device hint: a bigger single GPU host (up to the usual 8; NVLink only where this host has it), or a bigger
 * single TPU slice of this kind (its torus grown as GCP's sizes grow); then more hosts (or TPU slices) of this shape.
 */
static void hint_devices(const struct plan_ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_devices *d = &r.devices;
	struct plan_candidate best;
	struct plan_hint *h;
	char ms[96], tt[32];
	unsigned count = d->count, per_host = c->per_host, domain = c->domain, step, t[3];

	if (d->kind == PLAN_GPU && c->hosts == 1 && count < 8) {
		for (unsigned n = count * 2; n <= 8; n *= 2) {
			d->count = n;
			d->per_host = n;
			/* a board's NVLink grows with it; PCIe GPUs stay without (a domain of 1 is no NVLink) */
			d->fast_domain = c->domain > 1 && c->domain == count ? n : c->domain;
			if (fits_with(&r, &best)) {
				h = add_hint(out, PLAN_HINT_DEVICES, n, &best.mesh);
				plan_mesh_text(&best.mesh, ms, sizeof(ms));
				if (h && d->fast_domain > 1)
					plan_put(h->text, sizeof(h->text), "%u GPUs on one host (a fast-link domain of %u): "
					    "%s", n, d->fast_domain, ms);
				else if (h)
					plan_put(h->text, sizeof(h->text), "%u GPUs on one host, without NVLink%s: %s", n,
					    best.mesh.tensor > 1 ? " (tensor over PCIe)" : "", ms);
				return;
			}
			count = n;
			per_host = n;
			domain = d->fast_domain;
		}
	}
	memcpy(t, d->torus, sizeof(t));
	while (d->kind == PLAN_TPU && c->slice && plan_torus_grow(t)) {
		unsigned chips = plan_torus_chips(t);

		if (chips > PLAN_MAX_DEVICES)
			break;
		memcpy(d->torus, t, sizeof(t));
		d->count = chips;
		d->per_host = plan_torus_per_host(t, chips, c->per_host);
		if (!fits_with(&r, &best))
			continue;
		h = add_hint(out, PLAN_HINT_DEVICES, chips, &best.mesh);
		if (h) {
			plan_mesh_text(&best.mesh, ms, sizeof(ms));
			plan_torus_text(t, tt, sizeof(tt));
			plan_put(h->text, sizeof(h->text), "one slice of %u chips (a %s torus, %u hosts of %u): %s", chips,
			    tt, chips / d->per_host, d->per_host, ms);
		}
		return;
	}
	memcpy(d->torus, c->r.devices.torus, sizeof(d->torus));
	step = d->kind == PLAN_TPU && c->slice ? c->slice : per_host;
	for (unsigned k = 1;; k = k < 64 ? k + 1 : k * 2) {
		uint64_t n = (uint64_t)count + (uint64_t)k * step;

		if (n > PLAN_MAX_DEVICES)
			return;
		d->count = (unsigned)n;
		d->per_host = per_host;
		d->fast_domain = d->kind == PLAN_TPU ? 0 : domain;
		if (!fits_with(&r, &best))
			continue;
		h = add_hint(out, PLAN_HINT_DEVICES, n, &best.mesh);
		if (h == NULL)
			return;
		plan_mesh_text(&best.mesh, ms, sizeof(ms));
		if (d->kind == PLAN_TPU && c->slice) {
			bool inside = best.mesh.fsdp * best.mesh.tensor * best.mesh.expert <= c->slice;

			plan_torus_text(d->torus, tt, sizeof(tt));
			plan_put(h->text, sizeof(h->text), "%llu chips (%llu slices of %s, %s): %s", ULL(n), ULL(n / c->slice),
			    tt, inside ? "data across slices" : "fsdp across slices, over the data-centre network", ms);
		} else {
			plan_put(h->text, sizeof(h->text), "%llu %s (%llu hosts of %u): %s", ULL(n),
			    d->kind == PLAN_GPU ? "GPUs" : d->kind == PLAN_TPU ? "chips" : "CPU devices",
			    ULL(n / per_host), per_host, ms);
		}
		return;
	}
}

static void hint_dtype(const struct plan_ctx *c, struct plan_result *out)
{
	static const enum plan_dtype infer_order[] = {PLAN_BF16, PLAN_INT8, PLAN_INT4};
	struct plan_request r = c->r;
	struct plan_candidate best;
	struct plan_hint *h;
	char ms[96];

	if (c->r.mode == PLAN_TRAIN) {
		/* mixed precision keeps 16 B/param whatever the weights' dtype; pure bf16 (weights, gradients and
		 * Adam states in bf16, as llama-recipes' pure_bf16) halves it */
		if (c->r.dtype == PLAN_BF16 && !c->r.mixed_precision)
			return;
		r.dtype = PLAN_BF16;
		r.mixed_precision = false;
		if (fits_with(&r, &best) && (h = add_hint(out, PLAN_HINT_DTYPE, PLAN_BF16, &best.mesh))) {
			plan_mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "pure bf16 training (no fp32 master copy, optimizer states in "
			    "bf16): %s", ms);
		}
		return;
	}
	for (size_t i = 0; i < COUNT(infer_order); i++) {
		if (plan_dtype_bits(infer_order[i]) >= c->wbits)
			continue;
		r.dtype = infer_order[i]; /* the KV cache keeps its dtype */
		if (!fits_with(&r, &best))
			continue;
		h = add_hint(out, PLAN_HINT_DTYPE, infer_order[i], &best.mesh);
		if (h) {
			plan_mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "%s weights (%s B/param)%s: %s", plan_dtype_name(infer_order[i]),
			    plan_per_param_text(plan_dtype_bits(infer_order[i])),
			    infer_order[i] == PLAN_INT8 ? ", or fp8 where the device has it" : "", ms);
		}
		return;
	}
}

static void hint_memory_savers(const struct plan_ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate best;
	struct plan_hint *h;
	char ms[96];

	if (c->r.mode == PLAN_TRAIN && c->shape && c->r.remat != PLAN_REMAT_AUTO && c->r.remat != PLAN_REMAT_FULL) {
		r.remat = PLAN_REMAT_AUTO;
		if (fits_with(&r, &best) && (h = add_hint(out, PLAN_HINT_REMAT, best.remat, &best.mesh))) {
			plan_mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "%s: %s", plan_remat_phrase(best.remat), ms);
		}
		r.remat = c->r.remat;
	}
	if (c->shape && !c->r.flash_attention) {
		r.flash_attention = true;
		if (fits_with(&r, &best) && (h = add_hint(out, PLAN_HINT_FLASH, 1, &best.mesh))) {
			plan_mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "flash attention (no stored attention scores): %s", ms);
		}
	}
}

/*
 * The largest per-device batch below the current one that fits some mesh (memory grows with the batch). A global
 * batch is at least global / devices a device, on the mesh with the most batch shards.
 */
static void hint_batch(const struct plan_ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate best, found = {0};
	struct plan_hint *h;
	uint64_t lo = 1, hi, ok = 0;
	uint64_t cur = c->r.global_batch ? plan_cdiv(c->r.global_batch, c->r.devices.count) : c->r.per_device_batch;
	char ms[96];

	if (cur <= 1)
		return;
	r.global_batch = 0;
	hi = cur - 1;
	while (lo <= hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		r.per_device_batch = mid;
		if (fits_with(&r, &best)) {
			ok = mid;
			found = best;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (ok == 0 || (h = add_hint(out, PLAN_HINT_BATCH, ok, &found.mesh)) == NULL)
		return;
	plan_mesh_text(&found.mesh, ms, sizeof(ms));
	plan_put(h->text, sizeof(h->text), "per-device batch %llu (global %llu; accumulate gradients for a larger one): "
	    "%s", ULL(ok), ULL(found.per_device_batch * found.mesh.data * found.mesh.fsdp * found.mesh.expert), ms);
}

/* The least memory a device (in whole GiB) at which some mesh of these devices fits, when one does below 2^50. */
static void hint_memory(const struct plan_ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate best, found = {0};
	struct plan_hint *h;
	uint64_t lo = r.devices.memory_bytes / GIB + 1, hi = PLAN_MAX_DEVICE_GIB, ok = 0;
	char ms[96];

	while (lo <= hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		r.devices.memory_bytes = mid * GIB;
		if (fits_with(&r, &best)) {
			ok = mid;
			found = best;
			hi = mid - 1;
		} else {
			lo = mid + 1;
		}
	}
	if (ok == 0 || (h = add_hint(out, PLAN_HINT_MEMORY, ok * GIB, &found.mesh)) == NULL)
		return;
	plan_mesh_text(&found.mesh, ms, sizeof(ms));
	plan_put(h->text, sizeof(h->text), "%u device%s of %llu GiB each: %s", c->r.devices.count,
	    c->r.devices.count == 1 ? "" : "s", ULL(ok), ms);
}

void plan_hint_global_batch(const struct plan_ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate pref, best;
	struct plan_hint *h;
	uint64_t g = c->r.global_batch, shards, lo, hi, pick;
	char ms[96];

	if (g == 0)
		return;
	/* the mesh these devices would take with the same samples a device, free of the split */
	r.global_batch = 0;
	r.per_device_batch = g / c->r.devices.count ? g / c->r.devices.count : 1;
	if (!fits_with(&r, &pref))
		return;
	shards = (uint64_t)pref.mesh.data * pref.mesh.fsdp * pref.mesh.expert;
	if (g % shards == 0)
		return;
	lo = g / shards * shards;
	hi = lo + shards;
	r.per_device_batch = 0;
	pick = lo > 0 && g - lo <= hi - g ? lo : hi;
	r.global_batch = pick;
	if (!fits_with(&r, &best) && pick == lo) {
		pick = hi;
		r.global_batch = pick;
		if (!fits_with(&r, &best))
			return;
	} else if (!fits_with(&r, &best)) {
		return;
	}
	if ((h = add_hint(out, PLAN_HINT_GLOBAL_BATCH, pick, &best.mesh)) == NULL)
		return;
	plan_mesh_text(&best.mesh, ms, sizeof(ms));
	if (lo > 0)
		plan_put(h->text, sizeof(h->text), "global batch %llu or %llu, which split over %llu batch shards as %llu "
		    "does not: %s", ULL(lo), ULL(hi), ULL(shards), ULL(g), ms);
	else
		plan_put(h->text, sizeof(h->text), "global batch %llu, which splits over %llu batch shards as %llu does "
		    "not: %s", ULL(hi), ULL(shards), ULL(g), ms);
}

void plan_hints(const struct plan_ctx *c, struct plan_result *out)
{
	hint_devices(c, out);
	hint_dtype(c, out);
	hint_memory_savers(c, out);
	hint_batch(c, out);
	plan_hint_global_batch(c, out);
	hint_memory(c, out);
}
