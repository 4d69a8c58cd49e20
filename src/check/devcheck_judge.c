/*
 * devcheck_judge: the verdicts of a check's tests and of the check, each with the rule that decided it
 * (devcheck.h lists the rules). Pure functions of a run's tests, its telemetry and the settings: no threads, locks
 * or I/O, so a unit test can judge a state it builds by hand.
 */
#include "check/devcheck_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void set_verdict(struct devcheck_test *t, enum devcheck_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_verdict(struct devcheck_test *t, enum devcheck_verdict v, const char *fmt, ...)
{
	va_list ap;

	t->has_verdict = true;
	t->verdict = v;
	va_start(ap, fmt);
	vsnprintf(t->rule, sizeof(t->rule), fmt, ap);
	va_end(ap);
}

void devcheck_judge_figure(const struct devcheck_settings *s, struct devcheck_test *t)
{
	double pct;

	if (t->wrong > 0) {
		set_verdict(t, DEVCHECK_FAIL, "wrong result: %u run%s did not match the double-precision reference "
			    "(worst error %.3g x the tolerance)", t->wrong, t->wrong == 1 ? "" : "s", t->worst_error);
		return;
	}
	if (t->runs == 0 || isnan(t->best)) {
		set_verdict(t, DEVCHECK_FAIL, "no run completed: %s", t->failed ? t->failure : "the check stopped first");
		return;
	}
	if (!devcheck_usable(t->expected)) {
		set_verdict(t, DEVCHECK_PASS, "every result verified; no expected figure is known for this device (no "
			    "spec table row or computed peak), so %.4g %s is recorded only", t->best, t->unit);
		return;
	}
	pct = t->best / t->expected * 100.0;
	if (pct < s->fail_percent)
		set_verdict(t, DEVCHECK_FAIL, "measured %.4g %s is %.3g %% of the expected %.4g %s (fail below %u %%)", t->best,
			    t->unit, pct, t->expected, t->unit, s->fail_percent);
	else if (pct < s->warn_percent)
		set_verdict(t, DEVCHECK_WARN, "measured %.4g %s is %.3g %% of the expected %.4g %s (warn below %u %%)", t->best,
			    t->unit, pct, t->expected, t->unit, s->warn_percent);
	else
		set_verdict(t, DEVCHECK_PASS, "measured %.4g %s is %.3g %% of the expected %.4g %s (warn below %u %%, fail "
			    "below %u %%)", t->best, t->unit, pct, t->expected, t->unit, s->warn_percent,
			    s->fail_percent);
	/* a run that failed after good ones (out of memory, a device error) is a fault too */
	if (t->failed && t->verdict != DEVCHECK_FAIL) {
		char was[sizeof(t->rule)];

		snprintf(was, sizeof(was), "%s", t->rule);
		set_verdict(t, DEVCHECK_FAIL, "a run failed: %.200s (before it: %.200s)", t->failure, was);
	}
}

void devcheck_judge_sustained(const struct devcheck_settings *s, struct devcheck_test *t)
{
	double pct;

	if (t->wrong > 0) {
		set_verdict(t, DEVCHECK_FAIL, "wrong result under sustained load: %u run%s did not match the reference",
			    t->wrong, t->wrong == 1 ? "" : "s");
		return;
	}
	if (t->runs == 0) {
		set_verdict(t, DEVCHECK_FAIL, "no run completed: %s", t->failed ? t->failure : "the check stopped first");
		return;
	}
	if (t->failed) {
		set_verdict(t, DEVCHECK_FAIL, "a run failed under sustained load: %s", t->failure);
		return;
	}
	if (t->runs < 8 || !devcheck_usable(t->first)) {
		set_verdict(t, DEVCHECK_PASS, "every result verified; %u runs are too few to judge a trend (8 needed)",
			    t->runs);
		return;
	}
	pct = t->last / t->first * 100.0;
	if (pct < s->throttle_percent)
		set_verdict(t, DEVCHECK_WARN, "throughput fell from %.4g to %.4g GFLOP/s (%.1f %%) over %.0f s of load (warn "
			    "below %u %%): thermal or power throttling", t->first, t->last, pct, t->duration_ms / 1000.0,
			    s->throttle_percent);
	else
		set_verdict(t, DEVCHECK_PASS, "throughput held at %.1f %% of the first runs' %.4g GFLOP/s over %.0f s of "
			    "load (warn below %u %%)", pct, t->first, t->duration_ms / 1000.0, s->throttle_percent);
}

/* Adds a finding to a telemetry verdict: the worst verdict wins, every finding is said. */
static void finding(struct devcheck_test *t, enum devcheck_verdict v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void finding(struct devcheck_test *t, enum devcheck_verdict v, const char *fmt, ...)
{
	size_t len = strlen(t->rule);
	va_list ap;

	if (!t->has_verdict || v > t->verdict)
		t->verdict = v;
	t->has_verdict = true;
	if (len > 0 && len + 2 < sizeof(t->rule)) {
		memcpy(t->rule + len, "; ", 3);
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->rule + len, sizeof(t->rule) - len, fmt, ap);
	va_end(ap);
}

void devcheck_judge_telemetry(const struct devcheck_settings *s, const struct devcheck_telemetry *x,
			      struct devcheck_test *t)
{
	char reasons[128];
	double mean_clock = x->clock_n > 0 ? x->clock_sum / x->clock_n : NAN;

	t->started = true;
	t->finished = true;
	t->has_verdict = false;
	t->rule[0] = '\0';
	if (isfinite(x->ecc_last) && x->ecc_last > 0)
		finding(t, DEVCHECK_FAIL, "%.0f uncorrectable ECC error%s since the driver loaded (%.0f at the start of the "
			"check)", x->ecc_last, x->ecc_last == 1 ? "" : "s", x->ecc_first);
	if (x->retired_pending == 1)
		finding(t, DEVCHECK_FAIL, "retired pages or remapped rows wait for a GPU reset");
	if (x->throttle_known && (x->throttle_seen & DEVICE_THROTTLE_HARMFUL)) {
		device_throttle_text(x->throttle_seen & DEVICE_THROTTLE_HARMFUL, reasons, sizeof(reasons));
		finding(t, DEVCHECK_WARN, "clocks held down during the check by %s", reasons);
	}
	if (isfinite(x->temp_max) && devcheck_usable(x->slowdown_c) && x->temp_max >= x->slowdown_c)
		finding(t, DEVCHECK_WARN, "reached %.0f C, at or past its slowdown temperature of %.0f C", x->temp_max,
			x->slowdown_c);
	if (isfinite(mean_clock) && devcheck_usable(x->clock_max_rated) &&
	    mean_clock < x->clock_max_rated * s->clock_percent / 100.0)
		finding(t, DEVCHECK_WARN, "ran at %.0f MHz on average, %.1f %% of its maximum %.0f MHz (warn below %u %%)",
			mean_clock, mean_clock / x->clock_max_rated * 100.0, x->clock_max_rated, s->clock_percent);
	if (t->has_verdict)
		return;
	if (x->samples == 0 || x->source == NULL)
		set_verdict(t, DEVCHECK_PASS, "the device reports no health telemetry (temperature, clocks, ECC)");
	else
		set_verdict(t, DEVCHECK_PASS, "no fault in %u %s sample%s", x->samples, x->source,
			    x->samples == 1 ? "" : "s");
}

void devcheck_judge_transfer(const struct devcheck_settings *s, struct devcheck_test *t)
{
	double up, down;

	if (t->wrong > 0) {
		set_verdict(t, DEVCHECK_WARN, "wrong result: %u transfer run%s did not match the reference (worst error "
			    "%.3g x the tolerance); the transfer test warns only", t->wrong, t->wrong == 1 ? "" : "s",
			    t->worst_error);
		return;
	}
	if (t->runs == 0) {
		set_verdict(t, DEVCHECK_WARN, "no transfer run completed: %s; the transfer test warns only",
			    t->failed ? t->failure : "the check stopped first");
		return;
	}
	if (!devcheck_usable(t->link)) {
		set_verdict(t, DEVCHECK_PASS, "host to device %.4g GB/s, device to host %.4g GB/s; the PCIe link is "
			    "unknown, so they are recorded only", t->upload, t->download);
		return;
	}
	if (s->transfer_percent == 0) {
		set_verdict(t, DEVCHECK_PASS, "host to device %.4g GB/s, device to host %.4g GB/s of the link's theoretical "
			    "%.4g GB/s; no fraction of it is expected (transfer percent 0), so they are recorded only",
			    t->upload, t->download, t->link);
		return;
	}
	up = t->upload / t->link * 100.0;
	down = t->download / t->link * 100.0;
	if (!(up >= s->transfer_percent) || !(down >= s->transfer_percent))
		set_verdict(t, DEVCHECK_WARN, "host to device %.4g GB/s (%.3g %%), device to host %.4g GB/s (%.3g %%) of "
			    "the link's theoretical %.4g GB/s (warn below %u %%)", t->upload, up, t->download,
			    down, t->link, s->transfer_percent);
	else
		set_verdict(t, DEVCHECK_PASS, "host to device %.4g GB/s (%.3g %%), device to host %.4g GB/s (%.3g %%) of "
			    "the link's theoretical %.4g GB/s (warn below %u %%)", t->upload, up, t->download,
			    down, t->link, s->transfer_percent);
}

void devcheck_judge(const struct devcheck_settings *s, struct devcheck_run *run)
{
	struct devcheck_test *all[5];
	size_t n = 0;
	struct devcheck_test *worst = NULL;

	devcheck_judge_figure(s, &run->matrix);
	devcheck_judge_figure(s, &run->memory);
	all[n++] = &run->matrix;
	all[n++] = &run->memory;
	if (run->req.level == DEVCHECK_LONG) {
		devcheck_judge_sustained(s, &run->sustained);
		all[n++] = &run->sustained;
	}
	if (run->has_transfer) {
		devcheck_judge_transfer(s, &run->transfer);
		all[n++] = &run->transfer;
	}
	devcheck_judge_telemetry(s, &run->tel, &run->telemetry);
	all[n++] = &run->telemetry;
	for (size_t i = 0; i < n; i++)
		if (worst == NULL || all[i]->verdict > worst->verdict)
			worst = all[i];
	run->has_verdict = true;
	run->verdict = worst->verdict;
	snprintf(run->rule, sizeof(run->rule), "%s: %s", worst->name, worst->rule);
}
