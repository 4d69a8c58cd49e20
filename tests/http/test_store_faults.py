"""The database failing never stops the HTTP service: unwritable, corrupt, locked and newer-schema files are
reported by /readyz while /livez answers; buffered samples are written once the database recovers; and SIGKILL
while writing leaves a sound file with every committed row."""
import datetime
import functools
import os
import signal
import sqlite3
import tempfile
import time
import unittest

from harness import Server, until

ARGS = ("--sample-interval", "100ms")


wait = functools.partial(until, timeout=20, interval=0.1)


def history_points(s):
    start = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=300)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    r = s.get("/history?device=cpu:0&step=0.1&start_time=" + start)
    return len(r.json()["series"][0]["points"]) if r.status == 200 else -1


class StoreFaults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def not_ready_because(self, s, text):
        r = s.get("/readyz")
        return r.status == 503 and text in r.json()["detail"]

    def test_unwritable_folder_then_recovery_writes_the_backlog(self):
        blocker = self.path("blocked")
        open(blocker, "w").close()
        with Server(args=ARGS, db=os.path.join(blocker, "a.db")) as s:
            wait(lambda: self.not_ready_because(s, "database"))
            self.assertEqual(s.get("/livez").status, 200)
            self.assertEqual(s.get("/devices").status, 200)
            self.assertEqual(s.get("/history?device=cpu:0").status, 503)
            time.sleep(1)
            os.unlink(blocker)
            os.mkdir(blocker)
            wait(lambda: s.get("/readyz").status == 200)
            # samples taken while the folder was missing were kept and written
            self.assertGreaterEqual(wait(lambda: history_points(s) >= 10 and history_points(s)), 10)

    def test_corrupt_file_is_reported(self):
        db = self.path("bad.db")
        with open(db, "wb") as f:
            f.write(b"not a database " * 1000)
        with Server(args=ARGS, db=db) as s:
            wait(lambda: self.not_ready_because(s, "not a database"))
            self.assertEqual(s.get("/livez").status, 200)
            self.assertEqual(s.get("/cost").status, 503)

    def test_newer_schema_is_refused(self):
        db = self.path("new.db")
        con = sqlite3.connect(db)
        con.execute("PRAGMA user_version = 99")
        con.close()
        with Server(args=ARGS, db=db) as s:
            wait(lambda: self.not_ready_because(s, "newer than this acceld knows"))
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 99)
        con.close()

    def test_locked_database_fails_writes_then_recovers(self):
        db = self.path("locked.db")
        with Server(args=ARGS, db=db) as s:
            wait(lambda: history_points(s) > 0)
            con = sqlite3.connect(db, isolation_level=None, timeout=10)
            con.execute("BEGIN EXCLUSIVE")
            try:
                wait(lambda: self.not_ready_because(s, "locked"))
                self.assertEqual(s.get("/livez").status, 200)
            finally:
                con.execute("COMMIT")
                con.close()
            wait(lambda: s.get("/readyz").status == 200)

    def test_sigkill_while_writing_leaves_a_sound_file(self):
        db = self.path("kill.db")
        s = Server(args=ARGS, db=db).start()
        try:
            committed = wait(lambda: history_points(s) >= 20 and history_points(s))
        finally:
            s.proc.send_signal(signal.SIGKILL)
            s.proc.wait()
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        rows = con.execute("SELECT count(*) FROM samples s JOIN devices d ON d.key = s.device "
                           "WHERE d.id = 'cpu:0'").fetchone()[0]
        self.assertGreaterEqual(rows, committed)
        con.close()
        # and the next start opens it as it is
        with Server(args=ARGS, db=db) as s2:
            self.assertEqual(s2.get("/readyz").status, 200)
            self.assertGreaterEqual(history_points(s2), committed)
        s.tmp.cleanup()


if __name__ == "__main__":
    unittest.main()
