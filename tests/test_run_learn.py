"""Run core: a conversation id learned during the run (``Run.learn``) and a run handed off to a task
it spawns (``Run.hand_off``)."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from opentelemetry import trace

from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.extractors import ExtractorRegistry
from otel_agent_identity.scope import current_scope
from otel_agent_identity.span_processor import IdentitySpanProcessor

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"


@pytest.fixture
def handler(tracer_provider, exporter):
    h = RunHandler(trace.get_tracer("t", tracer_provider=tracer_provider), IdentitySpanProcessor(), ExtractorRegistry())
    h.attach_processor(tracer_provider)
    yield h
    h.processor.enabled = False


def _start(handler, rule=None):
    return handler.start("test", object(), None, (), {}, rule=rule, span=SpanSpec("invoke_agent t"))


def _spans(exporter, name):
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_learned_id_reaches_later_spans_and_the_run_span_not_earlier_ones(handler, exporter):
    tracer = trace.get_tracer("t")
    run = _start(handler)

    def body():
        tracer.start_span("before").end()
        assert run.learn("conv-generated") is True
        assert run.learn("conv-other") is False  # only the first id is adopted
        tracer.start_span("after").end()
        return "out"

    assert run.call(body, (), {}) == "out"
    (before,), (after,), (agent,) = (
        _spans(exporter, "before"),
        _spans(exporter, "after"),
        _spans(exporter, "invoke_agent t"),
    )
    assert CONV not in before.attributes and after.attributes[CONV] == "conv-generated"
    assert agent.attributes[CONV] == "conv-generated"
    assert agent.attributes["agent_identity.conversation.source"] == "framework"
    assert "agent_identity.conversation.changed" not in agent.attributes


@pytest.mark.parametrize("bad", [None, "", 42, "x" * 1000, "a\nb"])
def test_learn_refuses_bad_values(handler, exporter, bad):
    registry = ExtractorRegistry(max_id_length=64)
    h = RunHandler(handler.tracer, handler.processor, registry)
    run = _start(h)
    assert run.learn(bad) is False
    run.finish()
    assert CONV not in _spans(exporter, "invoke_agent t")[0].attributes


def test_learn_does_not_replace_an_id_known_at_the_start(handler, exporter):
    run = _start(handler, rule=lambda _a, _s, _c: "conv-known")
    assert run.learn("conv-generated") is False
    run.finish()
    assert _spans(exporter, "invoke_agent t")[0].attributes[CONV] == "conv-known"


async def test_hand_off_span_follows_the_spawned_task_not_the_call(handler, exporter):
    gate, tasks = asyncio.Event(), []

    async def background_work():
        await gate.wait()
        return current_scope().execution_id

    async def start_in_background():  # like Agno's _arun_background: spawn, return a pending output
        tasks.append(asyncio.ensure_future(handoff.task(background_work())))
        return "pending"

    run = _start(handler)
    handoff = run.hand_off()
    result = handoff.call(start_in_background, (), {})
    assert inspect.iscoroutine(result)
    assert await result == "pending"
    await asyncio.sleep(0)
    assert _spans(exporter, "invoke_agent t") == []  # the call returned; the work goes on
    gate.set()
    assert await tasks[0] == run.scope.execution_id
    assert len(_spans(exporter, "invoke_agent t")) == 1


async def test_hand_off_error_before_the_task_ends_the_run(handler, exporter):
    async def fails():
        raise ValueError("no db")

    handoff = _start(handler).hand_off()
    with pytest.raises(ValueError):
        await handoff.call(fails, (), {})
    (span,) = _spans(exporter, "invoke_agent t")
    assert span.attributes["error.type"] == "ValueError"


async def test_hand_off_stream_left_early_keeps_the_run_until_the_task_ends(handler, exporter):
    gate, tasks = asyncio.Event(), []

    async def work():
        await gate.wait()

    async def stream():
        tasks.append(asyncio.ensure_future(handoff.task(work())))
        for i in range(3):
            yield i

    run = _start(handler)
    handoff = run.hand_off()
    agen = handoff.call(stream, (), {})
    assert inspect.isasyncgen(agen)
    async for _ in agen:
        break
    await agen.aclose()
    assert _spans(exporter, "invoke_agent t") == []
    gate.set()
    await tasks[0]
    assert len(_spans(exporter, "invoke_agent t")) == 1


def test_bad_value_warning_is_per_agent_class_not_per_class_name(caplog):
    """agno.agent.Agent and agents.Agent share the name "Agent": each gets its own warning."""
    import logging

    from otel_agent_identity.extractors import RunCall

    first = type("Agent", (), {"__module__": "one"})
    second = type("Agent", (), {"__module__": "two"})
    registry = ExtractorRegistry(max_id_length=8)
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        for cls in (first, second, first):
            assert registry.extract(cls(), None, RunCall("test"), lambda _a, _s, _c: "x" * 20) is None
    assert [r.getMessage().split(":")[1].strip() for r in caplog.records] == [
        "agent type one.Agent",
        "agent type two.Agent",
    ]
