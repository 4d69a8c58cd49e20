/* place: a selection turned into the devices of an executor request. */
#include "select/place.h"

#include <stdio.h>
#include <string.h>

/*
 * Appends the eligible devices of res, best first, leaving out skip (may be NULL). The request holds at most
 * EXEC_CHAIN_MAX: a host with more accelerators of one kind keeps room for the first device of every other kind,
 * so a job whose kind fails as a whole (a plugin's devices held by another process) can still fall back.
 */
static void add_order(struct exec_request *req, const struct select_result *res, const char *skip)
{
	bool seen[3] = {false, false, false};

	for (size_t i = 0; i < res->norder; i++) {
		const struct device *d = res->candidates[res->order[i]].dev;
		bool later[3] = {false, false, false};
		unsigned need = 0;

		if (skip != NULL && strcmp(d->id, skip) == 0)
			continue;
		for (size_t j = i + 1; j < res->norder; j++)
			later[res->candidates[res->order[j]].dev->type] = true;
		for (int t = 0; t < 3; t++)
			need += later[t] && !seen[t] && t != (int)d->type;
		if (req->ndevices + 1 + need > EXEC_CHAIN_MAX)
			continue;
		exec_request_add_device(req, d->id);
		seen[d->type] = true;
	}
}

static const struct select_candidate *candidate(const struct select_result *res, const char *id)
{
	for (size_t i = 0; i < res->ncandidates; i++)
		if (strcmp(res->candidates[i].dev->id, id) == 0)
			return &res->candidates[i];
	return NULL;
}

/*
 * A pinned device: used when it meets the constraints; the others follow it (or replace it) with fallback. One
 * that detection no longer lists, or that is not executable now, still goes to the executor, which runs jobs only
 * on the devices it opened and says precisely why it cannot (gone, renamed, no backend).
 */
static enum acceld_err place_pinned(place_choose_fn choose, void *ctx, struct select_request *s,
				    struct select_result *res, enum acceld_err rc, struct exec_request *req,
				    struct refusal *why)
{
	char pinned[sizeof(s->device)];
	const struct select_candidate *pin = candidate(res, s->device);
	bool executor_says = rc == ACCELD_ENOTFOUND || (pin != NULL && pin->excluded_by != NULL &&
							strcmp(pin->excluded_by, "executable") == 0);

	snprintf(pinned, sizeof(pinned), "%s", s->device);
	snprintf(req->placement, sizeof(req->placement), "pinned by the request (device=%s)", pinned);
	if (rc == ACCELD_OK || executor_says) {
		exec_request_add_device(req, pinned);
	} else if (req->fallback) {
		snprintf(req->fallback_from, sizeof(req->fallback_from), "%s", pinned);
		snprintf(req->fallback_reason, sizeof(req->fallback_reason), "%s", res->reason);
	} else {
		refusal_set(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "%s", res->reason);
		return why->err;
	}
	if (!req->fallback)
		return ACCELD_OK;
	/* where else it may go: the same selection without the pin */
	select_result_release(res);
	s->device[0] = '\0';
	if (choose(ctx, s, res) == ACCELD_OK)
		add_order(req, res, pinned);
	if (req->ndevices == 0) {
		refusal_set(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "%.240s; and no other device meets the "
			    "constraints: %.240s", req->fallback_reason, res->reason);
		return why->err;
	}
	return ACCELD_OK;
}

enum acceld_err place_rank_devices(place_choose_fn choose, void *ctx, const struct select_request *sreq,
				   struct exec_request *req, struct refusal *why)
{
	struct select_request s = *sreq;
	struct select_result res;
	enum acceld_err rc;

	s.kernel = (int)req->kernel;
	s.executable = true;
	req->ndevices = 0;
	req->pinned = s.device[0] != '\0';
	req->fallback_from[0] = '\0';
	req->fallback_reason[0] = '\0';
	rc = choose(ctx, &s, &res);
	if (req->pinned) {
		rc = place_pinned(choose, ctx, &s, &res, rc, req, why);
	} else if (rc != ACCELD_OK) {
		refusal_set(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "%s", res.reason);
	} else if (res.fell_back && !req->fallback) {
		refusal_set(why, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "%.400s; and the request does not allow a "
			    "fallback (fallback=false)", res.reason);
		rc = why->err;
	} else {
		add_order(req, &res, NULL);
		snprintf(req->placement, sizeof(req->placement), "%s", res.reason);
		if (res.fell_back) {
			snprintf(req->fallback_from, sizeof(req->fallback_from), "%s", res.fallback_from);
			snprintf(req->fallback_reason, sizeof(req->fallback_reason), "%s", res.reason);
		}
	}
	select_result_release(&res);
	return rc;
}
