"""The serving side's memory (per contextId and serving agent, the agent conversation that served it
last) and the public ``resumed()`` declaration, on a real SDK SERVER span in the request's context."""

from __future__ import annotations

import logging

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

import otel_agent_identity
from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity


def _serve(tracer, requested):
    """A SERVER span and the request's context, as the a2a-sdk adapter makes them."""
    span = tracer.start_span("SendMessage", kind=SpanKind.SERVER, attributes={attrs.GEN_AI_AGENT_NAME: "weather"})
    return span, continuity.with_serving_requested(trace.set_span_in_context(span), requested, span)


def test_a_context_served_under_another_agent_conversation_is_reported(tracer_provider, monkeypatch):
    monkeypatch.setattr(continuity, "served_conversations", continuity.DelegateContexts())
    tracer = tracer_provider.get_tracer("t")
    seen = []
    for requested, conversation, answered in [
        (None, "thread-1", "ctx-1"),
        ("ctx-1", "thread-2", "ctx-1"),
        ("ctx-1", "thread-2", "ctx-1"),
        ("ctx-9", "thread-9", "ctx-9"),
    ]:
        span, ctx = _serve(tracer, requested)
        token = otel_context.attach(ctx)
        try:
            seen.append(continuity.served_run("weather", conversation))
        finally:
            otel_context.detach(token)
        continuity.served_context(ctx, answered)  # the SERVER span saw the context it answered in
        span.end()
    # turn 1's contextId was the server's: remembered from its answer; turn 2 rebuilt, turn 3 kept it
    assert seen == [None, "thread-1", None, None]
    assert continuity.served_run("weather", "thread-x") is None  # outside a served request: nothing


def test_resumed_is_declared_on_the_server_span(tracer_provider, exporter):
    tracer = tracer_provider.get_tracer("t")
    span, ctx = _serve(tracer, "ctx-1")
    token = otel_context.attach(ctx)
    try:
        assert otel_agent_identity.resumed(False) is True
    finally:
        otel_context.detach(token)
    span.end()
    (done,) = [s for s in exporter.get_finished_spans() if s.name == "SendMessage"]
    assert done.attributes[attrs.CONVERSATION_RESUMED] is False


def test_resumed_outside_a_request_or_not_a_bool_is_ignored_never_raises(tracer_provider, caplog, monkeypatch):
    monkeypatch.setattr(continuity, "_warned_resumed", [False])
    with caplog.at_level(logging.WARNING):
        assert otel_agent_identity.resumed(True) is False
        assert otel_agent_identity.resumed(True) is False
    assert len([r for r in caplog.records if "resumed(" in r.getMessage()]) == 1
    span, ctx = _serve(tracer_provider.get_tracer("t"), "ctx-1")
    token = otel_context.attach(ctx)
    try:
        assert otel_agent_identity.resumed("yes") is False
    finally:
        otel_context.detach(token)
    span.end()
