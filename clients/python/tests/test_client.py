"""The Python client against a running Islet (ISLET_URL, ISLET_API_KEY: `npm start` prints both).

`npm test` runs this file on a stack it starts (test/clients/python-client.test.ts):
    ISLET_URL=… ISLET_API_KEY=… python3 -m unittest discover -s clients/python/tests -v
"""

from __future__ import annotations

import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import islet  # noqa: E402

URL = os.environ.get("ISLET_URL", "")
KEY = os.environ.get("ISLET_API_KEY", "")
PROBLEMS = "https://islet.dev/problems/"


def client() -> islet.Client:
    if not URL or not KEY:
        raise unittest.SkipTest("set ISLET_URL and ISLET_API_KEY (npm start prints them)")
    return islet.Client(URL, KEY)


def pending_decision(c: islet.Client, run_id: str, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for d in c.decisions.list():
            if d["code"]["run"] == run_id:
                return d
        time.sleep(0.2)
    raise AssertionError(f"no pending decision for run {run_id}")


def wider_access_run(c: islet.Client) -> dict:
    return c.runs.submit(
        "return 1",
        "Ask for workspace write access",
        sandbox_permissions="workspace-write",
        justification="The test needs to see a decision",
    )


class RunTest(unittest.TestCase):
    def test_run_returns_the_final_record(self) -> None:
        record = client().run(
            code='console.log("hello from python"); return 6 * 7',
            description="Print a greeting and multiply",
        )
        self.assertEqual(record["status"], "Completed")
        self.assertEqual(record["result"]["_tag"], "Completed")
        self.assertEqual(record["result"]["value"], 42)
        self.assertIn("hello from python", record["text"])

    def test_run_follows_the_stream_when_the_answer_is_not_held(self) -> None:
        # wait=0: the gateway answers 202 at once; run() follows the events to the end.
        record = client().run(code="return [1, 2, 3].map((n) => n * 2)", description="Double three numbers", wait=0)
        self.assertEqual(record["status"], "Completed")
        self.assertEqual(record["result"]["value"], [2, 4, 6])

    def test_a_failing_program_is_a_failed_record_not_an_exception(self) -> None:
        record = client().run(code='throw new Error("boom")', description="Throw an error on purpose")
        self.assertEqual(record["status"], "Failed")
        self.assertIn("boom", record["text"])

    def test_snake_case_options_reach_the_request(self) -> None:
        session = f"py-{uuid.uuid4().hex[:12]}"
        record = client().run(code="return 1", description="Run in a named session", session_id=session)
        self.assertEqual(record["session"], session)
        page = client().runs.list(session)
        self.assertEqual([r["id"] for r in page["items"]], [record["id"]])


class ErrorTest(unittest.TestCase):
    def test_a_refused_request_is_an_islet_error_with_the_problem(self) -> None:
        with self.assertRaises(islet.IsletError) as caught:
            client().run(code="return 1", description="Ask for no deadline", timeoutMs=-5)
        err = caught.exception
        self.assertEqual(err.status, 400)
        self.assertEqual(err.type, PROBLEMS + "validation")
        self.assertTrue(err.title)
        self.assertEqual(err.problem["status"], 400)

    def test_an_unknown_run_is_404(self) -> None:
        with self.assertRaises(islet.IsletError) as caught:
            client().runs.get("no-such-run")
        self.assertEqual(caught.exception.status, 404)
        self.assertEqual(caught.exception.type, PROBLEMS + "not-found")

    def test_a_wrong_key_is_401(self) -> None:
        client()
        with self.assertRaises(islet.IsletError) as caught:
            islet.Client(URL, "isk_wrong").runs.get("x")
        self.assertEqual(caught.exception.status, 401)
        self.assertEqual(caught.exception.type, PROBLEMS + "unauthorized")

    def test_an_unreachable_gateway_names_the_url(self) -> None:
        with self.assertRaises(islet.IsletConnectionError) as caught:
            islet.Client("http://127.0.0.1:9", "k", timeout=5).runs.get("x")
        self.assertIsNone(caught.exception.status)
        self.assertIn("http://127.0.0.1:9/v1/code-runs/x", str(caught.exception))

    def test_missing_configuration_says_what_to_set(self) -> None:
        with self.assertRaises(ValueError) as caught:
            islet.Client("", "k")
        self.assertIn("ISLET_URL", str(caught.exception))


class StreamTest(unittest.TestCase):
    def test_events_end_with_the_final_status_and_resume_after_an_id(self) -> None:
        c = client()
        record = c.run(code='console.log("a"); return 2', description="Print and return two")
        events = list(c.events(record["id"]))
        self.assertGreaterEqual(len(events), 2)
        self.assertEqual(events[-1].event, "end")
        self.assertEqual(events[-1].data["status"], "Completed")
        self.assertTrue(all(e.id for e in events))
        rest = list(c.runs.events(record["id"], last_event_id=events[0].id))
        self.assertEqual([e.id for e in rest], [e.id for e in events[1:]])


class DecisionTest(unittest.TestCase):
    def test_allowing_wider_access_lets_the_run_finish(self) -> None:
        c = client()
        submitted = wider_access_run(c)
        decision = pending_decision(c, submitted["id"])
        self.assertEqual(decision["capability"]["action"], "sandbox.escalate")
        self.assertEqual(decision["justification"], "The test needs to see a decision")
        c.decisions.answer(decision, allow=True)
        record = c.runs.wait(submitted["id"], timeout=60)
        self.assertEqual(record["status"], "Completed")
        with self.assertRaises(islet.IsletError) as again:
            c.decisions.answer(decision["id"], allow=False)
        self.assertEqual(again.exception.status, 409)

    def test_cancel_ends_a_waiting_run(self) -> None:
        c = client()
        submitted = wider_access_run(c)
        pending_decision(c, submitted["id"])
        c.runs.cancel(submitted["id"])
        record = c.runs.wait(submitted["id"], timeout=60)
        self.assertEqual(record["status"], "Cancelled")


class FilesTest(unittest.TestCase):
    def test_put_list_get_delete_and_a_program_reads_the_file(self) -> None:
        c = client()
        session = f"py-{uuid.uuid4().hex[:12]}"
        self.assertEqual(c.files.put(session, "notes/a.txt", "héllo"), {"path": "notes/a.txt", "sizeBytes": 6})
        listed = c.files.list(session)
        self.assertEqual([f["path"] for f in listed["files"]], ["notes/a.txt"])
        self.assertEqual(c.files.get(session, "notes/a.txt"), "héllo".encode("utf-8"))
        record = c.run(
            code='return (await apps.files.read({ path: "notes/a.txt" })).content',
            description="Read a workspace file",
            session_id=session,
        )
        self.assertEqual(record["result"]["value"], "héllo")
        c.files.delete(session, "notes/a.txt")
        with self.assertRaises(islet.IsletError) as caught:
            c.files.get(session, "notes/a.txt")
        self.assertEqual(caught.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
