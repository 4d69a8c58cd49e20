#!/usr/bin/env bash
# The crash test of tests/http/test_crash.py, many rounds: clients load acceld with small jobs from several threads,
# it is killed with SIGKILL at a random moment and restarted on the same database; every job a client saw answered
# 200 must be in the history with its state, no job may stay running, and PRAGMA integrity_check must say ok.
# Usage: bench/crash.sh build/acceld   (ROUNDS=100 CLIENTS=6 SEED=... to change it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
cd "$here/../tests/http"
CRASH_ROUNDS=${ROUNDS:-100} CRASH_CLIENTS=${CLIENTS:-6} CRASH_SEED=${SEED:-} ACCELD_BIN="$bin" \
    python3 -m unittest -v test_crash
