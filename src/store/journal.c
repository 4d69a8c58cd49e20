/* journal: the store's redo journal of confirmed job records (one JSON line per record, one write(2) each). */
#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "core/jsonval.h"
#include "core/mem.h"

#define FORMAT 1 /* the "v" of every line; a line of another format is skipped */

struct journal {
	int lock_fd;                /* PATH-redo.lock, flock'ed while this process owns the journal */
	int fd;                     /* PATH-redo, appended to; -1 until started, or once it cannot be */
	char *path;                 /* PATH-redo */
	char *sealed_path;          /* PATH-redo.1 */
	uint64_t size;              /* bytes in the active file */
	uint64_t count;             /* records in it */
	uint64_t last;              /* the sequence number of its newest record */
	bool sealed;                /* the sealed file holds records not known to be committed */
	uint64_t sealed_last;       /* the newest of them */
};

static char *path_with(const char *db_path, const char *suffix)
{
	size_t a = strlen(db_path), b = strlen(suffix);
	char *p = xmalloc(a + b + 1);

	memcpy(p, db_path, a);
	memcpy(p + a, suffix, b + 1);
	return p;
}

/* --- the record format --- */

/* A string member; text that is not UTF-8 (a driver's message) keeps its readable part (jsonval_text). */
static void set_text(json_t *o, const char *key, const char *v)
{
	if (v[0] != '\0')
		json_object_set_new(o, key, jsonval_text(v));
}

size_t journal_encode(const struct store_job *job, char *buf, size_t cap)
{
	json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I}", "v", FORMAT, "submitted_ms",
			      (json_int_t)job->submitted_ms, "started_ms", (json_int_t)job->started_ms, "finished_ms",
			      (json_int_t)job->finished_ms, "n", (json_int_t)job->n, "m", (json_int_t)job->m, "k",
			      (json_int_t)job->k);
	size_t len;

	if (o == NULL || cap < 2) {
		json_decref(o);
		return 0;
	}
	set_text(o, "id", job->id);
	set_text(o, "device", job->device);
	set_text(o, "kernel", job->kernel);
	set_text(o, "backend", job->backend);
	set_text(o, "state", job->state);
	set_text(o, "reason", job->reason);
	set_text(o, "error", job->error);
	set_text(o, "trigger", job->trigger);
	set_text(o, "check_id", job->check_id);
	jsonval_set_num(o, "flops", job->flops);
	jsonval_set_num(o, "bytes", job->bytes);
	jsonval_set_num(o, "queued_ms", job->queued_ms);
	jsonval_set_num(o, "transfer_ms", job->transfer_ms);
	jsonval_set_num(o, "setup_ms", job->setup_ms);
	jsonval_set_num(o, "generate_ms", job->generate_ms);
	jsonval_set_num(o, "verify_ms", job->verify_ms);
	jsonval_set_num(o, "transfer_bytes", job->transfer_bytes);
	jsonval_set_num(o, "upload_ms", job->upload_ms);
	jsonval_set_num(o, "upload_bytes", job->upload_bytes);
	jsonval_set_num(o, "download_ms", job->download_ms);
	jsonval_set_num(o, "download_bytes", job->download_bytes);
	set_text(o, "transfer_memory", job->transfer_memory);
	jsonval_set_num(o, "kernel_ms", job->kernel_ms);
	jsonval_set_num(o, "total_ms", job->total_ms);
	jsonval_set_num(o, "cost_usd", job->cost_usd);
	jsonval_set_num(o, "peak_gflops", job->peak_gflops);
	jsonval_set_num(o, "peak_gbytes_per_s", job->peak_gbytes_per_s);
	len = json_dumpb(o, buf, cap - 1, JSON_COMPACT);
	json_decref(o);
	if (len == 0 || len > cap - 2)
		return 0;
	buf[len++] = '\n';
	return len;
}

static void get_text(const json_t *o, const char *key, char *dst, size_t dstsz)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(dst, dstsz, "%s", v ? v : "");
}

static double get_num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int64_t get_int(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

/* Whether o[key] is a string that is not empty (every record names its job, device and kernel). */
static bool present(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL && v[0] != '\0';
}

bool journal_decode(const char *line, size_t len, struct store_job *out)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	bool ok = json_is_object(o) && json_integer_value(json_object_get(o, "v")) == FORMAT && present(o, "id") &&
		  present(o, "device") && present(o, "kernel");

	if (ok) {
		memset(out, 0, sizeof(*out));
		get_text(o, "id", out->id, sizeof(out->id));
		get_text(o, "device", out->device, sizeof(out->device));
		get_text(o, "kernel", out->kernel, sizeof(out->kernel));
		get_text(o, "backend", out->backend, sizeof(out->backend));
		get_text(o, "state", out->state, sizeof(out->state));
		get_text(o, "reason", out->reason, sizeof(out->reason));
		get_text(o, "error", out->error, sizeof(out->error));
		get_text(o, "trigger", out->trigger, sizeof(out->trigger));
		get_text(o, "check_id", out->check_id, sizeof(out->check_id));
		out->submitted_ms = get_int(o, "submitted_ms");
		out->started_ms = get_int(o, "started_ms");
		out->finished_ms = get_int(o, "finished_ms");
		out->n = (uint64_t)get_int(o, "n");
		out->m = (uint64_t)get_int(o, "m");
		out->k = (uint64_t)get_int(o, "k");
		out->flops = get_num(o, "flops");
		out->bytes = get_num(o, "bytes");
		out->queued_ms = get_num(o, "queued_ms");
		out->transfer_ms = get_num(o, "transfer_ms");
		out->setup_ms = get_num(o, "setup_ms");
		out->generate_ms = get_num(o, "generate_ms");
		out->verify_ms = get_num(o, "verify_ms");
		out->transfer_bytes = get_num(o, "transfer_bytes");
		out->upload_ms = get_num(o, "upload_ms");
		out->upload_bytes = get_num(o, "upload_bytes");
		out->download_ms = get_num(o, "download_ms");
		out->download_bytes = get_num(o, "download_bytes");
		get_text(o, "transfer_memory", out->transfer_memory, sizeof(out->transfer_memory));
		out->kernel_ms = get_num(o, "kernel_ms");
		out->total_ms = get_num(o, "total_ms");
		out->cost_usd = get_num(o, "cost_usd");
		out->peak_gflops = get_num(o, "peak_gflops");
		out->peak_gbytes_per_s = get_num(o, "peak_gbytes_per_s");
	}
	json_decref(o);
	return ok;
}

/* --- the files --- */

static int open_active(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
}

struct journal *journal_claim(const char *db_path)
{
	struct journal *j = xcalloc(1, sizeof(*j));
	char *lock = path_with(db_path, "-redo.lock");

	j->fd = -1;
	j->path = path_with(db_path, "-redo");
	j->sealed_path = path_with(db_path, "-redo.1");
	j->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lock);
	if (j->lock_fd < 0 || flock(j->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		journal_close(j, false);
		errno = e;
		return NULL;
	}
	return j;
}

int journal_start(struct journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->size = 0;
	j->count = 0;
	j->sealed = false;
	if (unlink(j->sealed_path) != 0 && errno != ENOENT) {
		j->fd = -1;
		return -1;
	}
	j->fd = open_active(j->path);
	return j->fd < 0 ? -1 : 0;
}

bool journal_append(struct journal *j, const char *line, size_t len, uint64_t seq)
{
	ssize_t w;

	if (j->fd < 0) {
		errno = EBADF;
		return false;
	}
	do
		w = write(j->fd, line, len);
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)len) {
		int e = w < 0 ? errno : ENOSPC;

		/* a torn line would swallow the next record too: cut it off, or stop appending */
		if (w > 0 && ftruncate(j->fd, (off_t)j->size) != 0) {
			close(j->fd);
			j->fd = -1;
		}
		errno = e;
		return false;
	}
	j->size += len;
	j->count++;
	j->last = seq;
	return true;
}

/* The active file becomes the sealed one and appends go to a new active file. */
static void seal(struct journal *j)
{
	if (rename(j->path, j->sealed_path) != 0)
		return; /* it keeps growing: emptied once a commit catches up with it */
	j->sealed = true;
	j->sealed_last = j->last;
	close(j->fd);
	j->fd = open_active(j->path);
	j->size = 0;
	j->count = 0;
}

void journal_committed(struct journal *j, uint64_t seq)
{
	if (j->sealed && seq > j->sealed_last && (unlink(j->sealed_path) == 0 || errno == ENOENT))
		j->sealed = false;
	if (j->fd < 0 || j->count == 0)
		return;
	if (seq > j->last) {
		if (ftruncate(j->fd, 0) == 0) {
			j->size = 0;
			j->count = 0;
		}
	} else if (j->size >= JOURNAL_SEAL_BYTES && !j->sealed) {
		seal(j);
	}
}

void journal_close(struct journal *j, bool remove)
{
	if (j == NULL)
		return;
	if (j->fd >= 0)
		close(j->fd);
	if (remove) {
		unlink(j->sealed_path);
		unlink(j->path);
	}
	if (j->lock_fd >= 0)
		close(j->lock_fd); /* and with it the claim */
	free(j->path);
	free(j->sealed_path);
	free(j);
}

/* Replays one file: records given to fn, or -1. */
static long replay_file(const char *path, journal_record_fn fn, void *ctx, size_t *skipped)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	long n = 0;

	if (f == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((len = getline(&line, &cap, f)) > 0) {
		struct store_job job;

		/* a line without its newline was cut short: its write never ended, so nobody was answered */
		if (line[len - 1] != '\n' || (size_t)len > JOURNAL_LINE_MAX ||
		    !journal_decode(line, (size_t)len - 1, &job)) {
			(*skipped)++;
			continue;
		}
		if (fn(ctx, &job) != 0) {
			n = -1;
			break;
		}
		n++;
	}
	if (n >= 0 && ferror(f))
		n = -1;
	free(line);
	fclose(f);
	return n;
}

long journal_replay(struct journal *j, journal_record_fn fn, void *ctx, size_t *skipped)
{
	long a, b = -1;

	*skipped = 0;
	a = replay_file(j->sealed_path, fn, ctx, skipped);
	if (a >= 0)
		b = replay_file(j->path, fn, ctx, skipped);
	return a < 0 || b < 0 ? -1 : a + b;
}
