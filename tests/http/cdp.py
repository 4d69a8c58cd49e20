"""A small Chrome DevTools Protocol client over --remote-debugging-pipe (Python's standard library only).

Chromium reads commands on fd 3 and writes answers on fd 4, each a JSON text ended by a NUL byte. Used by the
dashboard test to load the page in a real headless Chromium, collect console errors, click and screenshot.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def chromium_path():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Browser:
    def __init__(self, width=1280, height=900):
        self.profile = tempfile.TemporaryDirectory(prefix="acceld-chromium-")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        # move the child's ends to fds 3 and 4 without clobbering each other (os.dup gives non-inheritable
        # copies; dup2 in the child makes 3 and 4 inheritable)
        hi_r = os.dup(to_chrome_r)
        hi_w = os.dup(from_chrome_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [chromium_path(), "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", f"--user-data-dir={self.profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, close_fds=False)  # only fds 3 and 4 are inheritable; the rest stay ours
        for fd in (to_chrome_r, from_chrome_w, hi_r, hi_w):
            os.close(fd)
        self._buf = b""
        self._next = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        self.profile.cleanup()

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method, params=None, session=True, timeout=30):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def open(self, url, init_script=None):
        """Opens url in a new tab; init_script, when given, runs in the page before any of its own scripts."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Runtime.enable")
        self.send("Page.enable")
        self.send("Log.enable")
        if init_script:
            self.send("Page.addScriptToEvaluateOnNewDocument", {"source": init_script})
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def eval(self, expression, timeout=30):
        r = self.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                      timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"].get("text", "exception") + ": " + json.dumps(r["exceptionDetails"])[:500])
        return r.get("result", {}).get("value")

    def wait_until(self, expression, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.eval(expression):
                return True
            time.sleep(0.1)
        raise AssertionError(f"never true: {expression}")

    def drain_events(self):
        """Reads every event already sent (console messages, exceptions) without waiting."""
        while True:
            ready, _, _ = select.select([self._r], [], [], 0)
            if not ready and b"\0" not in self._buf:
                return
            self.events.append(self._read_message(time.monotonic() + 1))

    def errors(self):
        self.drain_events()
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(p.get("exceptionDetails", {}).get("text", "exception"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def set_viewport(self, width, height):
        """Makes the page's viewport width x height CSS pixels (scale 1), whatever the window's size."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def screenshot(self, path, full_page=False):
        """Writes a PNG of the viewport, or with full_page of the whole page at the viewport's width."""
        if full_page:
            width = self.eval("innerWidth")
            height = self.eval("Math.ceil(document.documentElement.scrollHeight)")
            self.set_viewport(width, height)
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
