/*
 * place: where a job goes, decided by the same selection as /select (select.h: preference, policy, memory,
 * allow_tpu, and executable=true), turned into the ranked devices of an executor request (exec.h), whose fallback
 * chain the executor keeps. POST /run and `acceld run` both place through here, so a job sent with the constraints
 * of a /select call lands on the device that call names.
 */
#ifndef ACCELD_PLACE_H
#define ACCELD_PLACE_H

#include "core/err.h"
#include "exec/exec.h"
#include "select/select.h"

/* Runs a selection (select_choose, with or without measured figures); fills res, which the caller releases. */
typedef enum acceld_err (*place_choose_fn)(void *ctx, const struct select_request *sreq, struct select_result *res);

/*
 * Ranks the devices a job may go to: sreq holds the caller's preference, policy and constraints (its device, when
 * set, is the pinned one; kernel and executable are set here). Fills req->devices (best first), pinned, placement
 * and what selection fell back from; req->fallback says whether the job may move on from the first device. Returns
 * ACCELD_OK, or the refusal in why: 409 NO_MATCHING_DEVICE when nothing meets the constraints (or only another
 * kind, without fallback). A pinned device that is unknown or not executable is left to the executor, whose refusal says why
 * (404 UNKNOWN_DEVICE, 404 gone, 409 DEVICE_CHANGED, 422 UNSUPPORTED).
 */
enum acceld_err place_rank_devices(place_choose_fn choose, void *ctx, const struct select_request *sreq,
				   struct exec_request *req, struct refusal *why);

#endif
