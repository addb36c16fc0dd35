"""Issue 9, item 8 (and item 4's ``A2AExecutor(stream=True)``): GenAI semconv attributes on the
spans we create, ``invoke_workflow`` for ``WorkflowAgent``, an execution id on a plain
``Workflow.run()``, and ``A2AAgent`` CLIENT spans against a real a2a-sdk server on 127.0.0.1."""

from __future__ import annotations

import pytest
from helpers import CONV, EXEC, agent_spans, by_execution, make_agent
from opentelemetry.trace import SpanKind

from agent_framework import WorkflowBuilder

PARENT_EXEC = "agent_identity.parent.execution.id"


def ours(span) -> bool:
    return span.instrumentation_scope.name == "otel_agent_identity"


def is_workflow_run(span) -> bool:
    """The framework's own span of a ``Workflow.run``: ``workflow.run`` up to agent-framework-core
    1.23, ``invoke_workflow {workflow name}`` (GenAI semconv) from 1.26."""
    return not ours(span) and (span.name == "workflow.run" or span.name.startswith("invoke_workflow "))


@pytest.fixture
def telemetry_off(monkeypatch):
    from agent_framework.observability import OBSERVABILITY_SETTINGS

    monkeypatch.setattr(type(OBSERVABILITY_SETTINGS), "ENABLED", property(lambda self: False))


async def test_agent_span_we_create_has_provider_and_description(instrumentor, exporter, telemetry_off):
    agent = make_agent("local", name="helper", description="Answers weather questions.")
    await agent.run("hello", session=agent.create_session())
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.instrumentation_scope.name == "otel_agent_identity"
    assert span.attributes["gen_ai.provider.name"] == "microsoft.agent_framework"  # as the framework's own
    assert span.attributes["gen_ai.agent.description"] == "Answers weather questions."


@pytest.mark.parametrize("stream", [False, True])
async def test_workflow_agent_is_invoke_workflow(instrumentor, exporter, stream):
    inner = make_agent("local", name="writer")
    workflow_agent = WorkflowBuilder(start_executor=inner, name="pipeline").build().as_agent(name="pipeline-agent")
    session = workflow_agent.create_session()
    if stream:
        async for _ in workflow_agent.run("hello", session=session, stream=True):
            pass
    else:
        await workflow_agent.run("hello", session=session)
    spans = exporter.get_finished_spans()
    (span,) = [s for s in spans if s.name.startswith("invoke_workflow") and ours(s)]
    assert span.name == "invoke_workflow pipeline-agent" and span.kind is SpanKind.INTERNAL
    assert span.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert span.attributes["gen_ai.workflow.name"] == "pipeline"
    assert span.attributes["gen_ai.provider.name"] == "microsoft.agent_framework"
    run = by_execution(spans)[span.attributes[EXEC]]
    assert [s for s in run if is_workflow_run(s)]  # one run, no second id
    assert "executor.process writer" in {s.name for s in run}
    (writer,) = [s for s in agent_spans(spans) if s.name == "invoke_agent writer"]
    assert writer.attributes[PARENT_EXEC] == span.attributes[EXEC]


@pytest.mark.parametrize("stream", [False, True])
async def test_plain_workflow_run_gets_one_execution_id(instrumentor, exporter, stream):
    workflow = WorkflowBuilder(start_executor=make_agent("local", name="writer"), name="pipeline").build()
    ids = []
    for _ in range(2):
        exporter.clear()
        if stream:
            async for _event in workflow.run("hello", stream=True):
                pass
        else:
            await workflow.run("hello")
        spans = exporter.get_finished_spans()
        (wf,) = [s for s in spans if is_workflow_run(s)]
        execution = wf.attributes.get(EXEC)
        assert execution
        executor_spans = [s for s in spans if s.name.startswith("executor.process")]
        assert executor_spans and {s.attributes.get(EXEC) for s in executor_spans} == {execution}
        (writer,) = agent_spans(spans)
        assert writer.attributes[PARENT_EXEC] == execution and writer.attributes[EXEC] != execution
        assert not [s for s in spans if ours(s) and s.name.startswith(("invoke_agent pipeline", "invoke_workflow"))]
        ids.append(execution)
    assert ids[0] != ids[1]


# -- A2AAgent against a real a2a-sdk server (in process, 127.0.0.1) --------------------------------
@pytest.fixture
async def specialist_url():
    import a2a_harness
    from specialist import build_app

    async with a2a_harness.serving_in_loop(lambda url: build_app(url, "specialist", stream=True)) as url:
        yield url


@pytest.mark.parametrize("stream", [False, True])
async def test_a2a_agent_client_span_and_streaming_executor(instrumentor, exporter, specialist_url, stream):
    from agent_framework.a2a import A2AAgent

    agent = A2AAgent(name="specialist", url=specialist_url)
    session = agent.create_session()
    for turn in range(2):
        if stream:
            async for _ in agent.run(f"what's the weather {turn}", session=session, stream=True):
                pass
        else:
            await agent.run(f"what's the weather {turn}", session=session)
    context_id = session.service_session_id["context_id"]
    spans = exporter.get_finished_spans()
    clients = [s for s in spans if s.kind is SpanKind.CLIENT and s.name == "invoke_agent specialist"]
    assert len(clients) == 2
    for client in clients:
        assert client.attributes["a2a.protocol.version"] == "1.0"
        assert client.attributes["gen_ai.provider.name"] == "A2A"
    # the server side: A2AExecutor(stream=True) hooks the agent's stream; its spans keep the run's ids
    served = [s for s in agent_spans(spans) if s.kind is SpanKind.INTERNAL and s.name == "invoke_agent specialist"]
    assert len(served) == 2
    for span in served:
        run = by_execution(spans)[span.attributes[EXEC]]
        assert {s.name.split(" ")[0] for s in run} >= {"invoke_agent", "chat"}
        assert {s.attributes.get(CONV) for s in run} == {context_id}
    # the CLIENT span lasts as long as the remote run it waited for
    for client, span in zip(
        sorted(clients, key=lambda s: s.start_time), sorted(served, key=lambda s: s.start_time), strict=False
    ):
        assert client.start_time <= span.start_time and client.end_time >= span.end_time
