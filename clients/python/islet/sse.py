"""A Server-Sent Events reader (the WHATWG event-stream format) over a file-like HTTP response."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Iterator, List, NamedTuple, Optional


class Event(NamedTuple):
    """One event: ``id`` (pass it back as ``last_event_id`` to resume), ``event`` (its type:
    ``status``, ``call``, ``decision.needed``, ``end``…) and ``data`` (the parsed JSON, or the text
    when it is not JSON)."""

    id: Optional[str]
    event: str
    data: Any


def _data(lines: List[str]) -> Any:
    text = "\n".join(lines)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_events(stream: BinaryIO) -> Iterator[Event]:
    """Yields each dispatched event; comments (heartbeats) and ``retry:`` are skipped."""
    event_id: Optional[str] = None
    event_type = ""
    data: List[str] = []
    while True:
        raw = stream.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield Event(event_id, event_type or "message", _data(data))
            event_type, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event_type = value
        elif field == "id" and "\0" not in value:
            event_id = value
