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
	if (c->r.mode == PLAN_TRAIN && c->r.dtype == PLAN_FP8) {
		/* fp8 training (Transformer Engine, MaxText's fp8 quantization) computes its matmuls in fp8 but keeps
		 * bf16 weights and gradients, an fp32 master copy and fp32 optimizer states */
		c->fp8_train = true;
		c->wbits = 16;
		c->r.mixed_precision = true;
	}
	/* activations in the compute dtype: 16-bit unless everything runs in f32 */
	c->abytes = c->r.dtype == PLAN_F32 && !(c->r.mode == PLAN_TRAIN && c->r.mixed_precision) ? 4 : 2;
	c->zero = c->r.mode == PLAN_TRAIN && c->r.zero ? c->r.zero : 3;
	c->r.zero = c->r.mode == PLAN_TRAIN ? c->zero : 0;
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
	plan_shape_layer(m, &c->layer_dense, &c->layer_expert);
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

/* The parameters of dense + expert split over fsdp (when sharded) x tensor, the experts also over expert. */
static uint64_t shard(uint64_t dense, uint64_t expert, const struct plan_mesh *m, bool over_fsdp)
{
	uint64_t ft = (uint64_t)(over_fsdp ? m->fsdp : 1) * m->tensor;

	return plan_add(plan_cdiv(dense, ft), plan_cdiv(expert, ft * m->expert));
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
	z->pd = shard(c->p_dense, c->p_expert, m, true);
	/* ZeRO-1 shards only the optimizer states over the fsdp axis, ZeRO-2 the gradients too, ZeRO-3 (FSDP) the
	 * weights as well (Rajbhandari et al. 2020, section 5.1: P_os, P_os+g, P_os+g+p) */
	z->weights = bits_to_bytes(c->zero == 3 ? z->pd : shard(c->p_dense, c->p_expert, m, false), c->wbits);
	if (c->r.mode == PLAN_TRAIN) {
		/* gradients in the weights' dtype; mixed precision keeps an fp32 master copy and fp32 states, a
		 * single-precision run keeps states in the weights' dtype (bf16 states for pure-bf16 training) */
		z->grads = bits_to_bytes(c->zero >= 2 ? z->pd : shard(c->p_dense, c->p_expert, m, false), c->wbits);
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
		/* FSDP gathers each layer's full weights (split only by tensor) before using it, and prefetches the
		 * next one meanwhile: two layers' worth (PyTorch FSDP's default backward prefetch; ZeRO-3's
		 * prefetch bucket) */
		if (c->zero == 3 && m->fsdp > 1 && c->shape)
			z->gather = plan_mul(2, bits_to_bytes(shard(c->layer_dense, c->layer_expert, m, false), c->wbits));
	}
	if (c->shape) {
		/* the coefficients are for 2-byte activations; f32 ones take twice as much */
		uint64_t af = c->abytes / 2;

		mlp = plan_mul(c->topk, plan_add(3 * h, plan_mul(c->r.model.gated_ffn ? 6 : 4, f)));
		base = plan_mul(af, plan_mul(sb, plan_add(15 * h, mlp)));
		scores = c->r.flash_attention ? 0 : plan_mul(af, plan_mul(plan_mul(5ull * c->r.model.heads, s), sb));
		z->layer[PLAN_REMAT_NONE] = plan_cdiv(plan_add(base, scores), t);
		z->layer[PLAN_REMAT_SELECTIVE] = plan_cdiv(base, t);
		z->layer[PLAN_REMAT_FULL] = plan_cdiv(plan_mul(af, plan_mul(2 * h, sb)), t);
		if (c->r.mode == PLAN_TRAIN) {
			/* the loss's logits in fp32, 4 bytes x s x b x V, split with the vocabulary over t */
			z->logits = plan_cdiv(plan_mul(plan_mul(4, sb), c->r.model.vocab), t);
			for (int r = 0; r < 3; r++)
				z->act[r] = plan_add(plan_mul(c->r.model.layers, z->layer[r]), z->logits);
			/* recomputing a layer for its backward pass holds that layer's activations again: full
			 * recomputation keeps the inputs and one whole layer (Korthikanti et al. 2022, section 4.1) */
			z->act[PLAN_REMAT_FULL] = plan_add(z->act[PLAN_REMAT_FULL], z->layer[PLAN_REMAT_NONE]);
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
	uint64_t state = plan_add(plan_add(z->weights, z->grads), plan_add(z->opt, z->gather));

	return plan_add(state, plan_add(z->act[r], z->kv));
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

/* The parameters one device holds, split over fsdp x tensor, or over tensor alone where ZeRO-1/2 replicate. */
static void params_text(const struct plan_ctx *c, const struct plan_mesh *m, bool over_fsdp, char *out,
			size_t outsz)
{
	unsigned ft = (over_fsdp ? m->fsdp : 1) * m->tensor;

	if (c->p_expert)
		plan_put(out, outsz, "(%llu dense / %u + %llu expert / %u) params", ULL(c->p_dense), ft,
		    ULL(c->p_expert), ft * m->expert);
	else if (over_fsdp)
		plan_put(out, outsz, "%llu params / %u (fsdp %u x tensor %u)", ULL(c->params), ft, m->fsdp, m->tensor);
	else
		plan_put(out, outsz, "%llu params / tensor %u", ULL(c->params), m->tensor);
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
	const char *dt = c->fp8_train ? "bf16" : plan_dtype_name(c->r.dtype), *pp = plan_per_param_text(c->wbits);
	const char *f32 = c->abytes == 4 ? " x 2 for f32 activations" : "";
	char ps[128], ws[128], gs[128], lt[64], logits[96] = "";
	bool scores = !c->r.flash_attention;

	params_text(c, m, true, ps, sizeof(ps));
	params_text(c, m, c->zero == 3, ws, sizeof(ws));
	params_text(c, m, c->zero >= 2, gs, sizeof(gs));
	out->weights.bytes = z->weights;
	plan_put(out->weights.formula, sizeof(out->weights.formula), "%s x %s B (%s%s)", ws, pp, dt,
	    c->fp8_train ? "; fp8 training computes in fp8 but keeps bf16 weights and gradients, fp32 master and "
	    "states" : c->zero < 3 ? "; ZeRO-1/2 keep a whole replica per tensor group" : "");
	out->gather.bytes = z->gather;
	if (z->gather)
		plan_put(out->gather.formula, sizeof(out->gather.formula), "2 x one layer's %llu params / tensor %u x "
		    "%s B: FSDP gathers a layer's full weights to use it and prefetches the next (ZeRO-3 section 5.1.3; "
		    "PyTorch FSDP's backward prefetch)", ULL(plan_add(c->layer_dense, c->layer_expert)), m->tensor, pp);
	else
		plan_put(out->gather.formula, sizeof(out->gather.formula), "%s",
		    c->r.mode == PLAN_INFER ? "0: inference gathers no weights"
		    : c->zero < 3 ? "0: ZeRO-1/2 keep the weights whole"
		    : m->fsdp == 1 ? "0: no fsdp axis, nothing to gather"
		    : "unknown: give layers, hidden and heads for one layer's weights");
	out->gradients.bytes = z->grads;
	out->optimizer.bytes = z->opt;
	if (c->r.mode == PLAN_TRAIN) {
		const char *state = c->r.mixed_precision ? "fp32" : dt;
		const char *master = z->master ? "fp32 master 4 + " : "";

		plan_put(out->gradients.formula, sizeof(out->gradients.formula), "%s x %s B (%s gradients, %s)", gs, pp,
		    dt, c->zero == 3 ? "sharded with the weights as ZeRO-3" : c->zero == 2 ? "sharded over fsdp as ZeRO-2"
		    : "whole: ZeRO-1 shards only the optimizer states");
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
		static const char unknown[] = "unknown: give model, or layers, hidden and heads (the total is a lower "
					      "bound)";

		out->activations.unknown = true;
		out->activations_selective.unknown = true;
		out->activations_full.unknown = true;
		out->kv_cache.unknown = c->r.mode == PLAN_INFER;
		out->gather.unknown = c->r.mode == PLAN_TRAIN && c->zero == 3 && m->fsdp > 1;
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
		    "%llu x (%s) / tensor %u%s (a forward pass keeps nothing for a backward one; Korthikanti et al. "
		    "2022 eq. 1)", c->r.seq_len, ULL(out->per_device_batch), lt, m->tensor, f32);
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
	    "(%s) / tensor %u%s (Korthikanti et al. 2022 eq. 1, 4%s)%s", c->r.model.layers,
	    ULL(z->layer[PLAN_REMAT_NONE]), c->r.seq_len, ULL(out->per_device_batch), lt, m->tensor, f32,
	    scores ? "" : "; flash attention keeps no scores", logits);
	layer_text(c, false, lt, sizeof(lt));
	plan_put(out->activations_selective.formula, sizeof(out->activations_selective.formula), "%u layers x %llu B: "
	    "s x b x (%s) / tensor %u%s (selective recomputation of the attention core, eq. 6)%s",
	    c->r.model.layers, ULL(z->layer[PLAN_REMAT_SELECTIVE]), lt, m->tensor, f32, logits);
	plan_put(out->activations_full.formula, sizeof(out->activations_full.formula), "%u layers x %llu B: 2 x s x b "
	    "x h / tensor %u%s (each layer's input) + %llu B of the layer being recomputed (Korthikanti et al. 2022 "
	    "section 4.1)%s", c->r.model.layers, ULL(z->layer[PLAN_REMAT_FULL]), m->tensor, f32,
	    ULL(z->layer[PLAN_REMAT_NONE]), logits);
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
