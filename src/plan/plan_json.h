/* plan_json: a plan's answer as the JSON document GET /plan, POST /plan and `acceld plan --json` give. */
#ifndef ACCELD_PLAN_JSON_H
#define ACCELD_PLAN_JSON_H

#include <jansson.h>

#include "plan/plan_types.h"

/*
 * The answer as a new JSON object: fits, the request's resolved settings, model, devices (with usable_bytes and
 * reserve_ppm), mesh and batch (null when nothing fits), reason (why the mesh won, or why nothing fits), memory
 * ({bytes, formula} per term, remat, total_bytes; the closest mesh's when nothing fits), rejected (every other candidate: mesh, fits, reason, total_bytes),
 * suggestions ({kind, value, mesh, text}) and detail when nothing fits. Integers in bytes, formulas and reasons
 * as strings, no floating-point numbers; a figure past 2^63 is null.
 */
json_t *plan_json(const struct plan_result *res);

#endif
