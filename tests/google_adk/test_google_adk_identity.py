"""Google ADK runs (real framework, offline ``BaseLlm``): ADK's own spans are enriched, never
duplicated; every span of a run, ADK's tool spans included, carries the session id and the
invocation id; ``resumed`` follows the session's earlier events; an ``AgentTool`` sub-agent is a
nested run in another story."""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from offline_adk import OfflineLlm, seen
from opentelemetry import trace

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
RESUMED, DIFFERS = "agent_identity.conversation.resumed", "agent_identity.conversation.parent_differs"
PARENT_EXEC, PARENT_CONV = "agent_identity.parent.execution.id", "agent_identity.parent.conversation.id"
TRACER = trace.get_tracer("app")


def weather(city: str) -> str:
    """The weather in a city."""
    with TRACER.start_as_current_span("tool-body"):
        return f"sunny in {city}"


def _runner(agent=None):
    agent = agent or LlmAgent(name="weather_agent", model=OfflineLlm(), tools=[weather])
    return Runner(app_name="app", agent=agent, session_service=InMemorySessionService(), auto_create_session=True)


def _message(text="Paris"):
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _turn(runner, session_id, **kwargs):
    events = [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=_message(), **kwargs)]
    return events[-1]


def _check(exporter, session_id, last, resumed):
    """The run's spans: one ``invoke_agent`` (ADK's), all carrying the session and invocation ids."""
    spans = [s for s in exporter.get_finished_spans() if s.attributes.get(EXEC) == last.invocation_id]
    agents = [s for s in spans if s.name == "invoke_agent weather_agent"]
    assert len(agents) == 1 and agents[0].instrumentation_scope.name == "gcp.vertex.agent"
    a = agents[0].attributes
    assert a[CONV] == session_id and a[RESUMED] is resumed and a["agent_identity.conversation.source"] == "framework"
    names = {s.name for s in spans}
    assert {"invoke_workflow weather_agent", "execute_tool weather", "tool-body"} <= names, names
    trace_ids = {s.context.trace_id for s in spans}
    everything = [s for s in exporter.get_finished_spans() if s.context.trace_id in trace_ids]
    assert everything and all(s.attributes.get(CONV) == session_id for s in everything)
    assert all(s.attributes.get(EXEC) == last.invocation_id for s in everything)


async def test_two_turns_on_one_session(instrumentor, exporter):
    runner = _runner()
    first = await _turn(runner, "s-1")
    second = await _turn(runner, "s-1")
    assert seen(first.content.parts[0].text) == 3 and seen(second.content.parts[0].text) == 7  # history kept
    assert first.invocation_id.startswith("e-") and first.invocation_id != second.invocation_id
    _check(exporter, "s-1", first, resumed=False)
    _check(exporter, "s-1", second, resumed=True)


async def test_streamed_run(instrumentor, exporter):
    last = await _turn(_runner(), "s-sse", run_config=RunConfig(streaming_mode=StreamingMode.SSE))
    _check(exporter, "s-sse", last, resumed=False)


def test_sync_run_in_adks_thread(instrumentor, exporter):
    runner = _runner()
    events = list(runner.run(user_id="u", session_id="s-sync", new_message=_message()))
    _check(exporter, "s-sync", events[-1], resumed=False)


async def test_concurrent_runs_do_not_mix_ids(instrumentor, exporter):
    runner = _runner()
    lasts = await asyncio.gather(*(_turn(runner, f"s-{i}") for i in range(6)))
    assert len({last.invocation_id for last in lasts}) == 6
    for i, last in enumerate(lasts):
        _check(exporter, f"s-{i}", last, resumed=False)


async def test_live_run(instrumentor, exporter):
    from google.adk.agents.live_request_queue import LiveRequestQueue

    runner = _runner(LlmAgent(name="live_agent", model=OfflineLlm()))
    queue = LiveRequestQueue()
    queue.send_content(_message("hi"))
    events = []

    async def consume():
        async with aclosing(runner.run_live(user_id="u", session_id="s-live", live_request_queue=queue)) as live:
            async for event in live:
                events.append(event)
                if event.turn_complete:
                    queue.close()
                    break

    await asyncio.wait_for(consume(), 30)
    assert events[0].content.parts[0].text == "seen=1 hi"
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent live_agent"]
    a = span.attributes
    assert a[CONV] == "s-live" and a[EXEC] == events[0].invocation_id and a[RESUMED] is False


async def test_breaking_out_of_the_stream_ends_the_run(instrumentor, exporter):
    runner = _runner()
    agen = runner.run_async(user_id="u", session_id="s-break", new_message=_message())
    async for _event in agen:
        break
    await agen.aclose()
    await _turn(runner, "s-after")  # a later run is not inside the abandoned one
    (after,) = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "invoke_agent weather_agent" and s.attributes[CONV] == "s-after"
    ]
    assert PARENT_EXEC not in after.attributes


async def test_agent_tool_is_a_nested_run_in_another_story(instrumentor, exporter):
    inner = LlmAgent(name="forecaster", model=OfflineLlm(), description="Forecasts.")
    outer = LlmAgent(name="weather_agent", model=OfflineLlm(), tools=[AgentTool(agent=inner)])
    runner = _runner(outer)
    for _ in range(2):
        last = await _turn(runner, "s-outer")
    (outer_span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "invoke_agent weather_agent" and s.attributes[EXEC] == last.invocation_id
    ]
    inner_spans = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent forecaster"]
    assert len(inner_spans) == 2
    nested = inner_spans[-1].attributes
    assert nested[PARENT_EXEC] == last.invocation_id and nested[PARENT_CONV] == "s-outer"
    assert nested[CONV] != "s-outer" and nested[DIFFERS] is True
    assert nested[RESUMED] is False  # a fresh in-memory session on every call: it starts from nothing
    assert nested[EXEC].startswith("e-") and nested[EXEC] != last.invocation_id
    assert outer_span.attributes[RESUMED] is True and PARENT_EXEC not in outer_span.attributes
    (tool,) = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "execute_tool forecaster" and s.attributes[EXEC] == last.invocation_id
    ]
    assert tool.attributes[CONV] == "s-outer"  # ADK leaves its tool spans without the id: stamped


def test_uninstrument_restores_adk(tracer_provider, exporter):
    from otel_agent_identity import AgentIdentityInstrumentor

    for _ in range(2):
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        inst.uninstrument()
    list(_runner().run(user_id="u", session_id="s-bare", new_message=_message()))
    spans = exporter.get_finished_spans()
    assert spans and not any(EXEC in s.attributes for s in spans)
    assert not any(RESUMED in s.attributes for s in spans)


def test_unknown_version_is_skipped_with_one_warning(monkeypatch, caplog):
    from otel_agent_identity import _load_adapter
    from otel_agent_identity.adapters import google_adk as adapter

    monkeypatch.setattr(adapter, "REQUIREMENTS", ("google-adk >= 99",))
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        assert _load_adapter("google_adk", adapter.__name__) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "skipping google_adk" in messages[0]
