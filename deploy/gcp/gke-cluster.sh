#!/bin/bash
# Creates a GKE Standard cluster for acceld (a small default pool for system pods), fetches its credentials and,
# with --apply, deploys deploy/k8s. Add accelerator pools with gke-gpu-pool.sh and gke-tpu-pool.sh.
#
#   deploy/gcp/gke-cluster.sh --dry-run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

usage() {
	cat <<USAGE
usage: $(basename "$0") [options]
  --project ID          Google Cloud project (default: gcloud's configured project)
  --zone ZONE           zone of the (zonal) cluster (default us-central1-a)
  --cluster NAME        cluster name (default acceld)
  --machine-type TYPE   default pool machine type (default e2-standard-4)
  --nodes N             default pool size (default 1)
  --apply               also run: kubectl apply -k deploy/k8s
  --dry-run             print the commands without running them
USAGE
}

project="" zone=us-central1-a cluster=acceld machine=e2-standard-4 nodes=1 apply=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--project) need_value "$@"; project=$2; shift 2 ;;
	--zone) need_value "$@"; zone=$2; shift 2 ;;
	--cluster) need_value "$@"; cluster=$2; shift 2 ;;
	--machine-type) need_value "$@"; machine=$2; shift 2 ;;
	--nodes) need_value "$@"; nodes=$2; shift 2 ;;
	--apply) apply=1; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
done
check zone "$zone" "$ZONE_RE"
check cluster "$cluster" "$NAME_RE"
check machine-type "$machine" "$TYPE_RE"
check nodes "$nodes" "$COUNT_RE"
project=$(resolve_project "$project")

run gcloud container clusters create "$cluster" --project="$project" --zone="$zone" \
	--release-channel=regular --machine-type="$machine" --num-nodes="$nodes" \
	--workload-pool="$project.svc.id.goog" --enable-shielded-nodes --shielded-secure-boot
run gcloud container clusters get-credentials "$cluster" --project="$project" --zone="$zone"
if [ "$apply" = 1 ]; then
	run kubectl apply -k "$here/../k8s"
fi
echo "# accelerator pools: $here/gke-gpu-pool.sh and $here/gke-tpu-pool.sh --cluster $cluster"
echo "# delete: gcloud container clusters delete $cluster --project=$project --zone=$zone"
