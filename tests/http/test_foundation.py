"""Black-box tests of the service foundation: statuses, problem+json, request ids, keep-alive, limits, probes,
configuration errors and graceful shutdown, against the built binary on a loopback port."""
import json
import os
import re
import signal
import socket
import tempfile
import time
import unittest

from harness import Server, ServerTestCase, free_port, run_cli


class Basics(ServerTestCase):
    def test_livez(self):
        r = self.server.get("/livez")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.text, "ok\n")
        self.assertRegex(r.header("X-Request-Id"), r"^[0-9a-f]{32}$")

    def test_head_has_no_body(self):
        r = self.server.request("HEAD", "/livez")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"")

    def test_request_id_echoed_or_replaced(self):
        r = self.server.get("/livez", headers={"X-Request-Id": "trace-42.a:b_c"})
        self.assertEqual(r.header("X-Request-Id"), "trace-42.a:b_c")
        r = self.server.get("/nope", headers={"X-Request-Id": "bad id with spaces"})
        rid = r.header("X-Request-Id")
        self.assertRegex(rid, r"^[0-9a-f]{32}$")
        self.assertEqual(r.json()["request_id"], rid)
        # the id is logged on the access line
        self.server.wait_for(lambda l: l.get("msg") == "request" and l.get("request_id") == rid)

    def test_readyz(self):
        r = self.server.get("/readyz")
        self.assertEqual((r.status, r.text), (200, "ok\n"))
        r = self.server.get("/readyz?verbose")
        self.assertEqual(r.status, 200)
        self.assertIn("[+]startup ok\n", r.text)
        self.assertIn("[+]database ok\n", r.text)
        self.assertIn("[+]shutdown ok\n", r.text)
        self.assertTrue(r.text.endswith("readyz check passed\n"))
        r = self.server.get("/healthz?verbose")
        self.assertTrue(r.text.endswith("healthz check passed\n"))
        self.assertProblem(self.server.get("/readyz?bogus=1"), 400, "UNKNOWN_PARAMETER")

    def test_version(self):
        r = self.server.get("/version")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        v = r.json()
        self.assertRegex(v["version"], r"^\d+\.\d+\.\d+")
        self.assertRegex(v["build_time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertTrue(v["commit"])
        for lib in ("libmicrohttpd", "jansson", "sqlite", "hwloc"):
            self.assertRegex(v["libraries"][lib], r"^\d+\.\d+")

    def test_not_found(self):
        doc = self.assertProblem(self.server.get("/no/such/thing"), 404, "NOT_FOUND")
        self.assertIn("/no/such/thing", doc["detail"])

    def test_method_not_allowed(self):
        r = self.server.request("DELETE", "/livez")
        doc = self.assertProblem(r, 405, "METHOD_NOT_ALLOWED")
        self.assertEqual(r.header("Allow"), "GET, HEAD, OPTIONS")
        self.assertIn("DELETE", doc["detail"])
        r = self.server.request("OPTIONS", "/version")
        self.assertEqual(r.status, 204)
        self.assertEqual(r.header("Allow"), "GET, HEAD, OPTIONS")

    def test_json_bodies(self):
        # POST /select takes a JSON body: the dispatcher's checks apply before the handler runs
        r = self.server.request("POST", "/select", body=b'{"prefer": "cpu",\n "policy": }',
                                headers={"Content-Type": "application/json"})
        doc = self.assertProblem(r, 400, "MALFORMED_JSON")
        self.assertEqual(doc["line"], 2)
        self.assertIn("line 2, column", doc["detail"])
        r = self.server.request("POST", "/select", body=b"[" * 40 + b"]" * 40,
                                headers={"Content-Type": "application/json"})
        self.assertProblem(r, 400, "JSON_TOO_DEEP")
        r = self.server.request("POST", "/select", body=b"prefer=cpu",
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        self.assertProblem(r, 415, "UNSUPPORTED_MEDIA_TYPE")
        r = self.server.request("POST", "/select", body=b'{"prefer": "cpu", "prefer": "gpu"}',
                                headers={"Content-Type": "application/json"})
        self.assertProblem(r, 400, "MALFORMED_JSON")  # duplicate keys are refused, not silently merged

    def test_too_many_query_parameters(self):
        q = "&".join(f"p{i}=1" for i in range(40))
        self.assertProblem(self.server.get("/livez?" + q), 400, "TOO_MANY_PARAMETERS")

    def test_body_over_limit_by_content_length(self):
        # the claimed size is refused before any of it is read or allocated
        raw = self.server.raw(b"POST /livez HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: 99999999999\r\n\r\n")
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertTrue(head.startswith(b"HTTP/1.1 413"), raw[:200])
        self.assertIn(b"application/problem+json", head)
        self.assertEqual(json.loads(body)["reason"], "BODY_TOO_LARGE")

    def test_keep_alive(self):
        c = self.server.conn()
        c.connect()
        sock = c.sock
        for _ in range(25):
            r = self.server.request("GET", "/livez", conn=c)
            self.assertEqual(r.status, 200)
            self.assertNotEqual((r.header("Connection") or "").lower(), "close")
        # errors keep the connection too
        self.assertEqual(self.server.request("GET", "/nope", conn=c).status, 404)
        self.assertEqual(self.server.request("GET", "/livez", conn=c).status, 200)
        self.assertIs(c.sock, sock)
        c.close()

    def test_access_log_line_per_request(self):
        rid = "access-log-check-1"
        self.server.get("/version?", headers={"X-Request-Id": rid})
        line = self.server.wait_for(lambda l: l.get("request_id") == rid and l.get("msg") == "request")
        for key in ("time", "level", "severity", "component", "method", "path", "status", "duration_ms"):
            self.assertIn(key, line)
        self.assertEqual((line["method"], line["path"], line["status"]), ("GET", "/version", 200))
        self.assertEqual(line["remote"], "127.0.0.1")
        self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        time.sleep(0.2)
        self.assertEqual(sum(1 for l in self.server.logs if l.get("request_id") == rid), 1)

    def test_logs_are_json_lines(self):
        for line in self.server.raw_logs:
            obj = json.loads(line)
            for key in ("time", "level", "severity", "msg", "component"):
                self.assertIn(key, obj)


class Limits(unittest.TestCase):
    def test_chunked_body_over_limit(self):
        with Server(args=["--max-body", "2048"]) as s:
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            sock.sendall(b"POST /livez HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            out = b""
            try:
                for _ in range(64):  # 64 KiB in 1 KiB chunks; the server stops reading past 2 KiB
                    sock.sendall(b"400\r\n" + b"x" * 1024 + b"\r\n")
                sock.sendall(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    out += chunk
            except (ConnectionResetError, socket.timeout):
                pass
            sock.close()
            self.assertTrue(out.startswith(b"HTTP/1.1 413"), out[:200])
            self.assertEqual(s.get("/livez").status, 200)

    def test_idle_timeout_closes_connection(self):
        with Server(args=["--idle-timeout", "1s"]) as s:
            sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b"200 OK", sock.recv(4096))
            t0 = time.monotonic()
            self.assertEqual(sock.recv(4096), b"")  # closed by the server, not by our 10 s timeout
            self.assertLess(time.monotonic() - t0, 9)
            sock.close()

    def _refused(self, port):
        """True when a new connection gets no HTTP answer: closed, reset, or left unaccepted."""
        extra = socket.create_connection(("127.0.0.1", port), timeout=1.5)
        try:
            extra.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            return not extra.recv(4096).startswith(b"HTTP/")
        except (ConnectionResetError, socket.timeout):
            return True
        finally:
            extra.close()

    def test_connection_limit(self):
        with Server(args=["--max-connections", "2", "--max-connections-per-ip", "0", "--threads", "1"]) as s:
            held = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(2)]
            for h in held:
                h.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")  # incomplete: keeps the slot busy
            time.sleep(0.3)
            self.assertTrue(self._refused(s.port))
            for h in held:
                h.close()
            time.sleep(0.3)
            self.assertEqual(s.get("/livez").status, 200)  # slots come back

    def test_per_ip_limit(self):
        with Server(args=["--max-connections-per-ip", "1"]) as s:
            h = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            h.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.3)
            self.assertTrue(self._refused(s.port))
            h.close()
            time.sleep(0.3)
            self.assertEqual(s.get("/livez").status, 200)

    def test_oversized_headers_do_not_hurt(self):
        with Server(args=["--conn-memory", "16KiB"]) as s:
            out = s.raw(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 60000 + b"\r\n\r\n")
            self.assertTrue(out == b"" or re.match(rb"HTTP/1.1 4\d\d", out), out[:100])
            self.assertEqual(s.get("/livez").status, 200)

    def test_database_failure_fails_readiness_only(self):
        with Server(db="/proc/acceld-cannot-create/acceld.db") as s:
            self.assertEqual(s.get("/livez").status, 200)
            r = s.get("/readyz?verbose")
            self.assertEqual(r.status, 503)
            self.assertEqual(r.header("Retry-After"), "1")
            doc = r.json()
            self.assertEqual(doc["reason"], "NOT_READY")
            self.assertTrue(any(c.startswith("[-]database failed: ") for c in doc["checks"]), doc)
            self.assertIn("[+]startup ok", doc["checks"])
            self.assertEqual(s.get("/readyz?exclude=database").status, 200)

    def test_folders_made_for_the_database_are_said(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "new", "deeper", "acceld.db")
            with Server(db=db) as s:
                made = s.wait_for(lambda l: l.get("msg", "").startswith("created a folder")
                                  and l.get("folder") == os.path.join(d, "new", "deeper"))
                self.assertEqual(made["level"], "info")  # serve logs at info: said where it runs
                self.assertTrue(os.path.isdir(os.path.join(d, "new", "deeper")))

    def test_probe_parameters_are_checked(self):
        with Server() as s:
            # exclude names one of the checks; a typo is a 400 with the names, not a silent 200
            r = s.get("/readyz?exclude=bogus")
            self.assertEqual(r.status, 400)
            doc = r.json()
            self.assertEqual((doc["reason"], doc["parameter"]), ("INVALID_VALUE", "exclude"))
            self.assertEqual(doc["accepted"], ["startup", "database", "shutdown"])
            # /livez?verbose lists its one check, as Kubernetes' own does; anything else is refused
            r = s.get("/livez?verbose")
            self.assertEqual((r.status, r.body), (200, b"[+]ping ok\nlivez check passed\n"))
            self.assertEqual(s.get("/livez").body, b"ok\n")
            self.assertEqual(s.get("/livez?foo=1").json()["reason"], "UNKNOWN_PARAMETER")
            # a route without query parameters says so with an empty `accepted`
            doc = s.get("/devices?foo=1").json()
            self.assertEqual((doc["reason"], doc["accepted"]), ("UNKNOWN_PARAMETER", []))


class Tls(unittest.TestCase):
    CERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "tls", "cert.pem")
    KEY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "tls", "key.pem")

    def test_https_with_certificate_and_key(self):
        import http.client
        import ssl
        with Server(args=["--tls-cert", self.CERT, "--tls-key", self.KEY]) as s:
            self.assertTrue(s.wait_for(lambda l: l.get("msg") == "listening")["tls"])
            ctx = ssl.create_default_context(cafile=self.CERT)
            c = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx, timeout=10)
            for _ in range(3):  # keep-alive holds over TLS too
                c.request("GET", "/livez")
                r = c.getresponse()
                self.assertEqual((r.status, r.read()), (200, b"ok\n"))
            c.close()
            # plain HTTP to a TLS port gets no HTTP answer
            self.assertFalse(s.raw(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n", timeout=2).startswith(b"HTTP/1.1 200"))

    def test_tls_settings_checked_at_start(self):
        r = run_cli("serve", "--tls-cert", self.CERT)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--tls-key", r.stderr)
        r = run_cli("serve", "--tls-cert", self.CERT, "--tls-key", self.CERT)
        self.assertEqual(r.returncode, 2)
        self.assertIn("PRIVATE KEY", r.stderr)
        r = run_cli("serve", "--tls-cert", "/nonexistent.pem", "--tls-key", self.KEY)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read --tls-cert", r.stderr)


class Shutdown(unittest.TestCase):
    def test_drain_finishes_in_flight_requests(self):
        s = Server().start()
        try:
            idle = s.conn()
            self.assertEqual(s.request("GET", "/livez", conn=idle).status, 200)
            busy = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            busy.sendall(b"POST /livez HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 10\r\n\r\n{\"a\":")
            time.sleep(0.3)
            s.proc.send_signal(signal.SIGTERM)
            s.wait_for(lambda l: l.get("msg") == "draining")
            # readiness turns 503 on an open connection, and the answer closes it
            r = s.request("GET", "/readyz?verbose", conn=idle)
            self.assertEqual(r.status, 503)
            self.assertIn("[-]shutdown failed: draining after a termination signal", r.json()["checks"])
            self.assertEqual(r.header("Connection"), "close")
            # new connections are no longer accepted
            with self.assertRaises(OSError):
                c = socket.create_connection(("127.0.0.1", s.port), timeout=2)
                c.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
                if not c.recv(100):
                    raise ConnectionResetError("closed")
            # the in-flight request still gets its answer, then the process exits 0
            busy.sendall(b"\"bcde\"}")
            self.assertTrue(busy.recv(4096).startswith(b"HTTP/1.1 405"))
            busy.close()
            self.assertEqual(s.proc.wait(10), 0)
            self.assertTrue(any(l.get("msg") == "stopped" for l in s.logs))
        finally:
            s.stop(signal.SIGKILL)
            s.tmp.cleanup()

    def test_grace_period_bounds_the_wait(self):
        s = Server(args=["--shutdown-grace", "1s"]).start()
        try:
            stuck = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            stuck.sendall(b"POST /livez HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
            time.sleep(0.3)
            s.proc.send_signal(signal.SIGTERM)
            self.assertEqual(s.proc.wait(10), 0)
            line = s.wait_for(lambda l: l.get("msg") == "stopping")
            self.assertEqual(line["inflight_abandoned"], 1)
            stuck.close()
        finally:
            s.stop(signal.SIGKILL)
            s.tmp.cleanup()

    def test_waiting_jobs_answered_503_and_exit_bounded(self):
        """Requests waiting on a job get a 503 problem, not a dropped connection, and the process does not wait
        for a kernel that cannot be interrupted."""
        import threading
        s = Server(args=["--shutdown-grace", "300ms"]).start()
        results = []

        def submit():
            try:
                r = s.request("POST", "/run", json_body={"kernel": "sgemm", "m": 6144, "n": 6144, "k": 6144,
                                                          "generate": {"seed": 1}}, headers={})
                results.append(r)
            except Exception as e:  # a dropped connection is what this test guards against
                results.append(e)

        try:
            threads = [threading.Thread(target=submit) for _ in range(2)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            s.proc.send_signal(signal.SIGTERM)
            for t in threads:
                t.join(60)
            self.assertEqual(s.proc.wait(30), 0)
            self.assertEqual(len(results), 2)
            for r in results:
                self.assertNotIsInstance(r, Exception)
                if r.status != 200:
                    self.assertEqual(r.status, 503, r)
                    self.assertEqual(r.json()["reason"], "SHUTTING_DOWN")
            self.assertTrue(any(not isinstance(r, Exception) and r.status == 503 for r in results))
        finally:
            s.stop(signal.SIGKILL)
            s.tmp.cleanup()

    def test_sigint_exits_zero(self):
        s = Server().start()
        try:
            self.assertEqual(s.stop(signal.SIGINT), 0)
        finally:
            s.tmp.cleanup()


class Configuration(unittest.TestCase):
    def test_bad_value_exits_2_with_names(self):
        r = run_cli("serve", "--idle-timeout", "abc")
        self.assertEqual(r.returncode, 2)
        for part in ("--idle-timeout", "ACCELD_IDLE_TIMEOUT", "'abc'", "expected a duration"):
            self.assertIn(part, r.stderr)
        r = run_cli("serve", env={"COMPUTE_PREFER": "fpga"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("auto|cpu|gpu|tpu", r.stderr)

    def test_help_lists_every_setting(self):
        r = run_cli("help", "settings")
        self.assertEqual(r.returncode, 0)
        for name in ("ACCELD_LISTEN", "ACCELD_DB", "ACCELD_SHUTDOWN_GRACE", "COMPUTE_PREFER",
                     "COMPUTE_ALLOW_TPU", "COMPUTE_TPU_BATCH_FACTOR", "ACCELD_MAX_BODY"):
            self.assertIn(name, r.stdout)
        # serve's help groups the settings most deployments set and points to the rest
        r = run_cli("serve", "--help")
        self.assertEqual(r.returncode, 0)
        for name in ("ACCELD_LISTEN", "ACCELD_DB", "ACCELD_TOKEN", "ACCELD_PRICES_FILE", "acceld help settings"):
            self.assertIn(name, r.stdout)
        # the general help fits a screen and says where the settings are
        for args in (("--help",), ("help",)):
            r = run_cli(*args)
            self.assertEqual(r.returncode, 0, args)
            self.assertIn("acceld help settings", r.stdout)

    def test_unknown_command(self):
        r = run_cli("frobnicate")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown command", r.stderr)
        self.assertEqual(run_cli().returncode, 2)

    def test_log_level(self):
        with Server(env={"ACCELD_LOG_LEVEL": "warn"}, port=free_port()) as s:
            self.assertEqual(s.get("/livez").status, 200)
            time.sleep(0.3)
            self.assertEqual([l for l in s.logs if l.get("level") in ("debug", "info")], [])

    def test_env_twin_and_flag_precedence(self):
        with Server(args=["--max-body", "4096"], env={"ACCELD_MAX_BODY": "2048", "ACCELD_IDLE_TIMEOUT": "7"}) as s:
            cfg = s.wait_for(lambda l: l.get("msg") == "starting")["config"]
            self.assertEqual(cfg["ACCELD_MAX_BODY"], 4096)
            self.assertEqual(cfg["ACCELD_IDLE_TIMEOUT"], 7000)

    def test_token_never_logged(self):
        with Server(env={"ACCELD_TOKEN": "sup3r-s3cret"}) as s:
            cfg = s.wait_for(lambda l: l.get("msg") == "starting")["config"]
            self.assertEqual(cfg["ACCELD_TOKEN"], "[redacted]")
            self.assertNotIn("sup3r-s3cret", s.get("/version").text)
            s.stop()
            self.assertFalse(any("sup3r-s3cret" in l for l in s.raw_logs))

    def test_version_command(self):
        r = run_cli("version")
        self.assertEqual(r.returncode, 0)
        self.assertIn("libmicrohttpd", json.loads(r.stdout)["libraries"])


if __name__ == "__main__":
    unittest.main()
