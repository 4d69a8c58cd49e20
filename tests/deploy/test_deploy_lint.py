"""Deployment files: lint (yamllint, shellcheck, promtool, systemd-analyze), the GCP scripts' dry runs against a fake
gcloud, the Kubernetes manifests' shape, the Grafana dashboard against a live /metrics scrape, the image's health
check against a live server, and the runtime-library check of the Dockerfile."""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

import yaml

from harness import BIN, ROOT, Server, free_port

DEPLOY = os.path.join(ROOT, "deploy")
GCP = os.path.join(DEPLOY, "gcp")
K8S = os.path.join(DEPLOY, "k8s")
DOCKERFILE = os.path.join(ROOT, "docker", "Dockerfile")
CHECK_LIBS = os.path.join(ROOT, "tests", "deploy", "check_runtime_libs.sh")
HEALTHCHECK = os.path.join(ROOT, "docker", "healthcheck.sh")


def tool(name):
    path = shutil.which(name)
    assert path, f"{name} is missing; `make deps` installs it (DEB_PKGS)"
    return path


def run(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(args, **kw)


def yaml_files():
    files = glob.glob(os.path.join(DEPLOY, "**", "*.yaml"), recursive=True)
    return sorted(files + [os.path.join(ROOT, ".yamllint"), os.path.join(ROOT, "api", "openapi.yaml")])


def shell_files():
    pats = ["deploy/**/*.sh", "docker/*.sh", "tests/deploy/*.sh", "tests/gpu/*.sh", "bench/*.sh", ".ci/run"]
    return sorted(f for p in pats for f in glob.glob(os.path.join(ROOT, p), recursive=True))


class Lint(unittest.TestCase):
    def test_yamllint(self):
        files = yaml_files()
        self.assertGreaterEqual(len(files), 10, files)
        p = run([tool("yamllint"), "-c", os.path.join(ROOT, ".yamllint"), "-s", "-f", "parsable"] + files)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_shellcheck(self):
        files = shell_files()
        self.assertGreaterEqual(len(files), 8, files)
        p = run([tool("shellcheck"), "-x", "-S", "style"] + files, cwd=ROOT)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_bench_programs_on_the_library_compile(self):
        """bench/ programs built on libacceld (store_fill, record_cost) run only in benchmarks, not in CI: an API
        change that breaks them shows here instead of in the middle of a benchmark."""
        pkgs = ["libmicrohttpd", "jansson", "hwloc", "OpenCL", "sqlite3", "libcurl"]
        cflags = run(["pkg-config", "--cflags"] + pkgs).stdout.split()
        files = [f for f in sorted(glob.glob(os.path.join(ROOT, "bench", "*.c")))
                 if re.search(r'^#include "', open(f).read(), re.M)]
        self.assertGreaterEqual(len(files), 2, files)
        for f in files:
            p = run(["cc", "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                     "-I" + os.path.join(ROOT, "src")] + cflags + [f])
            self.assertEqual(p.returncode, 0, f"{f}: {p.stderr}")

    def test_scripts_are_strict_and_executable(self):
        for f in shell_files():
            with open(f) as fh:
                text = fh.read()
            if f.endswith("/lib.sh"):  # sourced, never run
                self.assertTrue(text.startswith("# shellcheck shell=bash"), f)
                continue
            if text.startswith("#!/bin/sh\n"):  # POSIX sh, for hosts that may lack bash (tests/gpu bundles)
                self.assertIn("\nset -eu\n", text, f)
            else:
                self.assertTrue(text.startswith(("#!/bin/bash\n", "#!/usr/bin/env bash\n")), f)
                self.assertIn("\nset -euo pipefail\n", text, f)
            self.assertTrue(os.stat(f).st_mode & stat.S_IXUSR, f"{f} is not executable")

    def test_systemd_unit(self):
        unit = os.path.join(DEPLOY, "systemd", "acceld.service")
        with open(unit) as fh:
            text = fh.read()
        for line in ("DynamicUser=yes", "StateDirectory=acceld", "ProtectSystem=strict", "NoNewPrivileges=yes",
                     "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
                     "ExecStart=/usr/local/bin/acceld serve", "Environment=ACCELD_DB=/var/lib/acceld/acceld.db"):
            self.assertIn("\n" + line + "\n", text, line)
        grace = int(re.search(r"^Environment=ACCELD_SHUTDOWN_GRACE=(\d+)s$", text, re.M).group(1))
        stop = int(re.search(r"^TimeoutStopSec=(\d+)$", text, re.M).group(1))
        self.assertGreater(stop, grace)
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "acceld.service")
            with open(copy, "w") as fh:
                fh.write(text.replace("/usr/local/bin/acceld", BIN))
            p = run([tool("systemd-analyze"), "verify", copy])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertNotIn("acceld.service", p.stderr, p.stderr)


FAKE_GCLOUD = """#!/bin/bash
# a stand-in for gcloud/kubectl: records each call, answers the project lookup
printf '%s\\n' "$(basename "$0") $*" >> "$FAKE_LOG"
if [ "$*" = "config get-value project" ]; then echo fake-project-1; fi
exit 0
"""

REPO = "https://github.com/example/acceld"

# script, extra arguments, commands the run must print (and, without --dry-run, make)
GCP_CASES = [
    ("gce-gpu-vm.sh", ["--repo", REPO], [
        "gcloud compute instances create acceld-gpu --project=fake-project-1 --zone=us-central1-a "
        "--machine-type=g2-standard-4 --accelerator=type=nvidia-l4,count=1 --maintenance-policy=TERMINATE"]),
    ("gce-gpu-vm.sh", ["--repo", REPO, "--project", "my-proj-42", "--allow-from", "10.0.0.0/8", "--spot"], [
        "gcloud compute instances create acceld-gpu --project=my-proj-42",
        "--provisioning-model=SPOT",
        "gcloud compute firewall-rules create acceld-gpu-acceld --project=my-proj-42 --network=default "
        "--direction=INGRESS --allow=tcp:9470 --source-ranges=10.0.0.0/8 --target-tags=acceld"]),
    ("gce-tpu-vm.sh", ["--repo", REPO], [
        "gcloud compute tpus tpu-vm create acceld-tpu --project=fake-project-1 --zone=us-west4-a "
        "--accelerator-type=v5litepod-1 --version=v2-alpha-tpuv5-lite"]),
    ("gce-tpu-vm.sh", ["--repo", REPO, "--accelerator-type", "v6e-8", "--zone", "us-east5-b"], [
        "--accelerator-type=v6e-8 --version=v2-alpha-tpuv6e"]),
    ("gke-cluster.sh", ["--apply"], [
        "gcloud container clusters create acceld --project=fake-project-1 --zone=us-central1-a",
        "gcloud container clusters get-credentials acceld --project=fake-project-1 --zone=us-central1-a",
        "kubectl apply -k "]),
    ("gke-gpu-pool.sh", [], [
        "gcloud container node-pools create gpu-pool --project=fake-project-1 --zone=us-central1-a "
        "--cluster=acceld --machine-type=g2-standard-4 "
        "--accelerator=type=nvidia-l4,count=1,gpu-driver-version=default --num-nodes=1"]),
    ("gke-tpu-pool.sh", ["--topology", "2x2", "--machine-type", "ct5lp-hightpu-4t"], [
        "gcloud container node-pools create tpu-pool --project=fake-project-1 --zone=us-central1-a "
        "--cluster=acceld --machine-type=ct5lp-hightpu-4t --num-nodes=1 --tpu-topology=2x2"]),
]


class GcpScripts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        bindir = os.path.join(self.tmp.name, "bin")
        os.mkdir(bindir)
        for name in ("gcloud", "kubectl"):
            path = os.path.join(bindir, name)
            with open(path, "w") as fh:
                fh.write(FAKE_GCLOUD)
            os.chmod(path, 0o755)
        self.log = os.path.join(self.tmp.name, "calls.log")
        self.env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], FAKE_LOG=self.log)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as fh:
            out = fh.read().splitlines()
        os.unlink(self.log)
        return out

    def script(self, name, *args):
        return run([os.path.join(GCP, name)] + list(args), env=self.env, cwd=self.tmp.name)

    def test_dry_run_prints_and_makes_no_changes(self):
        for name, args, want in GCP_CASES:
            with self.subTest(script=name, args=args):
                p = self.script(name, *args, "--dry-run")
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                printed = [l[2:] for l in p.stdout.splitlines() if l.startswith("+ ")]
                for w in want:
                    self.assertTrue(any(w in l for l in printed), f"{w!r} not in {printed}")
                # only the read-only project lookup may reach gcloud in a dry run
                self.assertTrue(all(c == "gcloud config get-value project" for c in self.calls()))

    def test_real_run_makes_the_printed_calls(self):
        for name, args, want in GCP_CASES:
            with self.subTest(script=name, args=args):
                p = self.script(name, *args)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                made = [c for c in self.calls() if c != "gcloud config get-value project"]
                printed = [l[2:] for l in p.stdout.splitlines() if l.startswith("+ ")]
                self.assertEqual(len(made), len(printed), (made, printed))
                for w in want:
                    self.assertTrue(any(w in c for c in made), f"{w!r} not in {made}")

    def test_bad_values_are_refused_before_any_call(self):
        bad = [("gce-gpu-vm.sh", ["--zone", "us-central1-a;reboot"]),
               ("gce-gpu-vm.sh", ["--repo", "file:///etc"]),
               ("gce-gpu-vm.sh", ["--repo", REPO, "--count", "0"]),
               ("gce-gpu-vm.sh", ["--repo", REPO, "--allow-from", "0.0.0.0/0 --x"]),
               ("gce-tpu-vm.sh", ["--repo", REPO, "--name", "Bad_Name"]),
               ("gce-tpu-vm.sh", ["--repo", REPO, "--accelerator-type", "v9-8"]),
               ("gke-cluster.sh", ["--nodes", "many"]),
               ("gke-cluster.sh", ["--no-such-option"]),
               ("gke-gpu-pool.sh", ["--cluster"]),
               ("gke-tpu-pool.sh", ["--topology", "2x2;id"])]
        for name, args in bad:
            with self.subTest(script=name, args=args):
                base = [] if "--repo" in args or not name.startswith("gce") else ["--repo", REPO]
                p = self.script(name, *(base + args))
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertTrue(p.stderr.strip(), "no message")
                made = [c for c in self.calls() if c != "gcloud config get-value project"]
                self.assertEqual(made, [])

    def test_help(self):
        for path in sorted(glob.glob(os.path.join(GCP, "*.sh"))):
            if path.endswith("lib.sh") or path.endswith("vm-startup.sh"):
                continue
            p = run([path, "--help"], env=self.env)
            self.assertEqual(p.returncode, 0, path)
            self.assertIn("--dry-run", p.stdout, path)


def load_k8s():
    docs = {}
    for f in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(f) as fh:
            for d in yaml.safe_load_all(fh):
                if d:
                    docs[(d["kind"], d["metadata"]["name"] if "metadata" in d else os.path.basename(f))] = d
    return docs


def seconds(text):
    m = re.fullmatch(r"(\d+)(s|m)", text)
    return int(m.group(1)) * (60 if m.group(2) == "m" else 1)


class Kubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_k8s()
        cls.daemonsets = {n: d for (k, n), d in cls.docs.items() if k == "DaemonSet"}

    def test_kustomization_lists_every_manifest(self):
        with open(os.path.join(K8S, "kustomization.yaml")) as fh:
            k = yaml.safe_load(fh)
        files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(K8S, "*.yaml")))
        files.remove("kustomization.yaml")
        self.assertEqual(sorted(k["resources"]), files)
        self.assertEqual(k["namespace"], "acceld")

    def test_three_daemonsets(self):
        self.assertEqual(sorted(self.daemonsets), ["acceld-cpu", "acceld-gpu", "acceld-tpu"])
        selectors = [tuple(sorted(d["spec"]["selector"]["matchLabels"].items())) for d in self.daemonsets.values()]
        self.assertEqual(len(set(selectors)), 3, "DaemonSet selectors overlap")

    def test_pod_security_probes_and_scraping(self):
        cfg = self.docs[("ConfigMap", "acceld")]["data"]
        self.assertEqual(cfg["ACCELD_LISTEN"], "0.0.0.0:9470")
        self.assertEqual(cfg["ACCELD_HEALTH_LISTEN"], "0.0.0.0:9471")
        grace = seconds(cfg["ACCELD_SHUTDOWN_GRACE"])
        for name, ds in self.daemonsets.items():
            with self.subTest(daemonset=name):
                tpl = ds["spec"]["template"]
                spec = tpl["spec"]
                ann = tpl["metadata"]["annotations"]
                self.assertEqual(ann["prometheus.io/scrape"], "true")
                self.assertEqual(ann["prometheus.io/port"], "9471")  # the health listener
                self.assertEqual(ann["prometheus.io/path"], "/metrics")
                self.assertGreater(spec["terminationGracePeriodSeconds"], grace)
                self.assertFalse(spec["automountServiceAccountToken"])
                psc = spec["securityContext"]
                self.assertTrue(psc["runAsNonRoot"])
                self.assertEqual(psc["seccompProfile"]["type"], "RuntimeDefault")
                for c in spec["containers"]:
                    sc = c["securityContext"]
                    self.assertFalse(sc["allowPrivilegeEscalation"], c["name"])
                    self.assertTrue(sc["readOnlyRootFilesystem"], c["name"])
                    self.assertEqual(sc["capabilities"]["drop"], ["ALL"], c["name"])
                    self.assertNotIn("add", sc["capabilities"], c["name"])
                    self.assertNotIn("privileged", sc, c["name"])
                    self.assertIn("limits", c["resources"], c["name"])
                    self.assertIn("requests", c["resources"], c["name"])
                main = next(c for c in spec["containers"] if c["name"] == "acceld")
                self.assertTrue(main["securityContext"]["runAsNonRoot"])
                self.assertEqual(main["livenessProbe"]["httpGet"]["path"], "/livez")
                self.assertEqual(main["readinessProbe"]["httpGet"]["path"], "/readyz")
                self.assertEqual(main["startupProbe"]["httpGet"]["path"], "/livez")
                self.assertEqual({p["name"]: p["containerPort"] for p in main["ports"]}, {"http": 9470, "health": 9471})
                for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                    self.assertEqual(main[probe]["httpGet"]["port"], "health", probe)
                mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
                self.assertIn("/var/lib/acceld", mounts)
                self.assertIn("/tmp", mounts)
                vols = {v["name"]: v for v in spec["volumes"]}
                self.assertIn("emptyDir", vols[mounts["/var/lib/acceld"]])

    def test_nfd_sidecar(self):
        path = "/etc/kubernetes/node-feature-discovery/features.d"
        for name, ds in self.daemonsets.items():
            with self.subTest(daemonset=name):
                spec = ds["spec"]["template"]["spec"]
                nfd = next(c for c in spec["containers"] if c["name"] == "nfd")
                self.assertIn(f"acceld report --nfd {path}/acceld", "\n".join(nfd["args"]))
                mount = next(m for m in nfd["volumeMounts"] if m["mountPath"] == path)
                vol = next(v for v in spec["volumes"] if v["name"] == mount["name"])
                self.assertEqual(vol["hostPath"]["path"], path)

    def affinity(self, name):
        return self.daemonsets[name]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]

    def test_gpu_daemonset(self):
        spec = self.daemonsets["acceld-gpu"]["spec"]["template"]["spec"]
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, spec["tolerations"])
        env = {e["name"]: e["value"] for e in next(c for c in spec["containers"] if c["name"] == "acceld")["env"]}
        self.assertEqual(env["NVIDIA_DRIVER_CAPABILITIES"], "compute,utility")
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], "all")
        keys = {e["key"] for t in self.affinity("acceld-gpu") for e in t["matchExpressions"]}
        self.assertIn("cloud.google.com/gke-accelerator", keys)
        for c in spec["containers"]:
            self.assertNotIn("nvidia.com/gpu", json.dumps(c["resources"]), "acceld must not take a GPU")

    def test_tpu_daemonset(self):
        spec = self.daemonsets["acceld-tpu"]["spec"]["template"]["spec"]
        self.assertIn({"key": "google.com/tpu", "operator": "Exists"}, spec["tolerations"])
        self.assertEqual(self.affinity("acceld-tpu"),
                         [{"matchExpressions": [{"key": "cloud.google.com/gke-tpu-accelerator",
                                                 "operator": "Exists"}]}])
        for c in spec["containers"]:
            self.assertNotIn("google.com/tpu", json.dumps(c["resources"]), "acceld must not take a TPU")

    def test_cpu_daemonset_avoids_accelerator_nodes(self):
        exprs = self.affinity("acceld-cpu")[0]["matchExpressions"]
        self.assertEqual({e["key"] for e in exprs if e["operator"] == "DoesNotExist"},
                         {"cloud.google.com/gke-accelerator", "cloud.google.com/gke-tpu-accelerator",
                          "nvidia.com/gpu.present"})
        self.assertNotIn("tolerations", self.daemonsets["acceld-cpu"]["spec"]["template"]["spec"])

    def test_node_check_job(self):
        """The example node-validation Job runs `acceld check`, fails on its exit code, and is as locked down as
        the DaemonSets; it stays out of the kustomization (a Job is run once per node)."""
        path = os.path.join(K8S, "examples", "node-check-job.yaml")
        with open(path) as fh:
            job = yaml.safe_load(fh)
        self.assertEqual(job["kind"], "Job")
        self.assertEqual(job["spec"]["backoffLimit"], 0)
        self.assertIn("activeDeadlineSeconds", job["spec"])
        spec = job["spec"]["template"]["spec"]
        self.assertEqual(spec["restartPolicy"], "Never")
        self.assertFalse(spec["automountServiceAccountToken"])
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        self.assertEqual(spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault")
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, spec["tolerations"])
        c = spec["containers"][0]
        self.assertEqual(c["args"][0], "check")
        self.assertIn("--json", c["args"])
        self.assertEqual(c["envFrom"], [{"configMapRef": {"name": "acceld"}}])
        sc = c["securityContext"]
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertTrue(sc["readOnlyRootFilesystem"])
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertNotIn("nvidia.com/gpu", json.dumps(c["resources"]), "the check must not take a GPU away")
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        self.assertTrue({"/var/lib/acceld", "/tmp"} <= mounts)
        with open(os.path.join(K8S, "kustomization.yaml")) as fh:
            self.assertNotIn("examples/node-check-job.yaml", yaml.safe_load(fh)["resources"])
        # the arguments are ones acceld check takes
        p = run([BIN, "check", "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        for flag in (a for a in c["args"] if a.startswith("--")):
            self.assertIn(flag, p.stdout)

    def test_service(self):
        svc = self.docs[("Service", "acceld")]["spec"]
        self.assertEqual(svc["internalTrafficPolicy"], "Local")
        self.assertEqual(svc["selector"], {"app.kubernetes.io/name": "acceld"})
        self.assertEqual(svc["ports"][0]["port"], 9470)


class Image(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE) as fh:
            cls.text = fh.read()

    def arg(self, name):
        joined = re.sub(r"\\\n", "", self.text)
        return re.search(rf'^ARG {name}="([^"]*)"', joined, re.M).group(1).split()

    def test_dockerfile_shape(self):
        t = self.text
        self.assertIn("ARG DEBIAN_IMAGE=debian:12-slim\n", t)
        self.assertEqual(re.findall(r"^FROM (\S+)", t, re.M), ["${DEBIAN_IMAGE}", "${DEBIAN_IMAGE}"])
        self.assertRegex(t, r"\nRUN make deps DEB_PKGS=")
        user = re.findall(r"^USER (\S+)$", t, re.M)
        self.assertEqual(len(user), 1)
        self.assertNotIn(user[0].split(":")[0], ("root", "0"))
        self.assertRegex(t, r'\nVOLUME \["/var/lib/acceld"\]\n')
        self.assertRegex(t, r"\nHEALTHCHECK .*CMD \[\"/usr/local/lib/acceld/healthcheck.sh\"\]\n")
        self.assertIn("ACCELD_LISTEN=0.0.0.0:9470", t)
        self.assertIn("NVIDIA_DRIVER_CAPABILITIES=compute,utility", t)
        self.assertIn("NVIDIA_VISIBLE_DEVICES=all", t)
        self.assertIn("COPY docker/nvidia.icd /etc/OpenCL/vendors/nvidia.icd", t)
        for label in ("title", "description", "version", "revision", "created"):
            self.assertIn(f"org.opencontainers.image.{label}=", t)
        with open(os.path.join(ROOT, "docker", "nvidia.icd")) as fh:
            self.assertEqual(fh.read(), "libnvidia-opencl.so.1\n")

    def test_build_packages_cover_the_makefile(self):
        """Every compiler, header and -dev package of the Makefile's DEB_PKGS is installed by the build stage."""
        with open(os.path.join(ROOT, "Makefile")) as fh:
            mk = re.sub(r"\\\n", " ", fh.read())
        pkgs = set()
        for m in re.finditer(r"^DEB_PKGS\s*[:+]?=(.*)$", mk, re.M):
            pkgs.update(m.group(1).split("#")[0].split())
        build = {p for p in pkgs if p.endswith("-dev") or p in ("make", "gcc", "pkg-config", "opencl-c-headers")}
        build.discard("check")
        self.assertTrue(build)
        self.assertEqual(sorted(build - set(self.arg("BUILD_PACKAGES"))), [])

    def test_dockerignore(self):
        with open(os.path.join(ROOT, ".dockerignore")) as fh:
            lines = {l.strip() for l in fh if l.strip() and not l.startswith("#")}
        for entry in (".git", "build", "var"):
            self.assertIn(entry, lines)

    def test_runtime_packages_are_exactly_what_the_binary_links(self):
        p = run([CHECK_LIBS, BIN, DOCKERFILE])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("libmicrohttpd.so.12 -> libmicrohttpd12", p.stdout)

    def test_runtime_check_catches_drift(self):
        pkgs = self.arg("RUNTIME_PACKAGES")
        with tempfile.TemporaryDirectory() as tmp:
            cases = {"missing": pkgs[1:], "not needed": pkgs + ["libpng16-16"]}
            for what, listed in cases.items():
                df = os.path.join(tmp, "Dockerfile")
                with open(df, "w") as fh:
                    fh.write('FROM x\nARG RUNTIME_PACKAGES="' + " ".join(listed) + '"\n')
                p = run([CHECK_LIBS, BIN, df])
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn(what, p.stdout)


def scrape_families():
    with Server() as srv:
        r = srv.get("/metrics")
        assert r.status == 200, r
        text = r.text
    return {m.group(1): m.group(2) for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M)}


class Grafana(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DEPLOY, "grafana", "acceld-dashboard.json")) as fh:
            cls.dash = json.load(fh)
        cls.exprs = [t["expr"] for p in cls.dash["panels"] for t in p.get("targets", [])]

    def test_shape(self):
        self.assertEqual(self.dash["uid"], "acceld-fleet")
        self.assertGreaterEqual(len(self.exprs), 20)
        ids = [p["id"] for p in self.dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        names = {v["name"] for v in self.dash["templating"]["list"]}
        self.assertEqual(names, {"datasource", "instance", "device"})

    def test_panels_do_not_overlap(self):
        taken = {}
        for p in self.dash["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), taken, f'{p["title"]} overlaps {taken.get((x, y))}')
                    taken[(x, y)] = p["title"]

    def test_cost_row(self):
        """The fleet's cost: host prices summed over the selected nodes, and the devices' parts by type."""
        titles = [p["title"] for p in self.dash["panels"]]
        self.assertIn("Cost", titles)
        joined = " ".join(self.exprs)
        self.assertIn("sum(acceld_host_price_usd_per_hour{", joined)
        self.assertIn("acceld_device_price_usd_per_hour", joined)
        self.assertIn("acceld_host_info", joined)

    def test_every_metric_is_in_a_live_scrape(self):
        families = scrape_families()
        used = set(re.findall(r"\bacceld_[a-z0-9_]+", " ".join(self.exprs) + json.dumps(self.dash["templating"])))
        self.assertTrue(used)
        for name in sorted(used):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name in families:
                continue
            self.assertIn(base, families, f"{name} is not exposed by /metrics")
            self.assertEqual(families[base], "histogram", name)

    def test_queries_parse(self):
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": f"acceld:dashboard_{i}", "expr": e.replace("$instance", ".*").replace("$device", ".*")}
            for i, e in enumerate(self.exprs)]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as fh:
            yaml.safe_dump(rules, fh)
            fh.flush()
            p = run([tool("promtool"), "check", "rules", fh.name])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


PROM = os.path.join(DEPLOY, "prometheus")
RULES = os.path.join(PROM, "acceld-rules.yaml")
RULES_TEST = os.path.join(PROM, "acceld-rules.test.yaml")


class PrometheusRules(unittest.TestCase):
    """deploy/prometheus: the fleet's recording and alerting rules, each tested on synthetic series."""

    @classmethod
    def setUpClass(cls):
        with open(RULES) as fh:
            cls.rules = [r for g in yaml.safe_load(fh)["groups"] for r in g["rules"]]
        with open(RULES_TEST) as fh:
            cls.tests = yaml.safe_load(fh)["tests"]

    def test_rules_check(self):
        p = run([tool("promtool"), "check", "rules", RULES])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_rules_pass_their_unit_tests(self):
        p = run([tool("promtool"), "test", "rules", RULES_TEST], cwd=PROM)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("SUCCESS", p.stdout)

    def test_every_rule_is_tested(self):
        exprs = " ".join(t["expr"] for case in self.tests for t in case.get("promql_expr_test", []))
        alerts = {t["alertname"] for case in self.tests for t in case.get("alert_rule_test", [])}
        firing = {t["alertname"] for case in self.tests for t in case.get("alert_rule_test", []) if t["exp_alerts"]}
        for r in self.rules:
            if "record" in r:
                self.assertIn(r["record"], exprs.split(), f"{r['record']} has no promql_expr_test")
            else:
                self.assertIn(r["alert"], alerts, f"{r['alert']} has no alert_rule_test")
                self.assertIn(r["alert"], firing, f"{r['alert']} is never tested firing")

    def test_every_metric_is_in_a_live_scrape(self):
        families = scrape_families()
        used = set(re.findall(r"\bacceld_[a-z0-9_]+", " ".join(r["expr"] for r in self.rules)))
        self.assertGreaterEqual(len(used), 8)
        for name in sorted(used):
            self.assertIn(name, families, f"{name} is not exposed by /metrics")

    def test_prometheus_config(self):
        """The example config passes `promtool check config`; Debian's Prometheus is built without Kubernetes
        discovery, so the check runs on a copy whose pod discovery is a static target (the relabelling is kept)."""
        with open(os.path.join(PROM, "prometheus.yaml")) as fh:
            cfg = yaml.safe_load(fh)
        job = next(j for j in cfg["scrape_configs"] if j["job_name"] == "acceld")
        targets = [c["target_label"] for c in job["relabel_configs"] if "target_label" in c]
        self.assertIn("node", targets)
        self.assertEqual(cfg["rule_files"], ["acceld-rules.yaml"])
        self.assertIn("cluster", cfg["global"]["external_labels"])
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["127.0.0.1:9470"]}]
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(RULES, tmp)
            path = os.path.join(tmp, "prometheus.yaml")
            with open(path, "w") as fh:
                yaml.safe_dump(cfg, fh)
            p = run([tool("promtool"), "check", "config", path])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class HealthCheck(unittest.TestCase):
    def test_live_server_is_healthy(self):
        with Server() as srv:
            env = dict(os.environ, ACCELD_LISTEN=f"0.0.0.0:{srv.port}")
            p = run([HEALTHCHECK], env=env)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_health_listener_is_asked_when_set(self):
        with Server(args=["--health-listen", "127.0.0.1:0"]) as srv:
            env = dict(os.environ, ACCELD_LISTEN=f"127.0.0.1:{free_port()}",
                       ACCELD_HEALTH_LISTEN=f"0.0.0.0:{srv.health_port}")
            p = run([HEALTHCHECK], env=env)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_nothing_listening_is_unhealthy(self):
        env = dict(os.environ, ACCELD_LISTEN=f"127.0.0.1:{free_port()}")
        p = run([HEALTHCHECK], env=env)
        self.assertNotEqual(p.returncode, 0)

    def test_bad_listen_value(self):
        p = run([HEALTHCHECK], env=dict(os.environ, ACCELD_LISTEN="localhost"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read a port", p.stderr)


if __name__ == "__main__":
    unittest.main()
