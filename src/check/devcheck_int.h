/*
 * devcheck_int: what the parts of the health checks share, private to src/check/ (and the unit tests that mirror it;
 * the rest of acceld uses devcheck.h). The module is four files:
 *   devcheck.c        the module: names, life cycle, the run's thread, figures for the rest of acceld, periodic checks;
 *   devcheck_doc.c    a check's document (JSON);
 *   devcheck_tests.c  the tests a check runs: its jobs, telemetry sampling, sizes, the ramp, memory and sustained;
 *   devcheck_judge.c  the verdicts: pure functions of a run's tests and the settings (no threads, locks or I/O).
 *
 * One mutex (struct devcheck's mu) guards the module: the recent checks, the per-device summaries and every field of
 * a run that a reader may see. A run's thread computes on its own copies and publishes them under the mutex.
 */
#ifndef ACCELD_DEVCHECK_INT_H
#define ACCELD_DEVCHECK_INT_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "check/devcheck.h"
#include "detect/device.h"
#include "exec/kernel.h"

#define RECENT_MAX 64          /* checks kept in memory */
#define DEVICES_MAX 64         /* devices with a summary */
#define RAMP_MAX 8             /* matrix sizes tried */

/* The kernels of the throughput tests, as the kernel table names them: arithmetic and memory bandwidth. */
#define MATRIX_KERNEL kernel_for_figure(KERNEL_FIGURE_MATRIX)
#define MEMORY_KERNEL kernel_for_figure(KERNEL_FIGURE_MEMORY)
#define TRANSFER_KERNEL kernel_for_figure(KERNEL_FIGURE_TRANSFER)
#define TRANSFER_ROW 4096ull   /* the transfer kernel's row length: its runs are rows of 16 KiB */
#define SAMPLES_MAX 16         /* runs at the final size */
#define BUCKETS 120            /* points of the sustained series */

/* --- the state of a run --- */

struct ramp_step {
	uint64_t n;
	double figure;
	double kernel_ms;
};

/* One test of a check as its document shows it. */
struct devcheck_test {
	const char *name;           /* the kernel of a throughput test (kernel_name), "sustained", "telemetry" */
	const char *kind;           /* "matrix", "memory", "sustained", "telemetry" */
	const char *unit;           /* "GFLOP/s", "GB/s"; NULL for telemetry */
	bool started;
	bool finished;
	unsigned runs;              /* runs completed */
	unsigned wrong;             /* runs whose result the reference did not confirm */
	uint64_t n;                 /* final size (the matrix test: m = n = k) */
	double samples[SAMPLES_MAX];
	unsigned nsamples;
	double best, median;        /* NAN until measured */
	double expected;            /* NAN unknown */
	char expected_source[512];
	double worst_error;         /* the largest error / tolerance of a run */
	struct ramp_step ramp[RAMP_MAX];
	unsigned nramp;
	char steady[200];           /* why the final size was kept */
	double device_ms;           /* the test's own run time */
	double setup_ms;            /* one-off time kept out of device_ms: the warm-up run and program compiles */
	double budget_ms;
	bool failed;                /* a run could not complete */
	char failure[400];
	char last_job[32];
	bool has_verdict;
	enum devcheck_verdict verdict;
	char rule[480];
	/* sustained only */
	double first, last;         /* mean of the first and the last quarter of the runs */
	double duration_ms;
	/* transfer only: the best rate each way (GB/s; NAN until measured) and the bytes of a run each way, against
	 * the PCIe link the device was on (link: its theoretical GB/s per direction, NAN unknown) */
	double upload, download;
	uint64_t bytes;
	double link;
	struct device_pcie pcie;
};

/* Telemetry gathered over a check. */
struct devcheck_telemetry {
	unsigned samples;
	const char *source;         /* "nvml", "cpufreq", "sysfs", NULL none */
	double temp_first, temp_max;
	double power_max, power_sum;
	unsigned power_n;
	double clock_min, clock_sum, clock_max_rated;
	unsigned clock_n;
	bool throttle_known;
	unsigned throttle_seen;
	double ecc_first, ecc_last;
	int retired_pending;
	double slowdown_c;
	uint64_t last_ns;
	double now_temp, now_power, now_clock; /* the latest sample's */
};

struct bucket {
	double sum;
	unsigned runs;
	double temp, power, clock;
};

struct devcheck_run {
	atomic_int refs;
	struct devcheck *c;
	char id[DEVCHECK_ID_MAX];
	char device[DEVICE_ID_MAX];
	char type[8];
	char model[128];
	char backend[16];
	struct devcheck_request req;
	enum devcheck_state state;
	int64_t created_ms, started_ms, finished_ms;
	uint64_t started_ns;
	uint64_t sustained_ms;      /* the long level's phase */
	uint64_t seed;
	struct devcheck_test matrix, memory, sustained, telemetry, transfer;
	bool has_transfer;          /* an accelerator: the transfer test runs (quick and long) */
	struct devcheck_telemetry tel;
	struct bucket buckets[BUCKETS];
	bool has_verdict;
	enum devcheck_verdict verdict;
	char rule[560];
	bool has_error;
	enum reason error_reason;
	char error[400];
	bool stop;                  /* devcheck_stop: end after the job in progress */
	bool final_recorded;        /* its final document went to the history (devcheck_stop may do it first) */
	bool ended;                 /* its thread is done with it */
	devcheck_done_fn done;
	void *done_arg;
	unsigned jobs;
};

/* A figure that can stand for one (an expected peak, a measurement): finite and above zero. */
static inline bool devcheck_usable(double v)
{
	return isfinite(v) && v > 0;
}

/* A test that has not started: its names (static strings; unit NULL for telemetry), no runs, every figure NAN. */
void devcheck_test_init(struct devcheck_test *t, const char *name, const char *kind, const char *unit);

/* Telemetry with no sample yet: every figure NAN, retired pages unknown (-1). */
void devcheck_tel_init(struct devcheck_telemetry *t);

/*
 * Formatted text into out that is never cut inside a word: when it does not fit, it ends at the last whole word
 * that leaves room for "..." (a peak's source once ended "... x 64 FP3").
 */
void devcheck_words(char *out, size_t outsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- the module (devcheck.c) --- */

/* A device's summary and the peak the spec table or the CPU probe gave it (the basis of expected figures). */
struct devstate {
	struct devcheck_summary s;
	bool known;                 /* s holds a finished check */
	bool has_basis;
	struct device_peak basis;
	char running_id[DEVCHECK_ID_MAX];
};

struct devcheck {
	struct devcheck_opts opts;
	pthread_mutex_t mu;
	pthread_cond_t cv;          /* a run ended, a thread ended, or stop */
	bool stopping;
	struct devcheck_run *recent[RECENT_MAX]; /* ring, newest at head - 1 */
	unsigned nrecent, head;
	struct devstate devs[DEVICES_MAX];
	size_t ndevs;
	unsigned threads;           /* run threads alive */
	pthread_t scheduler;
	bool scheduler_started;
	uint64_t salt;
	uint64_t seq;
};

/* --- the tests (devcheck_tests.c), run on the run's thread with the mutex released --- */

/* Whether devcheck_stop asked the run to end after the job in progress. Takes the mutex. */
bool devcheck_run_stopping(struct devcheck_run *run);

/*
 * Reads the device's telemetry anew into run->tel (at most every 500 ms unless force) and copies the device into
 * *dev (may be NULL); false when the device is gone.
 */
bool devcheck_run_sample(struct devcheck_run *run, bool force, struct device *dev);

/*
 * The tests, each publishing run->matrix, run->memory or run->sustained as it goes and marking it finished at its
 * end. matrix ramps from the start size to a plateau, the size cap or the budget (device time in ms), then repeats at
 * the final size; memory repeats at a length fitting the device; sustained repeats matrix at its final size for
 * duration_ms. A stop (devcheck_run_stopping) ends each after the job in progress.
 */
void devcheck_test_matrix(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms);
void devcheck_test_memory(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms);
void devcheck_test_sustained(struct devcheck_run *run, uint64_t duration_ms);

/*
 * An accelerator's transfer test: runs of the transfer kernel whose input the host makes and whose output comes back
 * whole (a full verification), each moving up to settings.transfer_bytes each way (less where the job limit, the
 * backend's largest allocation or a quarter of the device's free memory allow less), repeated while the budget
 * lasts; the best host-to-device and device-to-host rates count, against dev's PCIe link.
 */
void devcheck_test_transfer(struct devcheck_run *run, const struct device *dev, uint64_t budget_ms);

/* --- verdicts (devcheck_judge.c): pure, the caller holds the mutex where readers may see the run --- */

/*
 * A throughput test (matrix, memory) against its expected figure: a wrong result or no completed run fails; no
 * expected figure passes a verified one; else measured / expected below s->fail_percent fails, below
 * s->warn_percent warns, and a run that failed after good ones fails the test (a figure with no expected one to
 * compare with is not judged further). Sets t->verdict and t->rule.
 */
void devcheck_judge_figure(const struct devcheck_settings *s, struct devcheck_test *t);

/*
 * The sustained test: a wrong result, no completed run or a failed run fails; under 8 runs pass (too few for a
 * trend); the last quarter's throughput below s->throttle_percent of the first quarter's warns.
 */
void devcheck_judge_sustained(const struct devcheck_settings *s, struct devcheck_test *t);

/*
 * The telemetry test from what was sampled (x): uncorrectable ECC errors or retired pages waiting for a reset fail;
 * harmful clock event reasons, a temperature at or past the slowdown threshold, or a mean clock below
 * s->clock_percent of the rated maximum warn. The worst finding decides and the rule says every one. Marks t
 * started and finished.
 */
void devcheck_judge_telemetry(const struct devcheck_settings *s, const struct devcheck_telemetry *x,
			      struct devcheck_test *t);

/*
 * The transfer test: never fails. No completed run, or a wrong result, warns; with the link unknown (or
 * s->transfer_percent 0) the rates are recorded only (pass); either direction below s->transfer_percent of the
 * link's theoretical rate warns.
 */
void devcheck_judge_transfer(const struct devcheck_settings *s, struct devcheck_test *t);

/*
 * Judges every test of the run's level and gives the run its worst test's verdict (the first of equals, in the
 * document's order), with that test's name and rule (run->has_verdict, run->verdict, run->rule).
 */
void devcheck_judge(const struct devcheck_settings *s, struct devcheck_run *run);

/* The check's document as it would be in state (the record of a change committed before anyone can see it). */
json_t *devcheck_run_json_in(struct devcheck_run *run, enum devcheck_state state);

#endif
