"""tests/gpu/check_nvidia.sh through the fake NVML and a stand-in nvidia-smi.

The script runs only on GPU hosts, so nothing else here would notice when the documents it reads change under it
(it once looked for "backends" after that member had become "seen_by", and failed a real H100 it had passed).
This proves the comparison against the current contract: agreement exits 0, each kind of disagreement exits 1 and
names itself. Whether acceld reads real GPUs correctly only a GPU host can show (tests/gpu/README.md, "Runs").
"""
import os
import stat
import subprocess
import tempfile
import unittest

from harness import BIN, FAKES, ROOT, clean_env

SCRIPT = os.path.join(ROOT, "tests", "gpu", "check_nvidia.sh")

# what nvidia-smi --query-gpu=name,uuid,memory.total,pci.bus_id --format=csv,noheader,nounits prints of the fake's
# two GPUs (tests/fakes/nvml.c)
H100 = "NVIDIA H100 80GB HBM3, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, 81559, 00000000:65:00.0"
L4 = "NVIDIA L4, GPU-89a1c3e0-1111-2222-3333-444455556666, 24576, 00000000:CA:00.0"


class CheckNvidia(unittest.TestCase):
    def check(self, *smi_lines):
        with tempfile.TemporaryDirectory(prefix="acceld-gpu-") as tmp:
            stub = os.path.join(tmp, "nvidia-smi")
            with open(stub, "w") as f:
                f.write("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(smi_lines) + "\nEOF\n")
            os.chmod(stub, os.stat(stub).st_mode | stat.S_IXUSR)
            # the binary the suite built, found as the script finds a checkout's: DIR/build/acceld
            os.makedirs(os.path.join(tmp, "build"))
            os.symlink(BIN, os.path.join(tmp, "build", "acceld"))
            env = clean_env({"PATH": tmp + os.pathsep + os.environ.get("PATH", ""), "HOME": tmp,
                             "ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"),
                             "ACCELD_PJRT_PLUGINS": "none", "ACCELD_CHECK_OPENCL": "0",
                             "CUDA_VISIBLE_DEVICES": "1"})
            return subprocess.run(["sh", SCRIPT, tmp], capture_output=True, text=True, env=env, timeout=120)

    def test_agreement_passes(self):
        # CUDA_VISIBLE_DEVICES hides a GPU from CUDA, not from nvidia-smi: the script unsets it for acceld too
        r = self.check(H100, L4)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("report --json: 2 NVIDIA GPUs", r.stdout)
        self.assertIn("GET /devices: 2 NVIDIA GPUs", r.stdout)
        self.assertIn("check_nvidia: ok", r.stdout)

    def test_each_disagreement_is_named(self):
        r = self.check(H100.replace("81559", "40960").replace("65:00.0", "66:00.0"), L4.replace("NVIDIA L4", "L40S"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        out = r.stdout + r.stderr
        for label in ("report --json", "GET /devices"):
            self.assertIn(f"MISMATCH {label}: GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 pci_bus_id '0000:65:00.0', "
                          "nvidia-smi '0000:66:00.0'", out)
            self.assertIn(f"MISMATCH {label}: GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 memory 81559 MiB, "
                          "nvidia-smi 40960 MiB", out)
            self.assertIn(f"MISMATCH {label}: GPU-89a1c3e0-1111-2222-3333-444455556666 model 'NVIDIA L4', "
                          "nvidia-smi 'L40S'", out)
        self.assertIn("check_nvidia: FAILED", out)

    def test_a_gpu_acceld_misses(self):
        r = self.check(H100, L4, L4.replace("89a1c3e0", "00000000").replace("CA:00.0", "CB:00.0"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("MISMATCH report --json: 2 NVIDIA GPUs, nvidia-smi lists 3", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
