/* plan_check: whether a plan request's ranges and combinations make sense, naming the field that does not. */
#include "plan/plan_check.h"

#include "plan/plan_names.h"
#include "plan/plan_shape.h"
#include "plan/plan_text.h"

#define ULL(x) ((unsigned long long)(x))

#define FAIL(p, ...)                                                                                                 \
	do {                                                                                                         \
		*param = (p);                                                                                        \
		plan_put(err, errsz, __VA_ARGS__);                                                                        \
		return ACCELD_EINVAL;                                                                                \
	} while (0)

enum acceld_err plan_request_check(const struct plan_request *req, const char **param, char *err, size_t errsz)
{
	const struct plan_model *m = &req->model;
	const struct plan_devices *d = &req->devices;
	unsigned per_host = d->per_host ? d->per_host : d->count;

	if ((unsigned)req->dtype > PLAN_INT4)
		FAIL("dtype", "not one of " DTYPE_NAMES);
	if ((unsigned)req->kv_dtype > PLAN_INT4)
		FAIL("kv_dtype", "not one of " DTYPE_NAMES);
	if ((unsigned)req->mode > PLAN_TRAIN)
		FAIL("mode", "not infer or train");
	if ((unsigned)req->optimizer > PLAN_ADAFACTOR)
		FAIL("optimizer", "not adam, sgd_momentum, sgd or adafactor");
	if ((unsigned)req->remat > PLAN_REMAT_AUTO)
		FAIL("remat", "not none, selective, full or auto");
	if (req->zero > 3)
		FAIL("zero", "not 1, 2 or 3");
	if (req->zero && req->mode != PLAN_TRAIN)
		FAIL("zero", "ZeRO's stages are for training");
	if (req->zero && req->zero < 3 && d->kind == PLAN_TPU)
		FAIL("zero", "a TPU's fsdp axis shards weights, gradients and states alike (ZeRO-3); 1 and 2 are for GPU "
		     "training");
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
	if ((m->layers || m->hidden || m->heads) && !plan_shape_complete(m))
		FAIL("layers", "a model shape needs layers, hidden and heads together");
	if (m->heads && m->kv_heads && m->heads % m->kv_heads)
		FAIL("kv_heads", "heads %u is not a multiple of kv_heads %u", m->heads, m->kv_heads);
	if (m->heads && m->head_dim == 0 && m->hidden % m->heads)
		FAIL("heads", "hidden %u is not a multiple of heads %u; give head_dim", m->hidden,
		     m->heads);
	if (m->params == 0 && plan_params_from_shape(m, NULL, NULL) == 0)
		FAIL("params", "give model (a preset), params, or layers, hidden, heads and vocab to derive them (at "
		     "most %llu)", ULL(PLAN_MAX_PARAMS));
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
		unsigned chips = plan_torus_chips(d->torus);

		for (int i = 0; i < 3; i++)
			if (d->torus[i] > 1024 || (i > 0 && d->torus[i] && !d->torus[i - 1]))
				FAIL("devices", "the torus must be up to three dimensions of 1 to 1024");
		if (d->count % chips || chips % per_host)
			FAIL("devices", "a torus of %u chips must hold whole hosts of %u and divide the count %u",
			     chips, per_host, d->count);
	}
	return ACCELD_OK;
}
