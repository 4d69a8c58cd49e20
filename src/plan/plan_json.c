/* plan_json: a plan's answer as a JSON document. */
#include "plan/plan_json.h"

#include <string.h>

#include "plan/plan_names.h"
#include "select/batch.h"

static json_t *mesh_json(const struct plan_mesh *m)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "data", (json_int_t)m->data, "fsdp", (json_int_t)m->fsdp, "tensor",
			 (json_int_t)m->tensor, "expert", (json_int_t)m->expert);
}

static json_t *bytes_json(uint64_t v)
{
	return v == PLAN_SAT || v > (uint64_t)INT64_MAX ? json_null() : json_integer((json_int_t)v);
}

static json_t *term_json(const struct plan_term *t)
{
	return json_pack("{s:o, s:s}", "bytes", t->unknown ? json_null() : bytes_json(t->bytes), "formula", t->formula);
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
	json_object_set_new(o, "gather", term_json(&m->gather));
	json_object_set_new(o, "remat", json_string(plan_remat_name(m->remat)));
	/* with a term unknown the sum is a lower bound: unknown, and so is whether it fits */
	json_object_set_new(o, "total_bytes", m->activations_known ? bytes_json(m->total_bytes) : json_null());
	json_object_set_new(o, "usable_bytes", bytes_json(m->usable_bytes));
	json_object_set_new(o, "fits", m->activations_known ? json_boolean(m->fits) : json_null());
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

	json_object_set_new(o, "fits", res->judged ? json_boolean(res->fits) : json_null());
	json_object_set_new(o, "mode", json_string(plan_mode_name(r->mode)));
	json_object_set_new(o, "dtype", json_string(plan_dtype_name(r->dtype)));
	if (r->mode == PLAN_TRAIN) {
		json_object_set_new(o, "optimizer", json_string(plan_optimizer_name(r->optimizer)));
		json_object_set_new(o, "mixed_precision", json_boolean(r->mixed_precision));
		json_object_set_new(o, "zero", json_integer(r->zero ? r->zero : 3));
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
			plan_torus_text(d->torus, tt, sizeof(tt));
			json_object_set_new(dev, "torus", json_string(tt));
		} else {
			json_object_set_new(dev, "torus", json_null());
		}
	} else {
		json_object_set_new(dev, "fast_domain", json_integer(d->fast_domain ? d->fast_domain : 1));
	}
	/* the fraction of memory kept back, as /batch-config's memory.reserve and both requests' reserve say it */
	json_object_set_new(dev, "reserve", json_real((double)r->reserve_ppm / 1e6));
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
		e = json_pack("{s:o, s:o, s:s}", "mesh", mesh_json(&cd->mesh), "fits",
			      cd->fits && !res->judged ? json_null() : json_boolean(cd->fits), "reason", cd->why);
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
