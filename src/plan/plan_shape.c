/* plan_shape: a transformer shape's parameter counts. */
#include "plan/plan_shape.h"

#include <string.h>

/* The shape's counts, saturating: per layer q (h x a*hd), k and v (h x kv*hd each), o (a*hd x h), the FFN (2 or 3
 * matrices of h x f, one set per expert), a router (h x E) for MoE, two norms (h each); the embeddings V x h (twice
 * when untied) and a final norm. */
bool plan_shape_complete(const struct plan_model *m)
{
	return m->layers && m->hidden && m->heads;
}

bool plan_shape_counts(const struct plan_model *m, struct plan_shape_counts *out)
{
	uint64_t h = m->hidden, a = m->heads, kv = m->kv_heads ? m->kv_heads : m->heads;
	uint64_t hd = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
	uint64_t f = m->ffn ? m->ffn : 4ull * m->hidden;
	uint64_t nmat = m->gated_ffn ? 3 : 2;
	uint64_t e = m->experts > 1 ? m->experts : 1;
	uint64_t k = m->experts_per_token ? m->experts_per_token : 1;
	uint64_t attn, ffn, router, layer_dense, emb, fattn, fffn;

	memset(out, 0, sizeof(*out));
	if (!plan_shape_complete(m) || m->vocab == 0)
		return false;
	attn = plan_add(plan_mul(2, plan_mul(h, plan_mul(a, hd))), plan_mul(2, plan_mul(h, plan_mul(kv, hd))));
	ffn = plan_mul(nmat, plan_mul(h, f));
	router = e > 1 ? plan_mul(h, e) : 0;
	layer_dense = plan_add(plan_add(attn, router), plan_mul(2, h));
	emb = plan_mul(m->tied_embeddings ? 1 : 2, plan_mul(m->vocab, h));
	out->expert = e > 1 ? plan_mul(m->layers, plan_mul(e, ffn)) : 0;
	out->total = plan_add(plan_add(plan_mul(m->layers, plan_add(layer_dense, e > 1 ? 0 : ffn)), out->expert), plan_add(emb, h));
	if (out->total == PLAN_SAT)
		return false;
	out->active = e > 1 ? plan_add(out->total - out->expert, plan_mul(m->layers, plan_mul(k, ffn))) : out->total;
	fattn = plan_add(plan_mul(2, plan_add(h, plan_mul(a, hd))), plan_mul(2, plan_add(h, plan_mul(kv, hd))));
	fffn = plan_mul(nmat, plan_add(h, f));
	out->fact_dense = plan_add(plan_mul(m->layers, plan_add(plan_add(fattn, e > 1 ? plan_add(h, e) : fffn), plan_mul(2, h))),
			      plan_add(plan_mul(m->tied_embeddings ? 1 : 2, plan_add(m->vocab, h)), h));
	out->fact_expert = e > 1 ? plan_mul(m->layers, plan_mul(e, fffn)) : 0;
	return out->total != PLAN_SAT && out->total <= PLAN_MAX_PARAMS;
}

uint64_t plan_params_from_shape(const struct plan_model *m, uint64_t *expert, uint64_t *active)
{
	struct plan_shape_counts s;

	if (!plan_shape_counts(m, &s)) {
		if (expert)
			*expert = 0;
		if (active)
			*active = 0;
		return 0;
	}
	if (expert)
		*expert = s.expert;
	if (active)
		*active = s.active;
	return s.total;
}

bool plan_shape_layer(const struct plan_model *m, uint64_t *dense, uint64_t *expert)
{
	uint64_t h = m->hidden, a = m->heads, kv = m->kv_heads ? m->kv_heads : m->heads;
	uint64_t hd = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
	uint64_t f = m->ffn ? m->ffn : 4ull * m->hidden;
	uint64_t ffn = plan_mul(m->gated_ffn ? 3 : 2, plan_mul(h, f));
	uint64_t e = m->experts > 1 ? m->experts : 1;
	uint64_t attn = plan_add(plan_mul(2, plan_mul(h, plan_mul(a, hd))), plan_mul(2, plan_mul(h, plan_mul(kv, hd))));

	*dense = 0;
	*expert = 0;
	if (!plan_shape_complete(m))
		return false;
	*dense = plan_add(plan_add(attn, e > 1 ? plan_mul(h, e) : ffn), plan_mul(2, h));
	*expert = e > 1 ? plan_mul(e, ffn) : 0;
	return true;
}
