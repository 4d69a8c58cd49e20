"""An answered job is a recorded job: clients load the service with small jobs from several threads, acceld is
killed with SIGKILL at a random moment and restarted on the same database (which replays the journal of records
answered but not yet committed), and every job a client saw answered 200 is in the history with the state it was
answered with; no job stays running and the file is sound.

CRASH_ROUNDS (default 3) sets the rounds; bench/crash.sh runs many more.
"""
import functools
import http.client
import json
import os
import random
import signal
import sqlite3
import tempfile
import threading
import time
import unittest

from harness import Server, free_port, until

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "3"))
CLIENTS = int(os.environ.get("CRASH_CLIENTS", "6"))
ARGS = ("--access-log", "false", "--log-level", "warn")
BODY = json.dumps({"kernel": "dot", "n": 256, "generate": {"seed": 1}, "wait": True})


def client(port, stop, answered, errors):
    """POSTs jobs on one keep-alive connection until stop is set or the server dies; keeps (id, state) of 200s."""
    conn = None
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/run", BODY, {"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status == 200:
                doc = json.loads(body)
                answered.append((doc["id"], doc["state"], doc.get("recorded")))
            elif r.status not in (429, 503):
                errors.append((r.status, body[:200]))
        except (OSError, http.client.HTTPException):
            # the kill: whatever was in flight was never answered
            if conn is not None:
                conn.close()
            conn = None
            if stop.is_set():
                break
            time.sleep(0.01)
    if conn is not None:
        conn.close()


wait = functools.partial(until, timeout=10)


def unfinished(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()[0]


class Crash(unittest.TestCase):
    def test_answered_jobs_survive_sigkill(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        db = os.path.join(tmp.name, "acceld.db")
        rng = random.Random(os.environ.get("CRASH_SEED") or None)
        total = journaled = 0
        for rnd in range(ROUNDS):
            s = Server(args=ARGS, db=db, port=free_port()).start()
            try:
                answered, errors = [], []
                stop = threading.Event()
                threads = [threading.Thread(target=client, args=(s.port, stop, answered, errors), daemon=True)
                           for _ in range(CLIENTS)]
                for t in threads:
                    t.start()
                wait(lambda: len(answered) > 0)
                time.sleep(rng.uniform(0.1, 1.0))
                s.proc.send_signal(signal.SIGKILL)
                s.proc.wait(10)
                stop.set()
                for t in threads:
                    t.join(15)
            finally:
                s.stop(signal.SIGKILL)
                s.tmp.cleanup()
            self.assertEqual(errors, [], f"round {rnd}")
            self.assertGreater(len(answered), 0)
            total += len(answered)
            # every answer said the record was durable
            self.assertEqual([a for a in answered if a[2] is not True], [], f"round {rnd}")
            # what was answered but not committed yet waits in the journal beside the database
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
                before = dict(c.execute("SELECT id, state FROM jobs"))
            journaled += len([a for a in answered if before.get(a[0]) != a[1]])
            # the restart replays the journal, marks what the kill cut short interrupted, and the API reads the
            # answered jobs back
            with Server(args=ARGS, db=db, port=free_port()) as s2:
                wait(lambda: s2.get("/readyz").status == 200)
                wait(lambda: unfinished(db) == 0)
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
                    self.assertEqual(c.execute("PRAGMA integrity_check").fetchone()[0], "ok")
                    have = dict(c.execute("SELECT id, state FROM jobs"))
                lost = [a for a in answered if have.get(a[0]) != a[1]]
                self.assertEqual(lost[:5], [],
                                 f"round {rnd}: {len(lost)} of {len(answered)} answered jobs not in history")
                conn = s2.conn()
                for job_id, state, _ in rng.sample(answered, min(100, len(answered))):
                    r = s2.request("GET", f"/run/{job_id}", conn=conn)
                    self.assertEqual(r.status, 200, r)
                    self.assertEqual(r.json()["state"], state)
                    self.assertEqual(r.json()["source"], "history")
                conn.close()
            s2.tmp.cleanup()
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            self.assertEqual(c.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        # the kills found answered jobs that only the journal held: its replay is what kept them
        self.assertGreater(journaled, 0)
        print(f"crash: {ROUNDS} rounds, {total} answered jobs, none lost ({journaled} kept by the journal)",
              flush=True)


if __name__ == "__main__":
    unittest.main()
