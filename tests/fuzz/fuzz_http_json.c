/* libFuzzer harness: a request body through the JSON checks every JSON route runs (content type, depth, parse). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = malloc(size + 1);
	struct http_req req;
	struct http_resp resp;

	memcpy(body, data, size);
	body[size] = '\0';
	memset(&req, 0, sizeof(req));
	req.method = HTTP_POST;
	req.method_name = "POST";
	req.path = "/fuzz";
	req.content_type = "application/json";
	req.body = body;
	req.body_len = size;
	req.has_body = size > 0;
	req.max_json_depth = 32;
	http_resp_init(&resp, "fuzz");
	if (http_req_parse_json(&req, &resp))
		json_decref(req.json);
	else if (resp.status < 400 || resp.status > 499)
		abort(); /* every refusal is a 4xx */
	http_resp_release(&resp);
	free(body);
	return 0;
}
