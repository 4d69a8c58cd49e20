/* devcheck_store: check documents to and from the store's checks table, a put waiting for its commit. */
#include "check/devcheck_store.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/jsonval.h"
#include "core/mem.h"
#include "store/store.h"

/* A put waits this long at most for the store's commit (which waits out a busy database for 2 s at most). */
#define PUT_WAIT_NS 5000000000ull

struct devcheck_store {
	struct store *st;
	int64_t retention_ms;
};

struct devcheck_store *devcheck_store_new(struct store *st, int64_t retention_ms)
{
	struct devcheck_store *cs;

	if (st == NULL)
		return NULL;
	cs = xcalloc(1, sizeof(*cs));
	cs->st = st;
	cs->retention_ms = retention_ms;
	return cs;
}

void devcheck_store_free(struct devcheck_store *cs)
{
	free(cs);
}

/*
 * One put's wait for the store's completion. A put that stops waiting leaves it to the completion, which may come
 * later: whichever of the two lets go last frees it.
 */
struct put_wait {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	unsigned refs;
	bool answered;
	bool recorded;
};

static struct put_wait *put_wait_new(void)
{
	struct put_wait *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;

	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	w->refs = 2;
	return w;
}

static void put_wait_unref(struct put_wait *w)
{
	bool last;

	pthread_mutex_lock(&w->mu);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->mu);
	if (!last)
		return;
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* The store's completion (store_done_fn). */
static void put_done(void *ctx, bool recorded)
{
	struct put_wait *w = ctx;

	pthread_mutex_lock(&w->mu);
	w->answered = true;
	w->recorded = recorded;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	put_wait_unref(w);
}

/* Copies the string member key of doc into dst; false when it is missing or longer than dst holds. */
static bool copy_text(const json_t *doc, const char *key, char *dst, size_t dstsz)
{
	const char *text = json_string_value(json_object_get(doc, key));

	return text != NULL && (size_t)snprintf(dst, dstsz, "%s", text) < dstsz;
}

static double num_of(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int64_t time_of(const json_t *doc, const char *key)
{
	const char *text = json_string_value(json_object_get(doc, key));
	int64_t ms = 0;

	if (text == NULL || clock_parse_rfc3339(text, &ms) != 0)
		return 0;
	return ms;
}

enum acceld_err devcheck_store_put(struct devcheck_store *cs, const json_t *doc, char *err, size_t errsz)
{
	struct store_check c = {.retention_ms = cs->retention_ms};
	json_t *measured = json_object_get(doc, "measured");
	struct put_wait *w;
	struct timespec due;
	char *text;
	bool answered, recorded;
	char why[256];

	c.created_ms = time_of(doc, "created_at");
	c.finished_ms = time_of(doc, "finished_at");
	if (!copy_text(doc, "id", c.id, sizeof(c.id)) || !copy_text(doc, "device", c.device, sizeof(c.device)) ||
	    !copy_text(doc, "level", c.level, sizeof(c.level)) || !copy_text(doc, "state", c.state, sizeof(c.state)) ||
	    c.created_ms == 0) {
		snprintf(err, errsz, "not a check document");
		return ACCELD_EINVAL;
	}
	if (!copy_text(doc, "verdict", c.verdict, sizeof(c.verdict)))
		c.verdict[0] = '\0';
	c.gflops = num_of(json_object_get(measured, "gflops"));
	c.gbytes_per_s = num_of(json_object_get(measured, "gbytes_per_s"));
	text = jsonval_dumps(doc, JSON_COMPACT);
	c.doc = text ? text : "{}";
	w = put_wait_new();
	store_check_put_notify(cs->st, &c, put_done, w);
	free(text);
	due = clock_deadline(CLOCK_MONOTONIC, PUT_WAIT_NS);
	pthread_mutex_lock(&w->mu);
	while (!w->answered) {
		if (pthread_cond_timedwait(&w->cond, &w->mu, &due) != 0)
			break;
	}
	answered = w->answered;
	recorded = w->recorded;
	pthread_mutex_unlock(&w->mu);
	put_wait_unref(w);
	if (recorded)
		return ACCELD_OK;
	if (!answered)
		snprintf(err, errsz, "the check's commit is taking more than %llu s; it stays queued",
			 PUT_WAIT_NS / 1000000000ull);
	else if (!store_healthy(cs->st, why, sizeof(why)))
		snprintf(err, errsz, "cannot write the check now (%s); it stays queued", why);
	else
		snprintf(err, errsz, "cannot write the check now: too many checks wait for the database");
	return ACCELD_EUNAVAILABLE;
}

/* The documents of texts as a new JSON array; a text that does not parse is left out. */
static json_t *docs_json(const struct store_check_docs *texts)
{
	json_t *out = json_array();

	for (size_t i = 0; i < texts->n; i++) {
		json_t *doc = json_loads(texts->v[i], 0, NULL);

		if (doc != NULL)
			json_array_append_new(out, doc);
	}
	return out;
}

/* The store's answer for a read, as this module's contract says it: the history cannot be read, or is. */
static enum acceld_err read_result(enum acceld_err e)
{
	return e == ACCELD_OK || e == ACCELD_ENOTFOUND ? e : ACCELD_EUNAVAILABLE;
}

enum acceld_err devcheck_store_mark_interrupted(struct devcheck_store *cs, int64_t now_ms, unsigned *n)
{
	struct store_check_docs texts = {0};
	json_t *docs = NULL;
	enum acceld_err ret;
	char when[CLOCK_RFC3339_LEN];
	char err[256];
	size_t i;
	json_t *doc;

	if (n != NULL)
		*n = 0;
	clock_rfc3339(now_ms, when);
	ret = read_result(store_checks_unfinished(cs->st, &texts));
	if (ret != ACCELD_OK)
		goto out;
	docs = docs_json(&texts);
	json_array_foreach(docs, i, doc) {
		json_object_set_new(doc, "state", json_string("interrupted"));
		json_object_del(doc, "verdict");
		json_object_del(doc, "rule");
		if (json_object_get(doc, "finished_at") == NULL)
			json_object_set_new(doc, "finished_at", json_string(when));
		json_object_set_new(doc, "error", json_pack("{s:s, s:s}", "reason", "INTERRUPTED", "detail",
							    "acceld stopped before the check finished"));
		if (devcheck_store_put(cs, doc, err, sizeof(err)) != ACCELD_OK) {
			ret = ACCELD_EUNAVAILABLE;
			break;
		}
		if (n != NULL)
			(*n)++;
	}
out:
	store_check_docs_release(&texts);
	json_decref(docs);
	return ret;
}

enum acceld_err devcheck_store_list(struct devcheck_store *cs, const char *device, unsigned page_size,
				    const char *after, json_t **docs, bool *more)
{
	struct store_check_docs texts = {0};
	enum acceld_err ret;
	json_t *out;

	*docs = NULL;
	*more = false;
	/* one more than the page says whether older ones follow */
	ret = read_result(store_checks_list(cs->st, device, after, page_size < UINT_MAX ? page_size + 1 : page_size,
					    &texts));
	if (ret != ACCELD_OK)
		return ret;
	out = docs_json(&texts);
	store_check_docs_release(&texts);
	if (json_array_size(out) > page_size) {
		json_array_remove(out, page_size);
		*more = true;
	}
	*docs = out;
	return ACCELD_OK;
}

enum acceld_err devcheck_store_get(struct devcheck_store *cs, const char *device, const char *id, json_t **doc)
{
	char *text = NULL;
	enum acceld_err ret = read_result(store_check_get(cs->st, device, id, &text));

	*doc = NULL;
	if (ret == ACCELD_OK) {
		*doc = json_loads(text, 0, NULL);
		if (*doc == NULL)
			ret = ACCELD_ENOTFOUND;
	}
	free(text);
	return ret;
}

enum acceld_err devcheck_store_latest(struct devcheck_store *cs, json_t **docs)
{
	struct store_check_docs texts = {0};
	enum acceld_err ret = read_result(store_checks_latest(cs->st, &texts));

	*docs = ret == ACCELD_OK ? docs_json(&texts) : NULL;
	store_check_docs_release(&texts);
	return ret;
}
