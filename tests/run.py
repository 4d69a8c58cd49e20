#!/usr/bin/env python3
"""Runs every test tier and prints one closing line: 'total: N passed, M failed'.

Tiers: the Check unit binaries under $ACCELD_BUILD/tests, then the black-box suites under tests/http (Python's
unittest against the built binary). TESTS=name[,name] limits the run to matching files.
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


def wanted(name):
    return not ONLY or any(s in name for s in ONLY)


def run_unit():
    passed = failed = 0
    bindir = os.path.join(ROOT, BUILD, "tests")
    names = sorted(n for n in os.listdir(bindir) if n.startswith("test_") and "." not in n) if os.path.isdir(bindir) else []
    for name in names:
        if not wanted(name):
            continue
        t0 = time.monotonic()
        proc = subprocess.run([os.path.join(bindir, name)], cwd=ROOT, capture_output=True, text=True)
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


BLACKBOX_DIRS = ("http", "deploy")  # tests/<dir>/test_*.py, run with Python's unittest


def run_http():
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    sys.path.insert(0, os.path.join(ROOT, "tests", "http"))  # harness.py
    for d in BLACKBOX_DIRS:
        folder = os.path.join(ROOT, "tests", d)
        if not os.path.isdir(folder):
            continue
        sys.path.insert(0, folder)
        for fn in sorted(os.listdir(folder)):
            if fn.startswith("test_") and fn.endswith(".py") and wanted(fn):
                suite.addTests(loader.loadTestsFromName(fn[:-3]))
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    return result.testsRun - bad - len(result.skipped), bad


def main():
    os.chdir(ROOT)
    up, uf = run_unit()
    print(f"unit: {up} passed, {uf} failed", flush=True)
    hp, hf = run_http()
    print(f"http: {hp} passed, {hf} failed", flush=True)
    print(f"total: {up + hp} passed, {uf + hf} failed", flush=True)
    return 0 if uf + hf == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
