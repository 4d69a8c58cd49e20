#!/bin/bash
# Adds an NVIDIA GPU node pool to a GKE cluster; GKE installs the driver (gpu-driver-version=default) and taints
# the nodes nvidia.com/gpu, which the acceld-gpu DaemonSet tolerates.
#
#   deploy/gcp/gke-gpu-pool.sh --cluster acceld --dry-run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

usage() {
	cat <<USAGE
usage: $(basename "$0") [options]
  --project ID          Google Cloud project (default: gcloud's configured project)
  --zone ZONE           the cluster's zone (default us-central1-a)
  --cluster NAME        cluster (default acceld)
  --pool NAME           node pool name (default gpu-pool)
  --machine-type TYPE   machine type (default g2-standard-4)
  --accelerator TYPE    GPU type (default nvidia-l4)
  --count N             GPUs per node (default 1)
  --nodes N             nodes (default 1)
  --spot                Spot VMs (cheaper; may be preempted)
  --dry-run             print the gcloud commands without running them
USAGE
}

project="" zone=us-central1-a cluster=acceld pool=gpu-pool machine=g2-standard-4 accel=nvidia-l4 count=1 nodes=1
spot=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--project) need_value "$@"; project=$2; shift 2 ;;
	--zone) need_value "$@"; zone=$2; shift 2 ;;
	--cluster) need_value "$@"; cluster=$2; shift 2 ;;
	--pool) need_value "$@"; pool=$2; shift 2 ;;
	--machine-type) need_value "$@"; machine=$2; shift 2 ;;
	--accelerator) need_value "$@"; accel=$2; shift 2 ;;
	--count) need_value "$@"; count=$2; shift 2 ;;
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
check accelerator "$accel" "$TYPE_RE"
check count "$count" "$COUNT_RE"
check nodes "$nodes" "$COUNT_RE"
project=$(resolve_project "$project")

args=(container node-pools create "$pool" --project="$project" --zone="$zone" --cluster="$cluster"
	--machine-type="$machine" --accelerator="type=$accel,count=$count,gpu-driver-version=default"
	--num-nodes="$nodes")
if [ "$spot" = 1 ]; then
	args+=(--spot)
fi
run gcloud "${args[@]}"
echo "# acceld-gpu pods start on the new nodes: kubectl -n acceld get pods -l app.kubernetes.io/component=gpu"
