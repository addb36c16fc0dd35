"""``agent_identity.conversation.answered_before`` on the caller's send spans (issue 32): whether this
process was already answered in the contextId it requests, by the same endpoint. A client that
names the new conversation itself (a2a-sdk ``context_id=uuid4()``, Agent Framework
``get_session(service_session_id=<new id>)``) sends ``false`` on turn 1, ``true`` from turn 2; the
same contextId sent to another endpoint is ``false`` there; a first turn without a contextId has
no such attribute (nothing was requested). Real a2a-sdk servers on 127.0.0.1 (the module's
specialist processes): the contextId the server really answered in is the ground truth."""

from __future__ import annotations

import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a_test_support import send_text
from agent_framework.a2a import A2AAgent
from opentelemetry.trace import SpanKind

pytestmark = pytest.mark.e2e

ANSWERED_BEFORE = "agent_identity.conversation.answered_before"


def _sends(exporter) -> list:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name.startswith("invoke_agent")]


async def test_client_minted_context_is_false_on_turn_1_and_true_after(instrumentor, exporter, specialist, new_context):
    minted = uuid.uuid4().hex
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        client = await create_client(specialist.url, client_config=config)
        other = await create_client(new_context.url, client_config=config)
        answered = [await send_text(client, minted), await send_text(client, minted)]
        elsewhere = await send_text(other, minted)  # the same id, another endpoint: never answered there
    assert answered == [minted, minted]  # ground truth: the server answered in the minted context
    assert elsewhere != minted  # this one answers in a new context: later sends there would say true for it
    assert [s.attributes.get(ANSWERED_BEFORE) for s in _sends(exporter)] == [False, True, False]


async def test_server_named_context_has_no_attribute_then_true(instrumentor, exporter, specialist):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(specialist.url, client_config=ClientConfig(httpx_client=http, streaming=False))
        first = await send_text(client, "")
        assert first and await send_text(client, first) == first
    assert [s.attributes.get(ANSWERED_BEFORE) for s in _sends(exporter)] == [None, True]


async def test_a2a_agent_session_with_a_new_service_session_id(instrumentor, exporter, specialist):
    agent = A2AAgent(name="specialist", url=specialist.url)
    minted = uuid.uuid4().hex
    session = agent.get_session(service_session_id=minted)
    for turn in range(3):
        await agent.run(f"hello {turn}", session=session)
    assert (session.service_session_id or {}).get("context_id") == minted  # the server kept it
    spans = _sends(exporter)
    assert [s.attributes.get("agent_identity.conversation.requested_id") for s in spans] == [minted] * 3
    assert [s.attributes.get(ANSWERED_BEFORE) for s in spans] == [False, True, True]
