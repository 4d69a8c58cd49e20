"""Host prices from the clouds' metadata services, against the real binary and stand-in services on 127.0.0.1
(fake_metadata.py): the DMI decides which cloud is asked (and that none is on bare metal), the instance type, region
and Spot status reach /cost/prices, /cost, /cost/estimate, /devices and /metrics, the price split adds up to the
host price, and slow, failing or garbage services leave a note, not an error."""
import json
import math
import os
import unittest

from fake_metadata import FakeAws, FakeAzure, FakeGce
from harness import FIXTURES, Server

TOKEN = "cloud-secret"


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
            self.assertEqual(host["price"]["usd_per_hour"], 0.74416)
            self.assertEqual(host["price"]["usd_per_hour_spot"], 0.1544)
            self.assertEqual(host["price"]["applied_usd_per_hour"], 0.1544)
            self.assertIn("skypilot-catalog", host["price"]["source"])
            self.assertIn("as of 2026-11-24", host["price"]["source"])
            # no accelerators: the CPU carries the whole host, on demand and Spot
            cpu = by["cpu:0"]
            self.assertAlmostEqual(cpu["usd_per_hour"], 0.74416)
            self.assertAlmostEqual(cpu["usd_per_hour_spot"], 0.1544)
            self.assertAlmostEqual(cpu["applied_usd_per_hour"], 0.1544)
            self.assertEqual(cpu["billing"], "spot")
            self.assertIn("share of host gce n2d-standard-16", cpu["source"])
            # /devices shows the same share, the host and a note-free "cloud" probe
            devs = s.get("/devices").json()
            self.assertEqual(devs["host"]["instance_type"], "n2d-standard-16")
            self.assertAlmostEqual(devs["devices"][0]["price"]["usd_per_hour"], 0.74416)
            probe = [p for p in devs["probes"] if p["name"] == "cloud"][0]
            self.assertTrue(probe["ok"] and probe["available"])
            # estimates apply the Spot price
            est = s.get("/cost/estimate?seconds=3600").json()
            self.assertAlmostEqual(est["estimates"][0]["usd"], 0.1544)
            self.assertEqual(est["estimates"][0]["billing"], "spot")
            # so does a job's cost: the CPU's share in force when it ends, not its price at start (none)
            job = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": 256, "n": 256, "k": 256,
                                                       "device": "cpu:0"}).json()
            busy_h = (job["timing"]["total_ms"] - job["timing"]["queued_ms"]) / 3600e3
            self.assertGreater(job["cost_usd"], 0)
            self.assertLessEqual(job["cost_usd"], 0.1544 * busy_h * 1.01)
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
                self.assertEqual(host["price"]["applied_usd_per_hour"], 0.02212 if spot else 0.05532)

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
                self.assertAlmostEqual(p["applied_usd_per_hour"], 2.59333 / 4)
            # the accrued report applies the same shares
            cost = s.get("/cost").json()
            self.assertEqual(cost["host"]["instance_type"], "ct6e-standard-4t")
            self.assertTrue(all(d["billing"] == "spot" for d in cost["devices"]))

    def test_gpu_shape_without_listed_gpu_keeps_its_part(self):
        """g2-standard-4 carries one L4; a container that sees no GPU leaves the L4's part unlisted, off the CPU."""
        with FakeGce(machine_type="g2-standard-4", zone="us-central1-a") as gce, \
                Server(env=env_for("gce-no-tpu", gce=gce)) as s:
            learned(s)
            doc, by = prices(s)
            split = doc["host"]["split"]
            self.assertAlmostEqual(split["unlisted_accelerators_usd_per_hour"], 0.56)
            self.assertAlmostEqual(by["cpu:0"]["usd_per_hour"], 0.70683 - 0.56)
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
        for priority, spot, applied in (("Regular", False, 0.384), ("Spot", True, 0.04224)):
            with self.subTest(priority=priority), FakeAzure(priority=priority) as az, \
                    Server(env=env_for("azure-vm", azure=az)) as s:
                log = learned(s)
                self.assertEqual((log["cloud"], log["state"]), ("azure", "known"))
                host = prices(s)[0]["host"]
                self.assertEqual((host["instance_type"], host["region"], host["zone"]),
                                 ("Standard_D8s_v5", "eastus", "2"))
                self.assertIs(host["spot"], spot)
                self.assertEqual(host["price"]["applied_usd_per_hour"], applied)
            (method, path, headers), = az.seen()
            self.assertEqual(method, "GET")
            self.assertTrue(path.startswith("/metadata/instance/compute?api-version="))
            self.assertEqual(headers.get("metadata"), "true")

    def test_unknown_region_stays_unknown(self):
        with FakeAzure(location="japaneast") as az, Server(env=env_for("azure-vm", azure=az)) as s:
            learned(s)
            doc, by = prices(s)
            self.assertEqual(doc["host"]["state"], "known")
            self.assertIsNone(doc["host"]["price"]["usd_per_hour"])
            self.assertIn("no azure Standard_D8s_v5 in japaneast", doc["host"]["price"]["source"])
            self.assertIsNone(by["cpu:0"]["usd_per_hour"])
            self.assertIn("no azure Standard_D8s_v5", by["cpu:0"]["source"])

    def test_garbage(self):
        with FakeAzure(mode="garbage") as az, Server(env=env_for("azure-vm", azure=az)) as s:
            log = learned(s)
            self.assertEqual(log["state"], "failed")
            self.assertIn("malformed", log["note"])


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
        self.assertAlmostEqual(float(host[0].split()[-1]), 2.59333, places=5)
        devs = {l.split('"')[1]: float(l.split()[-1]) for l in text.splitlines()
                if l.startswith("acceld_device_price_usd_per_hour{")}
        self.assertEqual(sorted(devs), ["cpu:0", "tpu:0", "tpu:1", "tpu:2", "tpu:3"])
        self.assertAlmostEqual(sum(devs.values()), 2.59333, places=5)
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
