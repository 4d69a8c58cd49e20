/* plan_memory: the memory model -- a request resolved, the bytes of each term for one mesh, and their formulas. */
#include "plan/plan_memory.h"

#include <string.h>

#include "plan/plan_names.h"
#include "plan/plan_shape.h"
#include "plan/plan_text.h"
#include "select/batch.h"

#define ULL(x) ((unsigned long long)(x))

/* bytes of n elements of bits each, rounded up (int4 packs two a byte). */
static uint64_t bits_to_bytes(uint64_t n, unsigned bits)
{
	return plan_cdiv(plan_mul(n, bits), 8);
}

static void devices_derive(struct plan_ctx *c)
{
	const struct plan_devices *d = &c->r.devices;

	c->per_host = d->per_host ? d->per_host : d->count;
	c->hosts = d->count / c->per_host;
	c->domain = d->fast_domain ? d->fast_domain : 1;
	c->slice = d->kind == PLAN_TPU ? plan_torus_chips(d->torus) : 0;
	if (d->kind == PLAN_TPU)
		c->fast_inner = c->slice ? c->slice : c->per_host;
	else
		c->fast_inner = c->domain;
	c->usable = batch_usable_bytes(d->memory_bytes, c->r.reserve_ppm);
}

void plan_resolve(const struct plan_request *req, struct plan_ctx *c)
{
	const struct plan_model *m = &req->model;
	struct plan_shape_counts s;
	bool counted;

	memset(c, 0, sizeof(*c));
	c->r = *req;
	if (c->r.dtype == PLAN_DTYPE_AUTO)
		c->r.dtype = PLAN_BF16;
	if (c->r.kv_dtype == PLAN_DTYPE_AUTO)
		c->r.kv_dtype = c->r.dtype == PLAN_F32 ? PLAN_F32 : PLAN_BF16;
	if (c->r.mode == PLAN_INFER)
		c->r.remat = PLAN_REMAT_NONE;
	if (c->r.global_batch == 0 && c->r.per_device_batch == 0)
		c->r.per_device_batch = 1;
	c->wbits = plan_dtype_bits(c->r.dtype);
	c->kvbits = plan_dtype_bits(c->r.kv_dtype);
	c->shape = plan_shape_complete(m);
	c->moe = m->experts > 1;
	c->hd = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
	c->kvh = m->kv_heads ? m->kv_heads : m->heads;
	c->ffn = m->ffn ? m->ffn : 4 * m->hidden;
	c->topk = m->experts_per_token ? m->experts_per_token : 1;
	counted = plan_shape_counts(m, &s);
	if (m->params) {
		c->params = m->params;
		/* the shape's share of expert weights applied to the given count (double: a ratio, not a figure) */
		c->p_expert = counted && s.total ? (uint64_t)((double)m->params * (double)s.expert / (double)s.total)
						 : 0;
		c->active = counted && s.total ? (uint64_t)((double)m->params * (double)s.active / (double)s.total)
					       : m->params;
	} else {
		c->params = s.total;
		c->p_expert = s.expert;
		c->active = s.active;
		c->derived = true;
	}
	c->p_dense = c->params - c->p_expert;
	if (counted) {
		c->fact_dense = s.fact_dense;
		c->fact_expert = s.fact_expert;
		c->fact_exact = true;
	} else {
		/* no shape: as if every parameter sat in square matrices of side hidden (4096 unknown), rows + cols =
		 * 2 x side per side^2 parameters */
		unsigned side = m->hidden ? m->hidden : 4096;

		c->fact_dense = plan_cdiv(plan_mul(c->p_dense, 2), side);
		c->fact_expert = plan_cdiv(plan_mul(c->p_expert, 2), side);
	}
	devices_derive(c);
}

static uint64_t shard_params(const struct plan_ctx *c, const struct plan_mesh *m)
{
	uint64_t ft = (uint64_t)m->fsdp * m->tensor;

	return plan_add(plan_cdiv(c->p_dense, ft), plan_cdiv(c->p_expert, ft * m->expert));
}

/*
 * Per layer with 16-bit activations (Korthikanti et al. 2022, eq. 1): attention 11sbh + 5as^2b, the two norms 4sbh,
 * the MLP 19sbh = 3sbh + 4sbf at f = 4h (input 2sbh, the first linear's output and the activation's output 2sbf
 * each, the dropout mask sbh), so 34sbh + 5as^2b. A gated FFN keeps three f-wide tensors (6sbf); an MoE token goes
 * through k experts' MLPs. Sequence parallelism with tensor parallelism divides it all by t (eq. 4); selective
 * recomputation drops the 5as^2b of the attention core (eq. 6), as flash attention does by never storing scores;
 * full recomputation keeps only the layer input, 2sbh (divided by t along the sequence).
 */
void plan_measure(const struct plan_ctx *c, const struct plan_mesh *m, uint64_t b, struct plan_sizes *z)
{
	uint64_t s = c->r.seq_len, h = c->r.model.hidden, f = c->ffn, t = m->tensor;
	uint64_t mlp, base, scores, sb = plan_mul(s, b);

	memset(z, 0, sizeof(*z));
	z->pd = shard_params(c, m);
	z->weights = bits_to_bytes(z->pd, c->wbits);
	if (c->r.mode == PLAN_TRAIN) {
		/* gradients in the weights' dtype; mixed precision keeps an fp32 master copy and fp32 states, a
		 * single-precision run keeps states in the weights' dtype (bf16 states for pure-bf16 training) */
		z->grads = z->weights;
		z->state = c->r.mixed_precision ? 4 : c->wbits / 8;
		z->master = c->r.mixed_precision && c->wbits < 32 ? 4 : 0;
		switch (c->r.optimizer) {
		case PLAN_ADAM:
			z->opt = plan_mul(z->pd, z->master + 2 * z->state);
			break;
		case PLAN_SGD_MOMENTUM:
			z->opt = plan_mul(z->pd, z->master + z->state);
			break;
		case PLAN_SGD:
			z->opt = plan_mul(z->pd, z->master);
			break;
		case PLAN_ADAFACTOR: {
			uint64_t ft = (uint64_t)m->fsdp * m->tensor;
			uint64_t fact = plan_add(plan_cdiv(c->fact_dense, ft), plan_cdiv(c->fact_expert, ft * m->expert));

			z->opt = plan_add(plan_mul(z->pd, z->master), plan_mul(fact, z->state));
			break;
		}
		}
	}
	if (c->shape) {
		mlp = plan_mul(c->topk, plan_add(3 * h, plan_mul(c->r.model.gated_ffn ? 6 : 4, f)));
		base = plan_mul(sb, plan_add(15 * h, mlp));
		scores = c->r.flash_attention ? 0 : plan_mul(plan_mul(5ull * c->r.model.heads, s), sb);
		z->layer[PLAN_REMAT_NONE] = plan_cdiv(plan_add(base, scores), t);
		z->layer[PLAN_REMAT_SELECTIVE] = plan_cdiv(base, t);
		z->layer[PLAN_REMAT_FULL] = plan_cdiv(plan_mul(2 * h, sb), t);
		if (c->r.mode == PLAN_TRAIN) {
			/* the loss's logits in fp32, 4 bytes x s x b x V, split with the vocabulary over t */
			z->logits = plan_cdiv(plan_mul(plan_mul(4, sb), c->r.model.vocab), t);
			for (int r = 0; r < 3; r++)
				z->act[r] = plan_add(plan_mul(c->r.model.layers, z->layer[r]), z->logits);
		} else {
			/* a forward pass frees each layer's activations before the next: one layer's working set */
			for (int r = 0; r < 3; r++)
				z->act[r] = z->layer[PLAN_REMAT_NONE];
			/* KV heads split over t; with more shards than KV heads each device keeps one, replicated */
			z->kv_dev = c->kvh >= m->tensor ? c->kvh / m->tensor : 1;
			z->kv = bits_to_bytes(plan_mul(plan_mul(plan_mul(2ull * c->r.model.layers, z->kv_dev), c->hd), sb), c->kvbits);
		}
	}
}

uint64_t plan_total_for(const struct plan_sizes *z, enum plan_remat r)
{
	return plan_add(plan_add(plan_add(z->weights, z->grads), plan_add(z->opt, z->act[r])), z->kv);
}

/* The recomputation counted: inference none; a fixed choice as given; AUTO the least that fits (else full). */
enum plan_remat plan_pick_remat(const struct plan_ctx *c, const struct plan_sizes *z, bool *fits)
{
	enum plan_remat r = c->r.remat;

	if (r == PLAN_REMAT_AUTO) {
		for (r = PLAN_REMAT_NONE; r < PLAN_REMAT_FULL; r++)
			if (plan_total_for(z, r) <= c->usable)
				break;
	}
	*fits = plan_total_for(z, r) <= c->usable;
	return r;
}

/* The per-device and global batch of a mesh; false when a global batch does not split over its batch shards. */
bool plan_batch_for(const struct plan_ctx *c, const struct plan_mesh *m, uint64_t *b, uint64_t *g)
{
	uint64_t shards = (uint64_t)m->data * m->fsdp * m->expert;

	if (c->r.global_batch) {
		if (c->r.global_batch % shards)
			return false;
		*b = c->r.global_batch / shards;
		*g = c->r.global_batch;
		return true;
	}
	*b = c->r.per_device_batch;
	*g = plan_mul(*b, shards);
	return true;
}

static void params_text(const struct plan_ctx *c, const struct plan_mesh *m, char *out, size_t outsz)
{
	unsigned ft = m->fsdp * m->tensor;

	if (c->p_expert)
		plan_put(out, outsz, "(%llu dense / %u + %llu expert / %u) params", ULL(c->p_dense), ft,
		    ULL(c->p_expert), ft * m->expert);
	else
		plan_put(out, outsz, "%llu params / %u (fsdp %u x tensor %u)", ULL(c->params), ft, m->fsdp, m->tensor);
}

static void layer_text(const struct plan_ctx *c, bool scores, char *out, size_t outsz)
{
	const char *ffn = c->r.model.gated_ffn ? "6f" : "4f";
	bool paper = !c->r.model.gated_ffn && c->ffn == 4 * c->r.model.hidden && c->topk == 1;

	if (paper)
		plan_put(out, outsz, "34h%s", scores ? " + 5as" : "");
	else if (c->topk > 1)
		plan_put(out, outsz, "15h + %u(3h + %s)%s", c->topk, ffn, scores ? " + 5as" : "");
	else
		plan_put(out, outsz, "15h + 3h + %s%s", ffn, scores ? " + 5as" : "");
}

/* The formulas of one mesh's memory. */
static void describe(const struct plan_ctx *c, const struct plan_sizes *z, struct plan_memory *out)
{
	const struct plan_mesh *m = &out->mesh;
	const char *dt = plan_dtype_name(c->r.dtype), *pp = plan_per_param_text(c->wbits);
	char ps[128], lt[64], logits[96] = "";
	bool scores = !c->r.flash_attention;

	params_text(c, m, ps, sizeof(ps));
	out->weights.bytes = z->weights;
	plan_put(out->weights.formula, sizeof(out->weights.formula), "%s x %s B (%s)", ps, pp, dt);
	out->gradients.bytes = z->grads;
	out->optimizer.bytes = z->opt;
	if (c->r.mode == PLAN_TRAIN) {
		const char *state = c->r.mixed_precision ? "fp32" : dt;
		const char *master = z->master ? "fp32 master 4 + " : "";

		plan_put(out->gradients.formula, sizeof(out->gradients.formula), "%s x %s B (%s gradients, sharded with "
		    "the weights as ZeRO-3)", ps, pp, dt);
		switch (c->r.optimizer) {
		case PLAN_ADAM:
			plan_put(out->optimizer.formula, sizeof(out->optimizer.formula), "%s x %u B (%sAdam m %u + v %u, "
			    "%s; ZeRO section 3.1: 2 + 2 + 12 = 16 B/param mixed, 4 + 4 + 8 full)", ps,
			    z->master + 2 * z->state, master, z->state, z->state, state);
			break;
		case PLAN_SGD_MOMENTUM:
			plan_put(out->optimizer.formula, sizeof(out->optimizer.formula), "%s x %u B (%smomentum %u, %s)",
			    ps, z->master + z->state, master, z->state, state);
			break;
		case PLAN_SGD:
			plan_put(out->optimizer.formula, sizeof(out->optimizer.formula), "%s x %u B (%splain SGD keeps "
			    "no state)", ps, z->master, master);
			break;
		case PLAN_ADAFACTOR:
			plan_put(out->optimizer.formula, sizeof(out->optimizer.formula), "%s x %u B (%s) + %u B x %llu "
			    "rows + cols of the matrices / %u (factored second moments, approximate%s)", ps, z->master,
			    z->master ? "fp32 master" : "no master copy", z->state,
			    ULL(plan_add(c->fact_dense, c->fact_expert)), m->fsdp * m->tensor,
			    c->fact_exact ? "" : "; no shape: as if square matrices of side hidden or 4096");
			break;
		}
	} else {
		plan_put(out->gradients.formula, sizeof(out->gradients.formula), "0: inference keeps no gradients");
		plan_put(out->optimizer.formula, sizeof(out->optimizer.formula), "0: inference keeps no optimizer state");
	}
	out->activations_known = c->shape;
	out->activation_layer_bytes = z->layer[PLAN_REMAT_NONE];
	out->activations.bytes = z->act[PLAN_REMAT_NONE];
	out->activations_selective.bytes = z->act[PLAN_REMAT_SELECTIVE];
	out->activations_full.bytes = z->act[PLAN_REMAT_FULL];
	out->kv_cache.bytes = z->kv;
	if (!c->shape) {
		static const char unknown[] = "unknown: give layers, hidden and heads (not counted)";

		plan_put(out->activations.formula, sizeof(out->activations.formula), "%s", unknown);
		plan_put(out->activations_selective.formula, sizeof(out->activations_selective.formula), "%s", unknown);
		plan_put(out->activations_full.formula, sizeof(out->activations_full.formula), "%s", unknown);
		plan_put(out->kv_cache.formula, sizeof(out->kv_cache.formula), "%s",
		    c->r.mode == PLAN_TRAIN ? "0: training keeps no KV cache" : unknown);
		return;
	}
	if (c->r.mode == PLAN_INFER) {
		layer_text(c, scores, lt, sizeof(lt));
		plan_put(out->activations.formula, sizeof(out->activations.formula), "one layer's working set: s %u x b "
		    "%llu x (%s) / tensor %u (a forward pass keeps nothing for a backward one; Korthikanti et al. "
		    "2022 eq. 1)", c->r.seq_len, ULL(out->per_device_batch), lt, m->tensor);
		plan_put(out->activations_selective.formula, sizeof(out->activations_selective.formula), "%s",
		    "inference: the same as without rematerialization");
		plan_put(out->activations_full.formula, sizeof(out->activations_full.formula), "%s",
		    "inference: the same as without rematerialization");
		if (z->kv_dev * m->tensor > c->kvh)
			plan_put(out->kv_cache.formula, sizeof(out->kv_cache.formula), "2 x %u layers x 1 KV head (%u "
			    "replicated over tensor %u) x %u head_dim x s %u x b %llu x %s B (%s)",
			    c->r.model.layers, c->kvh, m->tensor, c->hd, c->r.seq_len, ULL(out->per_device_batch),
			    plan_per_param_text(c->kvbits), plan_dtype_name(c->r.kv_dtype));
		else
			plan_put(out->kv_cache.formula, sizeof(out->kv_cache.formula), "2 x %u layers x %u KV heads (%u / "
			    "tensor %u) x %u head_dim x s %u x b %llu x %s B (%s)", c->r.model.layers, z->kv_dev,
			    c->kvh, m->tensor, c->hd, c->r.seq_len, ULL(out->per_device_batch),
			    plan_per_param_text(c->kvbits), plan_dtype_name(c->r.kv_dtype));
		return;
	}
	if (z->logits)
		plan_put(logits, sizeof(logits), " + %llu B of fp32 logits (4 x s x b x V / t)", ULL(z->logits));
	layer_text(c, scores, lt, sizeof(lt));
	plan_put(out->activations.formula, sizeof(out->activations.formula), "%u layers x %llu B: s %u x b %llu x "
	    "(%s) / tensor %u (Korthikanti et al. 2022 eq. 1, 4%s)%s", c->r.model.layers,
	    ULL(z->layer[PLAN_REMAT_NONE]), c->r.seq_len, ULL(out->per_device_batch), lt, m->tensor,
	    scores ? "" : "; flash attention keeps no scores", logits);
	layer_text(c, false, lt, sizeof(lt));
	plan_put(out->activations_selective.formula, sizeof(out->activations_selective.formula), "%u layers x %llu B: "
	    "s x b x (%s) / tensor %u (selective recomputation of the attention core, eq. 6)%s",
	    c->r.model.layers, ULL(z->layer[PLAN_REMAT_SELECTIVE]), lt, m->tensor, logits);
	plan_put(out->activations_full.formula, sizeof(out->activations_full.formula), "%u layers x %llu B: 2 x s x b "
	    "x h / tensor %u (full recomputation keeps each layer's input)%s", c->r.model.layers,
	    ULL(z->layer[PLAN_REMAT_FULL]), m->tensor, logits);
	plan_put(out->kv_cache.formula, sizeof(out->kv_cache.formula), "0: training keeps no KV cache");
}

/* The memory of one valid mesh, with its formulas. */
void plan_fill_memory(const struct plan_ctx *c, const struct plan_mesh *m, struct plan_memory *out)
{
	struct plan_sizes z;
	uint64_t b = 0, g = 0;

	memset(out, 0, sizeof(*out));
	out->mesh = *m;
	plan_batch_for(c, m, &b, &g);
	out->per_device_batch = b;
	out->global_batch = g;
	plan_measure(c, m, b, &z);
	out->remat = plan_pick_remat(c, &z, &out->fits);
	out->total_bytes = plan_total_for(&z, out->remat);
	out->usable_bytes = c->usable;
	describe(c, &z, out);
}
