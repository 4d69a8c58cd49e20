/* imds: bounded HTTP requests to instance metadata services through libcurl. */
#include "detect/imds.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct imds_answer *a = userdata;
	size_t n = size * nmemb;

	/* a body past the cap ends the transfer with a write error */
	if (n > IMDS_MAX_BYTES - a->len)
		return 0;
	memcpy(a->data + a->len, ptr, n);
	a->len += n;
	a->data[a->len] = '\0';
	return n;
}

int imds_request(const struct imds_request *req, struct imds_answer *a, char *why, size_t whysz)
{
	CURL *c = NULL;
	struct curl_slist *hdr = NULL;
	CURLcode cc;
	int rc = -1;

	a->len = 0;
	a->data[0] = '\0';
	a->status = 0;
	if (req->timeout_ms <= 0) {
		snprintf(why, whysz, "no time left in the budget");
		return -1;
	}
	pthread_once(&curl_once, curl_init_once);
	c = curl_easy_init();
	if (c == NULL) {
		snprintf(why, whysz, "curl_easy_init failed");
		goto out;
	}
	for (size_t i = 0; i < IMDS_MAX_HEADERS && req->headers[i] != NULL; i++)
		hdr = curl_slist_append(hdr, req->headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, req->url);
	if (req->method != NULL && strcmp(req->method, "PUT") == 0) {
		/* an empty PUT body (EC2's token request): no upload callback, a zero-length POSTFIELDS */
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		snprintf(why, whysz, "%s", curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	if (a->status != 200) {
		snprintf(why, whysz, "HTTP status %ld", a->status);
		goto out;
	}
	rc = 0;
out:
	curl_slist_free_all(hdr);
	if (c != NULL)
		curl_easy_cleanup(c);
	return rc;
}
