#!/usr/bin/env bash
# Runs every side-by-side benchmark in bench/ (bench/<name>.sh) against the built binary; prints ratios.
# Usage: bench/run.sh build/acceld [name...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$(realpath "${1:-build/acceld}")
shift || true
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in "$here"/*.sh; do
        n=$(basename "$f" .sh)
        [ "$n" = run ] || names+=("$n")
    done
fi
for n in "${names[@]}"; do
    echo "== bench/$n.sh"
    "$here/$n.sh" "$bin"
done
