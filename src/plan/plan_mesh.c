/* plan_mesh: the mesh search, the link and divisibility rules, and the order of preference. */
#include "plan/plan_mesh.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plan_names.h"
#include "plan/plan_shape.h"
#include "plan/plan_text.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ULL(x) ((unsigned long long)(x))

/* The link and divisibility rules; false with the reason in why. */
static bool mesh_valid(const struct plan_ctx *c, const struct plan_mesh *m, char *why, size_t whysz)
{
	const struct plan_model *md = &c->r.model;
	const struct plan_devices *d = &c->r.devices;
	unsigned t = m->tensor;

	if (c->r.mode == PLAN_INFER && m->fsdp > 1) {
		plan_put(why, whysz, "fsdp %u in inference: serving shards weights by tensor parallelism rather than "
		    "gathering them for every token", m->fsdp);
		return false;
	}
	if (m->expert > 1 && md->experts % m->expert) {
		plan_put(why, whysz, "experts %u not divisible by expert %u", md->experts, m->expert);
		return false;
	}
	if (m->expert > 1 && c->p_expert == 0) {
		plan_put(why, whysz, "expert %u needs the model shape (layers, hidden, heads, vocab) to split the expert "
		    "weights", m->expert);
		return false;
	}
	if (t > 1) {
		if (d->kind == PLAN_TPU) {
			char tt[32];

			/* a divisor of the slice's chip count factors into divisors of the torus's dimensions, so
			 * it is a sub-torus on ICI (whose links do join the slice's hosts); beyond one slice the
			 * tensor axis would cross the data-centre network */
			if (c->slice && c->slice % t) {
				plan_torus_text(d->torus, tt, sizeof(tt));
				plan_put(why, whysz, "tensor %u spans more than one slice: it must divide the %u chips of "
				    "the ICI torus %s", t, c->slice, tt);
				return false;
			}
			if (!c->slice && c->per_host % t) {
				plan_put(why, whysz, "tensor %u spans beyond the %u chips of a host and the ICI torus is "
				    "unknown", t, c->per_host);
				return false;
			}
		} else if (t > c->per_host || c->per_host % t) {
			plan_put(why, whysz, "tensor parallelism across hosts: tensor %u spans beyond the %u %s of a host",
			    t, c->per_host, d->kind == PLAN_GPU ? "GPUs" : "devices");
			return false;
		} else if ((c->domain == 1 || t > c->domain || c->domain % t) && c->r.mode == PLAN_TRAIN) {
			/* inference may run tensor parallelism over PCIe (vLLM does, at a cost in latency); training's
			 * all-reduces of activations and gradients on every layer want NVLink */
			if (c->domain == 1)
				plan_put(why, whysz, "tensor %u without fast links (a fast-link domain of 1): training's "
				    "all-reduces over PCIe (allowed for inference)", t);
			else if (t > c->domain)
				plan_put(why, whysz, "tensor %u splits a fast-link domain of %u", t, c->domain);
			else
				plan_put(why, whysz, "tensor %u does not divide the fast-link domain of %u", t, c->domain);
			return false;
		}
		if (c->shape && md->heads % t) {
			plan_put(why, whysz, "heads %u not divisible by tensor %u", md->heads, t);
			return false;
		}
		if (c->shape && c->kvh % t && t % c->kvh) {
			plan_put(why, whysz, "kv heads %u and tensor %u: neither divides the other", c->kvh, t);
			return false;
		}
		if (c->shape && c->ffn % t) {
			plan_put(why, whysz, "ffn %u not divisible by tensor %u", c->ffn, t);
			return false;
		}
	}
	if (c->r.global_batch && c->r.global_batch % ((uint64_t)m->data * m->fsdp * m->expert)) {
		plan_put(why, whysz, "global batch %llu not divisible by %u batch shards (data %u x fsdp %u x expert %u)",
		    ULL(c->r.global_batch), m->data * m->fsdp * m->expert, m->data, m->fsdp, m->expert);
		return false;
	}
	return true;
}

static bool pure_data(const struct plan_mesh *m)
{
	return m->fsdp == 1 && m->tensor == 1 && m->expert == 1;
}

/*
 * The preference between two fitting candidates: < 0 when a comes first. *why gets the rule that decided (7 tensor
 * over PCIe last, 0 tensor, 1 pure data, 2 recomputation, 3 fast links, 4 sharding width, 5 expert over fsdp, 6 more
 * replicas).
 */
static int prefer(const struct plan_candidate *a, const struct plan_candidate *b, int *why)
{
	int w = 0, r = 0;
	unsigned sa = a->mesh.fsdp * a->mesh.expert, sb = b->mesh.fsdp * b->mesh.expert;

	if (a->slow_tensor != b->slow_tensor) {
		w = 7;
		r = a->slow_tensor ? 1 : -1;
	} else if (a->mesh.tensor != b->mesh.tensor)
		r = a->mesh.tensor < b->mesh.tensor ? -1 : 1;
	else if (w = 1, pure_data(&a->mesh) != pure_data(&b->mesh))
		r = pure_data(&a->mesh) ? -1 : 1;
	else if (w = 2, a->remat != b->remat)
		r = a->remat < b->remat ? -1 : 1;
	else if (w = 3, a->inside_fast_links != b->inside_fast_links)
		r = a->inside_fast_links ? -1 : 1;
	else if (w = 4, sa != sb)
		r = sa > sb ? -1 : 1;
	else if (w = 5, a->mesh.expert != b->mesh.expert)
		r = a->mesh.expert > b->mesh.expert ? -1 : 1;
	else if (w = 6, a->mesh.data != b->mesh.data)
		r = a->mesh.data > b->mesh.data ? -1 : 1;
	if (why)
		*why = w;
	return r;
}

/* Output order: fitting meshes by preference, then those too large by preference, then the invalid ones. */
static int by_order(const void *pa, const void *pb)
{
	const struct plan_candidate *a = pa, *b = pb;
	int ga = a->fits ? 0 : a->valid ? 1 : 2, gb = b->fits ? 0 : b->valid ? 1 : 2;

	if (ga != gb)
		return ga - gb;
	return prefer(a, b, NULL);
}

static struct plan_candidate *cands_push(struct plan_cands *cs)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 64;
		struct plan_candidate *v = realloc(cs->v, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		cs->v = v;
		cs->cap = cap;
	}
	memset(&cs->v[cs->n], 0, sizeof(cs->v[0]));
	return &cs->v[cs->n++];
}

static size_t divisors(unsigned n, unsigned *out, size_t max)
{
	size_t k = 0;

	for (unsigned i = 1; i <= n && k < max; i++)
		if (n % i == 0)
			out[k++] = i;
	return k;
}

/* One candidate's figures (and, with text, its memory reason). */
static void judge(const struct plan_ctx *c, struct plan_candidate *cd, bool text)
{
	struct plan_sizes z;
	uint64_t b, g;
	unsigned inner = cd->mesh.fsdp * cd->mesh.expert * cd->mesh.tensor;

	cd->inside_fast_links = inner <= c->fast_inner && c->fast_inner % inner == 0;
	cd->slow_tensor = c->r.devices.kind != PLAN_TPU && cd->mesh.tensor > 1 &&
			  (cd->mesh.tensor > c->domain || c->domain % cd->mesh.tensor != 0);
	cd->valid = mesh_valid(c, &cd->mesh, cd->why, text ? sizeof(cd->why) : 0);
	if (!cd->valid || !plan_batch_for(c, &cd->mesh, &b, &g))
		return;
	plan_measure(c, &cd->mesh, b, &z);
	cd->per_device_batch = b;
	cd->remat = plan_pick_remat(c, &z, &cd->fits);
	cd->total_bytes = plan_total_for(&z, cd->remat);
	if (!cd->fits && text) {
		char need[96];

		plan_need_text(need, sizeof(need), cd->total_bytes, c->usable);
		plan_put(cd->why, sizeof(cd->why), "does not fit: %s%s%s", need,
		    c->r.mode == PLAN_TRAIN ? " with " : "", c->r.mode == PLAN_TRAIN ? plan_remat_phrase(cd->remat) : "");
	}
}

/*
 * Tries every mesh of the device count (E > 1 only for MoE models). keep (may be NULL) receives them all with their
 * reasons. Returns 1 with the first by preference in *best, 0 when none fits, -1 when keep cannot grow.
 */
int plan_search(const struct plan_ctx *c, struct plan_cands *keep, struct plan_candidate *best)
{
	unsigned n = c->r.devices.count;
	unsigned dv[256], fv[256], tv[256];
	size_t nd = divisors(n, dv, COUNT(dv));
	bool found = false;

	for (size_t i = 0; i < nd; i++) {
		unsigned rest = n / dv[i];
		size_t nf = divisors(rest, fv, COUNT(fv));

		for (size_t j = 0; j < nf; j++) {
			unsigned rest2 = rest / fv[j];
			size_t nt = divisors(rest2, tv, COUNT(tv));

			for (size_t k = 0; k < nt; k++) {
				struct plan_candidate local, *cd = &local;
				unsigned e = rest2 / tv[k];

				if (e > 1 && !c->moe)
					continue;
				if (keep) {
					cd = cands_push(keep);
					if (cd == NULL)
						return -1;
				} else {
					memset(cd, 0, sizeof(*cd));
				}
				cd->mesh = (struct plan_mesh){dv[i], fv[j], tv[k], e};
				judge(c, cd, keep != NULL);
				if (cd->fits && (!found || prefer(cd, best, NULL) < 0)) {
					*best = *cd;
					found = true;
				}
			}
		}
	}
	return found ? 1 : 0;
}

/* Why a fitting mesh lost to the chosen one, and why the chosen one won. */
void plan_rank_reasons(const struct plan_ctx *c, struct plan_cands *cs, const struct plan_candidate *best)
{
	for (size_t i = 0; i < cs->n; i++) {
		struct plan_candidate *cd = &cs->v[i];
		char need[32], have[32], rule[128];
		int why = 0;

		if (!cd->fits)
			continue;
		if (memcmp(&cd->mesh, &best->mesh, sizeof(cd->mesh)) == 0) {
			if (pure_data(&cd->mesh))
				plan_put(cd->why, sizeof(cd->why), "chosen: a full replica fits each device (pure data "
				    "parallelism)");
			else if (cd->slow_tensor)
				plan_put(cd->why, sizeof(cd->why), "chosen: tensor %u over PCIe, without NVLink: each "
				    "layer's all-reduces cross PCIe, slower than NVLink (as vLLM serves without it), %s",
				    cd->mesh.tensor, plan_remat_phrase(cd->remat));
			else if (cd->mesh.tensor == 1)
				plan_put(cd->why, sizeof(cd->why), "chosen: sharded (%s) without tensor parallelism, %s",
				    cd->mesh.expert > 1 ? "expert parallelism" : "FSDP", plan_remat_phrase(cd->remat));
			else
				plan_put(cd->why, sizeof(cd->why), "chosen: tensor %u is the least tensor parallelism that "
				    "fits, %s", cd->mesh.tensor, plan_remat_phrase(cd->remat));
			continue;
		}
		prefer(cd, best, &why);
		switch (why) {
		case 0:
			plan_put(rule, sizeof(rule), "more tensor parallelism (tensor %u vs %u)", cd->mesh.tensor,
			    best->mesh.tensor);
			break;
		case 1:
			plan_put(rule, sizeof(rule), "pure data parallelism fits");
			break;
		case 2:
			plan_put(rule, sizeof(rule), "it needs %s, the chosen mesh %s", plan_remat_phrase(cd->remat),
			    plan_remat_phrase(best->remat));
			break;
		case 3:
			plan_put(rule, sizeof(rule), "its sharded axes leave the fast-link domain of %u", c->fast_inner);
			break;
		case 4:
			plan_put(rule, sizeof(rule), "narrower sharding (fsdp x expert %u vs %u)",
			    cd->mesh.fsdp * cd->mesh.expert, best->mesh.fsdp * best->mesh.expert);
			break;
		case 5:
			plan_put(rule, sizeof(rule), "expert parallelism shards the experts without gathering them");
			break;
		case 7:
			plan_put(rule, sizeof(rule), "tensor %u over PCIe ranks below NVLink", cd->mesh.tensor);
			break;
		default:
			plan_put(rule, sizeof(rule), "fewer replicas");
			break;
		}
		plan_gib_text(need, sizeof(need), cd->total_bytes);
		plan_gib_text(have, sizeof(have), c->usable);
		plan_put(cd->why, sizeof(cd->why), "fits (%s of %s) but ranks below the chosen mesh: %s", need, have,
		    rule);
	}
}

void plan_cands_sort(struct plan_cands *cs)
{
	qsort(cs->v, cs->n, sizeof(cs->v[0]), by_order);
}
