"""Shared constants and helpers of the guard tests (fixtures are in ``conftest.py``)."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import unquote_plus

SERVERS = Path(__file__).with_name("echo_servers.py")

#: what the application plants in baggage: identity (incl. one key it configures) and one plain entry
PLANTED = {
    "gen_ai.conversation.id": "app-conv",
    "session.id": "app-session",
    "user.id": "alice",
    "thread_id": "app-thread",
    "agent_identity.execution.id": "app-exec",
    "app.customer_ref": "cust-7",
    "tenant": "acme",
}
APP_IDENTITY_KEYS = ["app.customer_ref"]
IDENTITY_VALUES = {v for k, v in PLANTED.items() if k != "tenant"}


def parse_baggage(value: str | None) -> dict[str, str]:
    """W3C baggage header -> {key: value} (properties dropped)."""
    out = {}
    for member in (value or "").split(","):
        head = member.split(";", 1)[0]
        if "=" in head:
            k, v = head.split("=", 1)
            out[unquote_plus(k.strip())] = unquote_plus(v.strip())
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_no_identity(received: dict) -> None:
    """Nothing identity-bearing anywhere in what arrived (``_meta`` and headers)."""
    text = repr(received)
    leaked = [v for v in IDENTITY_VALUES if v in text]
    assert not leaked, f"identity reached the server: {leaked} in {received}"
