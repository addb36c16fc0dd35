"""Shared fixtures: one SDK tracer provider for the process (frameworks use the global one),
an in-memory exporter cleared per test, and the instrumentor installed per test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))  # the offline chat client and example apps
sys.path.insert(0, str(ROOT / "tests" / "agent_framework"))  # agent helpers

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
trace.set_tracer_provider(_PROVIDER)


@pytest.fixture
def tracer_provider() -> TracerProvider:
    return _PROVIDER


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def instrumentor(tracer_provider, exporter):
    from otel_agent_identity import AgentIdentityInstrumentor

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    yield inst
    inst.uninstrument()


def pytest_collection_modifyitems(config, items):
    """Tests marked ``collector`` need the binary named by ``AGENT_IDENTITY_COLLECTOR`` (``make
    test-python`` sets it): without it they are skipped, with the reason shown."""
    import os

    binary = os.environ.get("AGENT_IDENTITY_COLLECTOR")
    if binary and os.access(binary, os.X_OK):
        return
    reason = (f"AGENT_IDENTITY_COLLECTOR={binary} is not an executable (make collector)" if binary else
              "set AGENT_IDENTITY_COLLECTOR to the otelcol-agentidentity binary (make collector; make test-python sets it)")
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("collector") is not None:
            item.add_marker(skip)
