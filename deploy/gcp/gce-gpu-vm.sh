#!/bin/bash
# Creates a Compute Engine VM with an NVIDIA GPU that installs the driver and acceld (built from the repository
# named by --repo) at boot, running under systemd (deploy/systemd/acceld.service).
#
#   deploy/gcp/gce-gpu-vm.sh --repo https://github.com/OWNER/acceld --dry-run
#
# Defaults are one L4 GPU on g2-standard-4 in us-central1-a, Debian 12, acceld on 127.0.0.1 only. --allow-from CIDR
# makes it listen on every address and opens TCP 9470 to that range only (for a Prometheus in the VPC).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

usage() {
	cat <<USAGE
usage: $(basename "$0") --repo URL [options]
  --project ID          Google Cloud project (default: gcloud's configured project)
  --zone ZONE           zone (default us-central1-a)
  --name NAME           instance name (default acceld-gpu)
  --machine-type TYPE   machine type (default g2-standard-4)
  --accelerator TYPE    GPU type (default nvidia-l4)
  --count N             GPUs (default 1)
  --repo URL            git repository to build acceld from (required)
  --ref REF             branch or tag (default main)
  --allow-from CIDR     listen on all addresses and allow TCP 9470 from CIDR (default: localhost only)
  --spot                use a Spot VM (cheaper; may be preempted)
  --dry-run             print the gcloud commands without running them
USAGE
}

project="" zone=us-central1-a name=acceld-gpu machine=g2-standard-4 accel=nvidia-l4 count=1
repo="" ref=main allow="" spot=0
while [ "$#" -gt 0 ]; do
	case "$1" in
	--project) need_value "$@"; project=$2; shift 2 ;;
	--zone) need_value "$@"; zone=$2; shift 2 ;;
	--name) need_value "$@"; name=$2; shift 2 ;;
	--machine-type) need_value "$@"; machine=$2; shift 2 ;;
	--accelerator) need_value "$@"; accel=$2; shift 2 ;;
	--count) need_value "$@"; count=$2; shift 2 ;;
	--repo) need_value "$@"; repo=$2; shift 2 ;;
	--ref) need_value "$@"; ref=$2; shift 2 ;;
	--allow-from) need_value "$@"; allow=$2; shift 2 ;;
	--spot) spot=1; shift ;;
	--dry-run) DRY_RUN=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
done
[ -n "$repo" ] || die "--repo is required (the git repository to build acceld from)"
check zone "$zone" "$ZONE_RE"
check name "$name" "$NAME_RE"
check machine-type "$machine" "$TYPE_RE"
check accelerator "$accel" "$TYPE_RE"
check count "$count" "$COUNT_RE"
check repo "$repo" "$URL_RE"
check ref "$ref" "$REF_RE"
[ -z "$allow" ] || check allow-from "$allow" "$CIDR_RE"
project=$(resolve_project "$project")

listen=127.0.0.1:9470
[ -z "$allow" ] || listen=0.0.0.0:9470
args=(compute instances create "$name" --project="$project" --zone="$zone" --machine-type="$machine"
	--accelerator="type=$accel,count=$count" --maintenance-policy=TERMINATE
	--image-family=debian-12 --image-project=debian-cloud --boot-disk-size=50GB --tags=acceld --labels=acceld=true
	--metadata="acceld-repo=$repo,acceld-ref=$ref,acceld-gpu-driver=true,acceld-listen=$listen"
	--metadata-from-file="startup-script=$here/vm-startup.sh")
if [ "$spot" = 1 ]; then
	args+=(--provisioning-model=SPOT --instance-termination-action=STOP)
fi
run gcloud "${args[@]}"
if [ -n "$allow" ]; then
	run gcloud compute firewall-rules create "$name-acceld" --project="$project" --network=default \
		--direction=INGRESS --allow=tcp:9470 --source-ranges="$allow" --target-tags=acceld
fi
echo "# the first boot installs the driver and builds acceld (several minutes); then:"
echo "#   gcloud compute ssh $name --project=$project --zone=$zone -- curl -s localhost:9470/devices"
echo "# delete: gcloud compute instances delete $name --project=$project --zone=$zone"
