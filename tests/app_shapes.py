"""An application span that sets its own ``gen_ai.conversation.id`` inside a run, in the shapes of
issue 22, and the ground truth to judge it by: the same span on a bare SDK provider (no processor of
ours) under the same limits. The application's value is what the exporter must see, exactly as the
SDK alone leaves it (kept, cut, or evicted by a count limit); our ids may only fill the rest."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"
OURS = {
    CONV,
    EXEC,
    "agent_identity.delegation.id",
    "agent_identity.parent.execution.id",
    "agent_identity.parent.conversation.id",
}
APP_ID = "app-own"
NAME = "app work"
LIMITS = [None, *range(2, 13)]


def _at_creation(tracer, more: int = 0) -> None:
    with tracer.start_as_current_span(NAME, attributes={CONV: APP_ID}) as span:
        for i in range(more):
            span.set_attribute(f"app.attr{i}", i)


def _set_later(tracer, more: int = 0) -> None:
    with tracer.start_as_current_span(NAME, attributes={"app.first": "x"}) as span:
        span.set_attribute(CONV, APP_ID)
        for i in range(more):
            span.set_attribute(f"app.attr{i}", i)


#: shape name -> the application's code, run with a tracer
SHAPES = {
    "at creation": lambda tracer: _at_creation(tracer),
    "set later": lambda tracer: _set_later(tracer),
    "set later, then four more": lambda tracer: _set_later(tracer, 4),
    "at creation, then four more": lambda tracer: _at_creation(tracer, 4),
}


def run_shape(shape: str) -> None:
    """Run ``shape`` with a tracer of the global provider (inside whatever run is current)."""
    SHAPES[shape](trace.get_tracer("app"))


def bare(shape: str, limit: int | None, length: int | None = None) -> dict[str, Any]:
    """The attributes the SDK alone gives the shape's span under ``max_span_attributes=limit``
    (and ``max_span_attribute_length=length``)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=limit, max_span_attribute_length=length))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    SHAPES[shape](provider.get_tracer("app"))
    (span,) = exporter.get_finished_spans()
    return dict(span.attributes)


def check(span, shape: str, limit: int | None, execution_id: str, length: int | None = None) -> None:
    """The exported app span: the application's conversation id as the SDK alone leaves it, its
    other attributes as the SDK alone leaves them (some may give way to our execution id, only
    under a count limit), our execution id the run's when present (always without a limit)."""
    truth = bare(shape, limit, length)
    execution_id = execution_id[:length] if length is not None else execution_id
    got = dict(span.attributes)
    assert got.get(CONV) == truth.get(CONV), (shape, limit, got)
    theirs = {k: v for k, v in got.items() if k not in OURS}
    assert theirs.items() <= truth.items(), (shape, limit, got, truth)
    assert got.get(EXEC, execution_id) == execution_id, (shape, limit, got)
    if limit is None:
        assert theirs == {k: v for k, v in truth.items() if k not in OURS} and got[EXEC] == execution_id
    else:
        assert len(got) <= limit
