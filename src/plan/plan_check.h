/* plan_check: whether a plan request's ranges and combinations make sense, naming the field that does not. */
#ifndef ACCELD_PLAN_CHECK_H
#define ACCELD_PLAN_CHECK_H

#include <stddef.h>

#include "core/err.h"
#include "plan/plan_types.h"

/*
 * Checks a request's ranges and combinations. Returns ACCELD_OK, or ACCELD_EINVAL with the offending field's name
 * as GET /plan takes it (static: "heads", "global_batch"; "devices" for anything of the devices) in *param and a
 * message in err that does not repeat it ("hidden 4095 is not a multiple of heads 32; give head_dim"): the caller
 * names the field, as a parameter or a JSONPath.
 */
enum acceld_err plan_request_check(const struct plan_request *req, const char **param, char *err, size_t errsz);

#endif
