"""Our ids under the SDK's span limits, on a provider of its own: the count limit evicts the oldest
attribute first (ours: we stamp at start, before the span's own attributes), and the processor puts
our ids back as the span ends, before any exporter's ``on_end`` sees it; nothing is kept for a span
once it ended (the record lives on the span's attribute store, see ``_sdk._REC``)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app_shapes import LIMITS, SHAPES, check
from otel_agent_identity import _sdk
from otel_agent_identity.scope import IdentityScope, attach, detach
from otel_agent_identity.span_processor import IdentitySpanProcessor

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"


def _provider(**limits):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(**limits))
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # before ours, as an application sets it up
    provider.add_span_processor(IdentitySpanProcessor())
    return provider.get_tracer("limits"), exporter


def _recorded(span) -> bool:
    """Whether the processor still holds a record on the (ended) span's attribute store."""
    return getattr(span._attributes, "_agent_identity", None) is not None


def _in_scope(fn):
    token = attach(IdentityScope("conv_limits", "e" * 32))
    try:
        return fn()
    finally:
        detach(token)


def test_count_limit_keeps_our_ids_and_the_newest_of_the_rest():
    tracer, exporter = _provider(max_span_attributes=4)

    def crowded():
        span = tracer.start_span("chat", attributes={"a0": 0})
        for i in range(1, 9):
            span.set_attribute(f"a{i}", i)  # the framework's attributes, after our stamp
        span.end()

    _in_scope(crowded)
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes) == {"a7": 7, "a8": 8, CONV: "conv_limits", EXEC: "e" * 32}
    assert span.dropped_attributes == 9 + 2 - 4  # every attribute set, ours included, minus the kept
    assert not _recorded(span)


def test_count_and_length_limits_cut_our_ids_as_the_sdk_cuts_every_value():
    tracer, exporter = _provider(max_span_attributes=3, max_span_attribute_length=6)

    def crowded():
        with tracer.start_as_current_span("tool") as span:
            span.set_attributes({"x": "long value", "y": "another", "z": "third"})

    _in_scope(crowded)
    (span,) = exporter.get_finished_spans()
    assert span.attributes[CONV] == "conv_l" and span.attributes[EXEC] == "eeeeee"
    assert len(span.attributes) == 3 and span.attributes["z"] == "third"


def test_a_span_within_the_limit_is_untouched_and_a_span_outside_runs_is_not_kept():
    tracer, exporter = _provider(max_span_attributes=8)
    _in_scope(lambda: tracer.start_span("inside", attributes={"a": 1}).end())
    tracer.start_span("outside", attributes={"a": 1}).end()
    inside, outside = exporter.get_finished_spans()
    assert dict(inside.attributes) == {"a": 1, CONV: "conv_limits", EXEC: "e" * 32} and not inside.dropped_attributes
    assert dict(outside.attributes) == {"a": 1}
    assert not _recorded(inside) and not _recorded(outside)


def test_spans_that_never_end_leave_nothing_behind_and_end_later_with_their_ids():
    tracer, exporter = _provider(max_span_attributes=8)
    spans = _in_scope(lambda: [tracer.start_span(f"open {i}") for i in range(120)])
    del spans[::2]  # dropped unended: their records went with them
    for span in spans:  # ending the others later, outside the run, still works
        span.end()
    assert len(exporter.get_finished_spans()) == 60
    assert all(s.attributes[CONV] == "conv_limits" for s in exporter.get_finished_spans())
    assert not any(_recorded(s) for s in exporter.get_finished_spans())


def test_leaked_spans_do_not_cost_a_live_span_its_ids():
    tracer, exporter = _provider(max_span_attributes=3)

    def spans():
        leaked = [tracer.start_span(f"leaked {i}") for i in range(45)]  # never ended
        live = tracer.start_span("open", attributes={"a": 1})
        leaked += [tracer.start_span(f"leaked {i}") for i in range(45, 55)]
        return live

    live = _in_scope(spans)
    for i in range(5):
        live.set_attribute(f"b{i}", i)
    live.end()
    (span,) = exporter.get_finished_spans()
    assert span.attributes[CONV] == "conv_limits" and span.attributes[EXEC] == "e" * 32 and len(span.attributes) == 3


@pytest.mark.parametrize("length", [None, 4])
@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_applications_own_id_wins_under_any_count_or_length_limit(shape, limit, length):
    """Issue 22: set at the span's creation, or later, then crowded out or not: the exporter sees
    the application's value exactly as the SDK alone leaves it, never ours in its place."""
    tracer, exporter = _provider(max_span_attributes=limit, max_span_attribute_length=length)
    _in_scope(lambda: SHAPES[shape](tracer))
    (span,) = exporter.get_finished_spans()
    check(span, shape, limit, "e" * 32, length)
    assert not _recorded(span)


def test_uninstrument_gives_the_sdk_its_own_attribute_write_back(tracer_provider):
    from opentelemetry.attributes import BoundedAttributes

    from otel_agent_identity import AgentIdentityInstrumentor

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    hooked = BoundedAttributes._setitem_locked
    assert hooked._agent_identity_original is not None
    inst.uninstrument()
    assert BoundedAttributes._setitem_locked is hooked._agent_identity_original


def test_an_sdk_attribute_write_of_another_shape_is_wrapped(monkeypatch):
    """An SDK whose write is not the one this package knows gets a wrapper around it: same result."""
    from opentelemetry.attributes import BoundedAttributes

    _sdk.uninstall()
    monkeypatch.setattr(_sdk, "_same_code", lambda a, b: False)
    try:
        tracer, exporter = _provider(max_span_attributes=4)  # the processor installs the hook
        assert BoundedAttributes._setitem_locked is not _sdk._setitem_noted
        for shape in SHAPES:
            _in_scope(lambda shape=shape: SHAPES[shape](tracer))
            (span,) = exporter.get_finished_spans()
            check(span, shape, 4, "e" * 32)
            exporter.clear()
    finally:
        _sdk.uninstall()


def test_nothing_is_stamped_while_instrumentation_is_suppressed_inside_a_run():
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    tracer, exporter = _provider()

    def inside():
        with suppress_instrumentation():
            tracer.start_span("quiet").end()
        tracer.start_span("loud").end()

    _in_scope(inside)
    quiet, loud = exporter.get_finished_spans()
    assert not set(quiet.attributes) & {CONV, EXEC} and loud.attributes[CONV] == "conv_limits"
