"""A send the caller cancels (``asyncio.wait_for``) before any answer arrived: its CLIENT span gets
``agent_identity.send.cancelled=true`` and keeps status UNSET, as does a stream cancelled while
its task was still SUBMITTED/WORKING (issue 32); a send that got its answer is not marked. The
callee is a real a2a-sdk server on 127.0.0.1 (``examples/charge_specialist.py``) that completes
the work at once and holds every response 3 s; its record of the charges it made is the ground truth."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid

import a2a_harness as h
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from agent_framework.a2a import A2AAgent
from opentelemetry.trace import SpanKind, StatusCode

pytestmark = pytest.mark.e2e

CANCELLED = "agent_identity.send.cancelled"


@pytest.fixture(scope="module")
def payments(tmp_path_factory):
    record = tmp_path_factory.mktemp("payments") / "charges.jsonl"
    proc, url = h.start_charge_specialist(
        "payments",
        None,
        record,
        idempotent=False,
        hold=3.0,
        hold_each=True,
        stdout=subprocess.DEVNULL,
        OTEL_TRACES_EXPORTER="none",
    )
    yield url, record
    h.stop(proc)


def _request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=A2AMessage(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=uuid.uuid4().hex)
    )


def _client_span(exporter):
    (span,) = [
        s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name.startswith("invoke_agent")
    ]
    return span


async def _timed_out_after_reaching(send, record) -> None:
    """Await ``send`` (a coroutine) under ``asyncio.wait_for(..., 1.0)`` started once the callee
    recorded its work (bounded wait; this module's sends run one at a time): the send is cancelled
    after its request reached the callee, whatever the machine's speed. Ground truth of the
    callee's side: its record."""
    before = len(h.read_charges(record))
    task = asyncio.ensure_future(send)
    deadline = time.monotonic() + 60
    while len(h.read_charges(record)) == before:
        assert time.monotonic() < deadline, "the callee never did the work"
        await asyncio.sleep(0.05)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(task, 1.0)


async def _send(url: str, streaming: bool = False) -> list:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=streaming))
        return [event async for event in client.send_message(_request("order-1"))]


async def test_direct_send_cancelled_before_its_answer_is_marked(instrumentor, exporter, payments):
    url, record = payments
    await _timed_out_after_reaching(_send(url), record)
    span = _client_span(exporter)
    assert span.attributes.get(CANCELLED) is True
    assert span.status.status_code is StatusCode.UNSET  # cancellation is no error


async def test_direct_send_answered_is_not_marked(instrumentor, exporter, payments):
    url, _ = payments
    events = await _send(url)
    assert events
    span = _client_span(exporter)
    assert CANCELLED not in span.attributes


async def test_stream_cancelled_while_its_task_is_submitted_is_marked(instrumentor, exporter, streaming_specialist):
    first = asyncio.Event()

    async def consume():
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(
                streaming_specialist.url, client_config=ClientConfig(httpx_client=http, streaming=True)
            )
            async for _event in client.send_message(_request("tell me a long story of many many words " * 5)):
                first.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(first.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = _client_span(exporter)
    # the stream's first event is the task, SUBMITTED: the caller walked away before its answer
    assert span.attributes.get("a2a.task.state") in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert span.attributes.get("a2a.task.id")
    assert span.attributes.get(CANCELLED) is True
    assert span.status.status_code is StatusCode.UNSET


async def test_a2a_agent_run_cancelled_before_its_answer_is_marked(instrumentor, exporter, payments):
    url, record = payments
    agent = A2AAgent(name="payments", url=url)
    await _timed_out_after_reaching(agent.run("order-2"), record)
    assert _client_span(exporter).attributes.get(CANCELLED) is True


async def test_a2a_agent_run_answered_is_not_marked(instrumentor, exporter, payments):
    url, _ = payments
    await A2AAgent(name="payments", url=url).run("order-3")
    assert CANCELLED not in _client_span(exporter).attributes
