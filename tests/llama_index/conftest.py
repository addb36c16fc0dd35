"""LlamaIndex tests: real llama-index-core agent workflows on the offline model
(``examples/offline_llama_index.py``), and no connection leaving the process. LlamaIndex has no
telemetry of its own to switch off (no phone-home, no OpenTelemetry); every agent gets its model
explicitly, so ``Settings.llm``'s OpenAI default is never resolved, and the guard below proves it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agno"))  # net_guard

import pytest
from net_guard import NetGuard

pytest.importorskip("llama_index.core")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every LlamaIndex test: a name lookup or connect to anything but loopback is refused and recorded."""
    guard = NetGuard()
    guard.install(monkeypatch)
    yield guard
    assert guard.attempts == [], f"network calls left the process: {guard.attempts}"
