/*
 * check_devcheck: a real executor and health-check module around a fake backend, for the unit tests of devcheck.c
 * and devcheck_tests.c. The native kernels compute every result (so verification is real), and the fake reports the
 * kernel time a device of a chosen speed would take, so verdicts do not depend on this machine's speed or load.
 * Switches make it slow, wrong, failing, throttled after a number of runs, or held at a gate so a test can see a
 * check running. Two devices: cpu:0 (expects 100 GFLOP/s and 10 GB/s) and gpu:0, which no backend here serves.
 */
#ifndef ACCELD_CHECK_DEVCHECK_H
#define ACCELD_CHECK_DEVCHECK_H

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "check/devcheck.h"
#include "check/devcheck_int.h"
#include "exec/exec.h"

#define MAX_ELEMENTS (3u << 20) /* the job limit: sgemm up to 512, triad at 1M elements */

/* --- the fake backend's switches, under mu (setup resets them) --- */

extern pthread_mutex_t mu;
extern pthread_cond_t cv;
extern double sgemm_gflops;     /* the speed reported: 80 */
extern double triad_gbps;       /* 8 */
extern bool wrong;              /* results off by one */
extern bool failing;            /* runs fail like a device error */
extern int throttle_after;      /* sgemm runs after this many report a third of the speed; 0 never */
extern char order[64][24];      /* "sgemm 256", "saxpy 1000": the runs in the order they ran */
extern int norder;
extern unsigned cold_ms;        /* the first run takes this long more, as a backend's first use does */
extern unsigned compile_ms;     /* the first sgemm run of each size takes this long more, reported as its compile */
extern unsigned loaded_ms;      /* the first run of each kernel and size: 1 ms of compile and this much more kernel */
extern double reference;        /* what the backend says a healthy device reaches (0: it says nothing) */

/* Closes (true) or opens the gate that runs wait at. */
void gate(bool closed);
/* Waits until n runs have come to the gate. */
void wait_at_gate(int n);

/* --- the service around the checks --- */

extern struct device devs[2];   /* what the module's device view answers, under rec_mu */
extern unsigned queue_depth;    /* the executor's queue depth at the next start_with (16) */
extern struct exec *ex;
extern struct devcheck *dc;
extern pthread_mutex_t rec_mu;  /* guards devs and what the callbacks below noted */
extern json_t *last_doc;        /* the last document recorded */
extern int nrecords;
extern int nchanged;            /* times detection was told of a change */
extern char told_id[DEVCHECK_ID_MAX];
extern enum devcheck_state told_summary, told_run; /* the summary's and the run's states when last told */

/* The settings setup starts with: warn below 25 %, fail below 10 %, sgemm up to 256, 2 s budgets, 3 repeats. */
struct devcheck_settings settings(void);
/* Starts ex and dc with s (after the test freed the ones setup started). */
void start_with(const struct devcheck_settings *s);
/* The checked fixture: resets the fake, builds the devices and starts with settings(). */
void setup(void);
void teardown(void);

/* Runs a check of cpu:0 to its end and returns its document (the caller releases it); *out keeps the run. */
json_t *run_check(enum devcheck_level level, uint64_t duration_ms, struct devcheck_run **out);
/* The test of that name in a check's document, or NULL. */
json_t *test_of(json_t *doc, const char *name);
/* A string member, or "". */
const char *str(json_t *o, const char *key);

#endif
