"""Errors raised by the client: every refusal of the API is an RFC 9457 problem+json body."""

from __future__ import annotations

from typing import Any, Dict, Optional


class IsletError(Exception):
    """The API refused a request: ``status``, ``type``, ``title``, ``detail`` come from its problem+json.

    Branch on ``type`` (a stable URI such as ``https://islet.dev/problems/validation``), never on
    the text. ``problem`` is the whole body, extension members (``refusal``, ``retryAfterSeconds``…)
    included.
    """

    def __init__(
        self,
        status: Optional[int],
        type: str,
        title: str,
        detail: Optional[str] = None,
        problem: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.problem: Dict[str, Any] = problem if problem is not None else {}
        head = f"{status} {title}" if status is not None else title
        super().__init__(f"{head}: {detail}" if detail else head)


class IsletConnectionError(IsletError):
    """No HTTP answer at all: the gateway at ``url`` could not be reached (``reason`` says why)."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(
            None,
            "about:blank",
            "connection failed",
            f"could not reach {url}: {reason}",
        )


class RunTimeoutError(IsletError):
    """``Client.run``/``runs.wait`` gave up before the run reached a final status; the run goes on."""

    def __init__(self, run_id: str, seconds: float, record: Dict[str, Any]) -> None:
        self.run_id = run_id
        self.record = record
        super().__init__(
            None,
            "about:blank",
            "run not finished",
            f"run {run_id} was still {record.get('status')} after {seconds:g}s",
        )
