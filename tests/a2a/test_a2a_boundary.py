"""Requested vs effective at the A2A protocol boundary (stub transport / stub handlers), and the
serving run's ``agent_identity.conversation.resumed`` from the Agent Framework session."""

from __future__ import annotations

import gc

import pytest
from a2a.types import SendMessageResponse, Task, TaskState, TaskStatus
from offline_chat import OfflineChatClient
from opentelemetry import trace
from test_a2a_unit import TRACEPARENT, _call_context, _client, _request, _send

from agent_framework import Agent, AgentSession, FileHistoryProvider
from otel_agent_identity.adapters.a2a.server import server_wrapper
from otel_agent_identity.adapters.agent_framework import resumed_state

REQUESTED = "agent_identity.conversation.requested_id"
CHANGED = "agent_identity.conversation.changed"
CONV = "gen_ai.conversation.id"


def _answering_in(transport, context_id):
    async def send(request, *, context=None):
        return SendMessageResponse(
            task=Task(id="t", context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
        )

    transport.send_message = send


@pytest.mark.parametrize(
    "sent, answered, requested, effective, changed",
    [
        ("", "ctx-new", None, "ctx-new", None),  # first turn: nothing requested, the server assigns
        ("ctx-1", "ctx-1", "ctx-1", "ctx-1", None),  # continued
        ("ctx-1", "ctx-2", "ctx-1", "ctx-1", True),  # the callee answered elsewhere: the caller alone sees it
    ],
)
async def test_client_span_requested_effective_changed(
    instrumentor, exporter, sent, answered, requested, effective, changed
):
    client, transport = _client()
    _answering_in(transport, answered)
    await _send(client, _request("m-1", sent))
    (span,) = exporter.get_finished_spans()
    a = span.attributes
    assert (a.get(REQUESTED), a.get(CONV), a.get(CHANGED)) == (requested, effective, changed)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    "sent, answered, changed", [("", "ctx-new", None), ("ctx-1", "ctx-1", None), ("ctx-1", "ctx-2", True)]
)
async def test_server_span_requested_answered_changed(instrumentor, exporter, streaming, sent, answered, changed):
    task = Task(id="t", context_id=answered, status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))

    async def on_send(params, ctx):
        return task

    async def on_stream(params, ctx):
        yield task

    wrapper = server_wrapper(trace.get_tracer("t"), streaming)
    args = (_request("m-1", sent), _call_context(TRACEPARENT))
    if streaming:
        [e async for e in wrapper(on_stream, None, args, {})]
    else:
        await wrapper(on_send, None, args, {})
    (span,) = exporter.get_finished_spans()
    a = span.attributes
    assert (a.get(REQUESTED), a[CONV], a.get(CHANGED)) == (sent or None, answered, changed)


async def test_server_stream_dropped_unfinished_ends_its_span(instrumentor, exporter):
    """A client that abandons an SSE response: the route stops pulling and drops the stream."""

    async def on_stream(params, ctx):
        for _ in range(10):
            yield Task(id="t", context_id="ctx-1", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))

    stream = server_wrapper(trace.get_tracer("t"), True)(
        on_stream, None, (_request("m", "ctx-1"), _call_context(TRACEPARENT)), {}
    )
    await stream.__anext__()
    assert not exporter.get_finished_spans()
    del stream
    gc.collect()
    (span,) = exporter.get_finished_spans()
    assert span.status.is_unset  # abandoning is not the server's failure


async def test_resumed_from_the_session_before_the_run():
    local = Agent(client=OfflineChatClient(mode="local"), name="local")
    session = local.create_session()
    assert resumed_state(local, None) is None
    assert resumed_state(local, session) is False  # nothing yet
    await local.run("hi", session=session)
    assert resumed_state(local, session) is True  # history in the session's in-memory provider
    assert resumed_state(local, AgentSession(session_id=session.session_id)) is False  # the id kept, state lost
    assert resumed_state(local, AgentSession(service_session_id="thread_1")) is True  # service-side history
    elsewhere = Agent(
        client=OfflineChatClient(mode="local"),
        name="f",
        context_providers=[FileHistoryProvider("/nonexistent-dir-never-written")],
    )
    assert resumed_state(elsewhere, AgentSession()) is None  # history stored elsewhere: we cannot tell


async def test_agent_span_records_resumed_at_run_start(instrumentor, exporter):
    agent = Agent(client=OfflineChatClient(mode="local"), name="svc")
    session = agent.create_session()
    for _ in range(2):
        await agent.run("hi", session=session)
    await agent.run("hi", session=AgentSession(session_id=session.session_id))  # A2AExecutor's shape
    runs = [s for s in exporter.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert [s.attributes.get("agent_identity.conversation.resumed") for s in runs] == [False, True, False]
