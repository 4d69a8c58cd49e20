/* err: names of the service's error codes and the problem reason each one is answered with. */
#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
	const char *str;
	enum reason reason;
} err_table[ACCELD_ERR_COUNT] = {
	[ACCELD_OK] = {"ok", REASON_INTERNAL}, /* never answered as a problem */
	[ACCELD_EINVAL] = {"invalid value", REASON_INVALID_VALUE},
	[ACCELD_ENOTFOUND] = {"not found", REASON_NOT_FOUND},
	[ACCELD_ECONFLICT] = {"no device meets the constraints", REASON_NO_MATCHING_DEVICE},
	[ACCELD_ETOOLARGE] = {"too large", REASON_TOO_LARGE},
	[ACCELD_EUNPROCESSABLE] = {"cannot be satisfied", REASON_UNSATISFIABLE},
	[ACCELD_EBUSY] = {"busy", REASON_BUSY},
	[ACCELD_EUNAVAILABLE] = {"unavailable", REASON_UNAVAILABLE},
	[ACCELD_ETIMEOUT] = {"timed out", REASON_TIMED_OUT},
	[ACCELD_EUNSUPPORTED] = {"not supported by the device", REASON_UNSUPPORTED},
	[ACCELD_EDEVICE] = {"device failure", REASON_DEVICE_FAILURE},
	[ACCELD_EIO] = {"input/output error", REASON_IO_ERROR},
	[ACCELD_ENOMEM] = {"out of memory", REASON_OUT_OF_MEMORY},
	[ACCELD_EHELD] = {"device held elsewhere", REASON_DEVICE_BUSY},
	[ACCELD_EDEVMEM] = {"exceeds device memory", REASON_EXCEEDS_DEVICE_MEMORY},
	[ACCELD_ECRASHED] = {"backend crashed", REASON_BACKEND_CRASHED},
};

static int err_valid(enum acceld_err err)
{
	return (int)err >= 0 && err < ACCELD_ERR_COUNT;
}

const char *acceld_err_str(enum acceld_err err)
{
	return err_valid(err) ? err_table[err].str : "unknown error";
}

enum reason acceld_err_to_reason(enum acceld_err err)
{
	return err_valid(err) ? err_table[err].reason : REASON_INTERNAL;
}

const char *acceld_err_reason(enum acceld_err err)
{
	return err == ACCELD_OK ? "OK" : reason_name(acceld_err_to_reason(err));
}

int acceld_err_http(enum acceld_err err)
{
	return err == ACCELD_OK ? 200 : reason_status(acceld_err_to_reason(err));
}

void refusal_set(struct refusal *r, enum acceld_err err, enum reason reason, const char *fmt, ...)
{
	va_list ap;

	r->err = err;
	r->reason = reason;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

void refusal_release(struct refusal *r)
{
	json_decref(r->extra);
	r->extra = NULL;
}
