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


@pytest.fixture
def limited(tracer_provider, exporter, monkeypatch):
    """``limited(**SpanLimits kwargs)``: instrument under those limits (the frameworks' tracers and
    ours read the provider's; the provider caches its tracers, so theirs are set too; SDK 1.40
    caches none: each ``get_tracer`` reads the provider's limits)."""
    from opentelemetry.sdk.trace import SpanLimits

    from otel_agent_identity import AgentIdentityInstrumentor

    instrumentors = []

    def install(**limits):
        span_limits = SpanLimits(**limits)
        monkeypatch.setattr(tracer_provider, "_span_limits", span_limits)
        for tracer in list(getattr(tracer_provider, "_tracers", {}).values()):
            monkeypatch.setattr(tracer, "_span_limits", span_limits)
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        instrumentors.append(inst)

    original = tracer_provider._span_limits
    yield install
    for inst in instrumentors:
        inst.uninstrument()
    for tracer in list(getattr(tracer_provider, "_tracers", {}).values()):  # the ones made during the test too
        tracer._span_limits = original


def _attached(ctx, fn, *args):
    """Run ``fn`` in a worker with the submitter's OpenTelemetry context attached (the traced way)."""
    from opentelemetry import context

    token = context.attach(ctx)
    try:
        return fn(*args)
    finally:
        context.detach(token)


@pytest.fixture(params=["threading-instrumentation", "context-attach"])
def submit(request):
    """``submit(pool, fn, *args) -> Future``: hand work to a ``ThreadPoolExecutor`` the traced way,
    through the real ``opentelemetry-instrumentation-threading`` (it captures the submitter's
    context and attaches it in the worker), or, without it, by ``context.attach(captured)`` in the
    worker, as an application does by hand."""
    from opentelemetry import context

    if request.param == "context-attach":
        yield lambda pool, fn, *args: pool.submit(_attached, context.get_current(), fn, *args)
        return
    from opentelemetry.instrumentation.threading import ThreadingInstrumentor

    inst = ThreadingInstrumentor()
    inst.instrument()
    try:
        yield lambda pool, fn, *args: pool.submit(fn, *args)
    finally:
        inst.uninstrument()


def pytest_collection_modifyitems(config, items):
    """Tests marked ``collector`` need the binary named by ``AGENT_IDENTITY_COLLECTOR`` (``make
    test-python`` sets it): without it they are skipped, with the reason shown."""
    import os

    binary = os.environ.get("AGENT_IDENTITY_COLLECTOR")
    if binary and os.access(binary, os.X_OK):
        return
    reason = (
        f"AGENT_IDENTITY_COLLECTOR={binary} is not an executable (make collector)"
        if binary
        else "set AGENT_IDENTITY_COLLECTOR to the otelcol-agentidentity binary "
        "(make collector; make test-python sets it)"
    )
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("collector") is not None:
            item.add_marker(skip)
