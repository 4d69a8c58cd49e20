/* plan: the memory a model needs per device under each mesh, the mesh chosen, hints, and a JAX job's environment. */
#include "select/plan.h"
#include "select/plan_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/batch.h"

#define SAT UINT64_MAX /* a figure beyond 64 bits: never fits */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ULL(x) ((unsigned long long)(x))

static const char *const kind_names[] = {"cpu", "gpu", "tpu"};
static const char *const dtype_names[] = {"bf16", "f32", "bf16", "f16", "fp8", "int8", "int4"}; /* AUTO as bf16 */
static const unsigned dtype_bits[] = {16, 32, 16, 16, 8, 8, 4};
static const char *const mode_names[] = {"infer", "train"};
static const char *const optimizer_names[] = {"adam", "sgd_momentum", "sgd", "adafactor"};
static const char *const remat_names[] = {"none", "selective", "full", "auto"};
static const char *const hint_names[] = {"devices", "dtype", "remat", "flash_attention", "batch"};
static const char *const source_names[] = {"none", "preset", "tpu", "lws", "k8s"};

static const char *name_at(const char *const *names, size_t n, unsigned v)
{
	return v < n ? names[v] : "?";
}

static int name_find(const char *const *names, size_t n, size_t from, const char *text)
{
	for (size_t i = from; text && i < n; i++)
		if (strcmp(names[i], text) == 0)
			return (int)i;
	return -1;
}

const char *plan_kind_name(enum plan_kind k)
{
	return name_at(kind_names, COUNT(kind_names), k);
}

const char *plan_dtype_name(enum plan_dtype d)
{
	return name_at(dtype_names, COUNT(dtype_names), d);
}

const char *plan_mode_name(enum plan_mode m)
{
	return name_at(mode_names, COUNT(mode_names), m);
}

const char *plan_optimizer_name(enum plan_optimizer o)
{
	return name_at(optimizer_names, COUNT(optimizer_names), o);
}

const char *plan_remat_name(enum plan_remat r)
{
	return name_at(remat_names, COUNT(remat_names), r);
}

const char *plan_hint_name(enum plan_hint_kind h)
{
	return name_at(hint_names, COUNT(hint_names), h);
}

const char *plan_env_source_name(enum plan_env_source s)
{
	return name_at(source_names, COUNT(source_names), s);
}

int plan_kind_parse(const char *text, enum plan_kind *out)
{
	int i = name_find(kind_names, COUNT(kind_names), 0, text);

	if (i < 0)
		return -1;
	*out = (enum plan_kind)i;
	return 0;
}

int plan_dtype_parse(const char *text, enum plan_dtype *out)
{
	static const struct {
		const char *name;
		enum plan_dtype d;
	} aliases[] = {{"fp32", PLAN_F32}, {"float32", PLAN_F32}, {"fp16", PLAN_F16}, {"float16", PLAN_F16},
		       {"bfloat16", PLAN_BF16}};
	int i = name_find(dtype_names, COUNT(dtype_names), 1, text); /* index 0 is AUTO's display name */

	if (i >= 0) {
		*out = (enum plan_dtype)i;
		return 0;
	}
	for (size_t k = 0; text && k < COUNT(aliases); k++)
		if (strcmp(aliases[k].name, text) == 0) {
			*out = aliases[k].d;
			return 0;
		}
	return -1;
}

int plan_mode_parse(const char *text, enum plan_mode *out)
{
	int i = name_find(mode_names, COUNT(mode_names), 0, text);

	if (i < 0)
		return -1;
	*out = (enum plan_mode)i;
	return 0;
}

int plan_optimizer_parse(const char *text, enum plan_optimizer *out)
{
	int i = name_find(optimizer_names, COUNT(optimizer_names), 0, text);

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
	int i = name_find(remat_names, COUNT(remat_names), 0, text);

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

/* Saturating arithmetic: a figure past 64 bits stays SAT and never fits. */
static uint64_t mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? SAT : r;
}

static uint64_t add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? SAT : r;
}

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	if (a == SAT)
		return SAT;
	return a / b + (a % b != 0);
}

/* bytes of n elements of bits each, rounded up (int4 packs two a byte). */
static uint64_t bits_to_bytes(uint64_t n, unsigned bits)
{
	return cdiv(mul(n, bits), 8);
}

void plan_put(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
}

static const char *per_param_text(unsigned bits)
{
	switch (bits) {
	case 32:
		return "4";
	case 16:
		return "2";
	case 8:
		return "1";
	default:
		return "0.5";
	}
}

static void fmt_gib(char *out, size_t outsz, uint64_t bytes)
{
	if (bytes == SAT)
		plan_put(out, outsz, "over 2^64 bytes");
	else
		plan_put(out, outsz, "%.1f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

void plan_request_init(struct plan_request *req)
{
	memset(req, 0, sizeof(*req));
	req->dtype = PLAN_BF16;
	req->kv_dtype = PLAN_DTYPE_AUTO;
	req->mode = PLAN_INFER;
	req->optimizer = PLAN_ADAM;
	req->mixed_precision = true;
	req->seq_len = PLAN_DEFAULT_SEQ;
	req->remat = PLAN_REMAT_AUTO;
	req->reserve_ppm = PLAN_DEFAULT_RESERVE_PPM;
}

/* The shape's counts, saturating: per layer q (h x a*hd), k and v (h x kv*hd each), o (a*hd x h), the FFN (2 or 3
 * matrices of h x f, one set per expert), a router (h x E) for MoE, two norms (h each); the embeddings V x h (twice
 * when untied) and a final norm. */
struct shape_counts {
	uint64_t total;
	uint64_t expert;
	uint64_t active;
	uint64_t fact_dense;  /* Adafactor: sum of rows + cols over the matrices, plus the vectors' lengths */
	uint64_t fact_expert;
};

static bool shape_complete(const struct plan_model *m)
{
	return m->layers && m->hidden && m->heads;
}

static bool shape_counts(const struct plan_model *m, struct shape_counts *out)
{
	uint64_t h = m->hidden, a = m->heads, kv = m->kv_heads ? m->kv_heads : m->heads;
	uint64_t hd = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
	uint64_t f = m->ffn ? m->ffn : 4ull * m->hidden;
	uint64_t nmat = m->gated_ffn ? 3 : 2;
	uint64_t e = m->experts > 1 ? m->experts : 1;
	uint64_t k = m->experts_per_token ? m->experts_per_token : 1;
	uint64_t attn, ffn, router, layer_dense, emb, fattn, fffn;

	memset(out, 0, sizeof(*out));
	if (!shape_complete(m) || m->vocab == 0)
		return false;
	attn = add(mul(2, mul(h, mul(a, hd))), mul(2, mul(h, mul(kv, hd))));
	ffn = mul(nmat, mul(h, f));
	router = e > 1 ? mul(h, e) : 0;
	layer_dense = add(add(attn, router), mul(2, h));
	emb = mul(m->tied_embeddings ? 1 : 2, mul(m->vocab, h));
	out->expert = e > 1 ? mul(m->layers, mul(e, ffn)) : 0;
	out->total = add(add(mul(m->layers, add(layer_dense, e > 1 ? 0 : ffn)), out->expert), add(emb, h));
	if (out->total == SAT)
		return false;
	out->active = e > 1 ? add(out->total - out->expert, mul(m->layers, mul(k, ffn))) : out->total;
	fattn = add(mul(2, add(h, mul(a, hd))), mul(2, add(h, mul(kv, hd))));
	fffn = mul(nmat, add(h, f));
	out->fact_dense = add(mul(m->layers, add(add(fattn, e > 1 ? add(h, e) : fffn), mul(2, h))),
			      add(mul(m->tied_embeddings ? 1 : 2, add(m->vocab, h)), h));
	out->fact_expert = e > 1 ? mul(m->layers, mul(e, fffn)) : 0;
	return out->total != SAT && out->total <= PLAN_MAX_PARAMS;
}

uint64_t plan_params_from_shape(const struct plan_model *m, uint64_t *expert, uint64_t *active)
{
	struct shape_counts s;

	if (!shape_counts(m, &s)) {
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

#define FAIL(p, ...)                                                                                                 \
	do {                                                                                                         \
		*param = (p);                                                                                        \
		plan_put(err, errsz, __VA_ARGS__);                                                                        \
		return ACCELD_EINVAL;                                                                                \
	} while (0)

static unsigned torus_chips(const unsigned t[3])
{
	unsigned n = 1;

	if (t[0] == 0)
		return 0;
	for (int i = 0; i < 3; i++)
		n *= t[i] ? t[i] : 1;
	return n;
}

enum acceld_err plan_request_check(const struct plan_request *req, const char **param, char *err, size_t errsz)
{
	const struct plan_model *m = &req->model;
	const struct plan_devices *d = &req->devices;
	unsigned per_host = d->per_host ? d->per_host : d->count;

	if ((unsigned)req->dtype > PLAN_INT4)
		FAIL("dtype", "not one of f32, bf16, f16, fp8, int8, int4");
	if ((unsigned)req->kv_dtype > PLAN_INT4)
		FAIL("kv_dtype", "not one of f32, bf16, f16, fp8, int8, int4");
	if ((unsigned)req->mode > PLAN_TRAIN)
		FAIL("mode", "not infer or train");
	if ((unsigned)req->optimizer > PLAN_ADAFACTOR)
		FAIL("optimizer", "not adam, sgd_momentum, sgd or adafactor");
	if ((unsigned)req->remat > PLAN_REMAT_AUTO)
		FAIL("remat", "not none, selective, full or auto");
	if ((unsigned)d->kind > PLAN_TPU)
		FAIL("devices", "the kind is not cpu, gpu or tpu");
	if (req->mode == PLAN_TRAIN && (req->dtype == PLAN_INT8 || req->dtype == PLAN_INT4))
		FAIL("dtype", "training needs floating-point weights (f32, bf16, f16 or fp8); %s is for inference",
		     plan_dtype_name(req->dtype));
	if (m->params > PLAN_MAX_PARAMS)
		FAIL("params", "must be at most %llu", ULL(PLAN_MAX_PARAMS));
	if (m->layers > PLAN_MAX_LAYERS)
		FAIL("layers", "must be at most %u", PLAN_MAX_LAYERS);
	if (m->hidden > PLAN_MAX_HIDDEN || m->ffn > 16 * PLAN_MAX_HIDDEN || m->head_dim > PLAN_MAX_HIDDEN)
		FAIL("hidden", "hidden and head_dim must be at most %u, ffn at most %u", PLAN_MAX_HIDDEN,
		     16 * PLAN_MAX_HIDDEN);
	if (m->heads > PLAN_MAX_HEADS || m->kv_heads > m->heads)
		FAIL("heads", "heads must be at most %u and kv_heads at most heads", PLAN_MAX_HEADS);
	if (m->vocab > PLAN_MAX_VOCAB)
		FAIL("vocab", "must be at most %u", PLAN_MAX_VOCAB);
	if (m->experts > PLAN_MAX_EXPERTS || m->experts_per_token > (m->experts > 1 ? m->experts : 1))
		FAIL("experts", "experts must be at most %u and experts_per_token at most experts",
		     PLAN_MAX_EXPERTS);
	if ((m->layers || m->hidden || m->heads) && !shape_complete(m))
		FAIL("layers", "a model shape needs layers, hidden and heads together");
	if (m->heads && m->kv_heads && m->heads % m->kv_heads)
		FAIL("kv_heads", "heads %u is not a multiple of kv_heads %u", m->heads, m->kv_heads);
	if (m->heads && m->head_dim == 0 && m->hidden % m->heads)
		FAIL("heads", "hidden %u is not a multiple of heads %u; give head_dim", m->hidden,
		     m->heads);
	if (m->params == 0 && plan_params_from_shape(m, NULL, NULL) == 0)
		FAIL("params", "give params, or layers, hidden, heads and vocab to derive them (at most "
		     "%llu)", ULL(PLAN_MAX_PARAMS));
	if (req->seq_len == 0 || req->seq_len > PLAN_MAX_SEQ)
		FAIL("seq_len", "must be from 1 to %u", PLAN_MAX_SEQ);
	if (req->global_batch && req->per_device_batch)
		FAIL("global_batch", "give global_batch or per_device_batch, not both");
	if (req->global_batch > PLAN_MAX_BATCH || req->per_device_batch > PLAN_MAX_BATCH)
		FAIL("global_batch", "a batch must be at most %llu", ULL(PLAN_MAX_BATCH));
	if (req->reserve_ppm > PLAN_MAX_RESERVE_PPM)
		FAIL("reserve", "must be at most 0.9");
	if (d->count == 0 || d->count > PLAN_MAX_DEVICES)
		FAIL("devices", "the device count must be from 1 to %u", PLAN_MAX_DEVICES);
	if (d->memory_bytes == 0)
		FAIL("devices", "the memory of one device is not known (give memory_bytes)");
	if (per_host > d->count || d->count % per_host)
		FAIL("devices", "%u a host does not divide the count %u", per_host, d->count);
	if (d->kind != PLAN_TPU && d->fast_domain && (d->fast_domain > per_host || per_host % d->fast_domain))
		FAIL("devices", "a fast-link domain of %u does not divide the %u devices of a host",
		     d->fast_domain, per_host);
	if (d->kind == PLAN_TPU && d->torus[0]) {
		unsigned chips = torus_chips(d->torus);

		for (int i = 0; i < 3; i++)
			if (d->torus[i] > 1024 || (i > 0 && d->torus[i] && !d->torus[i - 1]))
				FAIL("devices", "the torus must be up to three dimensions of 1 to 1024");
		if (d->count % chips || chips % per_host)
			FAIL("devices", "a torus of %u chips must hold whole hosts of %u and divide the count %u",
			     chips, per_host, d->count);
	}
	return ACCELD_OK;
}

/* Everything the arithmetic needs, resolved once per request. */
struct ctx {
	struct plan_request r;
	uint64_t params;
	uint64_t p_expert;
	uint64_t p_dense;
	uint64_t active;
	bool derived;
	bool shape;               /* layers, hidden and heads */
	bool moe;
	unsigned hd;
	unsigned kvh;
	unsigned ffn;
	unsigned topk;
	uint64_t fact_dense;
	uint64_t fact_expert;
	bool fact_exact;          /* from the shape, not the square-matrix guess */
	unsigned wbits;
	unsigned kvbits;
	unsigned per_host;
	unsigned hosts;
	unsigned domain;          /* GPU, CPU: the fast-link island */
	unsigned slice;           /* TPU: chips per slice (the torus), 0 unknown */
	unsigned fast_inner;      /* the devices that fast links join: the island, or the TPU slice */
	uint64_t usable;
};

static void devices_derive(struct ctx *c)
{
	const struct plan_devices *d = &c->r.devices;

	c->per_host = d->per_host ? d->per_host : d->count;
	c->hosts = d->count / c->per_host;
	c->domain = d->fast_domain ? d->fast_domain : 1;
	c->slice = d->kind == PLAN_TPU ? torus_chips(d->torus) : 0;
	if (d->kind == PLAN_TPU)
		c->fast_inner = c->slice ? c->slice : c->per_host;
	else
		c->fast_inner = c->domain;
	c->usable = batch_usable_bytes(d->memory_bytes, c->r.reserve_ppm);
}

static void resolve(const struct plan_request *req, struct ctx *c)
{
	const struct plan_model *m = &req->model;
	struct shape_counts s;
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
	c->wbits = dtype_bits[c->r.dtype];
	c->kvbits = dtype_bits[c->r.kv_dtype];
	c->shape = shape_complete(m);
	c->moe = m->experts > 1;
	c->hd = m->head_dim ? m->head_dim : (m->heads ? m->hidden / m->heads : 0);
	c->kvh = m->kv_heads ? m->kv_heads : m->heads;
	c->ffn = m->ffn ? m->ffn : 4 * m->hidden;
	c->topk = m->experts_per_token ? m->experts_per_token : 1;
	counted = shape_counts(m, &s);
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

		c->fact_dense = cdiv(mul(c->p_dense, 2), side);
		c->fact_expert = cdiv(mul(c->p_expert, 2), side);
	}
	devices_derive(c);
}

/* The figures of one mesh and batch, before any text. */
struct sizes {
	uint64_t pd;              /* parameters held by one device */
	uint64_t weights;
	uint64_t grads;
	uint64_t opt;
	uint64_t layer[3];        /* one layer, this device: none, selective, full */
	uint64_t logits;
	uint64_t act[3];          /* all layers and the logits: none, selective, full */
	uint64_t kv;
	unsigned kv_dev;          /* KV heads on one device */
	unsigned master;          /* optimizer bytes per parameter beside the factored moments */
	unsigned state;           /* bytes of one optimizer state element */
};

static uint64_t shard_params(const struct ctx *c, const struct plan_mesh *m)
{
	uint64_t ft = (uint64_t)m->fsdp * m->tensor;

	return add(cdiv(c->p_dense, ft), cdiv(c->p_expert, ft * m->expert));
}

/*
 * Per layer with 16-bit activations (Korthikanti et al. 2022, eq. 1): attention 11sbh + 5as^2b, the two norms 4sbh,
 * the MLP 19sbh = 3sbh + 4sbf at f = 4h (input 2sbh, the first linear's output and the activation's output 2sbf
 * each, the dropout mask sbh), so 34sbh + 5as^2b. A gated FFN keeps three f-wide tensors (6sbf); an MoE token goes
 * through k experts' MLPs. Sequence parallelism with tensor parallelism divides it all by t (eq. 4); selective
 * recomputation drops the 5as^2b of the attention core (eq. 6), as flash attention does by never storing scores;
 * full recomputation keeps only the layer input, 2sbh (divided by t along the sequence).
 */
static void measure(const struct ctx *c, const struct plan_mesh *m, uint64_t b, struct sizes *z)
{
	uint64_t s = c->r.seq_len, h = c->r.model.hidden, f = c->ffn, t = m->tensor;
	uint64_t mlp, base, scores, sb = mul(s, b);

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
			z->opt = mul(z->pd, z->master + 2 * z->state);
			break;
		case PLAN_SGD_MOMENTUM:
			z->opt = mul(z->pd, z->master + z->state);
			break;
		case PLAN_SGD:
			z->opt = mul(z->pd, z->master);
			break;
		case PLAN_ADAFACTOR: {
			uint64_t ft = (uint64_t)m->fsdp * m->tensor;
			uint64_t fact = add(cdiv(c->fact_dense, ft), cdiv(c->fact_expert, ft * m->expert));

			z->opt = add(mul(z->pd, z->master), mul(fact, z->state));
			break;
		}
		}
	}
	if (c->shape) {
		mlp = mul(c->topk, add(3 * h, mul(c->r.model.gated_ffn ? 6 : 4, f)));
		base = mul(sb, add(15 * h, mlp));
		scores = c->r.flash_attention ? 0 : mul(mul(5ull * c->r.model.heads, s), sb);
		z->layer[PLAN_REMAT_NONE] = cdiv(add(base, scores), t);
		z->layer[PLAN_REMAT_SELECTIVE] = cdiv(base, t);
		z->layer[PLAN_REMAT_FULL] = cdiv(mul(2 * h, sb), t);
		if (c->r.mode == PLAN_TRAIN) {
			/* the loss's logits in fp32, 4 bytes x s x b x V, split with the vocabulary over t */
			z->logits = cdiv(mul(mul(4, sb), c->r.model.vocab), t);
			for (int r = 0; r < 3; r++)
				z->act[r] = add(mul(c->r.model.layers, z->layer[r]), z->logits);
		} else {
			/* a forward pass frees each layer's activations before the next: one layer's working set */
			for (int r = 0; r < 3; r++)
				z->act[r] = z->layer[PLAN_REMAT_NONE];
			/* KV heads split over t; with more shards than KV heads each device keeps one, replicated */
			z->kv_dev = c->kvh >= m->tensor ? c->kvh / m->tensor : 1;
			z->kv = bits_to_bytes(mul(mul(mul(2ull * c->r.model.layers, z->kv_dev), c->hd), sb), c->kvbits);
		}
	}
}

static uint64_t total_for(const struct sizes *z, enum plan_remat r)
{
	return add(add(add(z->weights, z->grads), add(z->opt, z->act[r])), z->kv);
}

/* The recomputation counted: inference none; a fixed choice as given; AUTO the least that fits (else full). */
static enum plan_remat pick_remat(const struct ctx *c, const struct sizes *z, bool *fits)
{
	enum plan_remat r = c->r.remat;

	if (r == PLAN_REMAT_AUTO) {
		for (r = PLAN_REMAT_NONE; r < PLAN_REMAT_FULL; r++)
			if (total_for(z, r) <= c->usable)
				break;
	}
	*fits = total_for(z, r) <= c->usable;
	return r;
}

/* The per-device and global batch of a mesh; false when a global batch does not split over its batch shards. */
static bool batch_for(const struct ctx *c, const struct plan_mesh *m, uint64_t *b, uint64_t *g)
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
	*g = mul(*b, shards);
	return true;
}

static void torus_text(const unsigned torus[3], char *out, size_t outsz)
{
	if (torus[2])
		plan_put(out, outsz, "%ux%ux%u", torus[0], torus[1], torus[2]);
	else if (torus[1])
		plan_put(out, outsz, "%ux%u", torus[0], torus[1]);
	else
		plan_put(out, outsz, "%u", torus[0]);
}

/* The link and divisibility rules; false with the reason in why. */
static bool mesh_valid(const struct ctx *c, const struct plan_mesh *m, char *why, size_t whysz)
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
				torus_text(d->torus, tt, sizeof(tt));
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
		} else if (c->domain == 1) {
			plan_put(why, whysz, "tensor %u without fast links (a fast-link domain of 1)", t);
			return false;
		} else if (t > c->domain) {
			plan_put(why, whysz, "tensor %u splits a fast-link domain of %u", t, c->domain);
			return false;
		} else if (c->domain % t) {
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
 * The preference between two fitting candidates: < 0 when a comes first. *why gets the rule that decided (0 tensor,
 * 1 pure data, 2 recomputation, 3 fast links, 4 sharding width, 5 expert over fsdp, 6 more replicas).
 */
static int prefer(const struct plan_candidate *a, const struct plan_candidate *b, int *why)
{
	int w = 0, r = 0;
	unsigned sa = a->mesh.fsdp * a->mesh.expert, sb = b->mesh.fsdp * b->mesh.expert;

	if (a->mesh.tensor != b->mesh.tensor)
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

struct cands {
	struct plan_candidate *v;
	size_t n;
	size_t cap;
};

static struct plan_candidate *cands_push(struct cands *cs)
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

const char *plan_remat_phrase(enum plan_remat r)
{
	return r == PLAN_REMAT_NONE ? "no rematerialization" : r == PLAN_REMAT_SELECTIVE ? "selective rematerialization"
											 : "full rematerialization";
}

/* One candidate's figures (and, with text, its memory reason). */
static void judge(const struct ctx *c, struct plan_candidate *cd, bool text)
{
	struct sizes z;
	uint64_t b, g;
	unsigned inner = cd->mesh.fsdp * cd->mesh.expert * cd->mesh.tensor;

	cd->inside_fast_links = inner <= c->fast_inner && c->fast_inner % inner == 0;
	cd->valid = mesh_valid(c, &cd->mesh, cd->why, text ? sizeof(cd->why) : 0);
	if (!cd->valid || !batch_for(c, &cd->mesh, &b, &g))
		return;
	measure(c, &cd->mesh, b, &z);
	cd->per_device_batch = b;
	cd->remat = pick_remat(c, &z, &cd->fits);
	cd->total_bytes = total_for(&z, cd->remat);
	if (!cd->fits && text) {
		char need[32], have[32];

		fmt_gib(need, sizeof(need), cd->total_bytes);
		fmt_gib(have, sizeof(have), c->usable);
		plan_put(cd->why, sizeof(cd->why), "does not fit: needs %s of %s usable%s%s", need, have,
		    c->r.mode == PLAN_TRAIN ? " with " : "", c->r.mode == PLAN_TRAIN ? plan_remat_phrase(cd->remat) : "");
	}
}

/*
 * Tries every mesh of the device count (E > 1 only for MoE models). keep (may be NULL) receives them all with their
 * reasons. Returns 1 with the first by preference in *best, 0 when none fits, -1 when keep cannot grow.
 */
static int search(const struct ctx *c, struct cands *keep, struct plan_candidate *best)
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
static void rank_reasons(const struct ctx *c, struct cands *cs, const struct plan_candidate *best)
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
		default:
			plan_put(rule, sizeof(rule), "fewer replicas");
			break;
		}
		fmt_gib(need, sizeof(need), cd->total_bytes);
		fmt_gib(have, sizeof(have), c->usable);
		plan_put(cd->why, sizeof(cd->why), "fits (%s of %s) but ranks below the chosen mesh: %s", need, have,
		    rule);
	}
}

static void params_text(const struct ctx *c, const struct plan_mesh *m, char *out, size_t outsz)
{
	unsigned ft = m->fsdp * m->tensor;

	if (c->p_expert)
		plan_put(out, outsz, "(%llu dense / %u + %llu expert / %u) params", ULL(c->p_dense), ft,
		    ULL(c->p_expert), ft * m->expert);
	else
		plan_put(out, outsz, "%llu params / %u (fsdp %u x tensor %u)", ULL(c->params), ft, m->fsdp, m->tensor);
}

static void layer_text(const struct ctx *c, bool scores, char *out, size_t outsz)
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
static void describe(const struct ctx *c, const struct sizes *z, struct plan_memory *out)
{
	const struct plan_mesh *m = &out->mesh;
	const char *dt = plan_dtype_name(c->r.dtype), *pp = per_param_text(c->wbits);
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
			    ULL(add(c->fact_dense, c->fact_expert)), m->fsdp * m->tensor,
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
			    per_param_text(c->kvbits), plan_dtype_name(c->r.kv_dtype));
		else
			plan_put(out->kv_cache.formula, sizeof(out->kv_cache.formula), "2 x %u layers x %u KV heads (%u / "
			    "tensor %u) x %u head_dim x s %u x b %llu x %s B (%s)", c->r.model.layers, z->kv_dev,
			    c->kvh, m->tensor, c->hd, c->r.seq_len, ULL(out->per_device_batch),
			    per_param_text(c->kvbits), plan_dtype_name(c->r.kv_dtype));
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
static void fill_memory(const struct ctx *c, const struct plan_mesh *m, struct plan_memory *out)
{
	struct sizes z;
	uint64_t b = 0, g = 0;

	memset(out, 0, sizeof(*out));
	out->mesh = *m;
	batch_for(c, m, &b, &g);
	out->per_device_batch = b;
	out->global_batch = g;
	measure(c, m, b, &z);
	out->remat = pick_remat(c, &z, &out->fits);
	out->total_bytes = total_for(&z, out->remat);
	out->usable_bytes = c->usable;
	describe(c, &z, out);
}

enum acceld_err plan_evaluate(const struct plan_request *req, const struct plan_mesh *mesh, struct plan_memory *out)
{
	struct ctx c;
	const char *param;
	char err[PLAN_TEXT_MAX];
	uint64_t b, g;

	memset(out, 0, sizeof(*out));
	if (plan_request_check(req, &param, err, sizeof(err)) != ACCELD_OK || mesh->data == 0 || mesh->fsdp == 0 ||
	    mesh->tensor == 0 || mesh->expert == 0 ||
	    (uint64_t)mesh->data * mesh->fsdp * mesh->tensor * mesh->expert != req->devices.count)
		return ACCELD_EINVAL;
	resolve(req, &c);
	if (!batch_for(&c, mesh, &b, &g))
		return ACCELD_EINVAL;
	fill_memory(&c, mesh, out);
	return ACCELD_OK;
}

static void mesh_text(const struct plan_mesh *m, char *out, size_t outsz)
{
	plan_put(out, outsz, "data %u x fsdp %u x tensor %u x expert %u", m->data, m->fsdp, m->tensor, m->expert);
}

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
	struct ctx c;

	resolve(req, &c);
	return search(&c, NULL, best) == 1;
}

/* The device hint: a bigger single GPU host (up to the usual 8), then more hosts (or TPU slices) of this shape. */
static void hint_devices(const struct ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_devices *d = &r.devices;
	struct plan_candidate best;
	struct plan_hint *h;
	char ms[96], tt[32];
	unsigned count = d->count, per_host = c->per_host, domain = c->domain, step;

	if (d->kind == PLAN_GPU && c->hosts == 1 && count < 8) {
		for (unsigned n = count * 2; n <= 8; n *= 2) {
			d->count = n;
			d->per_host = n;
			d->fast_domain = c->domain == count ? n : c->domain;
			if (fits_with(&r, &best)) {
				h = add_hint(out, PLAN_HINT_DEVICES, n, &best.mesh);
				mesh_text(&best.mesh, ms, sizeof(ms));
				if (h)
					plan_put(h->text, sizeof(h->text), "%u GPUs on one host (a fast-link domain of %u): "
					    "%s", n, d->fast_domain, ms);
				return;
			}
			count = n;
			per_host = n;
			domain = d->fast_domain;
		}
	}
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
		mesh_text(&best.mesh, ms, sizeof(ms));
		if (d->kind == PLAN_TPU && c->slice) {
			torus_text(d->torus, tt, sizeof(tt));
			plan_put(h->text, sizeof(h->text), "%llu chips (%llu slices of %s, data across slices): %s", ULL(n),
			    ULL(n / c->slice), tt, ms);
		} else {
			plan_put(h->text, sizeof(h->text), "%llu %s (%llu hosts of %u): %s", ULL(n),
			    d->kind == PLAN_GPU ? "GPUs" : d->kind == PLAN_TPU ? "chips" : "CPU devices",
			    ULL(n / per_host), per_host, ms);
		}
		return;
	}
}

static void hint_dtype(const struct ctx *c, struct plan_result *out)
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
			mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "pure bf16 training (no fp32 master copy, optimizer states in "
			    "bf16): %s", ms);
		}
		return;
	}
	for (size_t i = 0; i < COUNT(infer_order); i++) {
		if (dtype_bits[infer_order[i]] >= c->wbits)
			continue;
		r.dtype = infer_order[i]; /* the KV cache keeps its dtype */
		if (!fits_with(&r, &best))
			continue;
		h = add_hint(out, PLAN_HINT_DTYPE, infer_order[i], &best.mesh);
		if (h) {
			mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "%s weights (%s B/param)%s: %s", plan_dtype_name(infer_order[i]),
			    per_param_text(dtype_bits[infer_order[i]]),
			    infer_order[i] == PLAN_INT8 ? ", or fp8 where the device has it" : "", ms);
		}
		return;
	}
}

static void hint_memory_savers(const struct ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate best;
	struct plan_hint *h;
	char ms[96];

	if (c->r.mode == PLAN_TRAIN && c->shape && c->r.remat != PLAN_REMAT_AUTO && c->r.remat != PLAN_REMAT_FULL) {
		r.remat = PLAN_REMAT_AUTO;
		if (fits_with(&r, &best) && (h = add_hint(out, PLAN_HINT_REMAT, best.remat, &best.mesh))) {
			mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "%s: %s", plan_remat_phrase(best.remat), ms);
		}
		r.remat = c->r.remat;
	}
	if (c->shape && !c->r.flash_attention) {
		r.flash_attention = true;
		if (fits_with(&r, &best) && (h = add_hint(out, PLAN_HINT_FLASH, 1, &best.mesh))) {
			mesh_text(&best.mesh, ms, sizeof(ms));
			plan_put(h->text, sizeof(h->text), "flash attention (no stored attention scores): %s", ms);
		}
	}
}

/*
 * The largest per-device batch below the current one that fits some mesh (memory grows with the batch). A global
 * batch is at least global / devices a device, on the mesh with the most batch shards.
 */
static void hint_batch(const struct ctx *c, struct plan_result *out)
{
	struct plan_request r = c->r;
	struct plan_candidate best, found = {0};
	struct plan_hint *h;
	uint64_t lo = 1, hi, ok = 0;
	uint64_t cur = c->r.global_batch ? cdiv(c->r.global_batch, c->r.devices.count) : c->r.per_device_batch;
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
	mesh_text(&found.mesh, ms, sizeof(ms));
	plan_put(h->text, sizeof(h->text), "per-device batch %llu (global %llu; accumulate gradients for a larger one): "
	    "%s", ULL(ok), ULL(found.per_device_batch * found.mesh.data * found.mesh.fsdp * found.mesh.expert), ms);
}

void plan_result_free(struct plan_result *res)
{
	free(res->candidates);
	res->candidates = NULL;
	res->ncandidates = 0;
}

enum acceld_err plan_compute(const struct plan_request *req, struct plan_result *out)
{
	struct ctx ctx, *c = &ctx;
	struct cands cs = {0};
	struct plan_candidate best;
	const char *param;
	char err[PLAN_TEXT_MAX], ms[96];
	int rc;

	memset(out, 0, sizeof(*out));
	out->req = *req;
	if (plan_request_check(req, &param, err, sizeof(err)) != ACCELD_OK) {
		plan_put(out->detail, sizeof(out->detail), "%s: %s", param, err);
		return ACCELD_EINVAL;
	}
	resolve(req, c);
	out->req = c->r;
	out->params = c->params;
	out->params_expert = c->p_expert;
	out->params_active = c->active;
	out->params_derived = c->derived;
	out->hosts = c->hosts;
	rc = search(c, &cs, &best);
	if (rc < 0) {
		free(cs.v);
		return ACCELD_ENOMEM;
	}
	if (rc == 1) {
		out->fits = true;
		rank_reasons(c, &cs, &best);
		fill_memory(c, &best.mesh, &out->memory);
		out->has_memory = true;
	} else {
		/* the closest mesh: the valid one needing the least memory */
		const struct plan_candidate *near = NULL;

		for (size_t i = 0; i < cs.n; i++)
			if (cs.v[i].valid && cs.v[i].total_bytes &&
			    (near == NULL || cs.v[i].total_bytes < near->total_bytes))
				near = &cs.v[i];
		if (near) {
			char need[32], have[32];

			fill_memory(c, &near->mesh, &out->memory);
			out->has_memory = true;
			mesh_text(&near->mesh, ms, sizeof(ms));
			fmt_gib(need, sizeof(need), near->total_bytes);
			fmt_gib(have, sizeof(have), c->usable);
			plan_put(out->detail, sizeof(out->detail), "no mesh of %u %s devices fits: the closest, %s, needs "
			    "%s of %s usable", c->r.devices.count, plan_kind_name(c->r.devices.kind), ms, need, have);
		} else {
			plan_put(out->detail, sizeof(out->detail), "no mesh of %u %s devices passes the link, divisibility "
			    "and batch rules (see the candidates)", c->r.devices.count,
			    plan_kind_name(c->r.devices.kind));
		}
		hint_devices(c, out);
		hint_dtype(c, out);
		hint_memory_savers(c, out);
		hint_batch(c, out);
	}
	qsort(cs.v, cs.n, sizeof(cs.v[0]), by_order);
	out->candidates = cs.v;
	out->ncandidates = cs.n;
	return out->fits ? ACCELD_OK : ACCELD_EUNPROCESSABLE;
}

static json_t *mesh_json(const struct plan_mesh *m)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "data", (json_int_t)m->data, "fsdp", (json_int_t)m->fsdp, "tensor",
			 (json_int_t)m->tensor, "expert", (json_int_t)m->expert);
}

static json_t *bytes_json(uint64_t v)
{
	return v == SAT || v > (uint64_t)INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *term_json(const struct plan_term *t)
{
	return json_pack("{s:o, s:s}", "bytes", bytes_json(t->bytes), "formula", t->formula);
}

static json_t *memory_json(const struct plan_memory *m)
{
	json_t *o = json_object();

	json_object_set_new(o, "weights", term_json(&m->weights));
	json_object_set_new(o, "gradients", term_json(&m->gradients));
	json_object_set_new(o, "optimizer", term_json(&m->optimizer));
	json_object_set_new(o, "activations", term_json(&m->activations));
	json_object_set_new(o, "activations_selective", term_json(&m->activations_selective));
	json_object_set_new(o, "activations_full", term_json(&m->activations_full));
	json_object_set_new(o, "kv_cache", term_json(&m->kv_cache));
	json_object_set_new(o, "remat", json_string(plan_remat_name(m->remat)));
	json_object_set_new(o, "total_bytes", bytes_json(m->total_bytes));
	json_object_set_new(o, "usable_bytes", bytes_json(m->usable_bytes));
	json_object_set_new(o, "fits", json_boolean(m->fits));
	return o;
}

static void set_uint(json_t *o, const char *key, uint64_t v)
{
	if (v)
		json_object_set_new(o, key, bytes_json(v));
}

/* Why the chosen mesh won (its candidate's text), or why nothing fits. */
static const char *chosen_reason(const struct plan_result *res)
{
	for (size_t i = 0; res->fits && i < res->ncandidates; i++)
		if (memcmp(&res->candidates[i].mesh, &res->memory.mesh, sizeof(res->memory.mesh)) == 0)
			return res->candidates[i].why;
	return res->detail;
}

json_t *plan_json(const struct plan_result *res)
{
	const struct plan_request *r = &res->req;
	const struct plan_model *md = &r->model;
	const struct plan_devices *d = &r->devices;
	json_t *o = json_object(), *model = json_object(), *dev = json_object(), *rej = json_array(),
	       *hints = json_array();

	json_object_set_new(o, "fits", json_boolean(res->fits));
	json_object_set_new(o, "mode", json_string(plan_mode_name(r->mode)));
	json_object_set_new(o, "dtype", json_string(plan_dtype_name(r->dtype)));
	if (r->mode == PLAN_TRAIN) {
		json_object_set_new(o, "optimizer", json_string(plan_optimizer_name(r->optimizer)));
		json_object_set_new(o, "mixed_precision", json_boolean(r->mixed_precision));
		json_object_set_new(o, "remat", json_string(plan_remat_name(r->remat)));
	} else {
		json_object_set_new(o, "kv_dtype", json_string(plan_dtype_name(r->kv_dtype)));
	}
	json_object_set_new(o, "flash_attention", json_boolean(r->flash_attention));
	json_object_set_new(o, "seq_len", json_integer(r->seq_len));

	json_object_set_new(model, "params", bytes_json(res->params));
	json_object_set_new(model, "params_derived", json_boolean(res->params_derived));
	if (res->params_expert) {
		json_object_set_new(model, "params_expert", bytes_json(res->params_expert));
		json_object_set_new(model, "params_active", bytes_json(res->params_active));
	}
	set_uint(model, "layers", md->layers);
	set_uint(model, "hidden", md->hidden);
	set_uint(model, "heads", md->heads);
	set_uint(model, "kv_heads", md->heads ? (md->kv_heads ? md->kv_heads : md->heads) : 0);
	set_uint(model, "head_dim", md->heads ? (md->head_dim ? md->head_dim : md->hidden / md->heads) : 0);
	set_uint(model, "ffn", md->hidden ? (md->ffn ? md->ffn : 4ull * md->hidden) : 0);
	set_uint(model, "vocab", md->vocab);
	set_uint(model, "experts", md->experts > 1 ? md->experts : 0);
	set_uint(model, "experts_per_token", md->experts > 1 ? (md->experts_per_token ? md->experts_per_token : 1) : 0);
	json_object_set_new(o, "model", model);

	json_object_set_new(dev, "kind", json_string(plan_kind_name(d->kind)));
	json_object_set_new(dev, "count", json_integer(d->count));
	json_object_set_new(dev, "per_host", json_integer(d->per_host ? d->per_host : d->count));
	json_object_set_new(dev, "hosts", json_integer(res->hosts));
	json_object_set_new(dev, "memory_bytes", bytes_json(d->memory_bytes));
	if (d->kind == PLAN_TPU) {
		char tt[32];

		if (d->torus[0]) {
			torus_text(d->torus, tt, sizeof(tt));
			json_object_set_new(dev, "torus", json_string(tt));
		} else {
			json_object_set_new(dev, "torus", json_null());
		}
	} else {
		json_object_set_new(dev, "fast_domain", json_integer(d->fast_domain ? d->fast_domain : 1));
	}
	json_object_set_new(dev, "reserve_ppm", json_integer(r->reserve_ppm));
	json_object_set_new(dev, "usable_bytes", bytes_json(batch_usable_bytes(d->memory_bytes, r->reserve_ppm)));
	json_object_set_new(o, "devices", dev);

	json_object_set_new(o, "mesh", res->fits ? mesh_json(&res->memory.mesh) : json_null());
	json_object_set_new(o, "reason", json_string(chosen_reason(res)));
	json_object_set_new(o, "batch", res->fits ? json_pack("{s:o, s:o}", "per_device",
							      bytes_json(res->memory.per_device_batch), "global",
							      bytes_json(res->memory.global_batch))
						  : json_null());
	json_object_set_new(o, "memory", res->has_memory ? memory_json(&res->memory) : json_null());
	for (size_t i = 0; i < res->ncandidates; i++) {
		const struct plan_candidate *cd = &res->candidates[i];
		json_t *e;

		if (res->fits && memcmp(&cd->mesh, &res->memory.mesh, sizeof(cd->mesh)) == 0)
			continue;
		e = json_pack("{s:o, s:b, s:s}", "mesh", mesh_json(&cd->mesh), "fits", cd->fits, "reason", cd->why);
		if (cd->total_bytes) {
			json_object_set_new(e, "total_bytes", bytes_json(cd->total_bytes));
			if (r->mode == PLAN_TRAIN)
				json_object_set_new(e, "remat", json_string(plan_remat_name(cd->remat)));
		}
		json_array_append_new(rej, e);
	}
	json_object_set_new(o, "rejected", rej);
	for (size_t i = 0; i < res->nhints; i++) {
		const struct plan_hint *h = &res->hints[i];
		json_t *v = h->kind == PLAN_HINT_DTYPE	   ? json_string(plan_dtype_name((enum plan_dtype)h->value))
			    : h->kind == PLAN_HINT_REMAT ? json_string(plan_remat_name((enum plan_remat)h->value))
			    : h->kind == PLAN_HINT_FLASH ? json_true()
							 : bytes_json(h->value);

		json_array_append_new(hints, json_pack("{s:s, s:o, s:o, s:s}", "kind", plan_hint_name(h->kind), "value",
						       v, "mesh", mesh_json(&h->mesh), "text", h->text));
	}
	json_object_set_new(o, "suggestions", hints);
	if (!res->fits && res->detail[0])
		json_object_set_new(o, "detail", json_string(res->detail));
	return o;
}
