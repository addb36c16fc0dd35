"""Agno runs: the conversation id is the session id Agno really used, the execution id the run's
run_id, on the agent span and on every span inside, checked against what Agno handed the model and
the tool (ground truth)."""

from __future__ import annotations

import asyncio
import inspect
import logging

import pytest
from agno.agent import Agent
from agno.run.agent import RunOutput
from agno_support import CONV, EXEC, TOOL_CALLS, agent_spans, inside, make_agent
from opentelemetry import trace


@pytest.fixture(autouse=True)
def _clear_tool_calls():
    TOOL_CALLS.clear()


def _check_run(spans, agent_span, run_id, session_id):
    """The run's span and every span below it carry exactly this run's ids."""
    assert agent_span.attributes[EXEC] == run_id and agent_span.attributes[CONV] == session_id
    below = inside(spans, agent_span)
    assert below, "no span inside the run"
    for span in below:
        assert (span.attributes.get(EXEC), span.attributes.get(CONV)) == (run_id, session_id), span.name


def test_two_turns_without_session_id_use_the_generated_session(instrumentor, exporter):
    agent = make_agent()
    assert agent.session_id is None
    r1 = agent.run("what is the weather in Paris")
    r2 = agent.run("thanks")
    # ground truth: Agno generated one session, wrote it back, and the model saw turn 1 in turn 2
    assert agent.session_id == r1.session_id == r2.session_id
    assert [c.history for c in agent.model.calls] == [0, 0, 1]
    assert [c.run_id for c in agent.model.calls] == [r1.run_id, r1.run_id, r2.run_id]
    assert TOOL_CALLS[0][:2] == (r1.run_id, r1.session_id)
    spans = exporter.get_finished_spans()
    s1, s2 = agent_spans(spans, "helper")
    _check_run(spans, s1, r1.run_id, r1.session_id)  # turn 1 carries the id Agno generated
    assert s2.attributes[EXEC] == r2.run_id and s2.attributes[CONV] == r1.session_id
    assert s1.attributes["agent_identity.conversation.source"] == "framework"
    assert s1.attributes["gen_ai.provider.name"] == "agno" and s1.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert "agent_identity.conversation.changed" not in s1.attributes


def test_explicit_session_ids_keep_two_conversations_apart(instrumentor, exporter):
    agent = make_agent()
    outputs = [
        agent.run(text, session_id=sid)
        for sid, text in [("conv-a", "weather in Oslo"), ("conv-b", "hello"), ("conv-a", "thanks"), ("conv-b", "bye")]
    ]
    assert agent.session_id is None  # Agno does not write an explicit session_id back
    assert [c.history for c in agent.model.calls] == [0, 0, 0, 1, 1]  # each session sees only its own turns
    spans = exporter.get_finished_spans()
    runs = agent_spans(spans)
    assert [(s.attributes[CONV], s.attributes[EXEC]) for s in runs] == [(o.session_id, o.run_id) for o in outputs]
    assert [o.session_id for o in outputs] == ["conv-a", "conv-b", "conv-a", "conv-b"]
    _check_run(spans, runs[0], outputs[0].run_id, "conv-a")


def test_caller_run_id_is_the_execution_id(instrumentor, exporter):
    agent = make_agent()
    out = agent.run("weather in Lima", run_id="run-given-1", session_id="conv-l")
    assert out.run_id == "run-given-1"
    spans = exporter.get_finished_spans()
    _check_run(spans, agent_spans(spans)[0], "run-given-1", "conv-l")


def _consume(result):
    """Drive any return shape to its end; the final RunOutput (if any) and the events seen."""

    async def drain():
        if inspect.iscoroutine(result):
            return await result, []
        events = [e async for e in result]
        return None, events

    if isinstance(result, RunOutput):
        return result, []
    if inspect.isgenerator(result):
        return None, list(result)
    return asyncio.run(drain())


SHAPES = {
    "run": (lambda a: a.run("weather in Rome", session_id="conv-s"), RunOutput),
    "run-stream": (lambda a: a.run("weather in Rome", session_id="conv-s", stream=True), "generator"),
    "run-stream-events": (
        lambda a: a.run("weather in Rome", session_id="conv-s", stream=True, stream_events=True, yield_run_output=True),
        "generator",
    ),
    "arun": (lambda a: a.arun("weather in Rome", session_id="conv-s"), "coroutine"),
    "arun-stream": (
        lambda a: a.arun("weather in Rome", session_id="conv-s", stream=True, stream_events=True),
        "asyncgen",
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_return_shape_keeps_its_type_and_carries_the_ids(instrumentor, exporter, shape):
    call, kind = SHAPES[shape]
    agent = make_agent()
    result = call(agent)
    checks = {"generator": inspect.isgenerator, "coroutine": inspect.iscoroutine, "asyncgen": inspect.isasyncgen}
    assert isinstance(result, kind) if isinstance(kind, type) else checks[kind](result)
    output, events = _consume(result)
    (truth,) = {c.run_id for c in agent.model.calls}  # the run id Agno gave the model
    assert TOOL_CALLS and {t[0] for t in TOOL_CALLS} == {truth}
    if output is not None:
        assert output.run_id == truth and output.session_id == "conv-s"
    for event in events:
        if hasattr(event, "run_id"):
            assert event.run_id == truth  # every event carries the run id
    spans = exporter.get_finished_spans()
    (run_span,) = agent_spans(spans)
    _check_run(spans, run_span, truth, "conv-s")
    assert run_span.status.is_unset
    if shape == "run-stream-events":
        assert isinstance(events[-1], RunOutput)


@pytest.mark.parametrize("how", ["break-gc", "close"])
def test_sync_stream_abandoned_after_one_event_ends_its_span(instrumentor, exporter, how):
    agent = make_agent()
    stream = agent.run("hello there", session_id="conv-ab", stream=True, stream_events=True)
    first = next(iter(stream))
    assert agent_spans(exporter.get_finished_spans()) == []
    if how == "close":
        stream.close()
    else:
        del stream
        import gc

        gc.collect()
    (span,) = agent_spans(exporter.get_finished_spans())
    assert agent.model.calls == []  # left before the model was called
    assert span.attributes[CONV] == "conv-ab" and span.attributes[EXEC] == first.run_id
    assert span.status.is_unset  # leaving a stream early is no error


@pytest.mark.parametrize("how", ["break-aclose", "break-drop"])
async def test_async_stream_abandoned_after_one_event_ends_its_span(instrumentor, exporter, how):
    agent = make_agent()

    async def consume():
        stream = agent.arun("hello there", session_id="conv-ab", stream=True, stream_events=True)
        async for _ in stream:
            break
        if how == "break-aclose":
            await stream.aclose()

    await consume()
    import gc

    gc.collect()
    for _ in range(5):
        await asyncio.sleep(0)  # the loop's async-generator finaliser runs aclose()
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.attributes[CONV] == "conv-ab" and span.status.is_unset


async def test_sync_stream_consumed_in_another_thread(instrumentor, exporter):
    agent = make_agent()
    stream = agent.run("weather in Kyiv", session_id="conv-t", stream=True)
    events = await asyncio.to_thread(list, stream)
    assert events
    spans = exporter.get_finished_spans()
    _check_run(spans, agent_spans(spans)[0], agent.model.calls[0].run_id, "conv-t")


async def test_background_run_span_covers_the_background_work(instrumentor, exporter):
    from agno.run.background import await_background_runs
    from agno.run.base import RunStatus

    agent = make_agent()
    gate = asyncio.Event()
    original = agent.model.ainvoke

    async def slow_ainvoke(*args, **kwargs):
        await gate.wait()  # the background run waits here until the test lets it go
        return await original(*args, **kwargs)

    agent.model.ainvoke = slow_ainvoke
    pending = await agent.arun("weather in Cairo", session_id="conv-bg", background=True)
    assert isinstance(pending, RunOutput) and pending.status == RunStatus.pending
    for _ in range(5):
        await asyncio.sleep(0)
    assert agent_spans(exporter.get_finished_spans()) == []  # the call returned; the run goes on
    gate.set()
    await await_background_runs(timeout=10)
    done = await agent.aget_run_output(run_id=pending.run_id, session_id="conv-bg")
    assert done.status == RunStatus.completed and "sunny in Cairo" in done.content
    spans = exporter.get_finished_spans()
    (span,) = agent_spans(spans)
    _check_run(spans, span, pending.run_id, "conv-bg")
    assert TOOL_CALLS[0][:2] == (pending.run_id, "conv-bg")


def test_huge_session_id_is_dropped_with_a_warning_and_the_run_works(instrumentor, exporter, caplog):
    agent = make_agent()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        out = agent.run("hello", session_id="s" * 5000)
    assert out.content.startswith("offline: hello")
    (span,) = agent_spans(exporter.get_finished_spans())
    assert CONV not in span.attributes and span.attributes[EXEC] == out.run_id
    assert any("max_id_length" in r.getMessage() for r in caplog.records)


def test_uninstrument_restores_every_method(tracer_provider, exporter):
    from agno.agent import _run
    from agno.team import Team
    from agno.workflow import Workflow

    from otel_agent_identity import AgentIdentityInstrumentor

    originals = {(cls, m): cls.__dict__[m] for cls in (Agent, Team, Workflow) for m in ("run", "arun")}
    original_resolver = _run.initialize_session
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    assert all(cls.__dict__[m] is not fn for (cls, m), fn in originals.items())
    inst.uninstrument()
    assert all(cls.__dict__[m] is fn for (cls, m), fn in originals.items())
    assert _run.initialize_session is original_resolver
    make_agent().run("hello")
    assert agent_spans(exporter.get_finished_spans()) == []


def test_unsupported_version_is_skipped_with_one_warning(tracer_provider, exporter, monkeypatch, caplog):
    from otel_agent_identity import AgentIdentityInstrumentor
    from otel_agent_identity.adapters import agno as adapter

    monkeypatch.setattr(adapter, "REQUIREMENTS", ("agno >= 99",))
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=tracer_provider)
    try:
        warnings = [r for r in caplog.records if "agno" in r.getMessage()]
        assert len(warnings) == 1 and "skipping agno" in warnings[0].getMessage()
        assert not hasattr(Agent.__dict__["run"], "__wrapped__")
        make_agent().run("hello")
        assert agent_spans(exporter.get_finished_spans()) == []
    finally:
        inst.uninstrument()


@pytest.mark.parametrize("how", ["run_response", "run_id", "acontinue_run"])
async def test_continued_run_keeps_its_run_id_and_session(instrumentor, exporter, how):
    from agno.tools import tool

    @tool(requires_confirmation=True)
    def get_weather(city: str) -> str:
        """Return the weather for a city."""
        return f"sunny in {city}"

    agent = make_agent(name="careful", tools=[get_weather])
    paused = agent.run("weather in Paris")
    assert paused.is_paused
    for requirement in paused.active_requirements:
        requirement.confirm()
    if how == "run_response":
        done = agent.continue_run(run_response=paused)
    elif how == "run_id":
        done = agent.continue_run(run_id=paused.run_id, requirements=paused.requirements, session_id=paused.session_id)
    else:
        done = await agent.acontinue_run(run_response=paused)
    assert done.content == "offline: sunny in Paris" and done.run_id == paused.run_id
    first, second = agent_spans(exporter.get_finished_spans(), "careful")
    for span in (first, second):
        assert (span.attributes[EXEC], span.attributes[CONV]) == (paused.run_id, paused.session_id)


async def test_team_background_run_span_covers_the_background_work(instrumentor, exporter):
    from agno.db.in_memory import InMemoryDb
    from agno.run.background import await_background_runs
    from agno.team import Team
    from offline_agno_model import OfflineModel

    member = make_agent(name="weather", id="weather-agent", db=None)
    team = Team(name="desk", members=[member], db=InMemoryDb(), model=OfflineModel(delegate_to="weather-agent"))
    pending = await team.arun("delegate: weather in Quito", session_id="conv-tbg", background=True)
    await await_background_runs(timeout=10)
    spans = exporter.get_finished_spans()
    (lead,), (worker,) = agent_spans(spans, "desk"), agent_spans(spans, "weather")
    assert (lead.attributes[EXEC], lead.attributes[CONV]) == (pending.run_id, "conv-tbg")
    assert worker.attributes["agent_identity.parent.execution.id"] == pending.run_id
    assert worker in inside(spans, lead) and lead.end_time >= worker.end_time
    assert TOOL_CALLS[0][1] == "conv-tbg"


async def test_background_stream_left_early_keeps_the_span_until_the_run_ends(instrumentor, exporter):
    """AgentOS's shape: ``arun(background=True, stream=True)`` yields SSE strings while a detached
    task runs; a client that stops reading does not end the run, nor its span."""
    from agno.run.background import await_background_runs

    agent = make_agent()
    gate, original = asyncio.Event(), agent.model.ainvoke_stream

    async def slow_stream(*args, **kwargs):
        await gate.wait()  # the model answers only after the client has left
        async for chunk in original(*args, **kwargs):
            yield chunk

    agent.model.ainvoke_stream = slow_stream
    stream = agent.arun("weather in Accra", session_id="conv-sse", background=True, stream=True, stream_events=True)
    async for _first in stream:
        break
    await stream.aclose()
    assert agent.model.calls == [] and agent_spans(exporter.get_finished_spans()) == []
    gate.set()
    await await_background_runs(timeout=10)
    spans = exporter.get_finished_spans()
    (span,) = agent_spans(spans)
    (truth,) = {c.run_id for c in agent.model.calls}
    _check_run(spans, span, truth, "conv-sse")
    assert TOOL_CALLS[0][:2] == (truth, "conv-sse")
    (lookup,) = [s for s in spans if s.name == "weather lookup"]
    assert span.end_time >= lookup.end_time  # the span covers the work done after the client left


def test_span_names_follow_each_agent_and_a_rename(instrumentor, exporter):
    """The span spec is built once per agent (cached): each span still names its agent as it is at
    the run's start (name, else the id Agno gives it on its first run, else its type: an unnamed
    Agent and an unnamed Team each their own), and a renamed agent gets its new name."""
    from agno.team import Team
    from offline_agno_model import OfflineModel

    agent = make_agent(name=None, db=None, tools=[])
    team = Team(members=[make_agent(name="member", db=None, tools=[])], model=OfflineModel())
    expected = []

    def run(owner, session_id):
        expected.append((f"invoke_agent {owner.name or owner.id or type(owner).__name__}", owner.id))
        owner.run("hi", session_id=session_id)

    for _ in range(3):
        run(agent, "conv_a")
        run(team, "conv_t")
    agent.name, agent.id = "renamed", "agent-7"
    run(agent, "conv_a")
    assert expected[:2] == [("invoke_agent Agent", None), ("invoke_agent Team", None)]
    assert expected[-1] == ("invoke_agent renamed", "agent-7")
    spans = [s for s in agent_spans(exporter.get_finished_spans()) if not s.name.endswith(" member")]
    assert [(s.name, s.attributes.get("gen_ai.agent.id")) for s in spans] == expected


@pytest.mark.parametrize("own", ["mine", None], ids=["app sets its id", "app sets nothing"])
def test_the_applications_own_conversation_id_on_the_run_span_wins(instrumentor, exporter, own):
    """The run's ``invoke_agent`` span is ours (Agno has none): an id a tool sets on it stays, also
    on turn 1, whose id Agno generates during the run; without one, the span reports that id."""

    def get_weather(city: str) -> str:
        """Return the weather for a city."""
        if own is not None:
            trace.get_current_span().set_attribute(CONV, own)
        trace.get_tracer("agno-tests").start_span("weather lookup").end()
        return f"sunny in {city}"

    out = make_agent(tools=[get_weather]).run("what is the weather in Paris")
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans, "helper")
    assert run.attributes[CONV] == (own or out.session_id)
    assert "agent_identity.conversation.changed" not in run.attributes
    assert {s.attributes.get(CONV) for s in inside(spans, run)} == {out.session_id}  # the run's id inside
