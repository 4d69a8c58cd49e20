/* store: SQLite connection, pragmas and health. */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "mem.h"

struct store {
	sqlite3 *db;
	char *path;
};

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

enum acceld_err store_open(const char *path, struct store **out, char *err, size_t errsz)
{
	static const char pragmas[] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;";
	sqlite3 *db = NULL;
	struct store *st;
	char *msg = NULL;
	int rc;

	if (strcmp(path, ":memory:") != 0 && make_parent_dirs(path) != 0) {
		snprintf(err, errsz, "cannot create the folder of %s: %s", path, strerror(errno));
		return ACCELD_EIO;
	}
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	sqlite3_busy_timeout(db, 5000);
	rc = sqlite3_exec(db, pragmas, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		goto fail;
	st = xcalloc(1, sizeof(*st));
	st->db = db;
	st->path = xstrdup(path);
	*out = st;
	return ACCELD_OK;
fail:
	snprintf(err, errsz, "cannot open database %s: %s", path, msg ? msg : db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	sqlite3_free(msg);
	sqlite3_close(db);
	return ACCELD_EIO;
}

void store_close(struct store *st)
{
	if (st == NULL)
		return;
	sqlite3_close(st->db);
	free(st->path);
	free(st);
}

bool store_healthy(struct store *st, char *err, size_t errsz)
{
	sqlite3_stmt *stmt = NULL;
	int rc;

	if (st == NULL) {
		snprintf(err, errsz, "database not open");
		return false;
	}
	rc = sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_schema", -1, &stmt, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	if (rc != SQLITE_ROW) {
		snprintf(err, errsz, "%s", sqlite3_errmsg(st->db));
		return false;
	}
	return true;
}

const char *store_sqlite_version(void)
{
	return sqlite3_libversion();
}
