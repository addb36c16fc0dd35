"""CrewAI tests (run in ``.venv-crewai``: CrewAI pins pydantic < 2.13 and opentelemetry >= 1.45.1):
the real framework with an offline ``BaseLLM``, its telemetry off, and no connection leaving the
process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# CrewAI's anonymous telemetry (OTLP to its servers, a private provider) and its AMP tracing
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agno"))  # net_guard

import pytest

pytest.importorskip("crewai")

from net_guard import NetGuard


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every CrewAI test: a name lookup or connect to anything but loopback is refused and recorded."""
    guard = NetGuard()
    guard.install(monkeypatch)
    yield guard
    assert guard.attempts == [], f"network calls left the process: {guard.attempts}"
