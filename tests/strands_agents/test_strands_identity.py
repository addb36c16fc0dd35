"""Strands Agents runs (real framework, offline model): Strands' own ``invoke_agent`` spans are
enriched, never duplicated; every span of a run carries the session manager's id and the run's
execution id; ``resumed`` follows what the session manager restored, checked against the history
the model saw; an Agent without a session manager gets no conversation id; agents as tools, Swarm
handoffs and Graph nodes are delegations."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from offline_strands import OfflineModel, seen
from opentelemetry import trace
from strands import Agent, tool
from strands.session.file_session_manager import FileSessionManager

CONV, EXEC, DELEG = "gen_ai.conversation.id", "agent_identity.execution.id", "agent_identity.delegation.id"
RESUMED, SOURCE = "agent_identity.conversation.resumed", "agent_identity.conversation.source"
PARENT_EXEC, PARENT_CONV = "agent_identity.parent.execution.id", "agent_identity.parent.conversation.id"
DIFFERS = "agent_identity.conversation.parent_differs"
TRACER = trace.get_tracer("app")


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    with TRACER.start_as_current_span("tool-body"):
        return f"sunny in {city}"


def _agent(tmp_path=None, session_id=None, name="helper", **kwargs):
    manager = FileSessionManager(session_id=session_id, storage_dir=str(tmp_path)) if session_id else None
    kwargs.setdefault("model", OfflineModel(tool_arg="city"))
    kwargs.setdefault("tools", [weather])
    return Agent(name=name, callback_handler=None, session_manager=manager, **kwargs)


def _runs(exporter, name="helper"):
    return [s for s in exporter.get_finished_spans() if s.name == f"invoke_agent {name}"]


def _subtree(exporter, root):
    """``root`` and every finished span below it."""
    spans = exporter.get_finished_spans()
    ids, found = {root.context.span_id}, [root]
    while True:
        more = [s for s in spans if s.parent and s.parent.span_id in ids and s.context.span_id not in ids]
        if not more:
            return found
        ids.update(s.context.span_id for s in more)
        found += more


def _check_run(exporter, span, conversation, resumed):
    """One run's spans: its ``invoke_agent`` span (Strands' own, enriched) and every span of its
    trace carry the run's ids; the tool's and the app's spans inside included."""
    a = span.attributes
    assert span.instrumentation_scope.name == "strands.telemetry.tracer"
    assert a.get(CONV) == conversation and a[RESUMED] is resumed
    assert (a.get(SOURCE) == "framework") is (conversation is not None)
    everything = _subtree(exporter, span)
    names = {s.name for s in everything}
    assert {"execute_event_loop_cycle", "chat", "execute_tool weather", "tool-body"} <= names, names
    assert all(s.attributes.get(EXEC) == a[EXEC] for s in everything)
    assert all(s.attributes.get(CONV) == conversation for s in everything)
    by_id = {s.context.span_id: s for s in everything}
    body = next(s for s in everything if s.name == "tool-body")
    assert by_id[body.parent.span_id].name == "execute_tool weather"  # Strands' own nesting kept


def test_continuing_session_is_resumed_as_the_model_saw(instrumentor, exporter, tmp_path):
    first = _agent(tmp_path, "conv-1")("Paris")
    second = _agent(tmp_path, "conv-1")("Rome")  # a fresh Agent: the session manager restores it
    assert seen(first) == 3 and seen(second) == 7  # ground truth: the model saw the earlier turn
    one, two = _runs(exporter)
    assert one.attributes[EXEC] != two.attributes[EXEC]
    _check_run(exporter, one, "conv-1", resumed=False)
    _check_run(exporter, two, "conv-1", resumed=True)


def test_a_new_session_forgets_and_says_so(instrumentor, exporter, tmp_path):
    _agent(tmp_path, "conv-a")("Paris")
    forgot = _agent(tmp_path, "conv-b")("Rome")
    assert seen(forgot) == 3  # the model saw only this turn
    _check_run(exporter, _runs(exporter)[1], "conv-b", resumed=False)


def test_no_session_manager_no_conversation_id(instrumentor, exporter):
    agent = _agent()
    assert len(agent.session_id) == 8  # Strands' random per-instance id: not a conversation
    first, second = agent("Paris"), agent("Rome")
    assert seen(first) == 3 and seen(second) == 7  # the same instance keeps its messages in memory
    one, two = _runs(exporter)
    _check_run(exporter, one, None, resumed=False)
    _check_run(exporter, two, None, resumed=True)
    assert not any(s.attributes.get(CONV) == agent.session_id for s in exporter.get_finished_spans())


async def test_streams_consumed_elsewhere_and_concurrent(instrumentor, exporter, tmp_path):
    agents = [_agent(tmp_path, f"s-{i}") for i in range(4)]
    streams = [a.stream_async("Paris") for a in agents]  # made here, consumed in other tasks

    async def consume(stream):
        return [e async for e in stream][-1]["result"]

    results = await asyncio.gather(*(asyncio.create_task(consume(s)) for s in streams))
    assert all(seen(r) == 3 for r in results)
    spans = _runs(exporter)
    assert sorted(s.attributes[CONV] for s in spans) == [f"s-{i}" for i in range(4)]
    for span in spans:
        _check_run(exporter, span, span.attributes[CONV], resumed=False)
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing of the runs leaked here


def test_sync_calls_in_threads(instrumentor, exporter, tmp_path, submit):
    with TRACER.start_as_current_span("request") as request, ThreadPoolExecutor(3) as pool:
        futures = [submit(pool, _agent(tmp_path, f"t-{i}"), "Paris") for i in range(3)]
        assert all(seen(f.result()) == 3 for f in futures)
    for span in _runs(exporter):
        assert span.parent.span_id == request.get_span_context().span_id
        _check_run(exporter, span, span.attributes[CONV], resumed=False)


async def test_abandoned_stream_ends_the_run(instrumentor, exporter, tmp_path):
    agent = _agent(tmp_path, "s-break")
    stream = agent.stream_async("Paris")
    async for _event in stream:
        break
    await stream.aclose()
    assert trace.get_current_span() is trace.INVALID_SPAN
    await _agent(tmp_path, "s-after").invoke_async("Rome")
    (after,) = [s for s in _runs(exporter) if s.attributes.get(CONV) == "s-after"]
    assert PARENT_EXEC not in after.attributes and DELEG not in after.attributes
    (broken,) = [s for s in _runs(exporter) if s.attributes.get(CONV) == "s-break"]
    assert broken.end_time is not None


async def test_a_failing_model_keeps_the_error_and_the_ids(instrumentor, exporter, tmp_path):
    agent = _agent(tmp_path, "s-err", model=OfflineModel(fail=RuntimeError("model down")))
    with pytest.raises(RuntimeError, match="model down"):
        await agent.invoke_async("Paris")
    (span,) = _runs(exporter)
    assert span.attributes[CONV] == "s-err" and not span.status.is_ok
    assert all(s.attributes.get(CONV) == "s-err" for s in exporter.get_finished_spans())


def test_agent_as_tool_is_a_delegation(instrumentor, exporter, tmp_path):
    researcher = Agent(name="researcher", model=OfflineModel(), callback_handler=None, description="Researches.")
    boss = _agent(tmp_path, "conv-boss", name="boss", model=OfflineModel(), tools=[researcher])
    answer = boss("hi")
    assert seen(answer) == 3 and "seen=1 hi" in str(boss.messages)  # the tool's agent saw only its input
    (outer,) = _runs(exporter, "boss")
    (inner,) = _runs(exporter, "researcher")
    o, i = outer.attributes, inner.attributes
    assert o[CONV] == "conv-boss" and DELEG not in o and PARENT_EXEC not in o
    assert i[PARENT_EXEC] == o[EXEC] and i[PARENT_CONV] == "conv-boss" and len(i[DELEG]) == 32
    assert CONV not in i and i[RESUMED] is False and i[EXEC] != o[EXEC] and DIFFERS not in i
    assert inner.context.trace_id == outer.context.trace_id
    (tool_span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool researcher"]
    assert tool_span.attributes[CONV] == "conv-boss" and tool_span.attributes[EXEC] == o[EXEC]


@pytest.mark.parametrize("own", ["conv-archive", "conv-boss"])
def test_agent_as_tool_with_its_own_session_is_marked_parent_differs(instrumentor, exporter, tmp_path, own):
    """An agent used as a tool with a session of its own is another story than its caller's:
    ``parent_differs``, as for a nested run of any adapter (a newcomer's trial found it unmarked,
    as a delegation); the same session id as the caller's (the ids mapped) is not marked."""
    archivist = _agent(tmp_path / "archive", own, name="archivist", model=OfflineModel(), tools=[])

    @tool
    def archive(question: str) -> str:
        """Asks the archivist."""
        return str(archivist(question))

    boss = _agent(tmp_path, "conv-boss", name="boss", model=OfflineModel(tool_arg="question"), tools=[archive])
    boss("hi")
    (outer,) = _runs(exporter, "boss")
    (inner,) = _runs(exporter, "archivist")
    i = inner.attributes
    assert i[CONV] == own and i[PARENT_CONV] == "conv-boss" and len(i[DELEG]) == 32
    assert i.get(DIFFERS) is (True if own != "conv-boss" else None)
    assert DIFFERS not in outer.attributes


def test_swarm_handoff_and_graph_nodes_are_delegations(instrumentor, exporter):
    from strands.multiagent import GraphBuilder, Swarm

    first = Agent(name="first", model=OfflineModel(handoff_to="second"), callback_handler=None)
    second = Agent(name="second", model=OfflineModel(), callback_handler=None)
    Swarm([first, second])("plan a trip")
    a = Agent(name="a", model=OfflineModel(), callback_handler=None)
    b = Agent(name="b", model=OfflineModel(), callback_handler=None)
    builder = GraphBuilder()
    builder.add_node(a, "a")
    builder.add_node(b, "b")
    builder.add_edge("a", "b")
    builder.build()("plan a trip")
    spans = exporter.get_finished_spans()
    for multi, members in (("invoke_swarm", ("first", "second")), ("invoke_graph", ("a", "b"))):
        (top,) = [s for s in spans if s.name.startswith(multi)]
        runs = [s for s in spans if s.name in {f"invoke_agent {m}" for m in members}]
        assert len(runs) == 2, [s.name for s in spans]
        delegations = {s.attributes[DELEG] for s in runs}
        assert len(delegations) == 2 and all(len(d) == 32 for d in delegations)
        assert {s.attributes[PARENT_EXEC] for s in runs} == {top.attributes[EXEC]}
        assert all(s.attributes[EXEC] != top.attributes[EXEC] for s in runs)
        assert not any(CONV in s.attributes for s in spans if s.context.trace_id == top.context.trace_id)


def test_uninstrument_restores_strands(tracer_provider, exporter):
    from otel_agent_identity import AgentIdentityInstrumentor

    for _ in range(2):
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        inst.uninstrument()
    _agent()("Paris")
    spans = exporter.get_finished_spans()
    assert spans and not any(EXEC in s.attributes or RESUMED in s.attributes for s in spans)


def test_unknown_version_is_skipped_with_one_warning(monkeypatch, caplog):
    from otel_agent_identity import _load_adapter
    from otel_agent_identity.adapters import strands as adapter

    monkeypatch.setattr(adapter, "REQUIREMENTS", ("strands-agents >= 99",))
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        assert _load_adapter("strands", adapter.__name__) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "skipping strands" in messages[0]


def test_strands_own_context_stays_current_across_its_steps(instrumentor, exporter, tmp_path):
    """Strands attaches its baggage and its span for the whole invocation, across the generator's
    yields: the run's steps keep them (one context of the run's own), the caller never sees them."""
    from opentelemetry import baggage

    seen_baggage = []

    @tool
    def lookup(city: str) -> str:
        """Reads the invocation's baggage."""
        seen_baggage.append(baggage.get_baggage("tenant"))
        return city

    agent = _agent(tmp_path, "s-bag", tools=[lookup], baggage_attributes={"tenant": "t-1"})
    assert seen(agent("Paris")) == 3
    assert seen_baggage == ["t-1"] and baggage.get_baggage("tenant") is None


def test_a_sync_call_in_a_tool_is_a_delegation_in_strands_thread(instrumentor, exporter, tmp_path):
    """``other(prompt)`` inside a tool: Strands runs it with ``asyncio.run`` in a thread of its own
    (a copy of the caller's context): a nested run of the tool's agent, a delegation."""
    helper = Agent(name="helper2", model=OfflineModel(), callback_handler=None)

    @tool
    def consult(input: str) -> str:
        """Consults the helper synchronously."""
        return str(helper(input))

    boss = _agent(tmp_path, "conv-sync", name="boss", model=OfflineModel(), tools=[consult])
    assert seen(boss("hi")) == 3
    (outer,) = _runs(exporter, "boss")
    (inner,) = _runs(exporter, "helper2")
    assert inner.attributes[PARENT_EXEC] == outer.attributes[EXEC] and len(inner.attributes[DELEG]) == 32
    assert inner.attributes[PARENT_CONV] == "conv-sync" and CONV not in inner.attributes
    assert inner.context.trace_id == outer.context.trace_id
