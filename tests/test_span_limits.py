"""Our ids under the SDK's span limits, on a provider of its own, through the SDK's public API only:
a count limit evicts the oldest attribute first, ours as any other (never the application's own id
in their place: issue 22), a length limit cuts ours as every value; nothing of ours stays on a
span once it ended (no shadowed method, no reference cycle)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app_shapes import LIMITS, SHAPES, check
from otel_agent_identity.scope import IdentityScope
from otel_agent_identity.span_processor import IdentitySpanProcessor
from scope_helpers import attach, detach

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"


def _provider(**limits):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(**limits))
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # before ours, as an application sets it up
    provider.add_span_processor(IdentitySpanProcessor())
    return provider.get_tracer("limits"), exporter


def _in_scope(fn):
    token = attach(IdentityScope("conv_limits", "e" * 32))
    try:
        return fn()
    finally:
        detach(token)


def test_count_limit_evicts_our_ids_as_any_other_attribute():
    """Public API: who wrote a key last is not known, so an evicted id of ours is not put back (the
    evicted value may have been the application's); the SDK's own eviction and count stand."""
    tracer, exporter = _provider(max_span_attributes=4)

    def crowded():
        span = tracer.start_span("chat", attributes={"a0": 0})
        for i in range(1, 9):
            span.set_attribute(f"a{i}", i)  # the framework's attributes, after our stamp
        span.end()

    _in_scope(crowded)
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes) == {"a5": 5, "a6": 6, "a7": 7, "a8": 8}
    assert span.dropped_attributes == 9 + 2 - 4  # every attribute set, ours included, minus the kept


def test_count_and_length_limits_cut_our_ids_as_the_sdk_cuts_every_value():
    tracer, exporter = _provider(max_span_attributes=3, max_span_attribute_length=6)

    def crowded():
        with tracer.start_as_current_span("tool") as span:
            span.set_attributes({"x": "long value"})

    _in_scope(crowded)
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes) == {CONV: "conv_l", EXEC: "eeeeee", "x": "long v"}


def test_a_span_within_the_limit_is_untouched_and_a_span_outside_runs_is_not_kept():
    tracer, exporter = _provider(max_span_attributes=8)
    _in_scope(lambda: tracer.start_span("inside", attributes={"a": 1}).end())
    tracer.start_span("outside", attributes={"a": 1}).end()
    inside, outside = exporter.get_finished_spans()
    assert dict(inside.attributes) == {"a": 1, CONV: "conv_limits", EXEC: "e" * 32} and not inside.dropped_attributes
    assert dict(outside.attributes) == {"a": 1}


def test_spans_that_never_end_leave_nothing_behind_and_end_later_with_their_ids():
    tracer, exporter = _provider(max_span_attributes=8)
    spans = _in_scope(lambda: [tracer.start_span(f"open {i}") for i in range(120)])
    del spans[::2]  # dropped unended: their records went with them
    for span in spans:  # ending the others later, outside the run, still works
        span.end()
    assert len(exporter.get_finished_spans()) == 60
    assert all(s.attributes[CONV] == "conv_limits" for s in exporter.get_finished_spans())


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
