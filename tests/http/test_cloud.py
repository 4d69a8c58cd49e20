"""Host prices from the clouds' metadata services, against the real binary and stand-in services on 127.0.0.1
(fake_metadata.py): the DMI decides which cloud is asked (and that none is on bare metal), the instance type, region
and Spot status reach /cost/prices, /cost, /cost/estimate, /devices and /metrics, the price split adds up to the
host price, and slow, failing or garbage services leave a note, not an error. Shapes drives the stand-ins through
many shapes and regions of each cloud and checks the price GET /devices shows against the price tables
(db/prices/, read here on their own: GCE shapes computed from the rates as Google bills them), its source and
date, and the split."""
import csv
import json
import math
import os
import shutil
import tempfile
import unittest

from fake_metadata import FakeAws, FakeAzure, FakeGce
from harness import FAKES, FIXTURES, ROOT, Server

TOKEN = "cloud-secret"
PRICES = os.path.join(ROOT, "db", "prices")


def table(name):
    with open(os.path.join(PRICES, name + ".csv"), newline="") as f:
        return list(csv.DictReader(f))


def source_of(row):
    """A table row's source id: the rows name it by its key in sources.csv."""
    return next(s["source"] for s in table("sources") if s["key"] == row["source"])


def as_of(row):
    """A table row's date: its source's, in sources.csv."""
    return next(s["as_of"] for s in table("sources") if s["key"] == row["source"])


def row(name, key, region, column="instance_type"):
    """The row of a price table for a key and region (None when there is none)."""
    return next((r for r in table(name) if r[column] == key and r["region"] == region), None)


def gce_rates(family, vcpus, gib, region):
    """A predefined GCE shape from its family's rates in the region: (on demand, Spot)."""
    r = row("gce_rates", family, region, column="family")
    return (vcpus * float(r["usd_per_vcpu_hour"]) + gib * float(r["usd_per_gib_hour"]),
            vcpus * float(r["usd_per_vcpu_hour_spot"]) + gib * float(r["usd_per_gib_hour_spot"]))


def gce_gpu(key, region):
    r = row("gce_gpus", key, region, column="accelerator_key")
    return float(r["usd_per_gpu_hour"]), float(r["usd_per_gpu_hour_spot"])


def with_pci_gpus(fixture, tmp, gpus):
    """A copy of a fixture's sysfs with (vendor, device, class) PCI functions added; its root."""
    root = os.path.join(tmp, "sys")
    shutil.copytree(os.path.join(FIXTURES, fixture, "sys"), root)
    for i, (vendor, device, klass) in enumerate(gpus):
        d = os.path.join(root, "bus", "pci", "devices", f"0000:00:{4 + i:02x}.0")
        os.makedirs(d)
        for name, value in (("vendor", vendor), ("device", device), ("class", klass)):
            with open(os.path.join(d, name), "w") as f:
                f.write(value + "\n")
    return root


def env_for(fixture, gce=None, aws=None, azure=None, **extra):
    """The environment of an acceld on a fixture's sysfs and /dev, pointed at the given stand-ins (or at a closed
    port for the others, so a request to one would show as a refused connection)."""
    env = {"ACCELD_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1",
           "ACCELD_SYSFS_ROOT": os.path.join(FIXTURES, fixture, "sys"),
           "ACCELD_DEV_ROOT": os.path.join(FIXTURES, fixture, "dev"),
           "ACCELD_GCE_METADATA_URL": gce.url if gce else "http://127.0.0.1:1/computeMetadata/v1",
           "ACCELD_AWS_METADATA_URL": aws.url if aws else "http://127.0.0.1:1",
           "ACCELD_AZURE_METADATA_URL": azure.url if azure else "http://127.0.0.1:1"}
    env.update(extra)
    return env


def learned(srv):
    """Waits for the metadata thread's one log line and returns it."""
    return srv.wait_for(lambda l: l.get("component") == "cloud" and l.get("msg") == "host", 20)


def prices(srv):
    doc = srv.get("/cost/prices").json()
    return doc, {p["device"]: p for p in doc["prices"]}


class Gce(unittest.TestCase):
    def test_machine_type_zone_and_spot(self):
        with FakeGce(machine_type="n2d-standard-16", zone="europe-west4-b", preemptible="TRUE") as gce, \
                Server(env=env_for("gce-no-tpu", gce=gce)) as s:
            log = learned(s)
            self.assertEqual((log["cloud"], log["state"]), ("gce", "known"))
            doc, by = prices(s)
            host = doc["host"]
            self.assertEqual(host["instance_type"], "n2d-standard-16")
            self.assertEqual(host["region"], "europe-west4")
            self.assertEqual(host["zone"], "europe-west4-b")
            self.assertIs(host["spot"], True)
            self.assertEqual(host["billing"], "spot")
            od, spot = gce_rates("n2d", 16, 64, "europe-west4")
            self.assertAlmostEqual(host["price"]["usd_per_hour"], od)
            self.assertAlmostEqual(host["price"]["usd_per_hour_spot"], spot)
            self.assertAlmostEqual(host["price"]["applied_usd_per_hour"], spot)
            self.assertIn("n2d rates: cyclenerd-gce@fd66b26f", host["price"]["source"])
            self.assertIn("as of 2026-07-30", host["price"]["source"])
            # no accelerators: the CPU carries the whole host, on demand and Spot
            cpu = by["cpu:0"]
            self.assertAlmostEqual(cpu["usd_per_hour"], od)
            self.assertAlmostEqual(cpu["usd_per_hour_spot"], spot)
            self.assertAlmostEqual(cpu["applied_usd_per_hour"], spot)
            self.assertEqual(cpu["billing"], "spot")
            self.assertIn("share of host gce n2d-standard-16", cpu["source"])
            # /devices shows the same share, the host and a note-free "cloud" probe
            devs = s.get("/devices").json()
            self.assertEqual(devs["host"]["instance_type"], "n2d-standard-16")
            self.assertAlmostEqual(devs["devices"][0]["price"]["usd_per_hour"], od)
            probe = [p for p in devs["probes"] if p["name"] == "cloud"][0]
            self.assertTrue(probe["ok"] and probe["available"])
            # estimates apply the Spot price
            est = s.get("/cost/estimate?seconds=3600").json()
            self.assertAlmostEqual(est["estimates"][0]["usd"], spot)
            self.assertEqual(est["estimates"][0]["billing"], "spot")
            # so does a job's cost: the CPU's share in force when it ends, not its price at start (none)
            job = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": 256, "n": 256, "k": 256,
                                                       "device": "cpu:0"}).json()
            busy_h = (job["timing"]["total_ms"] - job["timing"]["queued_ms"]) / 3600e3
            self.assertGreater(job["cost_usd"], 0)
            self.assertLessEqual(job["cost_usd"], spot * busy_h * 1.01)
        reqs = gce.seen()
        self.assertEqual([p for _, p, _ in reqs],
                         ["/computeMetadata/v1/instance/machine-type", "/computeMetadata/v1/instance/zone",
                          "/computeMetadata/v1/instance/scheduling/?recursive=true"])
        self.assertTrue(all(h.get("metadata-flavor") == "Google" for _, _, h in reqs))

    def test_provisioning_model_spot_and_on_demand(self):
        for pre, model, spot in (("FALSE", "SPOT", True), ("FALSE", "STANDARD", False)):
            with self.subTest(model=model), FakeGce(machine_type="e2-medium", zone="us-central1-f",
                                                    preemptible=pre, provisioning_model=model) as gce, \
                    Server(env=env_for("gce-no-tpu", gce=gce)) as s:
                learned(s)
                host = prices(s)[0]["host"]
                self.assertIs(host["spot"], spot)
                self.assertEqual(host["region"], "us-central1")
                # the shared-core row: one vCPU-equivalent, as Google bills it
                self.assertEqual(host["price"]["applied_usd_per_hour"], 0.020106 if spot else 0.03350571)

    def test_tpu_host_split_adds_up(self):
        """ct6e-standard-4t: four v6e chips at their table price take the whole host; the CPU's share is 0."""
        with FakeGce(machine_type="ct6e-standard-4t", zone="us-central1-b", preemptible="TRUE") as gce, \
                Server(env=env_for("gce-tpu-v6e", gce=gce)) as s:
            learned(s)
            doc, by = prices(s)
            host = doc["host"]
            tpus = [p for d, p in by.items() if d.startswith("tpu:")]
            self.assertEqual(len(tpus), 4)
            total = sum(p["usd_per_hour"] for p in by.values())
            spot = sum(p["usd_per_hour_spot"] for p in by.values())
            self.assertAlmostEqual(total, host["price"]["usd_per_hour"])
            self.assertAlmostEqual(spot, host["price"]["usd_per_hour_spot"])
            self.assertAlmostEqual(host["split"]["devices_usd_per_hour"], 10.8)
            self.assertEqual(host["split"]["unlisted_accelerators_usd_per_hour"], 0)
            self.assertAlmostEqual(by["cpu:0"]["usd_per_hour"], 0)
            for p in tpus:
                self.assertAlmostEqual(p["usd_per_hour"], 2.7)
                self.assertAlmostEqual(p["applied_usd_per_hour"], 2.2914 / 4)
            # the accrued report applies the same shares
            cost = s.get("/cost").json()
            self.assertEqual(cost["host"]["instance_type"], "ct6e-standard-4t")
            self.assertTrue(all(d["billing"] == "spot" for d in cost["devices"]))

    def test_gpu_shape_without_listed_gpu_keeps_its_part(self):
        """g2-standard-4 carries one L4; a container that sees no GPU leaves the L4's part (GCE's price of an L4
        there) unlisted, off the CPU."""
        with FakeGce(machine_type="g2-standard-4", zone="us-central1-a") as gce, \
                Server(env=env_for("gce-no-tpu", gce=gce)) as s:
            learned(s)
            doc, by = prices(s)
            split = doc["host"]["split"]
            self.assertAlmostEqual(split["unlisted_accelerators_usd_per_hour"], 0.5600402)
            self.assertAlmostEqual(by["cpu:0"]["usd_per_hour"], 0.7068323 - 0.5600402)
            self.assertAlmostEqual(split["devices_usd_per_hour"] + split["unlisted_accelerators_usd_per_hour"],
                                   doc["host"]["price"]["usd_per_hour"])
            self.assertEqual(doc["host"]["billing"], "on_demand")

    def test_instance_type_override(self):
        with FakeGce(machine_type="n2d-standard-16", zone="europe-west4-b") as gce, \
                Server(env=env_for("gce-no-tpu", gce=gce), args=("--token", TOKEN)) as s:
            learned(s)
            body = {"prices": [{"instance_type": "n2d-standard-16", "usd_per_hour": 0.5, "note": "negotiated"}]}
            r = s.request("PUT", "/cost/prices", json_body=body, headers={"Authorization": "Bearer " + TOKEN})
            self.assertEqual(r.status, 200, r)
            doc = r.json()
            self.assertEqual(doc["host"]["price"]["usd_per_hour"], 0.5)
            self.assertIn("api override (instance_type n2d-standard-16): negotiated", doc["host"]["price"]["source"])
            self.assertAlmostEqual(doc["prices"][0]["usd_per_hour"], 0.5)
            # the Spot figure is unknown for the override: on demand applies, and says so
            self.assertEqual(doc["host"]["price"]["applied_usd_per_hour"], 0.5)

    def test_slow_failing_and_garbage_services_are_notes(self):
        for mode, words in (("slow", "Timeout"), ("fail", "HTTP status 500"), ("garbage", "not a machine type")):
            with self.subTest(mode=mode), FakeGce(mode=mode) as gce, \
                    Server(env=env_for("gce-no-tpu", gce=gce)) as s:
                log = learned(s)
                self.assertEqual(log["state"], "failed")
                self.assertEqual(log["level"], "warn")
                self.assertIn(words, log["note"])
                doc, by = prices(s)
                self.assertEqual(doc["host"]["state"], "failed")
                self.assertIsNone(doc["host"]["instance_type"])
                self.assertIsNone(doc["host"]["price"]["usd_per_hour"])
                self.assertIsNone(by["cpu:0"]["usd_per_hour"])
                probe = [p for p in s.get("/devices").json()["probes"] if p["name"] == "cloud"][0]
                self.assertTrue(probe["ok"])
                self.assertIn(words, probe["why"])
                self.assertEqual(s.get("/readyz").status, 200)
                self.assertFalse([l for l in s.logs if l.get("level") == "error"])
            # the first answer that fails ends the asking
            self.assertEqual(len(gce.seen()), 1)


def fake_gpus(count, which):
    """The environment for the fake NVML with count copies of its GPU which (1 L4, 2 A100-SXM4-40GB)."""
    return {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"), "FAKE_NVML_HGX": str(count),
            "FAKE_NVML_HGX_GPU": str(which)}


class BilledSplit(unittest.TestCase):
    """A host's devices are charged what the host is billed, Spot included, and add up to it; a bundled host's
    CPU and memory always cost something."""

    def test_gce_spot_host_devices_add_up_to_its_spot_price(self):
        """a2-highgpu-1g on Spot with its A100 listed: GCE prices the parts (the VM and the GPU), Spot too, so the
        CPU gets the VM's Spot part and the A100 GCE's Spot price of one; together the host's Spot price."""
        with FakeGce(machine_type="a2-highgpu-1g", zone="us-central1-a", preemptible="TRUE") as gce, \
                Server(env=env_for("gce-no-tpu", gce=gce, **fake_gpus(1, 2))) as s:
            learned(s)
            doc, by = prices(s)
            host = doc["host"]
            r = row("gce_shapes", "a2-highgpu-1g", "us-central1")
            a100, a100_spot = gce_gpu("nvidia-a100-40gb", "us-central1")
            self.assertEqual(host["billing"], "spot")
            self.assertAlmostEqual(host["price"]["applied_usd_per_hour"], float(r["usd_per_hour_spot"]))
            gpus = [p for d, p in by.items() if d.startswith("gpu:")]
            self.assertEqual(len(gpus), 1)
            self.assertAlmostEqual(gpus[0]["applied_usd_per_hour"], a100_spot)
            self.assertAlmostEqual(by["cpu:0"]["applied_usd_per_hour"], float(r["usd_per_hour_spot"]) - a100_spot)
            self.assertTrue(all(p["billing"] == "spot" for p in by.values()))
            self.assertAlmostEqual(sum(p["applied_usd_per_hour"] for p in by.values()),
                                   host["price"]["applied_usd_per_hour"])
            # on demand likewise adds up to the on-demand price
            self.assertAlmostEqual(sum(p["usd_per_hour"] for p in by.values()), float(r["usd_per_hour"]))
            self.assertAlmostEqual(by["cpu:0"]["usd_per_hour"], float(r["usd_per_hour"]) - a100)
            # and every price says its date and age
            for p in list(by.values()) + [host["price"]]:
                self.assertEqual(p["as_of"], as_of(r))
                self.assertIsInstance(p["age_days"], int)

    def test_p4d_cpu_share_is_positive_and_parts_add_up(self):
        """p4d.24xlarge: its eight A100s at the accelerator table's price come to more than the host's, yet its 96
        vCPUs and 1152 GiB cost what the nearest unbundled EC2 shape's rate says; the A100s share the rest."""
        with FakeAws(instance_type="p4d.24xlarge", region="us-east-1", zone="us-east-1a") as aws, \
                Server(env=env_for("aws-m7i", aws=aws, **fake_gpus(8, 2))) as s:
            learned(s)
            doc, by = prices(s)
            host, split = doc["host"], doc["host"]["split"]
            r = row("aws", "p4d.24xlarge", "us-east-1")
            od = float(r["usd_per_hour"])
            self.assertAlmostEqual(host["price"]["usd_per_hour"], od)
            gpus = [p for d, p in by.items() if d.startswith("gpu:")]
            self.assertEqual(len(gpus), 8)
            cpu = by["cpu:0"]["usd_per_hour"]
            self.assertGreater(cpu, 0)
            self.assertLess(cpu, od)
            self.assertAlmostEqual(split["cpu_usd_per_hour"], cpu)
            self.assertIn("unbundled", split["rule"])
            self.assertAlmostEqual(sum(p["usd_per_hour"] for p in by.values()), od)
            self.assertAlmostEqual(split["unlisted_accelerators_usd_per_hour"], 0)
            for p in gpus:
                self.assertAlmostEqual(p["usd_per_hour"], (od - cpu) / 8)
            # Spot adds up to the host's Spot price too
            self.assertAlmostEqual(sum(p["usd_per_hour_spot"] for p in by.values()), float(r["usd_per_hour_spot"]))
            self.assertGreater(by["cpu:0"]["usd_per_hour_spot"], 0)


class Aws(unittest.TestCase):
    def test_imdsv2_token_flow_and_spot(self):
        with FakeAws(instance_type="m7i.large", region="us-east-1", zone="us-east-1b", life_cycle="spot") as aws, \
                Server(env=env_for("aws-m7i", aws=aws)) as s:
            log = learned(s)
            self.assertEqual((log["cloud"], log["state"]), ("aws", "known"))
            self.assertIn("Amazon EC2", log["detected_by"])
            doc, by = prices(s)
            host = doc["host"]
            self.assertEqual((host["instance_type"], host["region"], host["zone"]), ("m7i.large", "us-east-1",
                                                                                      "us-east-1b"))
            self.assertIs(host["spot"], True)
            self.assertEqual(host["price"]["usd_per_hour"], 0.1008)
            self.assertEqual(host["price"]["applied_usd_per_hour"], 0.0316)
            self.assertAlmostEqual(by["cpu:0"]["applied_usd_per_hour"], 0.0316)
        reqs = aws.seen()
        self.assertEqual(reqs[0][:2], ("PUT", "/latest/api/token"))
        self.assertIn("x-aws-ec2-metadata-token-ttl-seconds", reqs[0][2])
        self.assertEqual([(m, p) for m, p, _ in reqs[1:]],
                         [("GET", "/latest/dynamic/instance-identity/document"),
                          ("GET", "/latest/meta-data/instance-life-cycle")])
        self.assertTrue(all(h.get("x-aws-ec2-metadata-token") in aws.tokens for _, _, h in reqs[1:]))

    def test_on_demand(self):
        with FakeAws(instance_type="c7i.8xlarge", region="us-west-2", zone="us-west-2a") as aws, \
                Server(env=env_for("aws-m7i", aws=aws)) as s:
            learned(s)
            host = prices(s)[0]["host"]
            self.assertIs(host["spot"], False)
            self.assertEqual(host["billing"], "on_demand")
            self.assertEqual(host["price"]["applied_usd_per_hour"], 1.428)

    def test_401_without_a_valid_token(self):
        with FakeAws(honour_tokens=False) as aws, Server(env=env_for("aws-m7i", aws=aws)) as s:
            log = learned(s)
            self.assertEqual(log["state"], "failed")
            self.assertIn("HTTP status 401", log["note"])
            host = prices(s)[0]["host"]
            self.assertIsNone(host["instance_type"])
            self.assertIsNone(host["price"]["applied_usd_per_hour"])
        # the token came first; no request went without one
        reqs = aws.seen()
        self.assertEqual(reqs[0][:2], ("PUT", "/latest/api/token"))
        self.assertTrue(all("x-aws-ec2-metadata-token" in h for _, _, h in reqs[1:]))

    def test_garbage_and_failure(self):
        for mode, words in (("garbage", "malformed"), ("fail", "HTTP status 500")):
            with self.subTest(mode=mode), FakeAws(mode=mode) as aws, Server(env=env_for("aws-m7i", aws=aws)) as s:
                log = learned(s)
                self.assertEqual(log["state"], "failed")
                self.assertIn(words, log["note"])
                self.assertEqual(s.get("/readyz").status, 200)


class Azure(unittest.TestCase):
    def test_vm_size_location_priority(self):
        for priority, spot, applied in (("Regular", False, 0.338), ("Spot", True, 0.03718)):
            with self.subTest(priority=priority), FakeAzure(vm_size="Standard_F8s_v2", priority=priority) as az, \
                    Server(env=env_for("azure-vm", azure=az)) as s:
                log = learned(s)
                self.assertEqual((log["cloud"], log["state"]), ("azure", "known"))
                host = prices(s)[0]["host"]
                self.assertEqual((host["instance_type"], host["region"], host["zone"]),
                                 ("Standard_F8s_v2", "eastus", "2"))
                self.assertIs(host["spot"], spot)
                self.assertEqual(host["price"]["applied_usd_per_hour"], applied)
            (method, path, headers), = az.seen()
            self.assertEqual(method, "GET")
            self.assertTrue(path.startswith("/metadata/instance/compute?api-version="))
            self.assertEqual(headers.get("metadata"), "true")

    def test_unknown_region_stays_unknown(self):
        """The tables have no Azure price in Korea: the price stays unknown, naming the nearest region priced as a
        hint that prices nothing."""
        with FakeAzure(vm_size="Standard_F8s_v2", location="koreacentral") as az, \
                Server(env=env_for("azure-vm", azure=az)) as s:
            learned(s)
            doc, by = prices(s)
            price = doc["host"]["price"]
            self.assertEqual(doc["host"]["state"], "known")
            self.assertIsNone(price["usd_per_hour"])
            self.assertIn("no azure Standard_F8s_v2 in koreacentral", price["source"])
            self.assertIn("nearest region priced: japaneast", price["source"])
            self.assertIn("a hint, not this host's price", price["source"])
            self.assertEqual(price["hint"]["region"], "japaneast")
            self.assertEqual(price["hint"]["usd_per_hour"], 0.428)
            self.assertIsNone(by["cpu:0"]["usd_per_hour"])
            self.assertIn("no azure Standard_F8s_v2", by["cpu:0"]["source"])
            self.assertNotIn("sources", price)

    def test_unknown_shape_says_so(self):
        with FakeAzure(vm_size="Standard_D8s_v6") as az, Server(env=env_for("azure-vm", azure=az)) as s:
            learned(s)
            price = prices(s)[0]["host"]["price"]
            self.assertIsNone(price["usd_per_hour"])
            self.assertIn("no azure Standard_D8s_v6 (in any region)", price["source"])
            self.assertNotIn("hint", price)

    def test_garbage(self):
        with FakeAzure(mode="garbage") as az, Server(env=env_for("azure-vm", azure=az)) as s:
            log = learned(s)
            self.assertEqual(log["state"], "failed")
            self.assertIn("malformed", log["note"])


class Shapes(unittest.TestCase):
    """Many shapes and regions of each cloud through the stand-ins: GET /devices shows the host's price from the
    tables, its source and date spelled out, and a split that adds up."""

    def devices(self, env):
        with Server(env=env) as s:
            log = learned(s)
            self.assertEqual(log["state"], "known", log)
            return s.get("/devices").json()

    def check(self, doc, od, spot, source, as_of, cpu, unlisted=0.0):
        host = doc["host"]
        price, split = host["price"], host["split"]
        self.assertAlmostEqual(price["usd_per_hour"], od, places=9)
        if spot is None:
            self.assertIsNone(price["usd_per_hour_spot"])
        else:
            self.assertAlmostEqual(price["usd_per_hour_spot"], spot, places=9)
        self.assertIn(source, price["source"])
        self.assertEqual(price["as_of"], as_of)
        self.assertTrue(price["sources"])
        for src in price["sources"]:
            self.assertIn(src["source"], price["source"])
            self.assertTrue(src["description"] and src["as_of"] >= as_of, src)
        self.assertNotIn("hint", price)
        cpu_dev = [d for d in doc["devices"] if d["id"] == "cpu:0"][0]
        if cpu is None:  # a bundled shape the cloud does not price apart: CPU and memory at unbundled rates
            cpu = split["cpu_usd_per_hour"]
            self.assertGreater(cpu, 0)
            self.assertIn("unbundled rates", split["rule"])
            unlisted = od - cpu
        self.assertAlmostEqual(cpu_dev["price"]["usd_per_hour"], cpu, places=9)
        self.assertAlmostEqual(split["cpu_usd_per_hour"], cpu, places=9)
        self.assertAlmostEqual(split["unlisted_accelerators_usd_per_hour"], unlisted, places=9)
        self.assertAlmostEqual(split["devices_usd_per_hour"] + split["unlisted_accelerators_usd_per_hour"], od,
                               places=9)
        return price

    def gce(self, machine_type, zone, fixture="gce-no-tpu", spot=False, **extra):
        gce = FakeGce(machine_type=machine_type, zone=zone, preemptible="TRUE" if spot else "FALSE")
        self.addCleanup(gce.stop)
        return self.devices(env_for(fixture, gce=gce, **extra))

    def test_gce_predefined_from_rates(self):
        for machine_type, zone, family, vcpus, gib in (("n2-standard-2", "us-central1-a", "n2", 2, 8),
                                                        ("c3-standard-22", "europe-west4-b", "c3", 22, 88),
                                                        ("n2d-highcpu-8", "asia-northeast1-a", "n2d", 8, 8),
                                                        ("c4-standard-2", "us-east4-c", "c4", 2, 7)):
            with self.subTest(machine_type=machine_type):
                doc = self.gce(machine_type, zone)
                region = zone[:-2]
                od, spot = gce_rates(family, vcpus, gib, region)
                price = self.check(doc, od, spot, f"{family} rates: cyclenerd-gce@fd66b26f", "2026-07-30", od)
                self.assertEqual((price["vcpus"], price["memory_gib"]), (vcpus, gib))
                self.assertIn(f"gce {machine_type} {region} = {vcpus} vCPU x", price["source"])
                self.assertEqual(price["sources"][0]["url"],
                                 "https://github.com/Cyclenerd/google-cloud-pricing-cost-calculator/blob/"
                                 "fd66b26ff84fee5cdd94f341ea89206e76c06b99/pricing.yml")
                self.assertNotIn("lower_bound", price)

    def test_gce_n1_with_two_t4s(self):
        """Two T4s on the PCI bus (and an NVIDIA audio function and another vendor's device, not counted): the VM
        from n1 rates plus two T4s at GCE's price there; acceld lists no GPU (no NVML), so their part is unlisted and
        the CPU carries the VM."""
        tmp = tempfile.mkdtemp(prefix="acceld-n1-")
        self.addCleanup(shutil.rmtree, tmp)
        sysfs = with_pci_gpus("gce-no-tpu", tmp, [("0x10de", "0x1eb8", "0x030200"), ("0x10de", "0x1eb8", "0x030200"),
                                                  ("0x10de", "0x10f8", "0x040300"), ("0x1af4", "0x1000", "0x020000")])
        doc = self.gce("n1-standard-8", "us-central1-f", ACCELD_SYSFS_ROOT=sysfs)
        vm, vm_spot = gce_rates("n1", 8, 30, "us-central1")
        t4, t4_spot = gce_gpu("nvidia-t4", "us-central1")
        price = self.check(doc, vm + 2 * t4, vm_spot + 2 * t4_spot, f"+ 2 x nvidia-t4 x {t4:g} USD/h", "2026-02-24",
                           vm, unlisted=2 * t4)
        self.assertEqual(doc["host"]["pci_gpus"], [{"pci_id": "10de:1eb8", "count": 2}])
        self.assertEqual((price["accelerators"], price["accelerator"]), (2, "nvidia-t4"))
        self.assertEqual(price["accelerator_usd_per_hour"], t4)

    def test_gce_rows_bundled_and_shared_core(self):
        for machine_type, zone, spot in (("g2-standard-16", "us-central1-a", False), ("e2-medium", "us-east1-b", True),
                                         ("a3-highgpu-8g", "us-central1-a", False)):
            with self.subTest(machine_type=machine_type):
                doc = self.gce(machine_type, zone, spot=spot)
                r = row("gce_shapes", machine_type, zone[:-2])
                od, od_spot = float(r["usd_per_hour"]), float(r["usd_per_hour_spot"])
                n = int(r["accelerators"] or 0)
                gpu = gce_gpu(r["accelerator_key"], zone[:-2])[0] if n else 0
                price = self.check(doc, od, od_spot, f"built-in table: gce {machine_type}", as_of(r),
                                   od - n * gpu, unlisted=n * gpu)
                self.assertEqual(doc["host"]["billing"], "spot" if spot else "on_demand")
                self.assertEqual(price["applied_usd_per_hour"], od_spot if spot else od)
                if n:
                    self.assertEqual((price["accelerators"], price["accelerator"]), (n, r["accelerator_key"]))

    def test_gce_custom_is_a_lower_bound(self):
        for machine_type, family, vcpus, gib in (("n2-custom-4-16384", "n2", 4, 16),
                                                 ("custom-2-13312-ext", "n1", 2, 13)):
            with self.subTest(machine_type=machine_type):
                doc = self.gce(machine_type, "us-central1-c")
                od, spot = gce_rates(family, vcpus, gib, "us-central1")
                price = self.check(doc, od, spot, "built-in rates, a lower bound", "2026-07-30", od)
                self.assertIs(price["lower_bound"], True)
                self.assertIn("Google bills custom SKUs higher", price["source"])

    def test_tpu_v5e_host(self):
        """ct5lp-hightpu-4t: four v5e chips at their price per chip in us-west4; the chips take it all."""
        doc = self.gce("ct5lp-hightpu-4t", "us-west4-a", fixture="tpu-v5e", spot=True, ACCELD_CLOUD="gce",
                       ACCELD_DEV_ROOT=os.path.join(FIXTURES, "tpu-v5e", "dev"))
        chip = row("tpu_chips", "tpu-v5e", "us-west4", column="accelerator_key")
        per, per_spot = float(chip["usd_per_chip_hour"]), float(chip["usd_per_chip_hour_spot"])
        price = self.check(doc, 4 * per, 4 * per_spot, "skypilot-gcp@8427bbff", "2026-02-05", 0)
        self.assertEqual((price["accelerators"], price["accelerator"]), (4, "tpu-v5e"))
        tpus = [d for d in doc["devices"] if d["type"] == "tpu"]
        self.assertEqual(len(tpus), 4)
        for d in tpus:
            self.assertAlmostEqual(d["price"]["usd_per_hour"], per)
            self.assertAlmostEqual(d["price"]["usd_per_hour_spot"], per_spot)

    def test_ec2(self):
        t4 = 1  # bundled: the CPU's part is checked, the T4 gets the rest
        # read from the catalog (with Spot), scaled to the region from Karpenter's us-east-1 list (no Spot)
        for instance_type, region, life, source, gpu in (
                ("g4dn.xlarge", "us-west-2", "spot", "skypilot-aws@001367d2", t4),
                ("m6i.large", "eu-west-1", "on-demand", "aws-scaled@001367d2+031e72b6", 0),
                ("c6a.2xlarge", "ap-southeast-1", "on-demand", "skypilot-aws@001367d2", 0)):
            with self.subTest(instance_type=instance_type):
                aws = FakeAws(instance_type=instance_type, region=region, zone=region + "a", life_cycle=life)
                self.addCleanup(aws.stop)
                doc = self.devices(env_for("aws-m7i", aws=aws))
                r = row("aws", instance_type, region)
                od = float(r["usd_per_hour"])
                spot = float(r["usd_per_hour_spot"]) if r["usd_per_hour_spot"] else None
                self.assertEqual(source_of(r), source)
                price = self.check(doc, od, spot, source, as_of(r), None if gpu else od)
                applied = spot if life == "spot" else od
                self.assertEqual(price["applied_usd_per_hour"], applied)
                self.assertNotIn("accelerator_usd_per_hour", price)  # EC2 bundles them: the table weighs

    def test_azure(self):
        for size, region, priority, source, date in (
                ("Standard_NC24ads_A100_v4", "eastus", "Spot", "skypilot-azure@098741e7", "2024-04-23"),
                ("Standard_F32s_v2", "westus3", "Regular", "skypilot-azure@098741e7", "2024-04-23"),
                ("Standard_ND96isr_H100_v5", "westeurope", "Regular", "karpenter-azure@2b431da1", "2026-06-18"),
                ("Standard_D8s_v5", "japaneast", "Regular", "karpenter-azure@2b431da1", "2026-06-18")):
            with self.subTest(size=size):
                az = FakeAzure(vm_size=size, location=region, priority=priority)
                self.addCleanup(az.stop)
                doc = self.devices(env_for("azure-vm", azure=az))
                r = row("azure", size, region)
                od = float(r["usd_per_hour"])
                spot = float(r["usd_per_hour_spot"]) if r["usd_per_hour_spot"] else None
                price = self.check(doc, od, spot, source, date, None if r["accelerators"] else od)
                self.assertEqual(price["applied_usd_per_hour"], spot if priority == "Spot" else od)

    def test_unknown_region_names_the_nearest(self):
        """A region the tables lack: no price, the nearest region's as a hint; nothing is priced by it."""
        for cloud, kind, region, hint in (("gce", "n2-standard-2", "northamerica-south1-a", "us-south1"),
                                          ("aws", "m6i.large", "sa-east-1", "us-east-1")):
            with self.subTest(cloud=cloud):
                if cloud == "gce":
                    doc = self.gce(kind, region)
                else:
                    aws = FakeAws(instance_type=kind, region=region, zone=region + "a")
                    self.addCleanup(aws.stop)
                    doc = self.devices(env_for("aws-m7i", aws=aws))
                price = doc["host"]["price"]
                self.assertIsNone(price["usd_per_hour"])
                self.assertIsNone(price["applied_usd_per_hour"])
                self.assertEqual(price["hint"]["region"], hint)
                self.assertGreater(price["hint"]["usd_per_hour"], 0)
                self.assertIn(f"nearest region priced: {hint}", price["source"])
                self.assertIn("a hint, not this host's price", price["source"])
                self.assertIsNone(doc["host"]["split"]["cpu_usd_per_hour"])
                self.assertIsNone(doc["devices"][0].get("price", {}).get("usd_per_hour"))


class NoCloud(unittest.TestCase):
    def test_bare_metal_asks_nothing_and_prices_nothing(self):
        for fixture in ("bare-metal", "hyperv-vm"):
            with self.subTest(fixture=fixture), FakeGce() as gce, FakeAws() as aws, FakeAzure() as az, \
                    Server(env=env_for(fixture, gce=gce, aws=aws, azure=az)) as s:
                log = learned(s)
                self.assertEqual((log["cloud"], log["state"]), ("none", "not_a_cloud"))
                doc, by = prices(s)
                self.assertIsNone(doc["host"]["price"]["usd_per_hour"])
                self.assertIsNone(doc["host"]["billing"])
                cpu = by["cpu:0"]
                self.assertIsNone(cpu["usd_per_hour"])
                self.assertIsNone(cpu["applied_usd_per_hour"])
                self.assertIn("host price is unknown", cpu["source"])
                est = s.get("/cost/estimate?seconds=60").json()["estimates"][0]
                self.assertIsNone(est["usd"])
            self.assertEqual(gce.seen() + aws.seen() + az.seen(), [])

    def test_cloud_setting_overrides_the_dmi(self):
        with FakeAws(instance_type="r7i.2xlarge", region="us-west-2") as aws, FakeGce() as gce, \
                Server(env=env_for("bare-metal", aws=aws, gce=gce, ACCELD_CLOUD="aws")) as s:
            log = learned(s)
            self.assertEqual((log["cloud"], log["state"]), ("aws", "known"))
            self.assertEqual(log["detected_by"], "ACCELD_CLOUD=aws")
            self.assertEqual(prices(s)[0]["host"]["price"]["usd_per_hour"], 0.5292)
        self.assertEqual(gce.seen(), [])
        with FakeGce() as gce, Server(env=env_for("gce-no-tpu", gce=gce, ACCELD_CLOUD="none")) as s:
            log = learned(s)
            self.assertEqual(log["state"], "off")
        self.assertEqual(gce.seen(), [])


class Metrics(unittest.TestCase):
    def test_host_and_device_prices_are_exported(self):
        with FakeGce(machine_type="ct6e-standard-4t", zone="us-central1-b", preemptible="TRUE") as gce, \
                Server(env=env_for("gce-tpu-v6e", gce=gce)) as s:
            learned(s)
            text = s.get("/metrics").text
        host = [l for l in text.splitlines() if l.startswith("acceld_host_price_usd_per_hour{")]
        self.assertEqual(len(host), 1, host)
        self.assertIn('cloud="gce"', host[0])
        self.assertIn('instance_type="ct6e-standard-4t"', host[0])
        self.assertIn('region="us-central1"', host[0])
        self.assertIn('zone="us-central1-b"', host[0])
        self.assertIn('billing="spot"', host[0])
        self.assertAlmostEqual(float(host[0].split()[-1]), 2.2914, places=5)
        devs = {l.split('"')[1]: float(l.split()[-1]) for l in text.splitlines()
                if l.startswith("acceld_device_price_usd_per_hour{")}
        self.assertEqual(sorted(devs), ["cpu:0", "tpu:0", "tpu:1", "tpu:2", "tpu:3"])
        self.assertAlmostEqual(sum(devs.values()), 2.2914, places=5)
        info = [l for l in text.splitlines() if l.startswith("acceld_host_info{")]
        self.assertEqual(len(info), 1, info)

    def test_unknown_prices_are_left_out(self):
        with Server(env=env_for("bare-metal")) as s:
            learned(s)
            text = s.get("/metrics").text
        self.assertNotIn("acceld_host_price_usd_per_hour{", text)
        self.assertNotIn("acceld_device_price_usd_per_hour{", text)
        self.assertIn('acceld_host_info{cloud="none"', text)


if __name__ == "__main__":
    unittest.main()
