"""The Islet HTTP client: standard library only (urllib, json), so Debian's python3 is enough."""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, Iterator, List, Optional, Union

from .errors import IsletConnectionError, IsletError, RunTimeoutError
from .sse import Event, parse_events

FINAL_STATUSES = ("Completed", "Failed", "Cancelled")

# Python spellings of the request's camelCase fields; anything else is sent as given.
_FIELD_NAMES = {
    "session_id": "sessionId",
    "turn_id": "turnId",
    "call_id": "callId",
    "timeout_ms": "timeoutMs",
}

# Seconds a socket may stay silent on an event stream: the gateway sends a heartbeat every 15 s.
_STREAM_IDLE_SECONDS = 60.0


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _problem_from(status: int, reason: str, raw: bytes) -> IsletError:
    try:
        body = json.loads(raw.decode("utf-8")) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("type"), str):
        return IsletError(
            int(body.get("status", status)),
            body["type"],
            str(body.get("title", reason)),
            body.get("detail") if isinstance(body.get("detail"), str) else None,
            body,
        )
    text = raw.decode("utf-8", "replace")[:500] if raw else None
    return IsletError(status, "about:blank", reason or f"HTTP {status}", text or None, {})


class Client:
    """A client for one Islet gateway.

    ``Client(base_url, api_key)``; either may be left out to read ``ISLET_URL`` /
    ``ISLET_API_KEY``. ``client.run(code=..., description=...)`` returns the finished code-run
    record; ``client.runs``, ``client.decisions`` and ``client.files`` hold the rest.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        url = base_url if base_url is not None else os.environ.get("ISLET_URL")
        key = api_key if api_key is not None else os.environ.get("ISLET_API_KEY")
        if not url:
            raise ValueError("no gateway URL: pass base_url or set ISLET_URL (npm start prints it)")
        if not key:
            raise ValueError("no API key: pass api_key or set ISLET_API_KEY (npm start prints it)")
        self.base_url = url.rstrip("/")
        self._key = key
        self.timeout = timeout
        self.runs = Runs(self)
        self.decisions = Decisions(self)
        self.files = Files(self)

    def __repr__(self) -> str:
        # Never the key.
        return f"islet.Client({self.base_url!r})"

    # -- transport -----------------------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        *,
        body: Union[bytes, Dict[str, Any], None] = None,
        headers: Optional[Dict[str, str]] = None,
        query: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
    ):
        """Sends a request and returns the open response; a refusal raises ``IsletError``."""
        url = self.base_url + path
        if query:
            pairs = {k: str(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        h = {"Authorization": f"Bearer {self._key}", "Accept": "application/json"}
        data: Optional[bytes] = None
        if isinstance(body, dict):
            data = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        elif body is not None:
            data = body
            h["Content-Type"] = "application/octet-stream"
        h.update(headers or {})
        request = urllib.request.Request(url, data=data, headers=h, method=method)
        try:
            return urllib.request.urlopen(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as err:
            with err:
                raise _problem_from(err.code, str(err.reason), err.read()) from None
        except urllib.error.URLError as err:
            raise IsletConnectionError(url, str(err.reason)) from None
        except (socket.timeout, TimeoutError, ConnectionError) as err:
            raise IsletConnectionError(url, str(err) or type(err).__name__) from None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Any API call; returns the parsed JSON answer (``None`` for an empty one)."""
        with self._open(method, path, **kwargs) as res:
            raw = res.read()
        return json.loads(raw.decode("utf-8")) if raw else None

    # -- the one-call path ---------------------------------------------------------------------

    def run(
        self,
        code: str,
        description: str,
        *,
        wait: int = 30,
        timeout: Optional[float] = None,
        idempotency_key: Optional[str] = None,
        **options: Any,
    ) -> Dict[str, Any]:
        """Runs a program and returns its final code-run record (status Completed, Failed or Cancelled).

        ``options`` are the run request's other fields (``style``, ``timeoutMs``/``timeout_ms``,
        ``sessionId``/``session_id``, ``connections``, ``sandbox_permissions``, ``justification``).
        The request asks the gateway to hold the answer up to ``wait`` seconds (``Prefer: wait``);
        a run still going then (waiting for a decision, say) is followed on its event stream until
        it ends, for at most ``timeout`` seconds in all (``None``: as long as it takes). An
        Idempotency-Key (generated unless given) makes the submit safe to retry after a dropped
        connection: the same run is answered, never a second one.
        """
        started = time.monotonic()
        key = idempotency_key or f"py-{uuid.uuid4()}"
        record = None
        for attempt in range(3):
            try:
                record = self.runs.submit(code, description, wait=wait, idempotency_key=key, **options)
                break
            except IsletConnectionError:
                if attempt == 2:
                    raise
                time.sleep(0.5 * (attempt + 1))
        assert record is not None
        if record.get("status") in FINAL_STATUSES:
            return record
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
        return self.runs.wait(record["id"], timeout=left)

    def events(self, run_id: str, last_event_id: Optional[str] = None) -> Iterator[Event]:
        """The run's Server-Sent Events (see ``Runs.events``)."""
        return self.runs.events(run_id, last_event_id=last_event_id)


class Runs:
    """Code runs: submit, read, list, cancel, follow."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def submit(
        self,
        code: str,
        description: str,
        *,
        wait: int = 0,
        idempotency_key: Optional[str] = None,
        **options: Any,
    ) -> Dict[str, Any]:
        """``POST /v1/runs``: the record as the gateway answered it (final only if it ended within ``wait``)."""
        body: Dict[str, Any] = {"code": code, "description": description}
        for name, value in options.items():
            body[_FIELD_NAMES.get(name, name)] = value
        headers: Dict[str, str] = {}
        if wait > 0:
            headers["Prefer"] = f"wait={int(wait)}"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        return self._c.request(
            "POST", "/v1/runs", body=body, headers=headers, timeout=self._c.timeout + max(wait, 0)
        )

    def get(self, run_id: str) -> Dict[str, Any]:
        """``GET /v1/code-runs/{id}``."""
        return self._c.request("GET", f"/v1/code-runs/{_quote(run_id)}")

    def cancel(self, run_id: str) -> Dict[str, Any]:
        """``POST /v1/code-runs/{id}/cancel``: the record after the cancel was taken."""
        return self._c.request("POST", f"/v1/code-runs/{_quote(run_id)}/cancel")

    def list(self, session_id: str, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        """One page of a session's runs: ``{"items": [...], "nextCursor": str | None}`` (needs sessions.read)."""
        return self._c.request(
            "GET",
            f"/v1/sessions/{_quote(session_id)}/code-runs",
            query={"cursor": cursor, "limit": limit},
        )

    def events(self, run_id: str, last_event_id: Optional[str] = None) -> Iterator[Event]:
        """A generator of the run's events (``Event(id, event, data)``), from the first (or after
        ``last_event_id``) to the ``end`` event, where it stops. A broken connection raises
        ``IsletConnectionError``; pass the last ``Event.id`` seen to resume exactly after it.
        """
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        res = self._c._open(
            "GET",
            f"/v1/code-runs/{_quote(run_id)}/events",
            headers=headers,
            timeout=_STREAM_IDLE_SECONDS,
        )
        url = res.geturl()
        try:
            for event in parse_events(res):
                yield event
                if event.event == "end":
                    return
        except (socket.timeout, TimeoutError, ConnectionError, OSError) as err:
            raise IsletConnectionError(url, str(err) or type(err).__name__) from None
        finally:
            res.close()

    def wait(self, run_id: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Follows the run until it is final and returns the record.

        Reads the event stream (resuming after a dropped connection); when the tenant has no
        stream slot free (429) it polls the record instead. ``timeout`` seconds in all, else
        ``RunTimeoutError`` (the run itself goes on).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        last: Optional[str] = None
        while True:
            record = self.get(run_id)
            if record.get("status") in FINAL_STATUSES:
                return record
            if deadline is not None and time.monotonic() >= deadline:
                raise RunTimeoutError(run_id, timeout or 0.0, record)
            try:
                for event in self.events(run_id, last_event_id=last):
                    last = event.id or last
                    if deadline is not None and time.monotonic() >= deadline:
                        break
            except IsletConnectionError:
                time.sleep(0.5)
            except IsletError as err:
                if err.status != 429:
                    raise
                time.sleep(0.5)


class Decisions:
    """Decisions a person answers: wider access for a run, or an App call whose policy asks."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self) -> List[Dict[str, Any]]:
        """The tenant's pending decisions (``GET /v1/decisions``, decisions scope). Each has
        ``id`` (``<run>:<index>``), ``capability``, ``code`` (``run``, ``index``, the program) and,
        for a wider-access request, ``justification``."""
        return self._c.request("GET", "/v1/decisions")["items"]

    def answer(
        self,
        decision: Union[str, Dict[str, Any]],
        allow: bool,
        *,
        input: Any = None,
        scope: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Answers one decision, once (a second answer is a 409 ``IsletError``).

        ``decision`` is an item of ``list()`` or its id ``<run>:<index>``; ``scope="session"``
        allows later calls of the same tool in the session too (App calls only).
        """
        if isinstance(decision, dict):
            run_id, index = str(decision["code"]["run"]), int(decision["code"]["index"])
        else:
            run_id, _, idx = decision.rpartition(":")
            if not run_id:
                raise ValueError(f"not a decision id (<run>:<index>): {decision!r}")
            index = int(idx)
        body: Dict[str, Any] = {"index": index, "allow": bool(allow)}
        if input is not None:
            body["input"] = input
        if scope is not None:
            body["scope"] = scope
        return self._c.request("POST", f"/v1/code-runs/{_quote(run_id)}/decisions", body=body)


class Files:
    """A session's workspace files (the files programs see through ``apps.files``)."""

    def __init__(self, client: Client) -> None:
        self._c = client

    @staticmethod
    def _path(session_id: str, path: str) -> str:
        parts = "/".join(_quote(p) for p in path.strip("/").split("/"))
        return f"/v1/sessions/{_quote(session_id)}/files/{parts}"

    def put(self, session_id: str, path: str, data: Union[bytes, str]) -> Dict[str, Any]:
        """Writes a file (str is written as UTF-8): ``{"path", "sizeBytes"}``."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return self._c.request("PUT", self._path(session_id, path), body=raw)

    def get(self, session_id: str, path: str) -> bytes:
        """A file's bytes."""
        with self._c._open("GET", self._path(session_id, path), headers={"Accept": "*/*"}) as res:
            return res.read()

    def list(
        self,
        session_id: str,
        *,
        prefix: Optional[str] = None,
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """One page in path order: ``{"files": [{"path", "sizeBytes", "modifiedAtMs"}], "nextCursor"?}``."""
        return self._c.request(
            "GET",
            f"/v1/sessions/{_quote(session_id)}/files",
            query={"prefix": prefix, "cursor": cursor, "limit": limit},
        )

    def delete(self, session_id: str, path: str) -> None:
        """Removes a file (a missing one is a 404 ``IsletError``)."""
        self._c.request("DELETE", self._path(session_id, path))
