#!/usr/bin/env python3
"""Recompute every GCE shape of the source files from db/prices and report the worst relative error.

  python3 tools/prices/check_gce.py [--cyclenerd pricing.yml] [--cocalc data.js] [--gcp skypilot-gcp-vms.csv ...]
         [--samples db/machines.csv] [--prices db/prices] [--limit 0.01]

For each predefined shape of a family priced by rates (db/prices/gce_rates.csv) the price is
vcpus * usd_per_vcpu_hour + memory_gib * usd_per_gib_hour of the shape's family and region; shared-core
and bundled shapes (db/prices/gce_shapes.csv) are looked up as they are. Every (shape, region) of the
--cyclenerd source the tables hold is checked, on-demand and Spot (without --cyclenerd: of --cocalc; with it,
the cocalc source is an older second source, reported, not failed). Rows of --gcp (whole SkyPilot file or extract) and of
--samples (rows 'gce,...' of db/machines.csv) with a vCPU/memory shape of a rated family are checked
too, as a comparison with a second source (their Spot prices are of another date: reported, not failed).
Exit status 1 when a price of the checked source is off by more than --limit.
"""
import argparse
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import build  # noqa: E402


def load_tables(prices):
    rates, shapes = {}, {}
    with open(os.path.join(prices, "gce_rates.csv"), newline="") as f:
        for r in csv.DictReader(f):
            rates[(r["family"], r["region"])] = r
    with open(os.path.join(prices, "gce_shapes.csv"), newline="") as f:
        for r in csv.DictReader(f):
            shapes[(r["instance_type"], r["region"])] = r
    return rates, shapes


def price(rates, shapes, name, region, vcpus, gib, spot=False):
    s = shapes.get((name, region))
    if s is not None:
        v = s["usd_per_hour_spot" if spot else "usd_per_hour"]
        return float(v) if v else None
    r = rates.get((name.split("-")[0], region))
    if r is None:
        return None
    a = r["usd_per_vcpu_hour_spot" if spot else "usd_per_vcpu_hour"]
    b = r["usd_per_gib_hour_spot" if spot else "usd_per_gib_hour"]
    if a == "" or b == "":
        return None
    return float(a) * vcpus + float(b) * gib


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cocalc")
    ap.add_argument("--cyclenerd", help="Cyclenerd pricing.yml: the source the tables are built from when given")
    ap.add_argument("--gcp", action="append", default=[])
    ap.add_argument("--samples", action="append", default=[])
    ap.add_argument("--prices", default=os.path.join(ROOT, "db", "prices"))
    ap.add_argument("--limit", type=float, default=0.01)
    ap.add_argument("--show", type=int, default=10, help="how many of the worst rows to print")
    args = ap.parse_args()
    rates, shapes = load_tables(args.prices)

    bad = 0
    if args.cyclenerd:
        fam_rows, shape_list = build.gce_from_cyclenerd(build.read_cyclenerd(args.cyclenerd)[0])
        cyc = {"od": [], "spot": [], "missing": []}
        rows = [(n, region, v, g, p, sp) for (fam, region), rs in fam_rows.items() if fam in build.GCE_RATED_FAMILIES
                for v, g, p, sp, n in rs]
        rows += [(n, region, v, g, p, sp) for n, region, v, g, p, sp, key, cnt in shape_list]
        for name, region, v, g, p, sp in rows:
            q = price(rates, shapes, name, region, v, g)
            if q is None:
                cyc["missing"].append((name, region))
                continue
            cyc["od"].append((abs(q - p) / p, name, region, p, q))
            qs = price(rates, shapes, name, region, v, g, spot=True) if sp else None
            if qs is not None:
                cyc["spot"].append((abs(qs - sp) / sp, name, region, sp, qs))
    if not args.cocalc:
        data = {"machineTypes": {}}
    else:
        data = build.load_cocalc(args.cocalc)
    res = {"od": [], "spot": [], "missing": []}
    for name, m in data["machineTypes"].items():
        v, g = m.get("vcpu"), m.get("memory")
        for region, p in (m.get("prices") or {}).items():
            q = price(rates, shapes, name, region, v, g)
            if q is None:
                res["missing"].append((name, region))
                continue
            # bundled shapes: the source prices the VM part and the GPUs apart; compare like with like
            if (name, region) in shapes and shapes[(name, region)]["accelerator_key"]:
                continue
            res["od"].append((abs(q - p) / p, name, region, p, q))
            s = (m.get("spot") or {}).get(region)
            if s:
                qs = price(rates, shapes, name, region, v, g, spot=True)
                if qs is not None:
                    res["spot"].append((abs(qs - s) / s, name, region, s, qs))
    # bundled shapes: VM part + GPUs of the source against the table's total
    gpus = build.gce_gpu_from_cocalc(data)
    for aname, a in (data.get("accelerators") or {}).items():
        mt = a.get("machineType")
        if not isinstance(mt, dict):
            continue
        for cnt, types in mt.items():
            for t in types:
                m = data["machineTypes"].get(t)
                if not m:
                    continue
                for region, p in (m.get("prices") or {}).items():
                    gp = gpus.get((build.accel_key(aname), region))
                    row = shapes.get((t, region))
                    if gp is None or row is None:
                        if gp is not None:
                            res["missing"].append((t, region))
                        continue
                    want = p + int(cnt) * gp[1]
                    got = float(row["usd_per_hour"])
                    res["od"].append((abs(got - want) / want, t, region, want, got))

    def report(label, rows, fail):
        rows.sort(reverse=True)
        worst = rows[0] if rows else None
        over = [r for r in rows if r[0] > args.limit]
        print("%s: %d prices checked, worst relative error %.4f%% (%s), %d over %.2f%%%s" % (
            label, len(rows), 100 * worst[0] if worst else 0,
            "%s %s source %.6g computed %.6g" % worst[1:] if worst else "-",
            len(over), 100 * args.limit, "" if not fail or not over else "  <-- FAIL"))
        for r in rows[:args.show] if over else []:
            print("   %.4f%%  %s %s  source %.6g  computed %.6g" % (100 * r[0], r[1], r[2], r[3], r[4]))
        return len(over) if fail else 0

    if args.cyclenerd:
        bad += report("cyclenerd on-demand (every shape x region the tables hold)", cyc["od"], True)
        bad += report("cyclenerd Spot (every shape x region the tables hold)", cyc["spot"], True)
        if cyc["missing"]:
            print("cyclenerd shapes with no price in the tables: %d (e.g. %s)" % (len(cyc["missing"]),
                                                                                   cyc["missing"][:5]))
    if args.cocalc:
        # the tables' source when --cyclenerd is not given; else a second source of an older date (informative)
        primary = not args.cyclenerd
        bad += report("cocalc on-demand (every shape x region)", res["od"], primary)
        bad += report("cocalc Spot (every shape x region)", res["spot"], primary)
        if res["missing"]:
            print("cocalc shapes with no price in the tables: %d (e.g. %s)" % (len(res["missing"]),
                                                                                res["missing"][:5]))

    # second sources: SkyPilot rows (whole file or extract) and db/machines.csv samples
    other = []
    for path in args.gcp:
        for (it, acc, cnt, region), r in build.read_skypilot([path]).items():
            if not it or it in build.SHARED_CORE or it.split("-")[0] in build.GCE_SHAPE_FAMILIES:
                continue
            if not r["vcpus"] or r["price"] is None:
                continue
            other.append(("skypilot", it, region, float(r["vcpus"]), float(r["mem"]), r["price"], r["spot"]))
    for path in args.samples:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["cloud"] != "gce" or not r["vcpus"] or r["accelerators"]:
                    continue
                other.append(("machines.csv", r["instance_type"], r["region"], float(r["vcpus"]),
                              float(r["memory_gib"]), float(r["usd_per_hour"]),
                              float(r["usd_per_hour_spot"]) if r["usd_per_hour_spot"] else None))
    if other:
        od, sp, miss = [], [], []
        for src, it, region, v, g, p, s in other:
            q = price(rates, shapes, it, region, v, g)
            if q is None:
                miss.append((it, region))
                continue
            od.append((abs(q - p) / p, "%s:%s" % (src, it), region, p, q))
            if s:
                qs = price(rates, shapes, it, region, v, g, spot=True)
                if qs:
                    sp.append((abs(qs - s) / s, "%s:%s" % (src, it), region, s, qs))
        report("second source on-demand", od, False)
        report("second source Spot (other date: informative)", sp, False)
        if miss:
            print("second-source shapes with no price in the tables: %d (e.g. %s)" % (len(miss), miss[:8]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
