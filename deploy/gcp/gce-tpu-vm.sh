#!/bin/bash
# Creates a Cloud TPU VM that builds and runs acceld at boot (deploy/gcp/vm-startup.sh, systemd).
#
#   deploy/gcp/gce-tpu-vm.sh --repo https://github.com/OWNER/acceld --dry-run
#
# Defaults are the smallest slice, v5litepod-1 (one v5e chip) in us-west4-a with its TPU VM image, acceld on
# 127.0.0.1 only. Names such as v6e-8 count chips; v4-8 and v5p-8 count TensorCores (4 chips).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

usage() {
	cat <<USAGE
usage: $(basename "$0") --repo URL [options]
  --project ID             Google Cloud project (default: gcloud's configured project)
  --zone ZONE              zone (default us-west4-a)
  --name NAME              TPU VM name (default acceld-tpu)
  --accelerator-type TYPE  slice type (default v5litepod-1)
  --version VERSION        TPU VM software version (default: the one for the accelerator type)
  --repo URL               git repository to build acceld from (required)
  --ref REF                branch or tag (default main)
  --spot                   use Spot capacity (cheaper; may be preempted)
  --dry-run                print the gcloud commands without running them
USAGE
}

# The TPU VM base image that goes with each generation.
default_version() {
	case "$1" in
	v6e-*) echo v2-alpha-tpuv6e ;;
	v5litepod-* | v5e-*) echo v2-alpha-tpuv5-lite ;;
	v5p-*) echo v2-alpha-tpuv5 ;;
	v4-*) echo tpu-ubuntu2204-base ;;
	*) die "no default --version for $1; pass one" ;;
	esac
}

project="" zone=us-west4-a name=acceld-tpu type=v5litepod-1 version="" repo="" ref=main spot=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--project) need_value "$@"; project=$2; shift 2 ;;
	--zone) need_value "$@"; zone=$2; shift 2 ;;
	--name) need_value "$@"; name=$2; shift 2 ;;
	--accelerator-type) need_value "$@"; type=$2; shift 2 ;;
	--version) need_value "$@"; version=$2; shift 2 ;;
	--repo) need_value "$@"; repo=$2; shift 2 ;;
	--ref) need_value "$@"; ref=$2; shift 2 ;;
	--spot) spot=1; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
done
[ -n "$repo" ] || die "--repo is required (the git repository to build acceld from)"
check zone "$zone" "$ZONE_RE"
check name "$name" "$NAME_RE"
check accelerator-type "$type" "$TYPE_RE"
[ -n "$version" ] || version=$(default_version "$type")
check version "$version" "$TYPE_RE"
check repo "$repo" "$URL_RE"
check ref "$ref" "$REF_RE"
project=$(resolve_project "$project")

args=(compute tpus tpu-vm create "$name" --project="$project" --zone="$zone" --accelerator-type="$type"
	--version="$version" --metadata="acceld-repo=$repo,acceld-ref=$ref,acceld-listen=127.0.0.1:9470"
	--metadata-from-file="startup-script=$here/vm-startup.sh")
if [ "$spot" = 1 ]; then
	args+=(--spot)
fi
run gcloud "${args[@]}"
echo "# then: gcloud compute tpus tpu-vm ssh $name --project=$project --zone=$zone -- curl -s localhost:9470/devices"
echo "# delete: gcloud compute tpus tpu-vm delete $name --project=$project --zone=$zone"
