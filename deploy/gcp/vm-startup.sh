#!/bin/bash
# Compute Engine / Cloud TPU VM startup script (runs as root at every boot). Reads its settings from instance
# metadata (acceld-repo, acceld-ref, acceld-listen, acceld-gpu-driver), installs the NVIDIA driver when asked,
# builds acceld with the project's Makefile, installs it with the systemd unit and starts it. A later boot with
# acceld installed only makes sure the service runs.
set -euo pipefail

MD=http://metadata.google.internal/computeMetadata/v1/instance/attributes

attr() {
	curl -fsS --max-time 5 -H 'Metadata-Flavor: Google' "$MD/$1" 2>/dev/null || true
}

log() {
	echo "acceld-startup: $*"
}

if [ -x /usr/local/bin/acceld ] && [ -f /etc/systemd/system/acceld.service ]; then
	systemctl start acceld
	exit 0
fi

repo=$(attr acceld-repo)
ref=$(attr acceld-ref)
listen=$(attr acceld-listen)
gpu=$(attr acceld-gpu-driver)
ref=${ref:-main}
listen=${listen:-127.0.0.1:9470}
if [ -z "$repo" ]; then
	log "no acceld-repo in the instance metadata; nothing to do"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends git make ca-certificates curl python3

if [ "$gpu" = true ] && ! command -v nvidia-smi >/dev/null; then
	# Google's installer picks the driver for this OS and GPU; it may reboot, and this script runs again then
	log "installing the NVIDIA driver"
	curl -fsSL -o /root/cuda_installer.pyz \
		https://storage.googleapis.com/compute-gpu-installation-us/installer/latest/cuda_installer.pyz
	python3 /root/cuda_installer.pyz install_driver
fi

src=/opt/acceld/src
if [ ! -d "$src/.git" ]; then
	mkdir -p "$(dirname "$src")"
	git clone --depth 1 --branch "$ref" -- "$repo" "$src"
fi
make -C "$src" deps
make -C "$src"
make -C "$src" install PREFIX=/usr/local
install -m 0644 "$src/deploy/systemd/acceld.service" /etc/systemd/system/acceld.service
mkdir -p /etc/systemd/system/acceld.service.d
printf '[Service]\nEnvironment=ACCELD_LISTEN=%s\n' "$listen" >/etc/systemd/system/acceld.service.d/listen.conf
systemctl daemon-reload
systemctl enable --now acceld
log "acceld runs on $listen"
