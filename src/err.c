/* err: names and HTTP statuses of the service's error codes. */
#include "err.h"

static const struct {
	const char *str;
	const char *reason;
	int http;
} err_table[ACCELD_ERR_COUNT] = {
	[ACCELD_OK] = {"ok", "OK", 200},
	[ACCELD_EINVAL] = {"invalid value", "INVALID_VALUE", 400},
	[ACCELD_ENOTFOUND] = {"not found", "NOT_FOUND", 404},
	[ACCELD_ECONFLICT] = {"no device meets the constraints", "NO_MATCHING_DEVICE", 409},
	[ACCELD_ETOOLARGE] = {"too large", "TOO_LARGE", 413},
	[ACCELD_EUNPROCESSABLE] = {"cannot be satisfied", "UNSATISFIABLE", 422},
	[ACCELD_EBUSY] = {"busy", "BUSY", 429},
	[ACCELD_EUNAVAILABLE] = {"unavailable", "UNAVAILABLE", 503},
	[ACCELD_ETIMEOUT] = {"timed out", "TIMEOUT", 504},
	[ACCELD_EUNSUPPORTED] = {"not supported by the device", "UNSUPPORTED", 422},
	[ACCELD_EDEVICE] = {"device failure", "DEVICE_FAILURE", 502},
	[ACCELD_EIO] = {"input/output error", "IO_ERROR", 500},
	[ACCELD_ENOMEM] = {"out of memory", "OUT_OF_MEMORY", 503},
};

static int err_valid(enum acceld_err err)
{
	return (int)err >= 0 && err < ACCELD_ERR_COUNT;
}

const char *acceld_err_str(enum acceld_err err)
{
	return err_valid(err) ? err_table[err].str : "unknown error";
}

const char *acceld_err_reason(enum acceld_err err)
{
	return err_valid(err) ? err_table[err].reason : "INTERNAL";
}

int acceld_err_http(enum acceld_err err)
{
	return err_valid(err) ? err_table[err].http : 500;
}
