#!/usr/bin/env python3
"""Runs every test tier and prints one closing line: 'total: N passed, M failed'.

Tiers: the Check unit binaries under $ACCELD_BUILD/tests, the libFuzzer harnesses under $ACCELD_FUZZ_DIR (each
for $FUZZ_SECONDS over its seed corpus, all at once), then the black-box suites under tests/http and tests/deploy
(Python's unittest against the built binary). TESTS=name[,name] limits the run to the files whose tier/name contains
one of the words: `cost` matches unit/test_cost and http/test_cost_api.py, `unit/` every unit test,
`http/test_run_api` one black-box file. --fuzz-only runs the fuzzers alone (`make fuzz`).

The caller's shell is not a clean room: before anything runs, this process's environment is cut down to what
tests/http/harness.py's clean_env keeps (PATH, HOME, TMPDIR, the sanitizers' options ...; a fixed locale and time
zone) plus this runner's own settings, so every tier and every tool a test starts sees the same environment.
"""
import os
import re
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("ACCELD_BUILD", "build")
ONLY = [s for s in os.environ.get("TESTS", "").split(",") if s]
# the runner's own settings (from the Makefile or the caller), kept through the scrub; acceld never sees them
RUNNER_VARS = ("ACCELD_BIN", "ACCELD_BUILD", "ACCELD_FUZZ_DIR", "FUZZ_SECONDS", "TESTS", "UPDATE_SCREENSHOT")

sys.path.insert(0, os.path.join(ROOT, "tests", "http"))  # harness.py
from harness import clean_env  # noqa: E402


def wanted(tier, name):
    return not ONLY or any(s in f"{tier}/{name}" for s in ONLY)


def run_unit():
    passed = failed = 0
    bindir = os.path.join(ROOT, BUILD, "tests")
    # the binaries mirror src/'s folders (exec/backend/test_exec_pjrt); a test is named by its path or its own name
    names = sorted(os.path.relpath(os.path.join(d, n), bindir) for d, _, files in os.walk(bindir) for n in files
                   if n.startswith("test_") and "." not in n)
    for name in names:
        if not (wanted("unit", name) or wanted("unit", os.path.basename(name))):
            continue
        t0 = time.monotonic()
        proc = subprocess.run([os.path.join(bindir, name)], cwd=ROOT, capture_output=True, text=True,
                              env=clean_env({"ACCELD_BUILD": BUILD}))
        out = proc.stdout + proc.stderr
        m = re.search(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)", out)
        if m:
            total, fails, errors = (int(g) for g in m.groups())
            passed += total - fails - errors
            # a binary that exits non-zero with no failing check crashed outside one: count it once
            failed += fails + errors if fails + errors or proc.returncode == 0 else 1
        else:
            failed += 1
        if proc.returncode != 0 or not m:
            sys.stdout.write(out)
        print(f"unit {name}: {m.group(0) if m else 'no summary, exit ' + str(proc.returncode)} "
              f"({time.monotonic() - t0:.1f}s)", flush=True)
    return passed, failed


def run_fuzz():
    """Each harness once, concurrently; a crash, leak, sanitizer report or hang fails it (log and reproducer kept)."""
    fuzz_dir = os.path.join(ROOT, os.environ.get("ACCELD_FUZZ_DIR", os.path.join(BUILD, "fuzz")))
    seconds = int(os.environ.get("FUZZ_SECONDS", "10"))
    names = sorted(n for n in os.listdir(fuzz_dir) if n.startswith("fuzz_") and "." not in n) \
        if os.path.isdir(fuzz_dir) else []
    procs = []
    for name in names:
        if not wanted("fuzz", name):
            continue
        short = name[len("fuzz_"):]
        scratch = os.path.join(fuzz_dir, "corpus", short)
        os.makedirs(scratch, exist_ok=True)
        log = open(os.path.join(fuzz_dir, short + ".log"), "w")
        cmd = [os.path.join(fuzz_dir, name), f"-max_total_time={seconds}", "-max_len=8192", "-timeout=30",
               f"-artifact_prefix={fuzz_dir}/{short}-", "-print_final_stats=1", scratch,
               os.path.join(ROOT, "tests", "fuzz", "corpus", short)]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=log, env=clean_env())
        procs.append((name, log, time.monotonic(), proc))
    passed = failed = 0
    for name, log, t0, proc in procs:
        try:
            rc = proc.wait(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
        with open(log.name, errors="replace") as f:
            text = f.read()
        runs = re.search(r"stat::number_of_executed_units: (\d+)", text)
        if rc == 0:
            passed += 1
        else:
            failed += 1
            sys.stdout.write(text[-6000:])
        print(f"fuzz {name}: {'ok' if rc == 0 else 'FAILED, exit ' + str(rc)}, "
              f"{runs.group(1) if runs else '?'} inputs ({time.monotonic() - t0:.1f}s; log {log.name})", flush=True)
    return passed, failed


BLACKBOX_DIRS = ("http", "deploy")  # tests/<dir>/test_*.py, run with Python's unittest


def run_http():
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for d in BLACKBOX_DIRS:
        folder = os.path.join(ROOT, "tests", d)
        if not os.path.isdir(folder):
            continue
        sys.path.insert(0, folder)
        for fn in sorted(os.listdir(folder)):
            if fn.startswith("test_") and fn.endswith(".py") and wanted(d, fn):
                suite.addTests(loader.loadTestsFromName(fn[:-3]))
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    return result.testsRun - bad - len(result.skipped), bad


def main():
    os.chdir(ROOT)
    scrubbed = clean_env(keep=RUNNER_VARS)
    os.environ.clear()
    os.environ.update(scrubbed)
    # sanitizer builds: the leaks of libraries acceld loads (PoCL, LLVM) are suppressed here, not in acceld's code
    os.environ["LSAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("LSAN_OPTIONS", ""),
                                                        f"suppressions={ROOT}/tests/lsan.supp"]))
    if "--fuzz-only" in sys.argv:
        fp, ff = run_fuzz()
        print(f"fuzz: {fp} passed, {ff} failed", flush=True)
        return 0 if ff == 0 else 1
    up, uf = run_unit()
    print(f"unit: {up} passed, {uf} failed", flush=True)
    fp, ff = run_fuzz()
    print(f"fuzz: {fp} passed, {ff} failed", flush=True)
    hp, hf = run_http()
    print(f"http: {hp} passed, {hf} failed", flush=True)
    print(f"total: {up + fp + hp} passed, {uf + ff + hf} failed", flush=True)
    return 0 if uf + ff + hf == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
