/*
 * journal: the store's redo journal of the job records it confirms. A record is appended as one line of JSON in
 * one write(2) before the job is answered, and waits in the store's queue for the next batched transaction. What
 * write(2) has handed to the kernel survives the process (kill -9, the OOM killer, a fault in acceld), so an
 * answered job is a recorded job at the cost of one system call rather than of a commit (tens of microseconds of
 * page writes for the jobs table and its indexes, per transaction). The journal is not synced: power loss keeps
 * what the database had committed and synced (see the README's "what survives what").
 *
 * Files, next to the database at PATH: PATH-redo takes the appends; once it holds JOURNAL_SEAL_BYTES and no sealed
 * file waits, it is renamed PATH-redo.1 (sealed) and a new PATH-redo is started. Each record carries the store's
 * queue sequence number; journal_committed says which have been committed, and a file that holds nothing else is
 * emptied (the active one) or removed (the sealed one). On open, the store writes every record of both files into
 * the database (journal_replay: the sealed file first) before it appends anything, then removes them.
 *
 * Not thread-safe: the store calls it under its queue lock.
 */
#ifndef ACCELD_JOURNAL_H
#define ACCELD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define JOURNAL_LINE_MAX 4096            /* one encoded record, newline included */
#define JOURNAL_SEAL_BYTES (1u << 20)    /* an active file this large is sealed once the sealed slot is free */

struct journal;

/* Encodes job as one line of JSON ending in '\n' into buf. Returns its length, 0 when it does not fit. */
size_t journal_encode(const struct store_job *job, char *buf, size_t cap);

/* Decodes one line (without its '\n'). Returns false for anything that is not a whole record. */
bool journal_decode(const char *line, size_t len, struct store_job *out);

/* Starts an empty PATH-redo for the database at db_path. NULL with errno set when it cannot be created. */
struct journal *journal_open(const char *db_path);

/*
 * Appends one encoded line (journal_encode) as the record with queue sequence number seq. False with errno set
 * when it could not be written whole (the file is cut back to where it was: no torn line stays).
 */
bool journal_append(struct journal *j, const char *line, size_t len, uint64_t seq);

/* Every record numbered below seq is committed: empties or removes what holds nothing else, seals a large file. */
void journal_committed(struct journal *j, uint64_t seq);

/* Closes the journal; remove also deletes its files (everything in them is committed). NULL is a no-op. */
void journal_close(struct journal *j, bool remove);

/* Calls fn for each whole record in db_path's journal files, sealed first; fn returning nonzero stops it. */
typedef int (*journal_record_fn)(void *ctx, const struct store_job *job);

/*
 * Replays the journal of the database at db_path: the number of records given to fn (0 when there is none), or -1
 * when a file exists but cannot be read (errno set) or fn returned nonzero. *skipped counts the lines that are not
 * whole records (a write cut short by power loss), which are left out.
 */
long journal_replay(const char *db_path, journal_record_fn fn, void *ctx, size_t *skipped);

/* Removes db_path's journal files (after a replay committed them). 0, or -1 with errno set. */
int journal_remove(const char *db_path);

#endif
