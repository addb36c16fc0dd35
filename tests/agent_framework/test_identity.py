"""Conversation and execution identity on real Agent Framework runs (offline chat client)."""

from __future__ import annotations

from helpers import CONV, EXEC, agent_spans, by_execution, make_agent

import otel_agent_identity
from agent_framework import AgentSession


async def test_service_managed_two_turns_same_id_on_every_span(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("what's the weather?", session=session)
    await agent.run("and tomorrow?", session=session)
    assert session.service_session_id == "conv_offline_1"
    spans = exporter.get_finished_spans()
    runs = by_execution(spans)
    assert len(runs) == 2 and None not in runs
    turn1 = next(r for r in runs.values() if any(s.name.startswith("execute_tool") for s in r))
    assert {s.name.split(" ")[0] for s in turn1} == {"chat", "execute_tool", "invoke_agent"}
    for span in spans:
        assert span.attributes.get(CONV) == "conv_offline_1", span.name
    # the framework alone leaves turn 1's agent span without an id; ours has it, from the agent step
    first_agent = next(s for s in agent_spans(turn1))
    assert first_agent.attributes["agent_identity.conversation.source"] == "agent"
    assert "agent_identity.conversation.changed" not in first_agent.attributes


async def test_local_history_reports_the_sessions_own_id_never_a_new_one(instrumentor, exporter):
    agent = make_agent("local")
    session = agent.create_session()
    await agent.run("hello", session=session)
    await agent.run("again", session=session)
    assert session.service_session_id is None
    spans = exporter.get_finished_spans()
    assert {s.attributes.get(CONV) for s in spans} == {session.session_id}
    assert {s.attributes["agent_identity.conversation.source"] for s in agent_spans(spans)} == {"framework"}


async def test_run_without_session_has_no_conversation_id(instrumentor, exporter):
    await make_agent("local").run("hello")
    spans = exporter.get_finished_spans()
    assert spans and all(CONV not in s.attributes for s in spans)
    assert all(s.attributes.get(EXEC) for s in spans)


async def test_session_restored_from_dict_continues_same_id(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("hello", session=session)
    restored = AgentSession.from_dict(session.to_dict())
    await make_agent("service").run("continue", session=restored)
    ids = {s.attributes.get(CONV) for s in exporter.get_finished_spans()}
    assert ids == {"conv_offline_1"}


async def test_forgetful_service_records_continuity_break(instrumentor, exporter):
    agent = make_agent("forgetful")
    session = agent.create_session()
    await agent.run("hello", session=session)
    exporter.clear()
    await agent.run("again", session=session)
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.attributes[CONV] == "conv_offline_2"
    assert span.attributes["agent_identity.conversation.requested_id"] == "conv_offline_1"
    assert span.attributes["agent_identity.conversation.changed"] is True


async def test_execution_ids_distinct_per_run_and_application_supplied(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    with otel_agent_identity.execution("job-42"):
        await agent.run("one", session=session)
        await agent.run("two", session=session)
    runs = by_execution(exporter.get_finished_spans())
    assert "job-42" in runs and len(runs) == 2
    assert all(len(v) >= 2 for v in runs.values())


async def test_nested_run_gets_own_scope_and_restores_outer(instrumentor, exporter):
    inner = make_agent("service", name="inner", prefix="inner")
    inner_session = inner.create_session()
    outer = make_agent("service", name="outer", prefix="outer")
    outer_session = outer.create_session()
    seen = {}

    async def call_inner() -> str:
        before = otel_agent_identity.current_scope()
        await inner.run("sub-task", session=inner_session)
        seen["restored"] = otel_agent_identity.current_scope() is before
        return "done"

    await outer.run("please call_inner", session=outer_session, tools=[call_inner])
    spans = exporter.get_finished_spans()
    inner_span = next(s for s in agent_spans(spans) if s.name == "invoke_agent inner")
    outer_span = next(s for s in agent_spans(spans) if s.name == "invoke_agent outer")
    assert inner_span.attributes[CONV] == "conv_inner_1"
    assert outer_span.attributes[CONV] == "conv_outer_1"
    assert inner_span.attributes["agent_identity.parent.execution.id"] == outer_span.attributes[EXEC]
    assert inner_span.attributes[EXEC] != outer_span.attributes[EXEC]
    inner_children = [s for s in spans if s.parent and s.parent.span_id == inner_span.context.span_id]
    assert inner_children and all(s.attributes[EXEC] == inner_span.attributes[EXEC] for s in inner_children)
    assert otel_agent_identity.current_scope() is None


async def test_workflow_agent_gets_our_internal_span_and_nested_agent_its_own_scope(instrumentor, exporter):
    from opentelemetry.trace import SpanKind

    from agent_framework import WorkflowBuilder

    workflow_agent = (
        WorkflowBuilder(start_executor=make_agent("service", name="writer")).build().as_agent(name="pipeline")
    )
    session = workflow_agent.create_session()
    await workflow_agent.run("hello", session=session)
    spans = exporter.get_finished_spans()
    pipeline = next(s for s in spans if s.name == "invoke_workflow pipeline")  # issue 9, item 8
    writer = next(s for s in spans if s.name == "invoke_agent writer")
    assert pipeline.kind is SpanKind.INTERNAL and pipeline.instrumentation_scope.name == "otel_agent_identity"
    assert pipeline.attributes[CONV] == session.session_id
    assert writer.attributes["agent_identity.parent.execution.id"] == pipeline.attributes[EXEC]
    workflow_spans = [  # the framework's workflow run (named invoke_workflow from agent-framework-core 1.26)
        s
        for s in spans
        if s is not pipeline and s.name.startswith(("workflow.run", "executor.process", "invoke_workflow"))
    ]
    assert workflow_spans and all(s.attributes[EXEC] == pipeline.attributes[EXEC] for s in workflow_spans)


async def test_nested_agent_span_we_create_never_carries_the_outer_conversation(instrumentor, exporter, monkeypatch):
    """A nested run without a session (or whose remote never answers) has no conversation id:
    the span we create for it must not be stamped with the enclosing run's."""
    from agent_framework.observability import OBSERVABILITY_SETTINGS

    monkeypatch.setattr(type(OBSERVABILITY_SETTINGS), "ENABLED", property(lambda self: False))
    inner = make_agent("local", name="inner")
    outer = make_agent("service", name="outer", prefix="outer")

    async def call_inner() -> str:
        await inner.run("no session here")
        return "done"

    await outer.run("please call_inner", session=outer.create_session(), tools=[call_inner])
    spans = exporter.get_finished_spans()
    inner_span = next(s for s in agent_spans(spans) if s.name == "invoke_agent inner")
    outer_span = next(s for s in agent_spans(spans) if s.name == "invoke_agent outer")
    assert outer_span.attributes[CONV] == "conv_outer_1"
    assert CONV not in inner_span.attributes
    assert inner_span.attributes[EXEC] != outer_span.attributes[EXEC]
    assert inner_span.attributes["agent_identity.parent.execution.id"] == outer_span.attributes[EXEC]


async def test_supplied_execution_id_goes_to_one_run_even_across_tasks(instrumentor, exporter):
    import asyncio

    agents = [make_agent("service", prefix=f"p{i}") for i in range(2)]
    with otel_agent_identity.execution("job-7"):
        await asyncio.gather(*(asyncio.create_task(a.run("hi", session=a.create_session())) for a in agents))
    executions = {s.attributes[EXEC] for s in agent_spans(exporter.get_finished_spans())}
    assert len(executions) == 2 and "job-7" in executions
