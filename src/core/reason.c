/* reason: the table of problem reasons, their statuses and titles. */
#include "core/reason.h"

#include <string.h>

static const struct {
	const char *name;
	int status;
	const char *title;
} reasons[REASON_COUNT] = {
	[REASON_INVALID_PARAMETER] = {"INVALID_PARAMETER", 400, "Invalid parameter"},
	[REASON_MISSING_PARAMETER] = {"MISSING_PARAMETER", 400, "Missing parameter"},
	[REASON_UNKNOWN_PARAMETER] = {"UNKNOWN_PARAMETER", 400, "Unknown parameter"},
	[REASON_DUPLICATE_PARAMETER] = {"DUPLICATE_PARAMETER", 400, "Duplicate parameter"},
	[REASON_TOO_MANY_PARAMETERS] = {"TOO_MANY_PARAMETERS", 400, "Too many parameters"},
	[REASON_TOO_MANY_POINTS] = {"TOO_MANY_POINTS", 400, "Too many points"},
	[REASON_INVALID_TIME] = {"INVALID_TIME", 400, "Invalid time"},
	[REASON_INVALID_WINDOW] = {"INVALID_WINDOW", 400, "Invalid time window"},
	[REASON_BEYOND_RETENTION] = {"BEYOND_RETENTION", 400, "Beyond retention"},
	[REASON_EMPTY_BODY] = {"EMPTY_BODY", 400, "Empty body"},
	[REASON_MALFORMED_JSON] = {"MALFORMED_JSON", 400, "Malformed JSON"},
	[REASON_JSON_TOO_DEEP] = {"JSON_TOO_DEEP", 400, "JSON nested too deeply"},
	[REASON_UNKNOWN_FIELD] = {"UNKNOWN_FIELD", 400, "Unknown field"},
	[REASON_MISSING_FIELD] = {"MISSING_FIELD", 400, "Missing field"},
	[REASON_INVALID_TYPE] = {"INVALID_TYPE", 400, "Invalid type"},
	[REASON_INVALID_VALUE] = {"INVALID_VALUE", 400, "Invalid value"},
	[REASON_NOT_A_NUMBER] = {"NOT_A_NUMBER", 400, "Not a finite number"},
	[REASON_LENGTH_MISMATCH] = {"LENGTH_MISMATCH", 400, "Length mismatch"},
	[REASON_ROW_LENGTH_MISMATCH] = {"ROW_LENGTH_MISMATCH", 400, "Row length mismatch"},
	[REASON_TOO_MANY_ELEMENTS] = {"TOO_MANY_ELEMENTS", 400, "Too many elements"},
	[REASON_NOT_APPLICABLE] = {"NOT_APPLICABLE", 400, "Field not applicable"},
	[REASON_CONFLICTING_FIELDS] = {"CONFLICTING_FIELDS", 400, "Conflicting fields"},
	[REASON_UNAUTHORIZED] = {"UNAUTHORIZED", 401, "Bearer token required"},
	[REASON_NOT_FOUND] = {"NOT_FOUND", 404, "Not found"},
	[REASON_UNKNOWN_DEVICE] = {"UNKNOWN_DEVICE", 404, "Unknown device"},
	[REASON_JOB_NOT_FOUND] = {"JOB_NOT_FOUND", 404, "Job not found"},
	[REASON_CHECK_NOT_FOUND] = {"CHECK_NOT_FOUND", 404, "Check not found"},
	[REASON_METHOD_NOT_ALLOWED] = {"METHOD_NOT_ALLOWED", 405, "Method not allowed"},
	[REASON_NO_MATCHING_DEVICE] = {"NO_MATCHING_DEVICE", 409, "No matching device"},
	[REASON_DEVICE_CHANGED] = {"DEVICE_CHANGED", 409, "Device changed"},
	[REASON_NOT_CANCELLABLE] = {"NOT_CANCELLABLE", 409, "Job not cancellable"},
	[REASON_DEVICE_BUSY] = {"DEVICE_BUSY", 409, "Device busy"},
	[REASON_CANCELLED] = {"CANCELLED", 409, "Job cancelled"},
	[REASON_CHECK_RUNNING] = {"CHECK_RUNNING", 409, "Check already running"},
	[REASON_BODY_TOO_LARGE] = {"BODY_TOO_LARGE", 413, "Body too large"},
	[REASON_TOO_LARGE] = {"TOO_LARGE", 413, "Too large"},
	[REASON_JOB_TOO_LARGE] = {"JOB_TOO_LARGE", 413, "Job too large"},
	[REASON_EXCEEDS_DEVICE_ALLOCATION] = {"EXCEEDS_DEVICE_ALLOCATION", 413, "Exceeds the device's allocation"},
	[REASON_EXCEEDS_DEVICE_MEMORY] = {"EXCEEDS_DEVICE_MEMORY", 413, "Exceeds device memory"},
	[REASON_OUTPUT_TOO_LARGE] = {"OUTPUT_TOO_LARGE", 413, "Output too large"},
	[REASON_UNSUPPORTED_MEDIA_TYPE] = {"UNSUPPORTED_MEDIA_TYPE", 415, "Unsupported media type"},
	[REASON_UNSATISFIABLE] = {"UNSATISFIABLE", 422, "Cannot be satisfied"},
	[REASON_UNSUPPORTED] = {"UNSUPPORTED", 422, "Not supported by the device"},
	[REASON_WOULD_TIME_OUT] = {"WOULD_TIME_OUT", 422, "Would time out"},
	[REASON_BUSY] = {"BUSY", 429, "Busy"},
	[REASON_QUEUE_FULL] = {"QUEUE_FULL", 429, "Queue full"},
	[REASON_INTERNAL] = {"INTERNAL", 500, "Internal error"},
	[REASON_IO_ERROR] = {"IO_ERROR", 500, "Input/output error"},
	[REASON_DEVICE_FAILURE] = {"DEVICE_FAILURE", 502, "Device failure"},
	[REASON_BACKEND_CRASHED] = {"BACKEND_CRASHED", 502, "Backend crashed"},
	[REASON_STARTING] = {"STARTING", 503, "Starting"},
	[REASON_SHUTTING_DOWN] = {"SHUTTING_DOWN", 503, "Shutting down"},
	[REASON_NOT_READY] = {"NOT_READY", 503, "Not ready"},
	[REASON_UNAVAILABLE] = {"UNAVAILABLE", 503, "Service unavailable"},
	[REASON_OUT_OF_MEMORY] = {"OUT_OF_MEMORY", 503, "Out of memory"},
	[REASON_INTERRUPTED] = {"INTERRUPTED", 503, "Interrupted"},
	[REASON_TIMED_OUT] = {"TIMED_OUT", 504, "Timed out"},
};

static bool reason_valid(enum reason r)
{
	return (int)r >= 0 && r < REASON_COUNT && reasons[r].name != NULL;
}

const char *reason_name(enum reason r)
{
	return reason_valid(r) ? reasons[r].name : "INTERNAL";
}

int reason_status(enum reason r)
{
	return reason_valid(r) ? reasons[r].status : 500;
}

const char *reason_title(enum reason r)
{
	return reason_valid(r) ? reasons[r].title : "Internal error";
}

bool reason_parse(const char *name, enum reason *out)
{
	for (int i = 0; i < REASON_COUNT; i++) {
		if (reasons[i].name != NULL && strcmp(reasons[i].name, name) == 0) {
			*out = (enum reason)i;
			return true;
		}
	}
	return false;
}
