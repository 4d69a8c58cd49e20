#!/bin/sh
# Every GPU check in one pass, for a short lease on a GPU host, the most wanted first: the host's facts,
# check_worker.sh (start-up, hands off, crash, compile cache, transfers), check_pjrt.sh, bench_nvidia.sh, pjrt_probe
# against JAX's CUDA plugin (as acceld opens it, and with a first client of its own GPU set), check_nvidia.sh, a quick
# health check through each backend and a long check, each under its own time limit, all output under OUTDIR (at
# most 8 files) and a summary on stdout.
#
#   tests/gpu/device_run.sh BUNDLE [OUTDIR]     (BUNDLE: what bundle.sh made; OUTDIR: default $OUT)
#
# The plugin is looked for below the folder that holds python3's site-packages (ACCELD_PJRT_SEARCH).
# DEVICE_RUN_SKIP=smi,probe,nvidia,quick,long leaves out nvidia-smi -q, the probes, check_nvidia.sh, the quick
# checks and the long check (when an earlier run recorded them); CHECK_WORKER_STEPS chooses check_worker.sh's steps.
set -eu

B=$(cd "${1:-build/gpu-bundle}" && pwd)
O=${2:-${OUT:-/tmp/device-out}}
SKIP=,${DEVICE_RUN_SKIP:-},
mkdir -p "$O"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
START=$(date +%s)

# step NAME LIMIT FILE CMD...: runs CMD with a time limit, appending to FILE, and says how it went
step() {
	name=$1 limit=$2 file=$3
	shift 3
	t0=$(date +%s)
	echo "===== $name (limit ${limit}s)" >>"$O/$file"
	rc=0
	timeout -k 5 "$limit" "$@" >>"$O/$file" 2>&1 || rc=$?
	echo "===== $name: rc $rc in $(($(date +%s) - t0)) s" >>"$O/$file"
	echo "$name: rc $rc in $(($(date +%s) - t0)) s (at $(($(date +%s) - START)) s)"
}

LIBDIR=$(python3 -c 'import os, sysconfig; print(os.path.dirname(os.path.dirname(sysconfig.get_paths()["purelib"])))')
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export ACCELD_PJRT_SEARCH="$LIBDIR"
PLUGIN=
for f in "$SITE"/jax_plugins/xla_cuda*/xla_cuda_plugin.so; do
	[ -e "$f" ] && PLUGIN=$f && break
done
UUID=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
{
	echo "date: $(date -u +%FT%TZ)"
	uname -a
	nvidia-smi --version 2>&1
	python3 -m pip list 2>/dev/null | grep -Ei '^(jax|jaxlib|jax-cuda)'
	echo "ACCELD_PJRT_SEARCH=$LIBDIR plugin=$PLUGIN uuid=$UUID"
} >"$O/env.txt" 2>&1

case $SKIP in *,smi,*) ;; *)
	step "nvidia-smi -q" 30 env.txt nvidia-smi -q ;;
esac
# the most wanted first: a lease can end before the last step
step check_worker 300 check_worker.txt sh "$B/check_worker.sh" "$B"
step check_pjrt 240 check_pjrt.txt sh "$B/check_pjrt.sh" "$B"
step bench_nvidia 150 bench_nvidia.txt sh "$B/bench_nvidia.sh" "$B"
case $SKIP in *,probe,*) ;; *)
	step "pjrt_probe" 60 pjrt_probe.txt "$B/pjrt_probe" "$PLUGIN"
	step "pjrt_probe, first client visible_devices=[9]" 60 pjrt_probe.txt "$B/pjrt_probe" "$PLUGIN" 9
	step "pjrt_probe, first client visible_devices=[0]" 60 pjrt_probe.txt "$B/pjrt_probe" "$PLUGIN" 0
	step "pjrt_probe, CUDA_VISIBLE_DEVICES=''" 60 pjrt_probe.txt env CUDA_VISIBLE_DEVICES= "$B/pjrt_probe" "$PLUGIN"
	step "acceld report --json, CUDA_VISIBLE_DEVICES=$UUID" 60 pjrt_probe.txt \
		env CUDA_VISIBLE_DEVICES="$UUID" LD_LIBRARY_PATH="$B/lib" "$B/acceld" report --json ;;
esac
case $SKIP in *,nvidia,*) ;; *)
	step check_nvidia 90 check_nvidia.txt sh "$B/check_nvidia.sh" "$B" ;;
esac
case $SKIP in *,quick,*) ;; *)
	# through pjrt check_worker.sh times it, cold and warm
	step "check quick opencl" 90 check.txt env LD_LIBRARY_PATH="$B/lib" \
		"$B/acceld" check --device gpu:0 --level quick --backend opencl --json --db /tmp/acceld-check.db ;;
esac
case $SKIP in *,long,*) ;; *)
	step "check long (30 s)" 120 check.txt env LD_LIBRARY_PATH="$B/lib" \
		"$B/acceld" check --device gpu:0 --level long --duration 30 --json --db /tmp/acceld-check.db ;;
esac
echo "total $(($(date +%s) - START)) s"
for f in check_worker.txt check_pjrt.txt bench_nvidia.txt check_nvidia.txt; do
	echo "--- tail of $f"
	grep -v 'ptxas warning\|^I[0-9]\{4\}\|^W[0-9]\{4\}\|^$' "$O/$f" | tail -n 25 || true
done
grep -h '"rule"' "$O/check.txt" | head -20 || true
