/* store_db: the store's SQLite connections, its migrations, and the writer's connection (opened, checked, migrated). */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/mem.h"
#include "store/journal.h"

/* --- connections --- */

void store_conn_init(struct conn *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

void store_conn_close(struct conn *c)
{
	for (int i = 0; i < S_COUNT; i++) {
		sqlite3_finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	sqlite3_close(c->db);
	c->db = NULL;
}

sqlite3_stmt *store_conn_stmt(struct conn *c, enum stmt_id id, int *rc)
{
	*rc = SQLITE_OK;
	if (c->stmt[id] == NULL) {
		*rc = sqlite3_prepare_v3(c->db, store_stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id], NULL);
		if (*rc != SQLITE_OK)
			return NULL;
	}
	sqlite3_reset(c->stmt[id]);
	sqlite3_clear_bindings(c->stmt[id]);
	return c->stmt[id];
}

/* Runs a one-value query; *out is NULL-safe: it keeps def when the value is NULL. */
static int query_i64(struct conn *c, enum stmt_id id, int64_t def, int64_t *out)
{
	int rc;
	sqlite3_stmt *s = store_conn_stmt(c, id, &rc);

	*out = def;
	if (s == NULL)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

bool store_rc_needs_reopen(int rc)
{
	int primary = rc & 0xff;

	return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
	       primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_SCHEMA;
}

/* Creates every missing folder above the file at path. */
static int make_parent_dirs(const char *path)
{
	char *copy = xstrdup(path);
	int rc = 0;

	for (char *p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0750) != 0 && errno != EEXIST) {
			rc = -1;
			break;
		}
		*p = '/';
	}
	free(copy);
	return rc;
}

/* --- migrations --- */

int store_exec_sql(sqlite3 *db, const char *sql, char *err, size_t errsz)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK)
		snprintf(err, errsz, "%s", msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	return rc;
}

static int apply_migration(sqlite3 *db, const struct store_migration *m, char *err, size_t errsz)
{
	struct buf sql;
	char pragma[64];
	char why[200] = "";
	int rc;

	buf_init(&sql, 1 << 20);
	for (const char *const *l = m->lines; *l; l++)
		buf_append(&sql, *l, strlen(*l));
	/* the version is this build's own constant, never input */
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", m->version);
	rc = store_exec_sql(db, "BEGIN IMMEDIATE", why, sizeof(why));
	if (rc != SQLITE_OK)
		goto out;
	rc = store_exec_sql(db, sql.data ? sql.data : "", why, sizeof(why));
	if (rc == SQLITE_OK)
		rc = store_exec_sql(db, pragma, why, sizeof(why));
	if (rc == SQLITE_OK)
		rc = store_exec_sql(db, "COMMIT", why, sizeof(why));
	if (rc != SQLITE_OK)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (rc != SQLITE_OK)
		snprintf(err, errsz, "migration %s failed: %s", m->name, why);
	buf_release(&sql);
	return rc;
}

/* Brings the schema up to the newest migration; refuses a file from a newer acceld. */
static int migrate(sqlite3 *db, char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	int version = 0;
	int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL);

	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	else if (rc == SQLITE_OK)
		rc = sqlite3_errcode(db);
	sqlite3_finalize(s);
	if (rc != SQLITE_OK) {
		snprintf(err, errsz, "cannot read the schema version: %s", sqlite3_errstr(rc));
		return rc;
	}
	if (version > store_schema_version()) {
		snprintf(err, errsz,
			 "database schema version %d is newer than this acceld knows (%d): upgrade acceld or use "
			 "another --db",
			 version, store_schema_version());
		return SQLITE_ERROR;
	}
	for (int i = 0; i < store_migration_count; i++) {
		if (store_migration_table[i].version <= version)
			continue;
		rc = apply_migration(db, &store_migration_table[i], err, errsz);
		if (rc != SQLITE_OK)
			return rc;
		log_fields(LOGL_INFO, "store", "schema migrated",
			   (struct log_field[]){LOG_S("migration", store_migration_table[i].name),
						LOG_I("user_version", store_migration_table[i].version)},
			   2);
	}
	return SQLITE_OK;
}

static int quick_check(sqlite3 *db, char *err, size_t errsz)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			const unsigned char *t = sqlite3_column_text(s, 0);

			if (t && strcmp((const char *)t, "ok") == 0) {
				rc = SQLITE_OK;
			} else {
				snprintf(err, errsz, "database file is corrupt (%s): move it aside or restore it",
					 t ? (const char *)t : "?");
				rc = SQLITE_CORRUPT;
			}
		} else {
			snprintf(err, errsz, "integrity check failed: %s", sqlite3_errmsg(db));
		}
	} else {
		snprintf(err, errsz, "integrity check failed: %s", sqlite3_errmsg(db));
	}
	sqlite3_finalize(s);
	return rc;
}

/* --- the writer's connection --- */

static void set_open_error(struct store *st, const char *msg)
{
	pthread_mutex_lock(&st->mu);
	if (strcmp(st->open_error, msg) != 0)
		log_msg(LOGL_ERROR, "store", "%s; retrying every %u ms", msg, st->opts.retry_interval_ms);
	snprintf(st->open_error, sizeof(st->open_error), "%s", msg);
	snprintf(st->stats.last_error, sizeof(st->stats.last_error), "%s", msg);
	pthread_mutex_unlock(&st->mu);
}

/* Loads where rollups stand and the newest sample, so a restart carries on where the last run stopped. */
static int load_watermarks(struct store *st)
{
	int64_t wm_min, wm_hour, first, last;
	int rc = query_i64(&st->w, S_WM_MINUTE, -1, &wm_min);

	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_WM_HOUR, -1, &wm_hour);
	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_SAMPLES_MIN, -1, &first);
	if (rc == SQLITE_OK)
		rc = query_i64(&st->w, S_SAMPLES_MAX, 0, &last);
	if (rc != SQLITE_OK)
		return rc;
	/* -1: nothing rolled up yet; the first samples written set the start */
	if (wm_min >= 0)
		st->wm[STORE_MINUTE] = wm_min + STORE_MINUTE_MS;
	else
		st->wm[STORE_MINUTE] = first >= 0 ? floor_to(first, STORE_MINUTE_MS) : -1;
	if (wm_hour >= 0)
		st->wm[STORE_HOUR] = wm_hour + STORE_HOUR_MS;
	else if (first >= 0 || wm_min >= 0)
		st->wm[STORE_HOUR] = floor_to(first >= 0 ? first : wm_min, STORE_HOUR_MS);
	else
		st->wm[STORE_HOUR] = -1;
	st->max_ts = last;
	st->last_retention = 0;
	atomic_store(&st->pub_wm[STORE_MINUTE], st->wm[STORE_MINUTE] < 0 ? 0 : st->wm[STORE_MINUTE]);
	atomic_store(&st->pub_wm[STORE_HOUR], st->wm[STORE_HOUR] < 0 ? 0 : st->wm[STORE_HOUR]);
	return rc;
}

struct replay {
	struct store *st;
	int rc;
};

static int replay_one(void *ctx, const struct store_job *job)
{
	struct replay *r = ctx;

	r->rc = store_write_job(r->st, job);
	return r->rc != SQLITE_OK;
}

/*
 * Writes every record of the journal (what a crash, or a failing database, left in it) into the database in one
 * transaction, then starts it afresh, or, with ACCELD_DB_SYNC=full, releases it (records then wait for their
 * commit). The writer's connection is open. Appends stop meanwhile, so nothing is added while it is read. Without
 * the journal (another process owns it, its files cannot be read) job records wait for their commit.
 */
static int journal_recover(struct store *st, char *err, size_t errsz)
{
	struct replay r = {st, SQLITE_OK};
	struct journal *j;
	size_t skipped = 0;
	long n;
	int rc;

	if (st->memory)
		return SQLITE_OK;
	pthread_mutex_lock(&st->mu);
	j = st->journal;
	st->journal = NULL;
	atomic_store(&st->journaling, false);
	pthread_mutex_unlock(&st->mu);
	if (j == NULL && (j = journal_claim(st->path)) == NULL) {
		log_fields(LOGL_WARN, "store",
			   errno == EWOULDBLOCK
				   ? "another acceld process owns the journal of this database: job answers wait for "
				     "their commit"
				   : "cannot claim the journal: job answers wait for their commit",
			   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		return SQLITE_OK;
	}
	rc = store_exec_sql(st->w.db, "BEGIN IMMEDIATE", err, errsz);
	if (rc != SQLITE_OK)
		goto fail;
	n = journal_replay(j, replay_one, &r, &skipped);
	if (n < 0) {
		if (r.rc != SQLITE_OK)
			snprintf(err, errsz, "cannot replay the journal of %s: %s", st->path, sqlite3_errmsg(st->w.db));
		else
			snprintf(err, errsz, "cannot read the journal of %s: %s", st->path, strerror(errno));
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
		rc = r.rc != SQLITE_OK ? r.rc : SQLITE_IOERR;
		goto fail;
	}
	rc = store_exec_sql(st->w.db, "COMMIT", err, errsz);
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->w.db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	if (n > 0 || skipped > 0)
		log_fields(skipped ? LOGL_WARN : LOGL_INFO, "store", "job records replayed from the journal",
			   (struct log_field[]){LOG_I("records", n), LOG_I("cut_short", skipped)}, 2);
	if (st->opts.sync_full) {
		journal_close(j, true);
		return SQLITE_OK;
	}
	if (journal_start(j) != 0) {
		/* what it held is committed: without it, answers wait for their commit */
		log_fields(LOGL_WARN, "store", "cannot start the journal: job answers wait for their commit",
			   (struct log_field[]){LOG_S("error", strerror(errno))}, 1);
		journal_close(j, false);
		return SQLITE_OK;
	}
	pthread_mutex_lock(&st->mu);
	st->journal = j;
	st->journal_failing = false;
	atomic_store(&st->journaling, true);
	pthread_mutex_unlock(&st->mu);
	return SQLITE_OK;
fail:
	/* its files stay for the next attempt (the writer reopens the database) or the next start */
	journal_close(j, false);
	return rc;
}

/* The writer's connection: WAL at the sync level asked for, and checkpoints left to the writer thread. */
#define WRITER_PRAGMAS(sync)                                                                                    \
	"PRAGMA journal_mode = WAL; PRAGMA synchronous = " sync "; PRAGMA journal_size_limit = 16777216; "     \
	"PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0"

int store_writer_open(struct store *st)
{
	char err[256] = "";
	sqlite3 *db = NULL;
	int rc;

	if (!st->memory && make_parent_dirs(st->path) != 0) {
		snprintf(err, sizeof(err), "cannot create the folder of %s: %s", st->path, strerror(errno));
		goto fail;
	}
	rc = sqlite3_open_v2(st->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, sizeof(err), "cannot open database %s: %s", st->path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(db, (int)st->opts.busy_timeout_ms);
	if (store_exec_sql(db, st->opts.sync_full ? WRITER_PRAGMAS("FULL") : WRITER_PRAGMAS("NORMAL"), err,
			   sizeof(err)) != SQLITE_OK) {
		char why[200];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, sizeof(err), "cannot use database %s: %s", st->path, why);
		goto fail;
	}
	if (quick_check(db, err, sizeof(err)) != SQLITE_OK || migrate(db, err, sizeof(err)) != SQLITE_OK)
		goto fail;
	if (st->opts.max_pages > 0) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA max_page_count = %lld", (long long)st->opts.max_pages);
		store_exec_sql(db, pragma, err, sizeof(err));
	}
	st->w.db = db;
	st->nkeys = 0;
	if (load_watermarks(st) != SQLITE_OK) {
		snprintf(err, sizeof(err), "cannot read database %s: %s", st->path, sqlite3_errmsg(db));
		store_conn_close(&st->w);
		db = NULL;
		goto fail;
	}
	if (journal_recover(st, err, sizeof(err)) != SQLITE_OK) {
		store_conn_close(&st->w);
		db = NULL;
		goto fail;
	}
	st->w.gen = atomic_fetch_add(&st->gen, 1) + 1;
	atomic_store(&st->ready, true);
	pthread_mutex_lock(&st->mu);
	if (st->open_error[0])
		log_msg(LOGL_INFO, "store", "database %s usable again", st->path);
	st->open_error[0] = '\0';
	st->stats.reopens++;
	st->stats.open = true;
	pthread_mutex_unlock(&st->mu);
	return 0;
fail:
	sqlite3_close(db);
	set_open_error(st, err);
	return -1;
}

void store_writer_drop_conn(struct store *st)
{
	store_conn_close(&st->w);
	st->nkeys = 0;
	atomic_store(&st->ready, false);
	atomic_fetch_add(&st->gen, 1);
	pthread_mutex_lock(&st->mu);
	st->stats.open = false;
	pthread_mutex_unlock(&st->mu);
}
