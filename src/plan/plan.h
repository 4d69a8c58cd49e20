/*
 * plan: how a model fits on a set of devices -- the memory each device needs and the mesh (data x fsdp x tensor x
 * expert) that holds it, or what would when nothing does. Pure arithmetic over plain data: no I/O, no globals, no
 * threads; the caller gives the devices (from the registry, or an override). docs/plan.md gives the model, its
 * sources and the order meshes are preferred in. This header is the interface; it includes the types, the names,
 * the check, the shape's count, the JSON and the multi-host environment.
 */
#ifndef ACCELD_PLAN_H
#define ACCELD_PLAN_H

#include "core/err.h"
#include "plan/plan_check.h"
#include "plan/plan_env.h"
#include "plan/plan_json.h"
#include "plan/plan_names.h"
#include "plan/plan_shape.h"
#include "plan/plan_types.h"

/* Defaults: bf16 weights, inference, Adam, mixed precision, sequence 2048, per-device batch 1, remat auto, reserve
 * 0.1. The model and the devices stay zero for the caller to fill. */
void plan_request_init(struct plan_request *req);

/*
 * Plans req. Returns ACCELD_OK with the chosen mesh in out->memory; ACCELD_EUNPROCESSABLE when no mesh fits, with
 * the closest one's memory, every candidate's reason and the hints; ACCELD_EINVAL for a request that fails
 * plan_request_check (message in out->detail); ACCELD_ENOMEM. Free out with plan_result_free whatever it returns.
 */
enum acceld_err plan_compute(const struct plan_request *req, struct plan_result *out);

/* Frees what plan_compute allocated in res (not res itself); a zeroed or freed result is fine. */
void plan_result_free(struct plan_result *res);

/*
 * The memory one device needs for req laid out as mesh (remat AUTO counts the least that fits). Returns ACCELD_OK
 * (out->fits says whether it fits), or ACCELD_EINVAL when req is invalid or the mesh's product is not the device
 * count. It does not apply the link and divisibility rules: a what-if for a mesh the caller names.
 */
enum acceld_err plan_evaluate(const struct plan_request *req, const struct plan_mesh *mesh, struct plan_memory *out);

#endif
