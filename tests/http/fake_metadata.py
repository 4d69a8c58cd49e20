"""Stand-ins for the clouds' instance metadata services, on 127.0.0.1 with Python's http.server.

One class per cloud, each answering the paths acceld asks, as the real service does, and recording every request
(method, path, headers) for assertions. A `mode` makes the service misbehave: "slow" (answers after SLOW_SECONDS,
well past acceld's budget), "fail" (500 to everything) or "garbage" (200 with bodies that are not what the
service sends).
"""
import http.server
import json
import secrets
import threading
import time

SLOW_SECONDS = 5


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _handle(self):
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with fake.lock:
            fake.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        if fake.mode == "slow":
            time.sleep(SLOW_SECONDS)
        if fake.mode == "fail":
            status, body = 500, "internal error"
        else:
            status, body = fake.answer(self.command, self.path, self.headers)
        data = body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # acceld gave up waiting (the slow mode)

    do_GET = do_PUT = _handle


class _Fake:
    def __init__(self, mode="ok"):
        self.mode = mode
        self.lock = threading.Lock()
        self.requests = []
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def seen(self):
        with self.lock:
            return list(self.requests)


class FakeGce(_Fake):
    """GCE's metadata server: machine-type, zone and scheduling under /computeMetadata/v1/instance/, and on a TPU VM
    (tpu_env, accelerator_type given) the attributes tpu-env (KEY: 'value' lines) and accelerator-type."""

    def __init__(self, machine_type="n2d-standard-16", zone="europe-west4-b", preemptible="FALSE",
                 provisioning_model=None, mode="ok", tpu_env=None, accelerator_type=None):
        super().__init__(mode)
        self.machine_type, self.zone = machine_type, zone
        self.preemptible, self.provisioning_model = preemptible, provisioning_model
        self.tpu_env, self.accelerator_type = tpu_env, accelerator_type

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/computeMetadata/v1"

    def answer(self, method, path, headers):
        if headers.get("Metadata-Flavor") != "Google":
            return 403, "Missing Metadata-Flavor:Google header."
        if self.mode == "garbage":
            return 200, "<html>%%% not a machine type</html>"
        base = "/computeMetadata/v1/instance/"
        if path == base + "machine-type":
            return 200, f"projects/123456789/machineTypes/{self.machine_type}"
        if path == base + "zone":
            return 200, f"projects/123456789/zones/{self.zone}"
        if path == base + "scheduling/?recursive=true":
            doc = {"automaticRestart": "FALSE", "onHostMaintenance": "TERMINATE", "preemptible": self.preemptible}
            if self.provisioning_model:
                doc["provisioningModel"] = self.provisioning_model
            return 200, json.dumps(doc)
        if path == base + "attributes/tpu-env" and self.tpu_env is not None:
            return 200, self.tpu_env
        if path == base + "attributes/accelerator-type" and self.accelerator_type is not None:
            return 200, self.accelerator_type
        return 404, "not found"


class FakeAws(_Fake):
    """EC2's IMDSv2: PUT /latest/api/token for a session token, then GETs that must carry it (401 otherwise)."""

    def __init__(self, instance_type="m7i.large", region="us-east-1", zone="us-east-1b", life_cycle="on-demand",
                 honour_tokens=True, mode="ok"):
        super().__init__(mode)
        self.instance_type, self.region, self.zone, self.life_cycle = instance_type, region, zone, life_cycle
        self.honour_tokens = honour_tokens  # False: tokens are issued but every GET is refused, as if expired
        self.tokens = set()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def answer(self, method, path, headers):
        if path == "/latest/api/token":
            if method != "PUT":
                return 405, ""
            if not headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return 400, "missing ttl"
            token = secrets.token_urlsafe(40)
            with self.lock:
                self.tokens.add(token)
            return 200, token
        if method != "GET":
            return 405, ""
        with self.lock:
            valid = self.honour_tokens and headers.get("X-aws-ec2-metadata-token") in self.tokens
        if not valid:
            return 401, ""
        if self.mode == "garbage":
            return 200, '{"instanceType": 7, "region": ["us-east-1"]}'
        if path == "/latest/dynamic/instance-identity/document":
            return 200, json.dumps({"accountId": "123456789012", "architecture": "x86_64",
                                    "availabilityZone": self.zone, "instanceId": "i-0123456789abcdef0",
                                    "instanceType": self.instance_type, "region": self.region})
        if path == "/latest/meta-data/instance-life-cycle":
            return 200, self.life_cycle
        return 404, ""


class FakeAzure(_Fake):
    """Azure's IMDS: GET /metadata/instance/compute?api-version=... with `Metadata: true`."""

    def __init__(self, vm_size="Standard_D8s_v5", location="eastus", zone="2", priority="Regular", mode="ok"):
        super().__init__(mode)
        self.vm_size, self.location, self.zone, self.priority = vm_size, location, zone, priority

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def answer(self, method, path, headers):
        if headers.get("Metadata") != "true":
            return 400, '{"error": "Bad request. Required metadata header not specified"}'
        if not path.startswith("/metadata/instance/compute?api-version="):
            return 404, ""
        if self.mode == "garbage":
            return 200, '{"vmSize": "Standard D8s v5 <script>", "location": "eastus"'
        return 200, json.dumps({"azEnvironment": "AzurePublicCloud", "location": self.location, "name": "vm1",
                                "priority": self.priority, "vmSize": self.vm_size, "zone": self.zone,
                                "osType": "Linux"})
