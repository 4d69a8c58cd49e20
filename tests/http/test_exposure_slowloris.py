"""Slow and greedy clients against the connection limits: a client that drips a request a byte at a time, trickles
a body, streams an endless header, or holds every slot from several addresses cannot lock others out for longer
than the idle timeout, and the server's memory stays bounded. Clients bind to other loopback addresses
(127.0.0.2 ... ; Linux routes all of 127/8 to lo) so the per-address limit can be told apart from the total one.

Hang guards only: every wait below is an upper bound that a healthy server meets with seconds to spare.
"""
import select
import socket
import threading
import time
import unittest

from harness import Server, ServerTestCase

IDLE_S = 2          # --idle-timeout
GUARD_S = 10        # margin on top of the idle timeout before a wait counts as a hang
PER_IP = 8


def connect_from(src, port, timeout=10):
    """A TCP connection to the server from loopback address src."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s


def request_from(src, port, path="/livez", timeout=10):
    """One GET from src; returns (status, body) or raises on a hang."""
    s = connect_from(src, port, timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        out = read_all(s)
    finally:
        s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    return int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else None, body


def read_all(sock):
    """Reads until the peer closes; a reset ends the read too. A socket timeout propagates (a hang)."""
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk


def closed_now(sock):
    """True when the server has already closed (FIN or RST) this connection and sent nothing on it."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


def wait_closed(sock, within):
    """Waits up to `within` seconds for the server to close the connection; returns what it sent first."""
    sock.settimeout(within)
    try:
        return read_all(sock)
    except socket.timeout:
        raise AssertionError(f"the server kept a slow connection open for more than {within} s")


def no_answer(src, port, wait=2.0):
    """True when a new connection from src gets no HTTP answer: closed, reset, or left waiting unaccepted."""
    try:
        s = connect_from(src, port, timeout=wait)
    except (ConnectionRefusedError, ConnectionResetError, socket.timeout):
        return True
    try:
        s.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        return not s.recv(4096).startswith(b"HTTP/")
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return True
    finally:
        s.close()


class Dripper:
    """Sends one more byte of a never-ending request header on every socket each `interval` seconds."""

    PREFIX = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: "

    def __init__(self, socks, interval=0.25):
        self.socks = list(socks)
        self.interval = interval
        self.dead = set()          # indexes of sockets whose send failed (closed by the server)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self.stop.is_set():
            byte = self.PREFIX[i:i + 1] or b"a"
            for k, s in enumerate(self.socks):
                if k in self.dead:
                    continue
                try:
                    s.send(byte, socket.MSG_DONTWAIT)
                except (BrokenPipeError, ConnectionResetError):
                    self.dead.add(k)
                except BlockingIOError:
                    pass
            i += 1
            self.stop.wait(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


class SlowClients(ServerTestCase):
    server_args = ("--max-connections-per-ip", str(PER_IP), "--max-connections", "64",
                   "--idle-timeout", f"{IDLE_S}s", "--conn-memory", "32KiB", "--threads", "2")

    def test_drip_fed_headers_hold_only_their_own_slots(self):
        port = self.server.port
        socks = [connect_from("127.0.0.1", port) for _ in range(3 * PER_IP)]
        try:
            with Dripper(socks) as drip:
                # drip for longer than the idle timeout: the attacker's address is capped at its own slots ...
                deadline = time.monotonic() + IDLE_S + 1
                status, body = request_from("127.0.0.2", port, timeout=5)
                self.assertEqual(status, 200, body)  # ... and everyone else is served meanwhile
                while time.monotonic() < deadline:
                    alive = [s for k, s in enumerate(socks) if k not in drip.dead and not closed_now(s)]
                    self.assertLessEqual(len(alive), PER_IP)
                    time.sleep(0.2)
                status, _ = request_from("127.0.0.2", port, timeout=5)
                self.assertEqual(status, 200)
            # the client stalls between two bytes for longer than the idle timeout: every slot it held is cut
            for s in socks:
                out = wait_closed(s, IDLE_S + GUARD_S)
                self.assertFalse(out.startswith(b"HTTP/1.1 2"), out[:100])
        finally:
            for s in socks:
                s.close()
        self.assertEqual(self.server.get("/livez").status, 200)  # the attacker's own address is served again

    def test_drip_fed_header_is_cut_while_still_dripping(self):
        s = connect_from("127.0.0.5", self.server.port)
        try:
            with Dripper([s]):  # a byte every 0.25 s never lets the idle timeout fire; the request deadline does
                out = wait_closed(s, IDLE_S + GUARD_S)
        finally:
            s.close()
        self.assertFalse(out.startswith(b"HTTP/1.1 2"), out[:100])
        self.assertEqual(request_from("127.0.0.5", self.server.port)[0], 200)

    def test_slow_body_is_cut(self):
        port = self.server.port
        s = connect_from("127.0.0.4", port)
        try:
            s.sendall(b"POST /select HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n{")
            # the next byte would come later than the idle timeout: the server hangs up first, with no answer
            self.assertEqual(wait_closed(s, IDLE_S + GUARD_S), b"")
        finally:
            s.close()
        self.assertEqual(request_from("127.0.0.4", port)[0], 200)

    def test_slow_but_steady_body_is_served(self):
        body = b'{"prefer": "cpu"}'
        body += b" " * (1000 - len(body))
        s = connect_from("127.0.0.4", self.server.port, timeout=IDLE_S + GUARD_S)
        try:
            s.sendall(b"POST /select HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Connection: close\r\nContent-Length: 1000\r\n\r\n")
            for i in range(0, len(body), 50):  # 20 pieces, each well inside the idle timeout
                time.sleep(0.04)
                s.sendall(body[i:i + 50])
            out = read_all(s)
        finally:
            s.close()
        self.assertTrue(out.startswith(b"HTTP/1.1 200"), out[:300])
        self.assertIn(b'"cpu:0"', out)

    def _flood(self, prefix, filler, results, limit=64 << 20):
        """Streams prefix then filler until the server cuts the connection (or `limit` bytes, a failure)."""
        s = connect_from("127.0.0.3", self.server.port, timeout=IDLE_S + GUARD_S)
        sent = 0
        cut = False
        try:
            try:
                s.sendall(prefix)
                while sent < limit:
                    s.sendall(filler)
                    sent += len(filler)
            except (BrokenPipeError, ConnectionResetError):
                cut = True
            try:
                out = read_all(s)
            except socket.timeout:
                out = None  # neither answered nor closed
        finally:
            s.close()
        results.append((cut, sent, out))

    def test_endless_headers_are_cut_with_bounded_memory(self):
        pid = self.server.proc.pid
        rss0, hwm0 = vm_kib(pid, "VmRSS"), vm_kib(pid, "VmHWM")
        results = []
        floods = [(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Endless: ", b"a" * 65536)] * 4
        floods += [(b"GET /livez HTTP/1.1\r\nHost: x\r\n", b"X-More: 0123456789abcdef\r\n" * 2048)] * 4
        threads = [threading.Thread(target=self._flood, args=(p, f, results)) for p, f in floods]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(results), len(floods))
        for cut, sent, out in results:
            self.assertTrue(cut, f"the server read {sent} bytes of headers without cutting the connection")
            self.assertIsNotNone(out, "the connection was neither answered nor closed")
            self.assertTrue(out == b"" or out.startswith(b"HTTP/1.1 431") or out.startswith(b"HTTP/1.1 4"),
                            out[:200])
        rss1, hwm1 = vm_kib(pid, "VmRSS"), vm_kib(pid, "VmHWM")
        self.assertLess(rss1 - rss0, 50 << 10, f"VmRSS {rss0} -> {rss1} KiB")
        self.assertLess(hwm1 - hwm0, 50 << 10, f"VmHWM {hwm0} -> {hwm1} KiB")
        self.assertEqual(self.server.get("/livez").status, 200)
        self.assertEqual(request_from("127.0.0.3", self.server.port)[0], 200)


class TotalLimit(unittest.TestCase):
    def test_slots_held_from_many_addresses_come_back(self):
        per_ip, total, idle_s = 4, 16, 5  # a longer timeout: the checks below finish while the slots are held
        addrs = [f"127.0.0.{i}" for i in range(2, 2 + total // per_ip)]
        with Server(args=["--max-connections", str(total), "--max-connections-per-ip", str(per_ip),
                          "--idle-timeout", f"{idle_s}s", "--threads", "2"]) as srv:
            socks = [connect_from(a, srv.port) for a in addrs for _ in range(per_ip)]
            try:
                with Dripper(socks) as drip:
                    time.sleep(0.5)
                    alive = [s for k, s in enumerate(socks) if k not in drip.dead and not closed_now(s)]
                    self.assertEqual(len(alive), total)  # every slot is taken, none beyond the per-address cap
                    self.assertTrue(no_answer("127.0.0.20", srv.port, 1), "a connection beyond the limit was served")
                    self.assertTrue(no_answer("127.0.0.1", srv.port, 1), "a connection beyond the limit was served")
                for s in socks:  # the holders stall: the idle timeout frees every slot
                    wait_closed(s, idle_s + GUARD_S)
            finally:
                for s in socks:
                    s.close()
            status, body = request_from("127.0.0.20", srv.port, timeout=idle_s + GUARD_S)
            self.assertEqual(status, 200, body)
            self.assertEqual(srv.get("/livez").status, 200)
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()
