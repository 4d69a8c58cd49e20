/* plan: a request checked, resolved and searched into the chosen mesh, or the closest one and what would fit. */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plan_hints.h"
#include "plan/plan_memory.h"
#include "plan/plan_mesh.h"
#include "plan/plan_text.h"

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

enum acceld_err plan_evaluate(const struct plan_request *req, const struct plan_mesh *mesh, struct plan_memory *out)
{
	struct plan_ctx c;
	const char *param;
	char err[PLAN_TEXT_MAX];
	uint64_t b, g;

	memset(out, 0, sizeof(*out));
	if (plan_request_check(req, &param, err, sizeof(err)) != ACCELD_OK || mesh->data == 0 || mesh->fsdp == 0 ||
	    mesh->tensor == 0 || mesh->expert == 0 ||
	    (uint64_t)mesh->data * mesh->fsdp * mesh->tensor * mesh->expert != req->devices.count)
		return ACCELD_EINVAL;
	plan_resolve(req, &c);
	if (!plan_batch_for(&c, mesh, &b, &g))
		return ACCELD_EINVAL;
	plan_fill_memory(&c, mesh, out);
	return ACCELD_OK;
}

void plan_result_free(struct plan_result *res)
{
	free(res->candidates);
	res->candidates = NULL;
	res->ncandidates = 0;
}

enum acceld_err plan_compute(const struct plan_request *req, struct plan_result *out)
{
	struct plan_ctx ctx, *c = &ctx;
	struct plan_cands cs = {0};
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
	plan_resolve(req, c);
	out->req = c->r;
	out->params = c->params;
	out->params_expert = c->p_expert;
	out->params_active = c->active;
	out->params_derived = c->derived;
	out->hosts = c->hosts;
	rc = plan_search(c, &cs, &best);
	if (rc < 0) {
		free(cs.v);
		return ACCELD_ENOMEM;
	}
	out->judged = true;
	if (rc == 1 && !c->shape) {
		/* the known terms fit, the activations (and the KV cache, the gather buffers) are unknown: whether
		 * it fits cannot be said; what would let it be said is the shape */
		char need[96];

		out->judged = false;
		plan_rank_reasons(c, &cs, &best);
		plan_fill_memory(c, &best.mesh, &out->memory);
		out->has_memory = true;
		plan_mesh_text(&best.mesh, ms, sizeof(ms));
		plan_gib_text(need, sizeof(need), best.total_bytes);
		plan_put(out->detail, sizeof(out->detail), "cannot judge whether it fits: the activations%s are unknown "
		    "without the model's shape (give model, or layers, hidden, heads and vocab); the rest needs %s a "
		    "device on %s", c->r.mode == PLAN_INFER ? " and the KV cache" : "", need, ms);
	} else if (rc == 1) {
		out->fits = true;
		plan_rank_reasons(c, &cs, &best);
		plan_fill_memory(c, &best.mesh, &out->memory);
		out->has_memory = true;
		plan_hint_global_batch(c, out);
	} else {
		/* the closest mesh: the valid one needing the least memory */
		const struct plan_candidate *near = NULL;

		for (size_t i = 0; i < cs.n; i++)
			if (cs.v[i].valid && cs.v[i].total_bytes &&
			    (near == NULL || cs.v[i].total_bytes < near->total_bytes))
				near = &cs.v[i];
		if (near) {
			char need[96];

			plan_fill_memory(c, &near->mesh, &out->memory);
			out->has_memory = true;
			plan_mesh_text(&near->mesh, ms, sizeof(ms));
			plan_need_text(need, sizeof(need), near->total_bytes, c->usable);
			plan_put(out->detail, sizeof(out->detail), "no mesh of %u %s devices fits: the closest, %s, %s%s",
			    c->r.devices.count, plan_kind_name(c->r.devices.kind), ms, need,
			    c->shape ? "" : " without its activations, which are unknown (no model shape)");
		} else {
			plan_put(out->detail, sizeof(out->detail), "no mesh of %u %s devices passes the link, divisibility "
			    "and batch rules (see the candidates)", c->r.devices.count,
			    plan_kind_name(c->r.devices.kind));
		}
		plan_hints(c, out);
	}
	plan_cands_sort(&cs);
	out->candidates = cs.v;
	out->ncandidates = cs.n;
	return out->fits ? ACCELD_OK : ACCELD_EUNPROCESSABLE;
}
