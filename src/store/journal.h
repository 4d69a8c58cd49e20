/*
 * journal: the store's redo journal of the job records it confirms. A record is appended as one line of JSON in
 * one write(2) before the job is answered, and waits in the store's queue for the next batched transaction. What
 * write(2) has handed to the kernel survives the process (kill -9, the OOM killer, a fault in acceld), so an
 * answered job is a recorded job at the cost of one system call rather than of a commit (tens of microseconds of
 * page writes for the jobs table and its indexes, per transaction). The journal is not synced: power loss keeps
 * what the database had committed and synced (see docs/operations.md, "what survives what").
 *
 * Files, next to the database at PATH: PATH-redo takes the appends; once it holds JOURNAL_SEAL_BYTES and no sealed
 * file waits, it is renamed PATH-redo.1 (sealed) and a new PATH-redo is started. Each record carries the store's
 * queue sequence number; journal_committed says which have been committed, and a file that holds nothing else is
 * emptied (the active one) or removed (the sealed one). On open, the store claims the journal, writes every record
 * of both files into the database (journal_replay: the sealed file first), and only then starts it afresh
 * (journal_start) and appends. One process at a time owns a journal: the claim is an exclusive flock(2) on
 * PATH-redo.lock, held until journal_close (or the process's end), so a second acceld on the same database runs
 * without one rather than replaying and removing records another process still appends to.
 *
 * Not thread-safe: the store calls it under its queue lock.
 */
#ifndef ACCELD_JOURNAL_H
#define ACCELD_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_job.h"

#define JOURNAL_LINE_MAX 4096            /* one encoded record, newline included */
#define JOURNAL_SEAL_BYTES (1u << 20)    /* an active file this large is sealed once the sealed slot is free */

struct journal;

/* Takes each record journal_replay reads; nonzero stops the replay. */
typedef int (*journal_record_fn)(void *ctx, const struct store_job *job);

/* Encodes job as one line of JSON ending in '\n' into buf. Returns its length, 0 when it does not fit. */
size_t journal_encode(const struct store_job *job, char *buf, size_t cap);

/* Decodes one line (without its '\n'). Returns false for anything that is not a whole record. */
bool journal_decode(const char *line, size_t len, struct store_job *out);

/*
 * Claims the journal of the database at db_path for this process. NULL with errno set when it cannot:
 * EWOULDBLOCK when another process holds it, another error when its lock file cannot be created.
 */
struct journal *journal_claim(const char *db_path);

/*
 * Replays the journal: the number of whole records given to fn (0 when there are none), or -1 when a file exists
 * but cannot be read (errno set) or fn returned nonzero. *skipped counts the lines that are not whole records (a
 * write cut short by power loss), which are left out.
 */
long journal_replay(struct journal *j, journal_record_fn fn, void *ctx, size_t *skipped);

/* Removes the journal's files (once replayed and committed) and starts an empty one. 0, or -1 with errno set. */
int journal_start(struct journal *j);

/*
 * Appends one encoded line (journal_encode) as the record with queue sequence number seq. False with errno set
 * when it could not be written whole (the file is cut back to where it was: no torn line stays).
 */
bool journal_append(struct journal *j, const char *line, size_t len, uint64_t seq);

/* Every record numbered below seq is committed: empties or removes what holds nothing else, seals a large file. */
void journal_committed(struct journal *j, uint64_t seq);

/* Releases the journal; remove also deletes its files (everything in them is committed). NULL is a no-op. */
void journal_close(struct journal *j, bool remove);

#endif
