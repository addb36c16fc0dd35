"""A long-running task's methods (issue 32): a send with ``return_immediately`` answered SUBMITTED,
then ``GetTask`` polling, ``SubscribeToTask`` or ``CancelTask``. Each call gets a CLIENT span here
and a SERVER span in the specialist (a real a2a-sdk server process on 127.0.0.1, the Agent
Framework ``session-local`` shape serving such a send as a task, its model taking 2 s), named after
the A2A method, with ``a2a.task.id``, ``a2a.task.state`` (the last state answered) and
``gen_ai.conversation.id`` (the task's contextId); the SERVER span continues the CLIENT span's
trace. Ground truth: the task the server returned."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.types import Message as A2AMessage
from a2a_test_support import ServerProcess, span_hex, trace_hex
from opentelemetry.trace import SpanKind

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tasks_specialist():
    server = ServerProcess("task-specialist", shape="session-local", OFFLINE_MODEL_LATENCY="2")
    yield server
    server.stop()


async def _submit(client) -> tuple[str, str]:
    """A send with ``return_immediately``; returns ``(task id, context id)`` of the SUBMITTED task."""
    message = A2AMessage(role=Role.ROLE_USER, parts=[Part(text="a long job")], message_id=uuid.uuid4().hex)
    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=True))
    (event,) = [e async for e in client.send_message(request)]
    assert event.task.status.state == TaskState.TASK_STATE_SUBMITTED
    return event.task.id, event.task.context_id


def _spans(exporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name and s.kind is SpanKind.CLIENT]


def _served(server, client_span) -> dict:
    """The SERVER span the CLIENT span caused (bounded wait for the specialist's export)."""
    trace_id, span_id = trace_hex(client_span.context.trace_id), span_hex(client_span.context.span_id)
    (span,) = server.wait_for(
        lambda s: (
            s["kind"] == "SpanKind.SERVER"
            and trace_hex(s["context"]["trace_id"]) == trace_id
            and span_hex(s["parent_id"] or "0x0") == span_id
        )
    )
    return span


async def test_get_task_polling(instrumentor, exporter, tasks_specialist):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(
            tasks_specialist.url, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        task_id, context_id = await _submit(client)
        while (
            task := await client.get_task(GetTaskRequest(id=task_id))
        ).status.state != TaskState.TASK_STATE_COMPLETED:
            await asyncio.sleep(0.2)
    polls = _spans(exporter, "GetTask")
    assert len(polls) >= 2  # at least one WORKING poll (the model takes 2 s), then COMPLETED
    for span in polls:
        assert span.attributes["a2a.method.name"] == "GetTask"
        assert span.attributes["a2a.task.id"] == task_id
        assert span.attributes["gen_ai.conversation.id"] == context_id
    assert polls[0].attributes["a2a.task.state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert polls[-1].attributes["a2a.task.state"] == TaskState.Name(task.status.state)
    served = _served(tasks_specialist, polls[-1])["attributes"]
    assert served["a2a.task.id"] == task_id and served["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert served["gen_ai.conversation.id"] == context_id and served["gen_ai.agent.name"] == "task-specialist"


async def test_subscribe_to_task(instrumentor, exporter, tasks_specialist):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(
            tasks_specialist.url, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        task_id, context_id = await _submit(client)
        streams = await create_client(tasks_specialist.url, client_config=ClientConfig(httpx_client=http))
        events = [e async for e in streams.subscribe(SubscribeToTaskRequest(id=task_id))]
    assert events
    (span,) = _spans(exporter, "SubscribeToTask")
    assert span.attributes["a2a.task.id"] == task_id and span.attributes["gen_ai.conversation.id"] == context_id
    assert span.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"  # the last state streamed
    served = _served(tasks_specialist, span)["attributes"]
    assert served["a2a.method.name"] == "SubscribeToTask" and served["a2a.task.id"] == task_id


async def test_cancel_task(instrumentor, exporter, tasks_specialist):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(
            tasks_specialist.url, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        task_id, _ = await _submit(client)
        try:
            answer = await client.cancel_task(CancelTaskRequest(id=task_id))
            state = TaskState.Name(answer.status.state)
        except Exception as exc:  # a server may refuse; the span records it
            state, error = None, exc
    (span,) = _spans(exporter, "CancelTask")
    assert span.attributes["a2a.task.id"] == task_id
    if state is not None:
        assert span.attributes["a2a.task.state"] == state
    else:
        assert span.status.is_ok is False, error
    assert _served(tasks_specialist, span)["attributes"]["a2a.task.id"] == task_id
