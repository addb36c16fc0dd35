"""CrewAI tests (run in ``.venv-crewai``: CrewAI pins pydantic < 2.13 and opentelemetry >= 1.45.1):
the real framework with an offline ``BaseLLM``, its telemetry off, and no connection leaving the
process."""

from __future__ import annotations

import os

# CrewAI's anonymous telemetry (OTLP to its servers, a private provider) and its AMP tracing
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

import pytest

pytest.importorskip("crewai")

from net_guard import no_network  # noqa: F401  (autouse: the network guard on every test here)
