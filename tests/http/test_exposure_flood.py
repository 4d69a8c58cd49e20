"""A connection flood against the connection table: silent or idle keep-alive connections from several loopback
addresses (127.0.0.2 ... ; Linux routes all of 127/8 to lo), each address under the per-address limit and all of
them together over the total, opened again as soon as the server closes one, as an attacker renews them.
Throughout, /livez, /readyz and a small POST /run answer within 1 s on new connections, a client sending its
request in good time is served, and what the server closes is the flood's sockets: the count the flood sees equals
what /metrics counts (acceld_http_connections_evicted_total and _refused_total). A client address at its own limit
makes room among its own connections only; drip-fed headers make room once past their grace; and the health
listener (--health-listen) answers probes while the main table is full of requests that may not be cut.

Limits are small (--max-connections 200) so a flood takes a fraction of a second and few descriptors. The 1 s bound
on the probes is the requirement under test; every other wait is a hang guard.
"""
import json
import resource
import select
import socket
import threading
import time
import unittest

from harness import ROOT, Server
from test_exposure_slowloris import Dripper, closed_now, connect_from, read_all

TOTAL = 200                      # --max-connections
PER_IP = 64                      # --max-connections-per-ip
FLOOD_ADDRS = [f"127.0.0.{i}" for i in range(2, 8)]
PER_ADDR = 50                    # 6 x 50 = 300 > TOTAL, and 50 < PER_IP
BOUND_S = 1.0                    # every probe answers within this
PROBE_S = 2.5                    # how long the probes run while the flood holds the table
GRACE_S = 2.0                    # conns.h CONNS_GRACE_MS
RUN_BODY = b'{"kernel":"saxpy","n":1024,"generate":{"seed":1}}'
POCL_CACHE = {"ACCELD_POCL_CACHE_DIR": f"{ROOT}/build/pocl-cache"}


def setUpModule():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def request(port, method, path, body=b"", src="127.0.0.1", timeout=10):
    """One request on a new connection from src; returns (status or None when no answer came, seconds, body)."""
    t0 = time.monotonic()
    s = connect_from(src, port, timeout)
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        try:
            s.sendall(head.encode() + b"\r\n" + body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = read_all(s)
    finally:
        s.close()
    elapsed = time.monotonic() - t0
    head, _, rest = out.partition(b"\r\n\r\n")
    return (int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else None), elapsed, rest


def connection_metrics(port, listener="main"):
    """{(family, cause or None): value} of the acceld_http_connections* samples of a listener."""
    status, _, body = request(port, "GET", "/metrics")
    assert status == 200, status
    out = {}
    for line in body.decode().splitlines():
        if not line.startswith("acceld_http_connections") or f'listener="{listener}"' not in line:
            continue
        name, _, value = line.rpartition(" ")
        family = name.split("{")[0]
        cause = name.split('cause="')[1].split('"')[0] if 'cause="' in name else None
        out[(family, cause)] = float(value)
    return out


def closed_by_server(m):
    """Connections the server cut to make room or refused, from connection_metrics."""
    return sum(v for (f, _), v in m.items()
               if f in ("acceld_http_connections_evicted_total", "acceld_http_connections_refused_total"))


class Flood:
    """Connections from addrs, per_addr each, held open; each one the server closes is counted and opened again
    (at most `renew` per 50 ms) until stop(). greet: each first sends a keep-alive GET /livez and reads the answer,
    so it idles as a keep-alive connection; otherwise it never sends a byte."""

    def __init__(self, port, addrs, per_addr, greet=False, renew=10):
        self.port = port
        self.greet = greet
        self.renew = renew
        self.addrs = [a for a in addrs for _ in range(per_addr)]
        self.socks = {}        # fd -> (socket, address)
        self.closed = 0        # connections the server closed: refused or cut
        self.missing = []      # addresses to connect from again
        self.poller = select.poll()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _greeted(self, s):
        try:
            s.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b"\r\n\r\nok\n"):
                chunk = s.recv(4096)
                if not chunk:
                    return False
                data += chunk
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def _open(self, addr):
        try:
            s = connect_from(addr, self.port, timeout=5)
        except OSError:
            self.missing.append(addr)  # the backlog was full: not a connection the server closed
            return
        if self.greet and not self._greeted(s):
            s.close()
            self.closed += 1
            self.missing.append(addr)
            return
        self.socks[s.fileno()] = (s, addr)
        self.poller.register(s, select.POLLIN)

    def _drop(self, fd):
        s, addr = self.socks.pop(fd)
        self.poller.unregister(fd)
        s.close()
        self.closed += 1
        self.missing.append(addr)

    def _run(self):
        while not self.stopping.is_set():
            t0 = time.monotonic()
            for fd, _ in self.poller.poll(50):
                if fd in self.socks and closed_now(self.socks[fd][0]):
                    self._drop(fd)
            for _ in range(min(self.renew, len(self.missing))):
                self._open(self.missing.pop(0))
            self.stopping.wait(max(0.0, t0 + 0.05 - time.monotonic()))

    def __enter__(self):
        for addr in self.addrs:
            self._open(addr)
        self.thread.start()
        return self

    def stop(self):
        """Stops renewing; returns the connections the server closed, counting those it closed just now."""
        self.stopping.set()
        self.thread.join(10)
        time.sleep(0.3)  # FINs sent a moment ago arrive
        for fd in list(self.socks):
            if closed_now(self.socks[fd][0]):
                self._drop(fd)
        return self.closed

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(10)
        for s, _ in self.socks.values():
            s.close()


class SteadyUpload(threading.Thread):
    """A well-behaved client that is slow: POST /select with a 1000-byte body sent in 20 pieces 50 ms apart."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.statuses = []

    def run(self):
        body = b'{"prefer": "cpu"}'
        body += b" " * (1000 - len(body))
        for _ in range(2):
            s = connect_from("127.0.0.1", self.port, timeout=10)
            try:
                s.sendall(b"POST /select HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Connection: close\r\nContent-Length: 1000\r\n\r\n")
                for i in range(0, len(body), 50):
                    time.sleep(0.05)
                    s.sendall(body[i:i + 50])
                out = read_all(s)
            except (BrokenPipeError, ConnectionResetError):
                out = b""
            finally:
                s.close()
            self.statuses.append(int(out[9:12]) if out.startswith(b"HTTP/1.1 ") else None)


class FloodedTable(unittest.TestCase):
    def flood_and_probe(self, greet):
        args = ["--max-connections", str(TOTAL), "--max-connections-per-ip", str(PER_IP), "--threads", "2",
                "--access-log", "false"]
        with Server(args=args, env=POCL_CACHE) as srv:
            # the first job builds what later jobs reuse: not the flood's cost
            self.assertEqual(request(srv.port, "POST", "/run", RUN_BODY)[0], 200)
            results = []
            upload = SteadyUpload(srv.port)
            with Flood(srv.port, FLOOD_ADDRS, PER_ADDR, greet=greet) as flood:
                time.sleep(0.3)  # the flood is in the table and its oldest connections have gone quiet
                upload.start()
                end = time.monotonic() + PROBE_S
                while time.monotonic() < end:
                    for method, path, body in (("GET", "/livez", b""), ("GET", "/readyz", b""),
                                               ("POST", "/run", RUN_BODY)):
                        status, elapsed, _ = request(srv.port, method, path, body)
                        results.append((path, status, elapsed))
                    time.sleep(0.05)
                upload.join(10)
                flood.stop()
                m = connection_metrics(srv.port)
                seen = flood.stop()  # the scrape may have made room too
            self.assertEqual(srv.stop(), 0)
        late = [r for r in results if r[1] != 200 or r[2] >= BOUND_S]
        self.assertEqual(late, [], f"{len(late)} of {len(results)} probes failed or took {BOUND_S} s or more")
        self.assertGreaterEqual(len(results), 9)
        self.assertEqual(upload.statuses, [200, 200], "a client sending its request in good time was cut")
        self.assertGreaterEqual(seen, len(FLOOD_ADDRS) * PER_ADDR - TOTAL, "the flood did not fill the table")
        self.assertEqual(closed_by_server(m), seen, f"the server closed other connections than the flood's: {m}")
        self.assertLessEqual(m[("acceld_http_connections", None)], TOTAL)
        self.assertEqual(m[("acceld_http_connections_max", None)], TOTAL)
        return m

    def test_probes_and_jobs_get_through_a_silent_flood(self):
        m = self.flood_and_probe(greet=False)
        self.assertGreater(m[("acceld_http_connections_evicted_total", "incomplete_request")], 0)

    def test_probes_and_jobs_get_through_an_idle_keepalive_flood(self):
        m = self.flood_and_probe(greet=True)
        self.assertGreater(m[("acceld_http_connections_evicted_total", "idle_keepalive")], 0)

    def test_an_address_at_its_limit_makes_room_among_its_own(self):
        per_ip = 16
        args = ["--max-connections", str(TOTAL), "--max-connections-per-ip", str(per_ip), "--threads", "2",
                "--access-log", "false"]
        with Server(args=args) as srv:
            # older, and silent too, but from another address: never a candidate for 127.0.0.9's budget
            bystanders = [connect_from("127.0.0.10", srv.port) for _ in range(10)]
            try:
                time.sleep(0.2)
                with Flood(srv.port, ["127.0.0.9"], per_ip + 8):
                    time.sleep(0.3)
                    for _ in range(5):
                        status, elapsed, _ = request(srv.port, "GET", "/livez", src="127.0.0.9")
                        self.assertEqual(status, 200)
                        self.assertLess(elapsed, BOUND_S)
                    m = connection_metrics(srv.port)
                self.assertEqual([s for s in bystanders if closed_now(s)], [])
            finally:
                for s in bystanders:
                    s.close()
            self.assertGreater(m[("acceld_http_connections_evicted_total", "incomplete_request")], 0)
            self.assertEqual(srv.stop(), 0)

    def test_drip_fed_headers_make_room_once_past_their_grace(self):
        total, per_ip = 16, 4
        addrs = [f"127.0.0.{i}" for i in range(2, 2 + total // per_ip)]
        args = ["--max-connections", str(total), "--max-connections-per-ip", str(per_ip), "--threads", "2"]
        with Server(args=args) as srv:
            socks = [connect_from(a, srv.port) for a in addrs for _ in range(per_ip)]
            try:
                with Dripper(socks) as drip:
                    time.sleep(GRACE_S + 0.5)  # every dripper is past its grace: its headers are late
                    status, elapsed, _ = request(srv.port, "GET", "/livez", src="127.0.0.20")
                    self.assertEqual(status, 200)
                    self.assertLess(elapsed, BOUND_S)
                    time.sleep(0.3)
                    cut = [k for k, s in enumerate(socks) if k in drip.dead or closed_now(s)]
                    self.assertEqual(len(cut), 1, "one dripper makes room for one newcomer")
                    m = connection_metrics(srv.port, "main")
            finally:
                for s in socks:
                    s.close()
            self.assertEqual(m[("acceld_http_connections_evicted_total", "incomplete_request")], 1)
            self.assertEqual(srv.stop(), 0)


class HealthListener(unittest.TestCase):
    def test_probes_answer_on_the_health_listener_while_the_main_table_is_full(self):
        total = 4
        args = ["--max-connections", str(total), "--max-connections-per-ip", "0", "--threads", "2",
                "--health-listen", "127.0.0.1:0"]
        with Server(args=args) as srv:
            self.assertIsNotNone(srv.health_port)
            # bodies that keep arriving in good time: none of these may be cut, so the main table has no room
            holders = [connect_from("127.0.0.2", srv.port) for _ in range(total)]
            stop = threading.Event()

            def trickle():
                while not stop.is_set():
                    for h in holders:
                        try:
                            h.send(b" ", socket.MSG_DONTWAIT)
                        except OSError:
                            pass
                    stop.wait(0.2)

            for h in holders:
                h.sendall(b"POST /select HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 100000\r\n\r\n{")
            feeder = threading.Thread(target=trickle, daemon=True)
            feeder.start()
            try:
                time.sleep(0.3)
                self.assertIsNone(request(srv.port, "GET", "/livez", src="127.0.0.3")[0])  # refused at once
                for path in ("/livez", "/readyz", "/healthz"):
                    status, elapsed, _ = request(srv.health_port, "GET", path)
                    self.assertEqual(status, 200, path)
                    self.assertLess(elapsed, BOUND_S)
                status, _, body = request(srv.health_port, "GET", "/devices")
                self.assertEqual(status, 404)
                self.assertEqual(json.loads(body)["reason"], "NOT_FOUND")
                m = connection_metrics(srv.health_port)
                self.assertEqual(m[("acceld_http_connections", None)], total)
                self.assertGreaterEqual(m[("acceld_http_connections_refused_total", "limit")], 1)
                self.assertEqual(m[("acceld_http_connections_evicted_total", "incomplete_request")], 0)
                self.assertEqual(connection_metrics(srv.health_port, "health")[
                    ("acceld_http_connections_max", None)], 16)
                self.assertEqual([h for h in holders if closed_now(h)], [])
            finally:
                stop.set()
                feeder.join(5)
                for h in holders:
                    h.close()
            time.sleep(0.3)
            self.assertEqual(request(srv.port, "GET", "/livez")[0], 200)
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()
