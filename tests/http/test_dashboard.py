"""The dashboard in a real headless Chromium (Debian's chromium) against a running acceld: the page loads with no
console errors, the device table and the utilisation chart render with data, and the job form runs a job.
UPDATE_SCREENSHOT=1 also writes docs/dashboard.png."""
import os
import time
import unittest

from cdp import Browser, chromium_path
from harness import ROOT, Server


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if chromium_path() is None:
            raise AssertionError("chromium is not installed (make test installs it)")
        cls.server = Server(args=["--sample-interval", "200ms", "--telemetry-interval", "200ms"]).start()
        # a job and a few samples, so the page has data to draw
        r = cls.server.request("POST", "/run", json_body={"kernel": "saxpy", "n": 4096, "generate": {"seed": 1}})
        assert r.status == 200, r
        time.sleep(1.5)
        cls.browser = Browser(height=1150)
        cls.browser.open(f"http://127.0.0.1:{cls.server.port}/")

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.server.stop()
        cls.server.tmp.cleanup()

    def test_1_devices_table(self):
        b = self.browser
        b.wait_until("document.querySelector('#devices tr[data-id=\"cpu:0\"]') !== null")
        cells = b.eval("[...document.querySelectorAll('#devices tr[data-id=\"cpu:0\"] td')].map(t => t.textContent)")
        self.assertEqual(cells[0], "cpu:0")
        self.assertRegex(cells[2], r"GiB")  # memory is shown
        b.wait_until("document.getElementById('ready').textContent === 'ready'")

    def test_2_utilisation_chart_has_data(self):
        b = self.browser
        b.wait_until("document.querySelector('#util-chart polyline') !== null", timeout=20)
        n = b.eval("document.querySelector('#util-chart polyline').getAttribute('points').split(' ').length")
        self.assertGreaterEqual(n, 1)

    def test_3_recent_jobs_listed(self):
        self.browser.wait_until("[...document.querySelectorAll('#jobs td')].some(td => td.textContent === 'saxpy')")

    def test_4_job_form_runs_a_job(self):
        b = self.browser
        b.eval("document.querySelector('#job-form [name=kernel]').value = 'dot';"
               "document.querySelector('#job-form [name=n]').value = '10000';"
               "document.querySelector('#job-form button[type=submit]').click(); true")
        b.wait_until("document.getElementById('job-result').textContent.includes('\"kernel\": \"dot\"')")
        text = b.eval("document.getElementById('job-result').textContent")
        self.assertIn('"verified": true', text)
        self.assertNotIn("error", b.eval("document.getElementById('job-result').className"))

    def test_5_no_console_errors(self):
        time.sleep(0.5)
        self.assertEqual(self.browser.errors(), [])
        if os.environ.get("UPDATE_SCREENSHOT"):
            self.browser.screenshot(os.path.join(ROOT, "docs", "dashboard.png"))


if __name__ == "__main__":
    unittest.main()
