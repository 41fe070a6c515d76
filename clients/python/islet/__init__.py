"""Islet's Python client: ``islet.Client(base_url, api_key).run(code=..., description=...)``.

Standard library only. See README.md in this directory.
"""

from .client import FINAL_STATUSES, Client, Decisions, Files, Runs
from .errors import IsletConnectionError, IsletError, RunTimeoutError
from .sse import Event

__all__ = [
    "Client",
    "Decisions",
    "Event",
    "FINAL_STATUSES",
    "Files",
    "IsletConnectionError",
    "IsletError",
    "Runs",
    "RunTimeoutError",
]
__version__ = "0.1.0"
