/*
 * check_exec: what the executor's unit tests share. Devices are built by hand (cpu:0 at 3.60 USD an hour, gpu:0
 * with an OpenCL view of 4 MiB allocations, tpu:0); backends are the real native one and fakes (one that blocks
 * until the test opens a gate, one that always fails like a broken GPU). Callbacks count records and completions,
 * so tests wait for states, never for durations.
 */
#ifndef ACCELD_CHECK_EXEC_H
#define ACCELD_CHECK_EXEC_H

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "exec/backend.h"
#include "exec/exec.h"

/* --- fakes --- */

/* Opens (true) or shuts the gate that blocking_native's runs and noting_native's GATE_N runs wait at. */
void gate_set(bool open);
/* Waits until n runs have come to the gate since it was last shut. */
void gate_wait_entered(int n);

/* "native" for CPUs, whose runs wait at the gate and output zeros. */
extern const struct backend_ops blocking_native;

/*
 * The real native backend, allowing inline runs, that notes the thread of each run and holds jobs of GATE_N
 * elements at the gate.
 */
#define GATE_N 100000
extern const struct backend_ops noting_native;
/* Whether noting_native's last run ran on the calling thread. */
bool ran_on_this_thread(void);

/* --- records and done callbacks, under rec_mu --- */

extern pthread_mutex_t rec_mu;
extern int records;                /* final records (on_job_done) */
extern char last_state[32];        /* the last final record's state */
extern double last_cost;
extern int dones;                  /* done callbacks of jobs submitted with submit_ok or submit_refused */
extern int starts;                 /* start records (on_job_start) */
extern int start_seq, record_seq;  /* the order in which the callbacks came */
extern char start_state[32];
extern char start_id[24];

void wait_records(int n);
void wait_dones(int n);

/* --- devices and the executor --- */

extern struct device devs[3];
/* Builds devs afresh. */
void make_devices(void);
/* What detection says of gpu:0 now (every other device is there); EXEC_PRESENT at start(). */
extern enum exec_presence gpu_presence;
/* gpu:0's memory now (1 GiB in all): the latest sample's free bytes (0 unknown), how many other processes hold it
 * (pids 4242, ..., "python3", 100 MB each), what acceld's own processes hold; start() resets them */
extern uint64_t gpu_available, gpu_own;
extern size_t gpu_holders;
/* The backends of the last start(): native, a failing OpenCL, NULL. */
extern const struct backend_ops *ops_in_use[3];
/* The executor's thread creator at the next start() (NULL: pthread_create). */
extern int (*thread_create_in_use)(pthread_t *thread, void *(*fn)(void *), void *arg);
extern exec_record_fn record_hook_in_use; /* on_job_record of the next start(); NULL answers at once */

/*
 * An executor on devs with native as the CPUs' backend (and the failing OpenCL one), queues of depth, jobs of at
 * most max_elements; counts reset, gate shut.
 */
struct exec *start(const struct backend_ops *native, unsigned depth, uint64_t max_elements);

/* A saxpy job named to device (pinned, no fallback), or with no device yet when device is NULL. */
struct exec_request saxpy(uint64_t n, const char *device);

/* Places r on these devices in order (a NULL-terminated list), as selection ranks them, with fallback. */
void rank(struct exec_request *r, const char *const *ids);
extern const char *const tpu_first[];
extern const char *const gpu_first[];

/* Submits r, asserting it is accepted; returns the job (the caller unrefs it). */
struct exec_job *submit_ok(struct exec *ex, struct exec_request *r);
/* Submits r, asserting it is refused with want and this reason's name. */
void submit_refused(struct exec *ex, struct exec_request *r, enum acceld_err want, const char *reason);

/* A string member, or "". */
const char *jstr(json_t *o, const char *key);

#endif
