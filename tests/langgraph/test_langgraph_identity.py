"""Conversation and execution identity on real LangGraph runs (offline model, InMemorySaver)."""

from __future__ import annotations

import logging
import uuid

import pytest
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from lg_support import CONV, EXEC, agent_spans, counter_graph, in_run, make_agent, seen_counts
from opentelemetry.trace import SpanKind, StatusCode

import otel_agent_identity
from otel_agent_identity import AgentIdentityInstrumentor


def _turn(agent, text, thread):
    return agent.invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}})


def test_two_turns_on_one_thread_with_a_tool(instrumentor, exporter):
    agent = make_agent()
    first = _turn(agent, "Paris", "conv-1")
    second = _turn(agent, "Rome", "conv-1")
    other = _turn(agent, "Oslo", "conv-2")
    # ground truth: the model saw the thread's history on turn 2 (3 -> 7 messages), not on conv-2
    assert seen_counts(first) == [3] and seen_counts(second) == [3, 7] and seen_counts(other) == [3]
    spans = exporter.get_finished_spans()
    runs = agent_spans(spans)
    assert [r.attributes[CONV] for r in runs] == ["conv-1", "conv-1", "conv-2"]
    assert len({r.attributes[EXEC] for r in runs}) == 3
    for run in runs:
        assert run.name == "invoke_agent weather_agent" and run.kind == SpanKind.INTERNAL
        assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert run.attributes["gen_ai.agent.name"] == "weather_agent"
        assert run.attributes["gen_ai.provider.name"] == "langgraph"
        assert run.attributes["agent_identity.conversation.source"] == "framework"
        assert run.status.status_code == StatusCode.UNSET and run.parent is None
        inside = in_run(spans, run)
        # the model ran twice and the tool once, in LangGraph's executor threads: all carry the ids
        assert sorted(s.name for s in inside) == ["chat offline", "chat offline", "execute_tool get_weather", run.name]
        assert {(s.attributes[CONV], s.attributes[EXEC]) for s in inside} == {
            (run.attributes[CONV], run.attributes[EXEC])
        }
    assert len(in_run(spans, runs[0])) + len(in_run(spans, runs[1])) + len(in_run(spans, runs[2])) == len(spans)


def test_no_thread_id_no_conversation_id(instrumentor, exporter):
    result = make_agent(checkpointer=None).invoke({"messages": [("user", "Paris")]})
    assert seen_counts(result) == [3]
    spans = exporter.get_finished_spans()
    assert len(spans) == 4 and all(CONV not in s.attributes for s in spans)
    assert len({s.attributes[EXEC] for s in spans}) == 1


@pytest.mark.parametrize("run_id", ["run-42", uuid.UUID("12345678-1234-5678-1234-567812345678")])
def test_config_run_id_is_the_execution_id(instrumentor, exporter, run_id):
    counter_graph("g").invoke({"x": 0}, {"run_id": run_id, "configurable": {"thread_id": "t"}})
    (span,) = exporter.get_finished_spans()
    assert span.attributes[EXEC] == str(run_id) and span.attributes[CONV] == "t"


async def test_astream_events_run_id_is_the_root_events_run_id(instrumentor, exporter):
    events = [e async for e in counter_graph("g").astream_events({"x": 0}, version="v2")]
    root_run_ids = {e["run_id"] for e in events if e["event"] == "on_chain_start" and e["name"] == "g"}
    (span,) = exporter.get_finished_spans()
    assert root_run_ids == {span.attributes[EXEC]}


def test_thread_ids_of_other_types(instrumentor, exporter, caplog):
    graph = counter_graph("g")
    graph.invoke({"x": 0}, {"configurable": {"thread_id": 7}})
    thread = uuid.uuid4()
    graph.invoke({"x": 0}, {"configurable": {"thread_id": thread}})
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            assert graph.invoke({"x": 0}, {"configurable": {"thread_id": {"bad": 1}}}) == {"x": 1}
            assert graph.invoke({"x": 0}, {"configurable": {"thread_id": "x" * 10_000}}) == {"x": 1}
        assert graph.invoke({"x": 0}, {"run_id": 12}) == {"x": 1}
    spans = exporter.get_finished_spans()
    assert [s.attributes.get(CONV) for s in spans] == ["7", str(thread), None, None, None, None, None]
    assert all(s.attributes.get(EXEC) for s in spans)
    warned = [r.getMessage() for r in caplog.records if "otel-agent-identity" in r.getMessage()]
    # bad thread ids: once per graph type and kind of problem (not a string, too long); once for the run id
    assert len(warned) == 3, warned
    assert "a dict" in warned[0] and "10000 characters" in warned[1] and "run_id int" in warned[2]


def test_registered_override_wins(instrumentor, exporter):
    otel_agent_identity.register_extractor(
        CompiledStateGraph, lambda graph, config, call: f"app-{config['configurable']['user']}"
    )
    try:
        counter_graph("g").invoke({"x": 0}, {"configurable": {"thread_id": "t", "user": "ann"}})
    finally:
        otel_agent_identity.registry.unregister(CompiledStateGraph)
    (span,) = exporter.get_finished_spans()
    assert span.attributes[CONV] == "app-ann" and span.attributes["agent_identity.conversation.source"] == "override"


def test_node_error_marks_the_span_and_reaches_the_caller(instrumentor, exporter):
    def boom(state):
        raise KeyError("nope")

    with pytest.raises(KeyError):
        counter_graph("g", boom).invoke({"x": 0}, {"configurable": {"thread_id": "t"}})
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR and span.attributes["error.type"] == "KeyError"


def test_instrument_twice_and_uninstrument_restore(tracer_provider, exporter):
    original = Pregel.stream, Pregel.astream, Pregel.invoke, Pregel.ainvoke
    for _ in range(2):
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        inst.instrument(tracer_provider=tracer_provider)
        counter_graph("g").invoke({"x": 0})
        assert len(exporter.get_finished_spans()) == 1
        inst.uninstrument()
        assert (Pregel.stream, Pregel.astream, Pregel.invoke, Pregel.ainvoke) == original
        exporter.clear()
        counter_graph("g").invoke({"x": 0})
        assert exporter.get_finished_spans() == ()


def test_unsupported_version_is_skipped_with_one_warning(tracer_provider, exporter, caplog, monkeypatch):
    from otel_agent_identity.adapters import langgraph as adapter

    monkeypatch.setattr(adapter, "REQUIREMENTS", ("langgraph >= 99",))
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING):
        inst.instrument(tracer_provider=tracer_provider)
    try:
        warned = [r.getMessage() for r in caplog.records if "langgraph" in r.getMessage()]
        assert len(warned) == 1 and "skipping langgraph" in warned[0]
        assert not hasattr(Pregel.stream, "__wrapped__")
        counter_graph("g").invoke({"x": 0})
        assert exporter.get_finished_spans() == ()
    finally:
        inst.uninstrument()


def test_frameworks_option_selects_langgraph(tracer_provider, exporter):
    from agent_framework import Agent

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, frameworks="langgraph")
    try:
        assert hasattr(Pregel.stream, "__wrapped__") and not hasattr(Agent.run, "__wrapped__")
    finally:
        inst.uninstrument()
    inst.instrument(tracer_provider=tracer_provider, frameworks="agent_framework")
    try:
        assert not hasattr(Pregel.stream, "__wrapped__")
        counter_graph("g").invoke({"x": 0})
        assert exporter.get_finished_spans() == ()
    finally:
        inst.uninstrument()


def test_with_config_binding_gives_the_thread(instrumentor, exporter):
    counter_graph("g").with_config(configurable={"thread_id": "bound"}).invoke({"x": 0})
    (span,) = exporter.get_finished_spans()
    assert span.attributes[CONV] == "bound"


async def test_cancelled_run_ends_its_span_without_error(instrumentor, exporter):
    import asyncio

    started = asyncio.Event()

    async def wait_forever(state):
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(counter_graph("g", wait_forever).ainvoke({"x": 0}, {"configurable": {"thread_id": "t"}}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.UNSET and "error.type" not in span.attributes


def test_run_id_bound_on_the_graph_is_not_shared_by_its_runs(instrumentor, exporter):
    graph = counter_graph("g").with_config(run_id="bound-run")
    graph.invoke({"x": 0})
    graph.invoke({"x": 0})
    assert len({s.attributes[EXEC] for s in exporter.get_finished_spans()}) == 2


def test_functional_api_entrypoint_and_tasks(instrumentor, exporter):
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task
    from opentelemetry import trace

    tracer = trace.get_tracer("lg-tests")

    @task
    def double(x: int) -> int:
        with tracer.start_as_current_span("work double"):
            return 2 * x

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(xs: list[int]) -> list[int]:
        return [f.result() for f in [double(x) for x in xs]]

    assert workflow.invoke([1, 2, 3], {"configurable": {"thread_id": "conv-func"}}) == [2, 4, 6]
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    assert run.name == "invoke_agent LangGraph"  # an entrypoint graph keeps Pregel's default name
    assert run.attributes[CONV] == "conv-func"
    works = [s for s in spans if s.name == "work double"]
    assert len(works) == 3 and all(w in in_run(spans, run) for w in works)
    assert {(w.attributes[CONV], w.attributes[EXEC]) for w in works} == {("conv-func", run.attributes[EXEC])}
