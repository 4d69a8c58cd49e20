"""The dashboard in a real headless Chromium (Debian's chromium) against a running acceld: the page loads with no
console errors; the device table, the history and cost charts (with time and value axes) and the recent jobs
render; each device shows its last health check, where it was seen (seen_by) and its job backends (backends); jobs
are told apart by id; nothing overflows sideways at 1400, 1000 and 420 px; the job form runs a job with the
kernel's own sizes (n is the kernel's n: sgemm sends m, n and k); unknown money reads "unknown"; the page reads only
members the contract (api/openapi.yaml) declares, and no job's output from the list. The plan form, on a host of eight
H100s joined by NVLink (the fake NVML): Llama 2 70B inference fits as data 4 x tensor 2, its training does not and
says what would, two hosts fit and give the environment, and a refusal shows at the field it names.

The database is given a day of CPU samples before acceld serves it (as a sampler would have written them, with a
gap where acceld was down) and the CPU a price, so the charts have history to draw. UPDATE_SCREENSHOT=1 also
writes docs/dashboard.png (the whole page at 1400 px)."""
import json
import math
import os
import re
import sqlite3
import time
import unittest

from cdp import Browser, chromium_path
from harness import FAKES, ROOT, Server
from test_contract import redocly

SERVER_ARGS = ["--sample-interval", "200ms", "--telemetry-interval", "200ms"]
JOBS = [
    {"kernel": "saxpy", "n": 4096, "generate": {"seed": 1}, "verify": True},
    {"kernel": "dot", "n": 65536, "generate": {"seed": 2}, "verify": True},
    {"kernel": "sgemm", "m": 64, "n": 64, "k": 64, "generate": {"seed": 3}, "verify": True},
]
# Runs before the page's own script: every JSON document a GET answers, and POST /plan's, is wrapped so that each
# member the page reads is noted as [method, path, status, [member, "[]" for an array element, ...]] in
# window.__apiReads; the bodies POST /plan was sent are kept in window.__planSent.
RECORD_READS = r"""
(() => {
  const reads = window.__apiReads = [], sent = window.__planSent = [], seen = new Set(), fetch0 = window.fetch;
  const ignored = k => typeof k !== "string" || k === "then" || k === "toJSON" || k in Object.prototype;
  function wrap(v, note, at) {
    if (v === null || typeof v !== "object") return v;
    return new Proxy(v, { get(o, k, r) {
      const x = Reflect.get(o, k, r);
      if (ignored(k)) return x;
      if (Array.isArray(o)) return /^[0-9]+$/.test(k) ? wrap(x, note, at.concat("[]")) : x;
      const path = at.concat(k);
      note(path);
      return wrap(x, note, path);
    } });
  }
  window.fetch = async (input, init) => {
    const r = await fetch0(input, init), method = ((init && init.method) || "GET").toUpperCase();
    const url = new URL(r.url), json = r.json.bind(r);
    if (method === "POST" && url.pathname === "/plan") sent.push(JSON.parse(init.body));
    else if (method !== "GET") return r;
    // each member noted once per method, path and status (not once for every answer: one path's reads never
    // hide another's)
    const note = path => {
      const read = [method, url.pathname, r.status, path], key = JSON.stringify(read);
      if (!seen.has(key)) { seen.add(key); reads.push(read); }
    };
    r.json = async () => wrap(await json(), note, []);
    return r;
  };
})();
"""
HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
DAY = re.compile(r"^(Sun|Mon|Tue|Wed|Thu|Fri|Sat) \d{1,2}$")
MiB = 1 << 20


def device_stored(db):
    con = sqlite3.connect(db, timeout=10)
    try:
        return con.execute("SELECT 1 FROM devices WHERE id = 'cpu:0'").fetchone() is not None
    except sqlite3.OperationalError:  # no schema yet
        return False
    finally:
        con.close()


def seed_history(db, now_ms):
    """A day of cpu:0 samples ending 20 s ago: one a minute, every 15 s in the last hour, none for 6 minutes
    half an hour ago; a slow daily swing with a busy spell every 25 minutes."""
    con = sqlite3.connect(db, timeout=10)
    try:
        key = con.execute("SELECT key FROM devices WHERE id = 'cpu:0'").fetchone()[0]
        rows = []
        t = now_ms - 24 * 3600 * 1000
        while t < now_ms - 20 * 1000:
            recent = t >= now_ms - 3600 * 1000
            step = 15 * 1000 if recent else 60 * 1000
            age_min = (now_ms - t) / 60000
            if not 30 <= age_min < 36:
                minute = t // 60000
                util = 0.12 + 0.08 * math.sin(minute / 90) + 0.03 * math.sin(minute * 1.7)
                if minute % 25 < 4:
                    util += 0.55 + 0.1 * math.sin(minute)
                mem = 450 * MiB + util * 600 * MiB
                rows.append((key, t, step, 1, min(util, 1.0), mem, None, None))
            t += step
        con.executemany("INSERT OR REPLACE INTO samples (device, ts, dt, source, util, mem, temp, power) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        con.commit()
    finally:
        con.close()


def declares(schema, member):
    """Whether schema (dereferenced) declares the member path (names, "[]" for an array's elements)."""
    if not member:
        return True
    for key in ("allOf", "oneOf", "anyOf"):
        if any(declares(s, member) for s in schema.get(key, [])):
            return True
    head, rest = member[0], member[1:]
    if head == "[]":
        return "items" in schema and declares(schema["items"], rest)
    if head in schema.get("properties", {}):
        return declares(schema["properties"][head], rest)
    extra = schema.get("additionalProperties")
    return isinstance(extra, dict) and declares(extra, rest)


def collect_names(node, names):
    """Every member name, parameter name and string value (enums, defaults) the contract declares."""
    if isinstance(node, dict):
        names.update(node.get("properties", {}).keys())
        if node.get("in") in ("query", "path") and isinstance(node.get("name"), str):
            names.add(node["name"])
        for v in node.values():
            collect_names(v, names)
    elif isinstance(node, list):
        for v in node:
            collect_names(v, names)
    elif isinstance(node, str):
        names.add(node)


CONTRACT = []


def contract():
    """api/openapi.yaml, bundled with every $ref resolved (once a run)."""
    if not CONTRACT:
        r = redocly("bundle", os.path.join("api", "openapi.yaml"), "--dereferenced", "--ext", "json")
        assert r.returncode == 0, r.stderr[-2000:]
        CONTRACT.append(json.loads(r.stdout))
    return CONTRACT[0]


def assert_reads_declared(test, reads):
    """Every member the page read (window.__apiReads) is declared by the schema of that answer (its method, path
    and status) in the contract; returns the (method, path, status) read."""
    templates = [(re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(p)) + "$"), item)
                 for p, item in contract()["paths"].items()]
    answers = set()
    undeclared = []
    for method, path, status, member in reads:
        answers.add((method, path, status))
        item = next((item for rx, item in templates if rx.match(path)), None)
        test.assertIsNotNone(item, f"{path} is not in the contract")
        responses = item[method.lower()]["responses"]
        response = responses.get(str(status)) or responses.get("default")
        test.assertIsNotNone(response, f"{method} {path} answered {status}, which the contract does not list")
        content = response.get("content", {})
        media = content.get("application/json") or content.get("application/problem+json")
        if not declares(media["schema"], member):
            undeclared.append(f"{method} {path} {status}: {'.'.join(member)}")
    test.assertEqual(undeclared, [])
    return answers


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if chromium_path() is None:
            raise AssertionError("chromium is not installed (make test installs it)")
        # a first start creates the schema and the device rows; the history goes in while acceld is down
        first = Server(args=SERVER_ARGS).start()
        cls.tmp = first.tmp
        deadline = time.monotonic() + 20
        while not device_stored(first.db):
            assert time.monotonic() < deadline, "cpu:0 never reached the database"
            time.sleep(0.1)
        first.stop()
        seed_history(first.db, int(time.time() * 1000))
        cls.server = Server(args=SERVER_ARGS, db=first.db).start()
        r = cls.server.request("PUT", "/cost/prices", json_body={"prices": [{"type": "cpu", "usd_per_hour": 0.12}]})
        assert r.status == 200, r
        # a health check of cpu:0, whose verdict and figures the device table shows
        r = cls.server.request("POST", "/devices/cpu:0/check", json_body={"wait": True})
        assert r.status == 200, r
        cls.check = r.json()
        cls.job_ids = []
        for job in JOBS:
            r = cls.server.request("POST", "/run", json_body=job)
            assert r.status == 200, r
            cls.job_ids.append(r.json()["id"])
        cls.browser = Browser(width=1400, height=900)
        cls.browser.open(f"http://127.0.0.1:{cls.server.port}/", init_script=RECORD_READS)
        cls.browser.set_viewport(1400, 900)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.server.stop()
        cls.server.tmp.cleanup()
        cls.tmp.cleanup()

    def settle(self):
        """Waits two frames, so resize observers have redrawn the charts."""
        self.browser.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")

    def choose_metric(self, metric):
        self.browser.eval("{ const m = document.getElementById('hist-metric');"
                          f" m.value = '{metric}'; m.dispatchEvent(new Event('change')); }} true")

    def labels(self, chart, axis):
        return self.browser.eval(f"[...document.querySelectorAll('#{chart} text.tick.{axis}')].map(t => t.textContent)")

    def assert_x_labels_apart(self, chart):
        """The time labels lie inside the chart, left to right, none over another."""
        boxes = self.browser.eval(f"""(() => {{
            const svg = document.getElementById('{chart}').getBoundingClientRect();
            return [...document.querySelectorAll('#{chart} text.tick.x')].map(t => {{
                const b = t.getBoundingClientRect();
                return [b.left - svg.left, b.right - svg.left, svg.width];
            }});
        }})()""")
        self.assertGreaterEqual(len(boxes), 2, chart)
        for left, right, width in boxes:
            self.assertGreaterEqual(left, -0.5, (chart, boxes))
            self.assertLessEqual(right, width + 0.5, (chart, boxes))
        for a, b in zip(boxes, boxes[1:]):
            self.assertLess(a[1], b[0], (chart, boxes))

    def test_1_devices_table(self):
        b = self.browser
        b.wait_until("document.querySelector('#devices tr[data-id=\"cpu:0\"]') !== null")
        cells = b.eval("[...document.querySelectorAll('#devices tr[data-id=\"cpu:0\"] td')].map(t => t.textContent)")
        self.assertEqual(cells[0], "cpu:0")
        self.assertRegex(cells[2], r"GiB")  # memory is shown
        self.assertEqual(cells[6], "0.12")  # the price set above
        # the last health check: its verdict, linked to the whole check, and its figures
        check = self.check
        link = b.eval("(() => { const a = document.querySelector('#devices tr[data-id=\"cpu:0\"] td.check a');"
                      " return a && [a.textContent, a.getAttribute('href'), a.className]; })()")
        self.assertEqual(link[0], check["verdict"])
        self.assertEqual(link[1], "/devices/cpu%3A0/checks/" + check["id"])
        self.assertIn({"pass": "ok", "warn": "warn", "fail": "bad"}[check["verdict"]], link[2])
        self.assertRegex(cells[7], r"GFLOP/s · [0-9.]+ GB/s")
        # where the device was seen and which job backends serve it, under the API's own names
        heads = b.eval("[...document.querySelectorAll('#devices thead th')].map(t => t.textContent)")
        self.assertEqual(heads[8:], ["seen_by", "backends"])
        self.assertEqual(heads[3], "utilization")
        cpu = self.server.request("GET", "/devices/cpu:0").json()
        self.assertIn("hwloc", cpu["seen_by"])
        self.assertEqual(cells[8], ", ".join(cpu["seen_by"]))
        self.assertEqual(cells[9], ", ".join(cpu["backends"]) if cpu["backends"] else "none")
        b.wait_until("document.getElementById('ready').textContent === 'ready'")

    def test_2_history_chart_has_axes_and_data(self):
        b = self.browser
        b.wait_until("document.querySelectorAll('#hist-chart polyline').length >= 2", timeout=20)
        # the last hour at 15 s steps, broken where the samples stop for 6 minutes
        n = b.eval("[...document.querySelectorAll('#hist-chart polyline')]"
                   ".reduce((n, l) => n + l.getAttribute('points').split(' ').length, 0)")
        self.assertGreater(n, 150)
        self.assertEqual(self.labels("hist-chart", "y"), ["0%", "25%", "50%", "75%", "100%"])
        x = self.labels("hist-chart", "x")
        self.assertGreaterEqual(len(x), 3, x)
        for label in x:
            self.assertRegex(label, HHMM)
        self.assertEqual(len(set(x)), len(x), x)
        self.assertGreaterEqual(b.eval("document.querySelectorAll('#hist-chart line.grid').length"), 6)
        self.assertIn("utilization of cpu:0", b.eval("document.getElementById('hist-chart').getAttribute('aria-label')"))
        self.assert_x_labels_apart("hist-chart")

        # memory in binary units (MiB or GiB, as the host's own use goes); a week labelled by days
        self.choose_metric("memory_used_bytes")
        b.wait_until("[...document.querySelectorAll('#hist-chart text.tick.y')].some(t => / [MG]iB$/.test(t.textContent))")
        b.eval("[...document.querySelectorAll('[data-chart=hist] button')].find(x => x.textContent === '7d').click(); true")
        b.wait_until("[...document.querySelectorAll('#hist-chart text.tick.x')].every(t => /^[A-Z][a-z]{2} \\d/.test(t.textContent))"
                     " && document.querySelector('#hist-chart polyline') !== null")
        for label in self.labels("hist-chart", "x"):
            self.assertRegex(label, DAY)
        self.assert_x_labels_apart("hist-chart")

        # a CPU reports no temperature: axes in °C and a note instead of a line
        self.choose_metric("temperature_celsius")
        b.wait_until("document.querySelector('#hist-chart text.empty') !== null")
        self.assertEqual(b.eval("document.querySelectorAll('#hist-chart polyline, #hist-chart circle').length"), 0)
        self.assertTrue(all(t.endswith(" °C") for t in self.labels("hist-chart", "y")))
        self.assertGreaterEqual(len(self.labels("hist-chart", "x")), 2)

        # back to the default view for what follows
        self.choose_metric("utilization_ratio")
        b.eval("[...document.querySelectorAll('[data-chart=hist] button')].find(x => x.textContent === '1h').click(); true")
        b.wait_until("document.querySelectorAll('#hist-chart polyline').length >= 2")

    def test_3_a_single_point_is_drawn(self):
        """One sample in the window: a dot with both axes, no line."""
        got = self.browser.eval("""(() => {
            const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
            svg.id = 'one-point'; svg.setAttribute('class', 'chart');
            document.body.append(svg);
            const t1 = Date.now(), t0 = t1 - 3600e3;
            drawChart(svg, { t0, t1, points: [{ t: t1 - 600e3, v: 42 }], gapMs: 30e3,
                             axis: METRICS.power_watts.axis(42), label: 'power' });
            const r = { dots: svg.querySelectorAll('circle').length, lines: svg.querySelectorAll('polyline').length,
                        y: [...svg.querySelectorAll('text.tick.y')].map(t => t.textContent),
                        x: [...svg.querySelectorAll('text.tick.x')].map(t => t.textContent) };
            svg.remove();
            return r;
        })()""")
        self.assertEqual((got["dots"], got["lines"]), (1, 0))
        self.assertEqual(got["y"][0], "0 W")
        self.assertTrue(all(t.endswith(" W") for t in got["y"]), got)
        self.assertGreaterEqual(float(got["y"][-1].split()[0]), 42)
        self.assertGreaterEqual(len(got["x"]), 2)
        for label in got["x"]:
            self.assertRegex(label, HHMM)

    def test_4_cost_chart_has_axes_and_bars(self):
        b = self.browser
        b.wait_until("document.querySelectorAll('#cost-chart rect.col').length >= 20")
        y = self.labels("cost-chart", "y")
        self.assertRegex(y[0], r"^\$0\.0+$")
        self.assertTrue(all(re.fullmatch(r"\$\d+\.\d+", t) for t in y), y)
        self.assertGreaterEqual(float(y[-1][1:]), 0.12)  # a whole hour at 0.12 USD/h fits under the top tick
        x = self.labels("cost-chart", "x")
        self.assertGreaterEqual(len(x), 3, x)
        for label in x:
            self.assertTrue(HHMM.match(label) or DAY.match(label), x)
        self.assertGreater(b.eval("document.querySelectorAll('#cost-chart rect.col-used').length"), 0)
        self.assert_x_labels_apart("cost-chart")

    def test_5_recent_jobs_are_told_apart(self):
        b = self.browser
        b.wait_until("document.querySelectorAll('#jobs tbody a.jid').length >= 3")
        rows = b.eval("[...document.querySelectorAll('#jobs tbody tr')].map(tr => ({ id: tr.dataset.id,"
                      " href: tr.querySelector('a.jid').getAttribute('href'), title: tr.querySelector('a.jid').title,"
                      " shown: tr.querySelector('a.jid').innerText, cells: [...tr.cells].map(c => c.innerText),"
                      " font: getComputedStyle(tr.querySelector('a.jid')).fontFamily }))")
        by_id = {r["id"]: r for r in rows}
        for job, job_id in zip(JOBS, self.job_ids):
            r = by_id[job_id]
            self.assertEqual(r["href"], "/run/" + job_id)
            self.assertIn(job_id, r["title"])
            self.assertEqual(r["shown"], job_id)  # at 1400 px the whole id shows
            self.assertIn("monospace", r["font"])
            self.assertEqual(r["cells"][1], job["kernel"])
            self.assertEqual(r["cells"][3].split()[0], "cpu:0")
            self.assertTrue(r["cells"][4].startswith("succeeded"), r["cells"])
        # sizes by their names, n being the kernel's own n
        self.assertEqual(by_id[self.job_ids[0]]["cells"][2], "n 4,096")
        self.assertEqual(by_id[self.job_ids[2]]["cells"][2], "m 64, n 64, k 64")
        shown = [r["shown"] for r in rows]
        self.assertEqual(len(set(shown)), len(shown), shown)
        # the link leads to the job's record
        got = b.eval(f"fetch(document.querySelector('#jobs tr[data-id=\"{self.job_ids[1]}\"] a.jid').href)"
                     ".then(r => r.json()).then(j => j.id)")
        self.assertEqual(got, self.job_ids[1])

        # narrower, the time digits give way to the 8 random ones, still distinct
        b.set_viewport(1000, 800)
        self.settle()
        shown = b.eval("[...document.querySelectorAll('#jobs tbody a.jid')].map(a => a.innerText)")
        self.assertEqual(len(set(shown)), len(shown), shown)
        for job_id in self.job_ids:
            self.assertIn(job_id[12:], shown)
        b.set_viewport(1400, 900)
        self.settle()

    def test_6_no_horizontal_overflow(self):
        b = self.browser
        b.wait_until("document.querySelectorAll('#jobs tbody a.jid').length >= 3")
        b.wait_until("document.querySelector('#hist-chart polyline') !== null")
        for width, height in ((1400, 900), (1000, 800), (420, 800)):
            b.set_viewport(width, height)
            self.settle()
            sizes = b.eval("""(() => {
                const d = document.documentElement, j = document.getElementById('jobs-scroll');
                return { viewport: innerWidth, page: [d.scrollWidth, d.clientWidth], jobs: [j.scrollWidth, j.clientWidth] };
            })()""")
            self.assertEqual(sizes["viewport"], width)
            self.assertLessEqual(sizes["page"][0], sizes["page"][1], (width, sizes))
            self.assertLessEqual(sizes["jobs"][0], sizes["jobs"][1], (width, sizes))
            for chart in ("hist-chart", "cost-chart"):
                self.assert_x_labels_apart(chart)
        b.set_viewport(1400, 900)
        self.settle()
        # at 1400 px the jobs span the page below the charts, which sit side by side
        boxes = b.eval("""(() => {
            const r = id => document.getElementById(id).closest('section').getBoundingClientRect();
            return { hist: [r('hist-chart').left, r('hist-chart').bottom], cost: [r('cost-chart').left],
                     jobs: [r('jobs').top, r('jobs').width], main: document.querySelector('main').clientWidth };
        })()""")
        self.assertLess(boxes["hist"][0], boxes["cost"][0])
        self.assertGreaterEqual(boxes["jobs"][0], boxes["hist"][1])
        self.assertGreater(boxes["jobs"][1], 0.9 * boxes["main"])

    def run_form(self, kernel, sizes):
        """Chooses kernel in the job form, checks that it asks for exactly its own sizes, fills them in and runs
        the job; returns the answer shown."""
        b = self.browser
        b.eval("{ const k = document.querySelector('#job-form [name=kernel]');"
               f" k.value = '{kernel}'; k.dispatchEvent(new Event('change')); }} true")
        shown = b.eval("[...document.querySelectorAll('#job-form label[data-size]')].filter(l => !l.hidden)"
                       ".map(l => l.dataset.size)")
        self.assertEqual(shown, list(sizes), kernel)
        fill = "".join(f"document.querySelector('#job-form [name={k}]').value = '{v}';" for k, v in sizes.items())
        b.eval("document.getElementById('job-result').textContent = '';" + fill +
               "document.querySelector('#job-form button[type=submit]').click(); true")
        b.wait_until(f"document.getElementById('job-result').textContent.includes('\"kernel\": \"{kernel}\"')")
        self.assertNotIn("error", b.eval("document.getElementById('job-result').className"))
        return b.eval("JSON.parse(document.getElementById('job-result').textContent)")

    def test_7_job_form_runs_a_job(self):
        job = self.run_form("dot", {"n": 10000})
        self.assertTrue(job["verified"])
        self.assertEqual(job["sizes"], {"n": 10000})
        # softmax is m rows of n; n is sgemm's own n, beside m and k (no cube of a total count)
        job = self.run_form("softmax", {"m": 3, "n": 1000})
        self.assertEqual(job["sizes"], {"m": 3, "n": 1000})
        job = self.run_form("sgemm", {"m": 24, "n": 40, "k": 16})
        self.assertEqual(job["sizes"], {"m": 24, "n": 40, "k": 16})
        self.assertTrue(job["verified"])
        self.browser.wait_until("document.querySelectorAll('#jobs tbody a.jid').length >= 6")

    def test_8_unknown_money_reads_unknown(self):
        """/cost totals and a device's price that are null (no price known) read "unknown", never 0 or $0.00."""
        b = self.browser
        b.eval("document.getElementById('auto').checked = false; true")
        try:
            got = b.eval("""(async () => {
                const real = window.fetch;
                const answer = doc => new Response(JSON.stringify(doc), { headers: { "Content-Type": "application/json" } });
                window.fetch = async (input, init) => {
                    const path = new URL(input, location.href).pathname;
                    const doc = await (await real(input, init)).json();
                    if (path === "/cost") {
                        Object.assign(doc.totals, { allocated_usd: null, utilized_usd: null, jobs_usd: null, complete: false });
                        for (const g of doc.totals.groups) Object.assign(g, { allocated_usd: null, utilized_usd: null });
                    }
                    if (path === "/cost/prices")
                        for (const p of doc.prices) Object.assign(p, { usd_per_hour: null, usd_per_hour_spot: null, applied_usd_per_hour: null });
                    return answer(doc);
                };
                try { await loadDevices(); await loadCost(); } finally { window.fetch = real; }
                const cells = [...document.querySelectorAll('#devices tr[data-id="cpu:0"] td')].map(t => t.textContent);
                return { note: document.getElementById('cost-note').textContent, price: cells[6],
                         empty: (document.querySelector('#cost-chart text.empty') || {}).textContent,
                         bars: document.querySelectorAll('#cost-chart rect.col').length,
                         label: document.getElementById('cost-chart').getAttribute('aria-label') };
            })()""")
        finally:
            b.eval("document.getElementById('auto').checked = true; refresh().then(() => true)")
        self.assertEqual(got["price"], "unknown")
        self.assertIn("total allocated unknown, utilized unknown, jobs unknown", got["note"])
        self.assertIn("incomplete", got["note"])
        self.assertIn("allocated unknown USD", got["label"])
        self.assertEqual(got["bars"], 0)
        # no bars because no price is known: the chart says the cost is unknown, not that there is none
        self.assertIn("cost unknown", got["empty"])
        self.assertNotRegex(got["note"], r"\$?0\.0+\b")
        # with the real answers back, the price and totals are figures again
        b.wait_until("document.querySelector('#devices tr[data-id=\"cpu:0\"] td:nth-child(7)').textContent === '0.12'")
        b.wait_until("document.querySelectorAll('#cost-chart rect.col').length >= 20")

    def test_8b_plan_form_plans_for_this_host(self):
        """The plan form with devices left empty plans for this host: its CPU, with the memory given."""
        got = plan_in_form(self.browser, {"model": "llama-2-7b", "memory_bytes": "32GiB"})
        self.assertEqual(got["sent"], {"model": "llama-2-7b", "memory_bytes": 32 << 30})
        self.assertEqual(got["fits"], "fits")
        self.assertEqual(got["mesh"], {"data": 1, "fsdp": 1, "tensor": 1, "expert": 1})
        self.assertIn("on this host", got["facts"]["devices"])
        self.assertIn("1 cpu on 1 host (1 a host) · memory 32.0 GiB a device", got["facts"]["devices"])
        self.assertEqual([row[0] for row in got["memory"]], ["weights", "activations", "kv_cache"])

    def test_9a_page_reads_only_what_the_contract_declares(self):
        """Every member the page read of a GET's answer is declared by that answer's schema in api/openapi.yaml;
        the job list is read without outputs; every snake_case member name in the script is a name the contract
        declares (a member, a parameter or one of their values)."""
        b = self.browser
        b.wait_until("document.querySelectorAll('#jobs tbody a.jid').length >= 3")
        b.eval("refresh().then(() => true)")
        reads = b.eval("window.__apiReads")
        for method, path, status, member in reads:
            if path == "/run":
                self.assertNotEqual(member[:4], ["jobs", "[]", "result", "output"], "the job list carries no outputs")
        read_paths = {path for _, path, _ in assert_reads_declared(self, reads)}
        for path in ("/devices", "/cost", "/cost/prices", "/history", "/run", "/version"):
            self.assertIn(path, read_paths)

        names = set()
        collect_names(contract(), names)
        with open(os.path.join(ROOT, "static", "index.html"), encoding="utf-8") as f:
            script = f.read().split("<script>", 1)[1]
        used = set(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", script))
        self.assertTrue({"utilization_ratio", "seen_by", "applied_usd_per_hour"} <= used, used)
        self.assertEqual(sorted(used - names), [], "snake_case names in the dashboard's script the contract lacks")

    def test_9b_no_console_errors(self):
        time.sleep(0.5)
        self.assertEqual(self.browser.errors(), [])
        if os.environ.get("UPDATE_SCREENSHOT"):
            self.browser.set_viewport(1400, 900)
            self.settle()
            self.browser.eval("document.getElementById('job-result').scrollTop = 0; true")
            self.browser.screenshot(os.path.join(ROOT, "docs", "dashboard.png"), full_page=True)


# Eight H100s on an NVSwitch board (the fake NVML's HGX, NVLink between every pair) in the pod of a Kubernetes
# indexed Job (JOB_COMPLETION_INDEX 1, its JobSet 'llama'), as tests/http/test_plan_api.py's HgxH100 builds it
HGX_H100 = {"ACCELD_NVML_LIBRARY": os.path.join(FAKES, "libnvml.so"), "FAKE_NVML_HGX": "8", "FAKE_NVML_NVLINK": "all",
            "JOB_COMPLETION_INDEX": "1", "HOSTNAME": "llama-train-1", "JOBSET_NAME": "llama"}
# What a plan shows, read from the page: the verdict, the facts, the memory rows, suggestions, rejected meshes,
# the environment, and each field's refusal.
READ_PLAN = """(() => {
    const q = s => document.querySelector(s), text = s => q(s) ? q(s).textContent : null;
    const cells = tr => [...tr.children].map(c => c.textContent);
    return {
        result: text('#plan-status') + ' ' + text('#plan-result'), fits: text('#plan-fits'),
        fits_class: q('#plan-fits') && q('#plan-fits').className,
        mesh: Object.fromEntries([...document.querySelectorAll('#plan-result [data-fact=mesh] [data-axis]')]
            .map(a => [a.dataset.axis, Number(a.textContent.split(' ')[1])])),
        facts: Object.fromEntries([...document.querySelectorAll('#plan-result dd[data-fact]')]
            .map(d => [d.dataset.fact, d.textContent])),
        caption: text('#plan-memory caption'),
        memory: [...document.querySelectorAll('#plan-memory tbody tr[data-term]')]
            .map(tr => [tr.dataset.term, ...cells(tr).slice(1)]),
        suggestions: [...document.querySelectorAll('#plan-suggestions li')]
            .map(li => [li.dataset.kind, li.textContent]),
        rejected: [...document.querySelectorAll('#plan-rejected tbody tr')].map(cells),
        rejected_open: q('#plan-rejected') ? q('#plan-rejected').open : null,
        env: text('#plan-env pre'), env_text: text('#plan-env'),
        env_link: q('#plan-env-link') && q('#plan-env-link').getAttribute('href'),
        errors: Object.fromEntries([...document.querySelectorAll('#plan-form .field .error')]
            .map(e => [e.id, e.textContent])),
        invalid: [...document.querySelectorAll('#plan-form [aria-invalid=true]')]
            .map(c => [c.name, c.getAttribute('aria-describedby')]),
        focused: document.activeElement && document.activeElement.name,
        sent: window.__planSent.length ? window.__planSent[window.__planSent.length - 1] : null,
    };
})()"""


def plan_in_form(b, values):
    """Resets the plan form, fills in values by field name (a select's option, a checkbox's state, an input's text; in
    the order given, model and mode first as they show the fields that depend on them), presses Plan and waits for
    the answer; returns what the page shows (READ_PLAN)."""
    b.eval("""(() => {
        const f = document.getElementById('plan-form');
        f.reset(); showPlanFields(f);
        document.getElementById('plan-status').textContent = '';
        return true;
    })()""")
    for name, value in values.items():
        b.eval(f"""(() => {{
            const c = document.getElementById('plan-form').elements[{json.dumps(name)}];
            if (c.type === 'checkbox') c.checked = {json.dumps(value)}; else c.value = {json.dumps(str(value))};
            c.dispatchEvent(new Event('change'));
            return true;
        }})()""")
    b.eval("document.querySelector('#plan-form button[type=submit]').click(); true")
    b.wait_until("(t => t !== '' && t !== 'planning…')(document.getElementById('plan-status').textContent)")
    return b.eval(READ_PLAN)


class PlanForm(unittest.TestCase):
    """The plan form against a host of eight H100s joined by NVLink, checked against what the API answers."""

    @classmethod
    def setUpClass(cls):
        if chromium_path() is None:
            raise AssertionError("chromium is not installed (make test installs it)")
        cls.server = Server(env=HGX_H100).start()
        cls.browser = Browser(width=1400, height=900)
        cls.browser.open(f"http://127.0.0.1:{cls.server.port}/", init_script=RECORD_READS)
        cls.browser.set_viewport(1400, 900)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.server.stop()
        cls.server.tmp.cleanup()

    def api(self, body):
        r = self.server.request("POST", "/plan", json_body=body)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def plan(self, **values):
        return plan_in_form(self.browser, values)

    def shown_fields(self):
        return self.browser.eval("[...document.querySelectorAll('#plan-form .field')].filter(d => !d.hidden)"
                                 ".map(d => d.querySelector('[name]').name)")

    def test_1_inference_fits_with_tensor_parallelism_inside_nvlink(self):
        got = self.plan(model="llama-2-70b", seq_len=4096)
        self.assertEqual(got["sent"], {"model": "llama-2-70b", "seq_len": 4096})  # only what differs from the default
        doc = self.api(got["sent"])
        self.assertTrue(doc["fits"])
        self.assertEqual(got["fits"], "fits")
        self.assertIn("ok", got["fits_class"])
        self.assertIn(doc["reason"], got["result"])
        self.assertEqual(got["mesh"], {"data": 4, "fsdp": 1, "tensor": 2, "expert": 1})
        self.assertEqual(got["facts"]["mesh"], "data 4 × fsdp 1 × tensor 2 × expert 1")
        self.assertEqual(got["facts"]["batch"], "1 per device, 4 in all")
        self.assertIn("8 x NVIDIA H100 80GB HBM3 on this host, joined by NVLink", got["facts"]["devices"])
        self.assertIn("8 gpu on 1 host (8 a host)", got["facts"]["devices"])
        self.assertIn("79.6 GiB a device, 71.7 GiB usable (10% kept back)", got["facts"]["devices"])
        self.assertIn("llama-2-70b: 68,976,648,192 parameters", got["facts"]["model"])
        # inference: the weights, the activations without rematerialization and the KV cache, each with its formula
        self.assertEqual([row[0] for row in got["memory"]], ["weights", "activations", "kv_cache"])
        for term, exact, size, formula in got["memory"]:
            self.assertEqual(exact, f"{doc['memory'][term]['bytes']:,}")
            self.assertRegex(size, r"^\d+(\.\d)? (B|KiB|MiB|GiB)$")
            self.assertEqual(formula, doc["memory"][term]["formula"])
        total = self.browser.eval("[...document.querySelectorAll('#plan-memory tfoot td')].map(c => c.textContent)")
        self.assertEqual(total[0], f"{doc['memory']['total_bytes']:,}")
        self.assertEqual(total[1], "68.0 GiB")
        self.assertIn(f"of 71.7 GiB usable (usable_bytes {doc['memory']['usable_bytes']:,}) fits", total[2])
        self.assertEqual(sum(doc["memory"][t]["bytes"] for t in ("weights", "activations", "kv_cache")),
                         doc["memory"]["total_bytes"])
        # every other mesh, with why it lost, folded away
        self.assertFalse(got["rejected_open"])
        self.assertEqual(len(got["rejected"]), len(doc["rejected"]))
        self.assertEqual(got["rejected"][0][:3], ["data 2 × fsdp 1 × tensor 4 × expert 1", "fits", "34.0 GiB"])
        self.assertIn("more tensor parallelism", got["rejected"][0][3])
        self.assertIn(["data 1 × fsdp 8 × tensor 1 × expert 1", "no", "–"],
                      [r[:3] for r in got["rejected"]])
        self.assertIsNone(got["env_text"])  # one host: no environment to export
        self.assertEqual(self.shown_fields(), ["model", "mode", "dtype", "seq_len", "per_device_batch",
                                               "global_batch", "devices", "hosts", "memory_bytes", "flash_attention"])

    def test_2_training_does_not_fit_and_says_what_would(self):
        got = self.plan(model="llama-2-70b", mode="train")
        self.assertEqual(got["sent"], {"model": "llama-2-70b", "mode": "train"})
        doc = self.api(got["sent"])
        self.assertFalse(doc["fits"])
        self.assertEqual(got["fits"], "does not fit")
        self.assertIn("bad", got["fits_class"])
        self.assertIn("needs 129.1 GiB of 71.7 GiB usable (57.4 GiB short)", got["result"])
        self.assertEqual(got["mesh"], {})
        self.assertEqual(got["facts"]["mesh"], "none fits")
        self.assertEqual(got["facts"]["batch"], "–")
        self.assertIn("train · bf16 · seq_len 2048 · adam, mixed precision · remat auto", got["facts"]["work"])
        # what would: 16 GPUs first (two hosts of eight), or pure bf16 training
        self.assertEqual([k for k, _ in got["suggestions"]], [s["kind"] for s in doc["suggestions"]])
        self.assertEqual(got["suggestions"][0][0], "devices")
        self.assertIn("devices 16 16 GPUs (2 hosts of 8): data 1 x fsdp 8 x tensor 2", got["suggestions"][0][1])
        self.assertIn(("dtype", "dtype bf16 " + next(s["text"] for s in doc["suggestions"] if s["kind"] == "dtype")),
                      [tuple(x) for x in got["suggestions"]])
        # the closest mesh's memory: training's terms, the activations as full rematerialization counts them
        self.assertIn("closest mesh", got["caption"])
        self.assertEqual(doc["memory"]["remat"], "full")
        self.assertEqual([row[0] for row in got["memory"]], ["weights", "gradients", "optimizer", "activations_full"])
        for term, exact, _, formula in got["memory"]:
            self.assertEqual(exact, f"{doc['memory'][term]['bytes']:,}")
            self.assertEqual(formula, doc["memory"][term]["formula"])
        self.assertIn("129.1 GiB", self.browser.eval("document.querySelector('#plan-memory tfoot').textContent"))
        self.assertIn("does not fit", self.browser.eval("document.querySelector('#plan-memory tfoot').textContent"))
        self.assertEqual(len(got["rejected"]), len(doc["rejected"]))
        self.assertEqual(self.shown_fields(), ["model", "mode", "optimizer", "remat", "dtype", "seq_len",
                                               "per_device_batch", "global_batch", "devices", "hosts",
                                               "memory_bytes", "mixed_precision", "flash_attention"])

    def test_3_two_hosts_fit_and_give_the_environment(self):
        got = self.plan(model="llama-2-70b", mode="train", hosts=2, flash_attention=True, mixed_precision=True)
        self.assertEqual(got["sent"], {"model": "llama-2-70b", "mode": "train", "hosts": 2, "flash_attention": True})
        self.assertEqual(got["fits"], "fits")
        self.assertEqual(got["mesh"], {"data": 1, "fsdp": 16, "tensor": 1, "expert": 1})
        self.assertIn("16 gpu on 2 hosts (8 a host)", got["facts"]["devices"])
        self.assertEqual(got["facts"]["batch"], "1 per device, 16 in all")
        self.assertEqual(got["env"], "export JAX_COORDINATOR_ADDRESS='llama-train-0.llama:8476'\n"
                                     "export JAX_NUM_PROCESSES='2'\nexport JAX_PROCESS_ID='1'")
        self.assertIn("source k8s", got["env_text"])
        self.assertEqual(got["env_link"], "/plan?model=llama-2-70b&mode=train&hosts=2&flash_attention=true&format=env")
        lines = self.browser.eval("fetch(document.getElementById('plan-env-link').href).then(r => r.text())")
        self.assertEqual(lines, self.server.get(got["env_link"]).text)
        self.assertIn("export JAX_PROCESS_ID='1'", lines)
        # a preset's absence asks for a parameter count instead
        got = self.plan(model="", params="6.7B", dtype="f16", per_device_batch=4, devices="gpu:0,gpu:1")
        self.assertEqual(got["sent"], {"params": "6.7B", "dtype": "f16", "per_device_batch": 4,
                                       "devices": "gpu:0,gpu:1"})
        # a count without a shape leaves the activations and the KV cache unknown: whether it fits cannot be said
        self.assertEqual(got["fits"], "cannot judge")
        self.assertIn("cannot judge whether it fits", got["result"])
        self.assertIn("params: 6,700,000,000 parameters", got["facts"]["model"])
        self.assertEqual(got["facts"]["batch"], "–")
        got = self.plan(model="llama-2-7b", memory_bytes="16GiB")
        self.assertEqual(got["sent"], {"model": "llama-2-7b", "memory_bytes": 16 << 30})
        self.assertIn("16.0 GiB a device", got["facts"]["devices"])

    def test_4_a_refusal_shows_at_its_field(self):
        b = self.browser
        got = self.plan(model="llama-2-70b", devices="H999x8")
        self.assertEqual(list(got["errors"]), ["plan-error-devices"])
        self.assertTrue(got["errors"]["plan-error-devices"].startswith("$.devices: the spec table has no GPU 'H999'"),
                        got["errors"])
        self.assertEqual(got["invalid"], [["devices", "plan-error-devices"]])
        self.assertEqual(got["focused"], "devices")
        self.assertIn("Not planned", got["result"])
        # a device id of no device here (404, `device`) is devices' too
        got = self.plan(model="llama-2-70b", devices="gpu:99")
        self.assertEqual(got["errors"],
                         {"plan-error-devices": "no device 'gpu:99' on this host; GET /devices lists them"})
        # a choice the API does not take: the detail, then the choices it does
        b.eval("document.querySelector('#plan-form [name=mode]').append(new Option('serve')); true")
        try:
            got = self.plan(model="llama-2-70b", mode="serve")
        finally:
            b.eval("[...document.querySelectorAll('#plan-form [name=mode] option')]"
                   ".find(o => o.value === 'serve').remove(); true")
        # the detail, then its accepted line
        self.assertEqual(got["errors"],
                         {"plan-error-mode": "$.mode: 'serve' is not one of infer, trainaccepted: infer, train"})
        # fields that do not go together: the API names the one at fault
        got = self.plan(model="llama-2-70b", per_device_batch=2, global_batch=16)
        self.assertEqual(list(got["errors"]), ["plan-error-global_batch"])
        # what the form cannot send is refused before it asks
        sent = b.eval("window.__planSent.length")
        got = self.plan(model="llama-2-70b", memory_bytes="lots")
        self.assertEqual(got["errors"], {"plan-error-memory_bytes":
                                         "memory_bytes: 'lots' is not a size such as 85899345920, 80GiB or 40GB"})
        self.assertEqual(b.eval("window.__planSent.length"), sent)
        # the next plan clears them
        got = self.plan(model="llama-2-7b")
        self.assertEqual((got["errors"], got["invalid"], got["fits"]), ({}, [], "fits"))

    def test_5_nothing_overflows_sideways(self):
        b = self.browser
        self.plan(model="llama-2-70b", mode="train")
        b.eval("document.getElementById('plan-rejected').open = true; true")
        for width, height in ((1400, 900), (1000, 800), (420, 800)):
            b.set_viewport(width, height)
            b.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
            sizes = b.eval("""(() => {
                const d = document.documentElement, p = document.getElementById('plan');
                return { page: [d.scrollWidth, d.clientWidth], plan: [p.scrollWidth, p.clientWidth] };
            })()""")
            self.assertLessEqual(sizes["page"][0], sizes["page"][1], (width, sizes))
            self.assertLessEqual(sizes["plan"][0], sizes["plan"][1], (width, sizes))
        b.set_viewport(1400, 900)
        # at 1400 px the plan spans the page, below the charts and "Run a job"
        boxes = b.eval("""(() => {
            const r = id => document.getElementById(id).getBoundingClientRect();
            return { plan: [r('plan').top, r('plan').width], run: r('run-section').bottom,
                     main: document.querySelector('main').clientWidth };
        })()""")
        self.assertGreaterEqual(boxes["plan"][0], boxes["run"])
        self.assertGreater(boxes["plan"][1], 0.9 * boxes["main"])

    def test_6_the_form_and_what_it_reads_are_the_contracts(self):
        """The form's choices are the contract's (the presets, the modes, remat), its defaults the API's; every member
        the page read of POST /plan's answers, plans and problems alike, is declared."""
        body = contract()["paths"]["/plan"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        params = {p["name"]: p["schema"] for p in contract()["paths"]["/plan"]["get"]["parameters"]}
        options = self.browser.eval("""Object.fromEntries([...document.querySelectorAll('#plan-form select')].map(s =>
            [s.name, { values: [...s.options].map(o => o.value), default: s.dataset.default || null }]))""")
        self.assertEqual(options["model"]["values"], [m for m in body["properties"]["model"]["enum"] if m] + [""])
        for name in ("mode", "optimizer", "remat", "dtype"):
            self.assertLessEqual(set(options[name]["values"]), set(body["properties"][name]["enum"]), name)
            self.assertEqual(options[name]["default"], params[name]["default"], name)
        self.assertEqual(options["mode"]["values"], params["mode"]["enum"])
        self.assertEqual(options["remat"]["values"], params["remat"]["enum"])
        self.assertEqual(options["dtype"]["values"], params["dtype"]["enum"])
        names = self.browser.eval("[...document.querySelectorAll('#plan-form [name]')].map(c => c.name)")
        self.assertLessEqual(set(names), set(body["properties"]))

        self.plan(model="llama-2-70b", seq_len=4096)
        self.plan(model="llama-2-70b", mode="train")
        self.plan(model="llama-2-70b", mode="train", hosts=2)
        self.plan(model="llama-2-70b", devices="H999x8")
        self.plan(model="llama-2-70b", devices="gpu:99")
        answers = assert_reads_declared(self, self.browser.eval("window.__apiReads"))
        for status in (200, 400, 404):
            self.assertIn(("POST", "/plan", status), answers)

    def test_7_no_console_errors(self):
        """None but Chromium's note of each refusal the tests asked for (a 400 or 404 answer to POST /plan)."""
        time.sleep(0.2)
        refused = re.compile(r"^Failed to load resource: the server responded with a status of 40[04] ")
        self.assertEqual([e for e in self.browser.errors() if not refused.match(e)], [])


class Token(unittest.TestCase):
    """With serve --token, the page has a place for the token and sends it: the job form runs a job with it, and
    without it says what is needed instead of a bare 401."""

    @classmethod
    def setUpClass(cls):
        if chromium_path() is None:
            raise AssertionError("chromium is not installed (make test installs it)")
        cls.server = Server(args=["--token", "s3cret-token"]).start()
        cls.browser = Browser(width=1400, height=900)
        cls.browser.open(f"http://127.0.0.1:{cls.server.port}/")

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.server.stop()
        cls.server.tmp.cleanup()

    def submit(self):
        b = self.browser
        b.eval("{ const k = document.querySelector('#job-form [name=kernel]');"
               " k.value = 'saxpy'; k.dispatchEvent(new Event('change')); }"
               "document.querySelector('#job-form [name=n]').value = '64';"
               "document.getElementById('job-result').textContent = '';"
               "document.querySelector('#job-form button[type=submit]').click(); true")
        b.wait_until("document.getElementById('job-result').textContent.includes('{')")
        return b.eval("document.getElementById('job-result').textContent")

    def test_the_form_sends_the_token_given(self):
        b = self.browser
        b.eval("{ const t = document.getElementById('token'); t.value = ''; t.dispatchEvent(new Event('change')); }"
               " true")
        text = self.submit()
        self.assertIn("enter it in the token field", text)
        self.assertIn("UNAUTHORIZED", text)
        b.eval("{ const t = document.getElementById('token'); t.value = 's3cret-token';"
               " t.dispatchEvent(new Event('change')); } true")
        text = self.submit()
        self.assertIn('"state": "succeeded"', text)
        # kept for the tab: a reload still has it
        self.assertEqual(b.eval("sessionStorage.getItem('acceld-token')"), "s3cret-token")


if __name__ == "__main__":
    unittest.main()
