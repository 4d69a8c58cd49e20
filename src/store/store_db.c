/* store_db: the store's SQLite connections, and the database file (opened, checked, migrated to this build's schema). */
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "core/dirs.h"
#include "core/log.h"
#include "core/mem.h"

#include "migrations.h" /* generated from db/migrations by db/embed.sh; the Makefile makes it before store_db.o */

/* --- connections --- */

void store_conn_init(struct store_conn *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

void store_conn_close(struct store_conn *c)
{
	for (int i = 0; i < S_COUNT; i++) {
		sqlite3_finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	sqlite3_close(c->db);
	c->db = NULL;
}

sqlite3_stmt *store_conn_stmt(struct store_conn *c, enum stmt_id id, int *rc)
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

bool store_rc_needs_reopen(int rc)
{
	int primary = rc & 0xff;

	return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB || primary == SQLITE_IOERR ||
	       primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_SCHEMA;
}

/* --- migrations --- */

#define NMIGRATIONS ((int)(sizeof(store_migrations) / sizeof(store_migrations[0])))

int store_schema_version(void)
{
	return store_migrations[NMIGRATIONS - 1].version;
}

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
	for (int i = 0; i < NMIGRATIONS; i++) {
		if (store_migrations[i].version <= version)
			continue;
		rc = apply_migration(db, &store_migrations[i], err, errsz);
		if (rc != SQLITE_OK)
			return rc;
		log_fields(LOGL_INFO, "store", "schema migrated",
			   (struct log_field[]){LOG_S("migration", store_migrations[i].name),
						LOG_I("user_version", store_migrations[i].version)},
			   2);
	}
	return SQLITE_OK;
}

/* PRAGMA quick_check on db, the file at path; a damaged file is named in err. */
static int quick_check(sqlite3 *db, const char *path, char *err, size_t errsz)
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
				snprintf(err, errsz, "database file %s is corrupt (%s): move it aside or restore it", path,
					 t ? (const char *)t : "?");
				rc = SQLITE_CORRUPT;
			}
		} else {
			snprintf(err, errsz, "integrity check of %s failed: %s", path, sqlite3_errmsg(db));
		}
	} else {
		snprintf(err, errsz, "integrity check of %s failed: %s", path, sqlite3_errmsg(db));
	}
	sqlite3_finalize(s);
	return rc;
}

/* The writer's connection: WAL at the sync level asked for, and checkpoints left to the writer thread. */
#define WRITER_PRAGMAS(sync)                                                                                    \
	"PRAGMA journal_mode = WAL; PRAGMA synchronous = " sync "; PRAGMA journal_size_limit = 16777216; "     \
	"PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 0"

int store_db_open(const struct store *st, sqlite3 **out, char *err, size_t errsz)
{
	sqlite3 *db = NULL;
	int rc;

	*out = NULL;
	if (!st->memory && dirs_make_parent(st->path, 0750, "store", "created a folder for the database") != 0) {
		snprintf(err, errsz, "cannot create the folder of %s: %s", st->path, strerror(errno));
		return SQLITE_CANTOPEN;
	}
	rc = sqlite3_open_v2(st->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errsz, "cannot open database %s: %s", st->path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(db, (int)st->opts.busy_timeout_ms);
	rc = store_exec_sql(db, st->opts.sync_full ? WRITER_PRAGMAS("FULL") : WRITER_PRAGMAS("NORMAL"), err, errsz);
	if (rc != SQLITE_OK) {
		char why[200];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errsz, "cannot use database %s: %s", st->path, why);
		goto fail;
	}
	if ((rc = quick_check(db, st->path, err, errsz)) != SQLITE_OK || (rc = migrate(db, err, errsz)) != SQLITE_OK)
		goto fail;
	if (st->opts.max_pages > 0) {
		char pragma[64];

		snprintf(pragma, sizeof(pragma), "PRAGMA max_page_count = %lld", (long long)st->opts.max_pages);
		store_exec_sql(db, pragma, err, errsz);
		err[0] = '\0';
	}
	*out = db;
	return SQLITE_OK;
fail:
	sqlite3_close(db);
	return rc != SQLITE_OK ? rc : SQLITE_ERROR;
}
