#!/bin/bash
# Adds a single-host TPU node pool to a GKE cluster. GKE labels the nodes cloud.google.com/gke-tpu-accelerator
# and taints them google.com/tpu, which the acceld-tpu DaemonSet selects and tolerates.
#
#   deploy/gcp/gke-tpu-pool.sh --cluster acceld --dry-run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

usage() {
	cat <<USAGE
usage: $(basename "$0") [options]
  --project ID          Google Cloud project (default: gcloud's configured project)
  --zone ZONE           the cluster's zone; it needs TPU capacity (default us-central1-a)
  --cluster NAME        cluster (default acceld)
  --pool NAME           node pool name (default tpu-pool)
  --machine-type TYPE   TPU machine type (default ct5lp-hightpu-1t: one v5e chip)
  --topology TOPO       TPU topology for multi-host slices, e.g. 4x4 (default: none, single host)
  --nodes N             nodes (default 1)
  --spot                Spot capacity (cheaper; may be preempted)
  --dry-run             print the gcloud commands without running them
USAGE
}

project="" zone=us-central1-a cluster=acceld pool=tpu-pool machine=ct5lp-hightpu-1t topology="" nodes=1 spot=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--project) need_value "$@"; project=$2; shift 2 ;;
	--zone) need_value "$@"; zone=$2; shift 2 ;;
	--cluster) need_value "$@"; cluster=$2; shift 2 ;;
	--pool) need_value "$@"; pool=$2; shift 2 ;;
	--machine-type) need_value "$@"; machine=$2; shift 2 ;;
	--topology) need_value "$@"; topology=$2; shift 2 ;;
	--nodes) need_value "$@"; nodes=$2; shift 2 ;;
	--spot) spot=1; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
done
check zone "$zone" "$ZONE_RE"
check cluster "$cluster" "$NAME_RE"
check pool "$pool" "$NAME_RE"
check machine-type "$machine" "$TYPE_RE"
check nodes "$nodes" "$COUNT_RE"
[ -z "$topology" ] || check topology "$topology" '^[1-9][0-9]*(x[1-9][0-9]*){1,2}$'
project=$(resolve_project "$project")

args=(container node-pools create "$pool" --project="$project" --zone="$zone" --cluster="$cluster"
	--machine-type="$machine" --num-nodes="$nodes")
if [ -n "$topology" ]; then
	args+=(--tpu-topology="$topology")
fi
if [ "$spot" = 1 ]; then
	args+=(--spot)
fi
run gcloud "${args[@]}"
echo "# acceld-tpu pods start on the new nodes: kubectl -n acceld get pods -l app.kubernetes.io/component=tpu"
