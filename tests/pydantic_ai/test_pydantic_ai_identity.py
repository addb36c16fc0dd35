"""Pydantic AI runs (real framework, offline ``FunctionModel``): every entry point gets one agent
span (the framework's, enriched, when its instrumentation is on; else ours) with the run's own
``conversation_id`` and ``run_id``, and every span inside the run carries them."""

from __future__ import annotations

import asyncio
import logging

import pytest
from offline_pydantic_ai import echo_model, seen, tool_model
from opentelemetry import trace
from pydantic_ai.models.function import FunctionModel

from pydantic_ai import Agent, RunContext

TRACER = trace.get_tracer("app")
CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
PARENT_EXEC, PARENT_CONV = "agent_identity.parent.execution.id", "agent_identity.parent.conversation.id"
RESUMED, DIFFERS = "agent_identity.conversation.resumed", "agent_identity.conversation.parent_differs"


def _agent(name="weather", model=None):
    agent = Agent(model or tool_model("weather"), name=name)

    @agent.tool_plain
    def weather(city: str) -> str:
        with TRACER.start_as_current_span("tool-body"):
            return "sunny"

    return agent


def _agent_spans(exporter, name="weather"):
    return [s for s in exporter.get_finished_spans() if s.name == f"invoke_agent {name}"]


def _check_run(exporter, result, native: bool, name="weather", resumed=False):
    """One agent span with the run's ids; every span of its trace carries them."""
    (span,) = [s for s in _agent_spans(exporter, name) if s.attributes[EXEC] == result.run_id]
    a = span.attributes
    assert a[CONV] == result.conversation_id and a["agent_identity.conversation.source"] == "framework"
    assert a[RESUMED] is resumed and a["gen_ai.agent.name"] == name
    assert ("gen_ai.agent.call.id" in a) is native  # the framework's own span, not a second one
    assert ("gen_ai.provider.name" in a) is not native
    inside = [s for s in exporter.get_finished_spans() if s.context.trace_id == span.context.trace_id]
    assert {s.name for s in inside} >= {"tool-body"}
    for s in inside:
        assert s.attributes[CONV] == result.conversation_id and s.attributes[EXEC] == result.run_id, s.name
    return span


def test_run_sync_and_a_second_turn_with_history(instrumentor, exporter, native):
    agent = _agent()
    first = agent.run_sync("weather?")
    second = agent.run_sync("again?", message_history=first.all_messages())
    assert seen(first.output) == 3 and seen(second.output) == 7  # turn 2 got the history
    assert second.conversation_id == first.conversation_id and second.run_id != first.run_id
    _check_run(exporter, first, native)
    _check_run(exporter, second, native, resumed=True)
    assert len(_agent_spans(exporter)) == 2


async def test_async_run_with_given_ids(instrumentor, exporter, native):
    result = await _agent().run("weather?", conversation_id="conv-given", run_id="run-given")
    assert (result.conversation_id, result.run_id) == ("conv-given", "run-given")
    _check_run(exporter, result, native)


async def test_run_stream(instrumentor, exporter, native):
    agent = Agent(echo_model(), name="streamer")
    async with agent.run_stream("hi", conversation_id="conv-s") as stream:
        with TRACER.start_as_current_span("tool-body"):  # the caller's code inside the run
            pass
        text = await stream.get_output()
    assert seen(text) == 1
    (span,) = _agent_spans(exporter, "streamer")
    assert span.attributes[CONV] == "conv-s"
    (body,) = [s for s in exporter.get_finished_spans() if s.name == "tool-body"]
    assert body.attributes[CONV] == "conv-s" and body.attributes[EXEC] == span.attributes[EXEC]


async def test_run_stream_events(instrumentor, exporter, native):
    agent = _agent()
    final = None
    async with agent.run_stream_events("weather?") as events:
        async for event in events:
            final = getattr(event, "result", final)
    assert final is not None
    _check_run(exporter, final, native)


def test_run_stream_sync(instrumentor, exporter, native):
    agent = Agent(echo_model(), name="streamer")
    with agent.run_stream_sync("hi", conversation_id="conv-ss") as result:
        assert seen("".join(result.stream_text(delta=True))) == 1
    (span,) = _agent_spans(exporter, "streamer")
    assert span.attributes[CONV] == "conv-ss" and span.attributes[EXEC]


async def test_iter_nodes(instrumentor, exporter, native):
    agent = _agent()
    async with agent.iter("weather?") as run:
        async for _node in run:
            pass
    _check_run(exporter, run.result, native)


async def test_failed_run_ends_its_span_with_the_error(instrumentor, exporter, native):
    def boom(messages, info):
        raise ValueError("model down")

    agent = Agent(FunctionModel(boom), name="broken")
    with pytest.raises(ValueError, match="model down"):
        await agent.run("hi", conversation_id="conv-err")
    (span,) = _agent_spans(exporter, "broken")
    assert span.attributes[CONV] == "conv-err" and span.status.status_code.name == "ERROR"


async def test_concurrent_runs_do_not_mix_ids(instrumentor, exporter, native):
    async def slow_weather(city: str) -> str:
        await asyncio.sleep(0)  # interleave the runs
        with TRACER.start_as_current_span("tool-body"):
            await asyncio.sleep(0)
        return city

    agent = Agent(tool_model("slow_weather"), name="weather")
    agent.tool_plain(slow_weather)
    results = await asyncio.gather(*(agent.run("q", conversation_id=f"conv-{i}") for i in range(8)))
    assert len({r.run_id for r in results}) == 8
    for r in results:
        _check_run(exporter, r, native)


def test_nested_run_in_a_tool_records_its_parent(instrumentor, exporter, native):
    inner = Agent(echo_model(), name="inner")
    outer = Agent(tool_model("ask_inner"), name="outer")

    @outer.tool
    async def ask_inner(ctx: RunContext, city: str) -> str:
        return (await inner.run(city, usage=ctx.usage)).output  # Pydantic AI gives it a new conversation

    @outer.tool
    async def ask_inner_same(ctx: RunContext, city: str) -> str:
        return (await inner.run(city, conversation_id=ctx.conversation_id)).output

    result = outer.run_sync("go")
    (o,) = _agent_spans(exporter, "outer")
    (i,) = _agent_spans(exporter, "inner")
    assert o.attributes[CONV] == result.conversation_id and PARENT_EXEC not in o.attributes
    assert i.attributes[PARENT_EXEC] == result.run_id and i.attributes[PARENT_CONV] == result.conversation_id
    assert i.attributes[CONV] != result.conversation_id and i.attributes[DIFFERS] is True
    (parent,) = [s for s in exporter.get_finished_spans() if s.context.span_id == i.parent.span_id]
    assert parent.name == ("execute_tool ask_inner" if native else "invoke_agent outer")

    exporter.clear()
    outer2 = Agent(tool_model("ask_inner_same"), name="outer")
    outer2.tool(ask_inner_same)
    result = outer2.run_sync("go")
    (i,) = _agent_spans(exporter, "inner")
    assert i.attributes[CONV] == result.conversation_id and DIFFERS not in i.attributes


def test_agent_name_inference_still_works(instrumentor, exporter):
    weather_bot = Agent(echo_model())  # unnamed: Pydantic AI infers it from the caller's frame
    weather_bot.run_sync("hi")
    assert weather_bot.name == "weather_bot"
    assert len(_agent_spans(exporter, "weather_bot")) == 1


def test_uninstrument_restores_the_framework(tracer_provider, exporter):
    from otel_agent_identity import AgentIdentityInstrumentor

    for _ in range(2):
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        Agent(echo_model(), name="once").run_sync("hi")
        inst.uninstrument()
    assert len(_agent_spans(exporter, "once")) == 2
    exporter.clear()
    Agent(echo_model(), name="once").run_sync("hi")
    assert _agent_spans(exporter, "once") == []
    assert not any(CONV in s.attributes or EXEC in s.attributes for s in exporter.get_finished_spans())


def test_unknown_version_is_skipped_with_one_warning(monkeypatch, caplog):
    from otel_agent_identity import _load_adapter
    from otel_agent_identity.adapters import pydantic_ai as adapter

    monkeypatch.setattr(adapter, "REQUIREMENTS", ("pydantic-ai-slim >= 99",))
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        assert _load_adapter("pydantic_ai", adapter.__name__) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "skipping pydantic_ai" in messages[0]


def test_no_frame_of_ours_where_pydantic_ai_reads_its_callers_frames(instrumentor, exporter, monkeypatch):
    """Pydantic AI decides whether an installed package started a run (no first-run banner then)
    from the first frame outside itself: ours (in site-packages once installed) must not be it."""
    from pydantic_ai import _display

    seen: list = []

    def started_by_installed_package(frame):
        while frame is not None:
            seen.append(frame.f_globals.get("__name__"))
            frame = frame.f_back
        return True  # no banner in the test's output

    monkeypatch.setattr(_display, "banner_pending", lambda: True)
    monkeypatch.setattr(_display, "started_by_installed_package", started_by_installed_package)
    Agent(echo_model(), name="framed").run_sync("hi")
    assert seen and not [m for m in seen if m and m.startswith("otel_agent_identity")]
    assert len(_agent_spans(exporter, "framed")) == 1


@pytest.mark.parametrize("own", ["mine", None], ids=["app sets its id", "app sets nothing"])
def test_the_applications_own_conversation_id_on_our_run_span_wins(instrumentor, exporter, own):
    """Without Pydantic AI's own instrumentation the run's ``invoke_agent`` span is ours: an id a
    tool sets on it stays; without one, the span reports the run's ``conversation_id``."""
    Agent.instrument_all(False)
    agent = Agent(tool_model("weather"), name="owner")

    @agent.tool_plain
    def weather(city: str) -> str:
        if own is not None:
            trace.get_current_span().set_attribute(CONV, own)
        with TRACER.start_as_current_span("tool-body"):
            return "sunny"

    result = agent.run_sync("weather?", conversation_id="conv-owned")
    (span,) = _agent_spans(exporter, "owner")
    assert span.attributes[CONV] == (own or "conv-owned")
    (body,) = [s for s in exporter.get_finished_spans() if s.name == "tool-body"]
    assert body.attributes[CONV] == result.conversation_id == "conv-owned"
