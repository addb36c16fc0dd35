"""End to end: the example app under `opentelemetry-instrument`, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from a2a_harness import console_spans

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = Path(sys.executable).with_name("opentelemetry-instrument")


def _run_app(**extra_env: str) -> list[dict]:
    env = dict(
        os.environ,
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="weather-app",
        **extra_env,
    )
    proc = subprocess.run(
        [str(LAUNCHER), sys.executable, str(ROOT / "examples" / "agent_framework_app.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    spans = console_spans(proc.stdout)
    assert "[service] thanks! -> echo: thanks!" in proc.stderr
    return spans


@pytest.mark.e2e
def test_launcher_loads_the_instrumentor_and_every_span_carries_identity():
    spans = _run_app()
    agents = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(agents) == 4
    by_conversation: dict[str, set[str]] = {}
    for span in spans:
        attrs = span["attributes"]
        assert attrs.get("agent_identity.execution.id"), span["name"]
        by_conversation.setdefault(attrs.get("gen_ai.conversation.id"), set()).add(attrs["agent_identity.execution.id"])
    # one service-managed conversation (service id), one local-history one (the session's id)
    assert None not in by_conversation and len(by_conversation) == 2
    assert "conv_app_1" in by_conversation
    assert all(len(executions) == 2 for executions in by_conversation.values())


@pytest.mark.e2e
def test_disabled_by_otel_python_disabled_instrumentations():
    spans = _run_app(OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="agent_identity")
    assert spans and all("agent_identity.execution.id" not in s["attributes"] for s in spans)
