/* devcheck_store: the checks table on a connection of its own, opened lazily and reopened after failures. */
#include "check/devcheck_store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/mem.h"

#define BUSY_TIMEOUT_MS 2000

struct devcheck_store {
	pthread_mutex_t mu;
	char *path;
	int64_t retention_ms;
	sqlite3 *db;               /* NULL until opened, and after a failure */
	bool failing;              /* the last attempt failed: say so once, and once when it recovers */
};

struct devcheck_store *devcheck_store_new(const char *path, int64_t retention_ms)
{
	struct devcheck_store *cs;

	if (path == NULL || strcmp(path, ":memory:") == 0 || path[0] == '\0')
		return NULL;
	cs = xcalloc(1, sizeof(*cs));
	pthread_mutex_init(&cs->mu, NULL);
	cs->path = xstrdup(path);
	cs->retention_ms = retention_ms;
	return cs;
}

void devcheck_store_free(struct devcheck_store *cs)
{
	if (cs == NULL)
		return;
	sqlite3_close(cs->db);
	pthread_mutex_destroy(&cs->mu);
	free(cs->path);
	free(cs);
}

/* Drops the connection after a failure so the next call opens it again; cs->mu held. */
static void failed(struct devcheck_store *cs, const char *what, int rc)
{
	if (!cs->failing)
		log_fields(LOGL_WARN, "check", "check history unavailable",
			   (struct log_field[]){LOG_S("what", what),
						LOG_S("error", cs->db ? sqlite3_errmsg(cs->db) : sqlite3_errstr(rc))},
			   2);
	cs->failing = true;
	sqlite3_close(cs->db);
	cs->db = NULL;
}

/* The connection, opened when needed; NULL when the database (or its checks table) cannot be used; cs->mu held. */
static sqlite3 *conn(struct devcheck_store *cs)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (cs->db != NULL)
		return cs->db;
	/* the store creates the file and applies the migrations; no table yet means not migrated yet */
	rc = sqlite3_open_v2(cs->path, &cs->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(cs->db, BUSY_TIMEOUT_MS);
		rc = sqlite3_prepare_v2(cs->db, "SELECT 1 FROM checks LIMIT 1", -1, &s, NULL);
		sqlite3_finalize(s);
	}
	if (rc != SQLITE_OK) {
		failed(cs, "open", rc);
		return NULL;
	}
	if (cs->failing)
		log_msg(LOGL_INFO, "check", "check history usable again");
	cs->failing = false;
	return cs->db;
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v != NULL)
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

static void bind_num(sqlite3_stmt *s, int i, json_t *v)
{
	if (json_is_number(v))
		sqlite3_bind_double(s, i, json_number_value(v));
	else
		sqlite3_bind_null(s, i);
}

static int64_t time_of(const json_t *doc, const char *key)
{
	const char *text = json_string_value(json_object_get(doc, key));
	int64_t ms = 0;

	if (text == NULL || clock_parse_rfc3339(text, &ms) != 0)
		return 0;
	return ms;
}

/* Writes doc; cs->mu held. */
static enum acceld_err put_locked(struct devcheck_store *cs, const json_t *doc, char *err, size_t errsz)
{
	static const char sql[] = "INSERT OR REPLACE INTO checks (id, device, level, state, verdict, created_at, "
				  "finished_at, gflops, gbytes_per_s, doc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
	sqlite3 *db = conn(cs);
	sqlite3_stmt *s = NULL;
	json_t *measured = json_object_get(doc, "measured");
	int64_t created = time_of(doc, "created_at");
	int64_t finished = time_of(doc, "finished_at");
	char *text = NULL;
	int rc;

	if (!json_is_string(json_object_get(doc, "id")) || !json_is_string(json_object_get(doc, "device")) ||
	    !json_is_string(json_object_get(doc, "level")) || !json_is_string(json_object_get(doc, "state")) ||
	    created == 0) {
		snprintf(err, errsz, "not a check document");
		return ACCELD_EINVAL;
	}
	if (db == NULL) {
		snprintf(err, errsz, "the database %s cannot be used now", cs->path);
		return ACCELD_EUNAVAILABLE;
	}
	text = json_dumps(doc, JSON_COMPACT);
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK) {
		bind_text(s, 1, json_string_value(json_object_get(doc, "id")));
		bind_text(s, 2, json_string_value(json_object_get(doc, "device")));
		bind_text(s, 3, json_string_value(json_object_get(doc, "level")));
		bind_text(s, 4, json_string_value(json_object_get(doc, "state")));
		bind_text(s, 5, json_string_value(json_object_get(doc, "verdict")));
		sqlite3_bind_int64(s, 6, created);
		if (finished > 0)
			sqlite3_bind_int64(s, 7, finished);
		else
			sqlite3_bind_null(s, 7);
		bind_num(s, 8, json_object_get(measured, "gflops"));
		bind_num(s, 9, json_object_get(measured, "gbytes_per_s"));
		bind_text(s, 10, text ? text : "{}");
		rc = sqlite3_step(s);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(s);
	if (rc == SQLITE_OK && finished > 0 && cs->retention_ms > 0) {
		rc = sqlite3_prepare_v2(db, "DELETE FROM checks WHERE finished_at < ?1", -1, &s, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(s, 1, finished - cs->retention_ms);
			rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
		}
		sqlite3_finalize(s);
	}
	free(text);
	if (rc != SQLITE_OK) {
		snprintf(err, errsz, "cannot write the check: %s", sqlite3_errmsg(db));
		failed(cs, "write", rc);
		return ACCELD_EUNAVAILABLE;
	}
	return ACCELD_OK;
}

enum acceld_err devcheck_store_put(struct devcheck_store *cs, const json_t *doc, char *err, size_t errsz)
{
	enum acceld_err rc;

	pthread_mutex_lock(&cs->mu);
	rc = put_locked(cs, doc, err, errsz);
	pthread_mutex_unlock(&cs->mu);
	return rc;
}

/*
 * Appends the documents of sql's first column to out, with :device, :id and :limit bound where sql names them.
 * ACCELD_EUNAVAILABLE when the history cannot be read (the connection is dropped, to be opened again). cs->mu held.
 */
static enum acceld_err read_docs(struct devcheck_store *cs, const char *sql, const char *device, const char *id,
				 int64_t limit, json_t *out)
{
	sqlite3 *db = conn(cs);
	sqlite3_stmt *s = NULL;
	int rc;

	if (db == NULL)
		return ACCELD_EUNAVAILABLE;
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK) {
		int i;

		if ((i = sqlite3_bind_parameter_index(s, ":device")) > 0)
			bind_text(s, i, device);
		if ((i = sqlite3_bind_parameter_index(s, ":id")) > 0)
			bind_text(s, i, id);
		if ((i = sqlite3_bind_parameter_index(s, ":limit")) > 0)
			sqlite3_bind_int64(s, i, limit);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			const char *text = (const char *)sqlite3_column_text(s, 0);
			json_t *doc = text ? json_loads(text, 0, NULL) : NULL;

			if (doc != NULL)
				json_array_append_new(out, doc);
		}
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_OK) {
		failed(cs, "read", rc);
		return ACCELD_EUNAVAILABLE;
	}
	return ACCELD_OK;
}

#define ONE_CHECK "SELECT doc FROM checks WHERE id = :id AND device = :device"

enum acceld_err devcheck_store_mark_interrupted(struct devcheck_store *cs, int64_t now_ms, unsigned *n)
{
	json_t *docs = json_array();
	enum acceld_err ret;
	char when[CLOCK_RFC3339_LEN];
	char err[256];
	size_t i;
	json_t *doc;

	if (n != NULL)
		*n = 0;
	clock_rfc3339(now_ms, when);
	pthread_mutex_lock(&cs->mu);
	ret = read_docs(cs, "SELECT doc FROM checks WHERE state IN ('queued', 'running')", NULL, NULL, 0, docs);
	if (ret != ACCELD_OK)
		goto out;
	json_array_foreach(docs, i, doc) {
		json_object_set_new(doc, "state", json_string("interrupted"));
		json_object_del(doc, "verdict");
		json_object_del(doc, "rule");
		if (json_object_get(doc, "finished_at") == NULL)
			json_object_set_new(doc, "finished_at", json_string(when));
		json_object_set_new(doc, "error", json_pack("{s:s, s:s}", "reason", "INTERRUPTED", "detail",
							    "acceld stopped before the check finished"));
		if (put_locked(cs, doc, err, sizeof(err)) != ACCELD_OK) {
			ret = ACCELD_EUNAVAILABLE;
			break;
		}
		if (n != NULL)
			(*n)++;
	}
out:
	pthread_mutex_unlock(&cs->mu);
	json_decref(docs);
	return ret;
}

enum acceld_err devcheck_store_list(struct devcheck_store *cs, const char *device, unsigned page_size,
				    const char *after, json_t **docs, bool *more)
{
	static const char first[] = "SELECT doc FROM checks WHERE device = :device ORDER BY created_at DESC, id DESC "
				    "LIMIT :limit";
	static const char next[] = "SELECT doc FROM checks WHERE device = :device AND (created_at, id) < (SELECT "
				   "created_at, id FROM checks WHERE id = :id) ORDER BY created_at DESC, id DESC LIMIT :limit";
	bool paged = after != NULL && after[0] != '\0';
	json_t *out = json_array();
	enum acceld_err ret;

	*docs = NULL;
	*more = false;
	pthread_mutex_lock(&cs->mu);
	/* the page starts after a check of this device, which must exist */
	ret = paged ? read_docs(cs, ONE_CHECK, device, after, 0, out) : ACCELD_OK;
	if (ret == ACCELD_OK && paged && json_array_size(out) == 0)
		ret = ACCELD_ENOTFOUND;
	json_array_clear(out);
	if (ret == ACCELD_OK)
		ret = read_docs(cs, paged ? next : first, device, after, (int64_t)page_size + 1, out);
	pthread_mutex_unlock(&cs->mu);
	if (ret != ACCELD_OK) {
		json_decref(out);
		return ret;
	}
	if (json_array_size(out) > page_size) {
		json_array_remove(out, page_size);
		*more = true;
	}
	*docs = out;
	return ACCELD_OK;
}

enum acceld_err devcheck_store_get(struct devcheck_store *cs, const char *device, const char *id, json_t **doc)
{
	json_t *docs = json_array();
	enum acceld_err ret;

	*doc = NULL;
	pthread_mutex_lock(&cs->mu);
	ret = read_docs(cs, ONE_CHECK, device, id, 0, docs);
	pthread_mutex_unlock(&cs->mu);
	if (ret == ACCELD_OK && json_array_size(docs) == 0)
		ret = ACCELD_ENOTFOUND;
	else if (ret == ACCELD_OK)
		*doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return ret;
}

enum acceld_err devcheck_store_latest(struct devcheck_store *cs, json_t **docs)
{
	static const char sql[] = "SELECT doc FROM checks c WHERE state IN ('done', 'interrupted') AND id = (SELECT id "
				  "FROM checks WHERE device = c.device AND state IN ('done', 'interrupted') ORDER BY "
				  "finished_at DESC, id DESC LIMIT 1)";
	json_t *out = json_array();
	enum acceld_err ret;

	pthread_mutex_lock(&cs->mu);
	ret = read_docs(cs, sql, NULL, NULL, 0, out);
	pthread_mutex_unlock(&cs->mu);
	if (ret != ACCELD_OK) {
		json_decref(out);
		out = NULL;
	}
	*docs = out;
	return ret;
}
