"""Real A2A between two processes on 127.0.0.1: this test process is the caller (in-memory
exporter), the specialist is a server process under ``opentelemetry-instrument``."""

from __future__ import annotations

import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from a2a_test_support import span_hex, trace_hex
from agent_framework.a2a import A2AAgent
from opentelemetry.trace import SpanKind

import otel_agent_identity
from agent_framework import Message
from otel_agent_identity.scope import new_delegation_id

pytestmark = pytest.mark.e2e


def _client_spans(exporter) -> list:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name.startswith("invoke_agent")]


def _server_view(server, client_span) -> tuple[dict, dict]:
    """The SERVER span the client span caused, and the agent run below it (same trace)."""
    trace_id = trace_hex(client_span.context.trace_id)
    in_trace = lambda s: trace_hex(s["context"]["trace_id"]) == trace_id  # noqa: E731
    entry = server.wait_for(lambda s: in_trace(s) and s["kind"] == "SpanKind.SERVER" and s["name"].startswith("Send"))
    agent = server.wait_for(lambda s: in_trace(s) and s["name"].startswith("invoke_agent"))
    assert entry and agent, f"server exported nothing in trace {trace_id}"
    return entry[0], agent[0]


def _descends(server, child: dict, ancestor: dict) -> bool:
    by_id = {s["context"]["span_id"]: s for s in server.spans()}
    node = child
    while node is not None:
        if node["context"]["span_id"] == ancestor["context"]["span_id"]:
            return True
        node = by_id.get(node.get("parent_id"))
    return False


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run-stream"])
async def test_a2a_agent_hop_is_one_trace_with_the_right_ids_on_both_sides(instrumentor, exporter, specialist, stream):
    agent = A2AAgent(name="specialist", url=specialist.url)
    session = agent.create_session()
    ids = []
    for turn in range(2):
        mid = uuid.uuid4().hex
        message = Message(role="user", contents=[f"hello {turn}"], message_id=mid)
        if stream:
            await agent.run(message, session=session, stream=True).get_final_response()
        else:
            await agent.run(message, session=session)
        ids.append(mid)
    context_id = session.service_session_id["context_id"]
    # the A2A conversation is the remote contextId: the local AgentSession.session_id never shows up
    assert {s.attributes.get("gen_ai.conversation.id") for s in exporter.get_finished_spans()} <= {None, context_id}
    spans = _client_spans(exporter)
    assert len(spans) == 2
    for client, mid in zip(spans, ids, strict=False):
        a = client.attributes
        assert a["gen_ai.conversation.id"] == context_id  # turn 1: as the server assigned it; turn 2: as sent
        assert a["a2a.method.name"] == "SendMessage"  # A2AAgent(url=) has a minimal card: no streaming
        assert a["a2a.message.id"] == mid and a["a2a.task.state"] == "TASK_STATE_COMPLETED"
        assert a["agent_identity.delegation.id"] == new_delegation_id(transport_key=mid)
        assert a["server.address"] == "127.0.0.1" and isinstance(a["server.port"], int)
        entry, agent_run = _server_view(specialist, client)
        assert span_hex(entry["parent_id"]) == span_hex(client.context.span_id)  # one trace, parented on the hop
        assert entry["attributes"]["gen_ai.conversation.id"] == context_id
        assert entry["attributes"]["a2a.message.id"] == mid
        assert entry["attributes"]["a2a.task.id"] == a["a2a.task.id"]
        assert _descends(specialist, agent_run, entry)
        assert agent_run["attributes"]["gen_ai.conversation.id"] == context_id  # the agent's own extractor
        assert "agent_identity.delegation.id" not in entry["attributes"]  # identity stays in the caller


async def test_callee_answering_in_another_context_is_seen_by_both_sides(instrumentor, exporter, new_context):
    async with httpx.AsyncClient() as http:
        client = await create_client(new_context.url, client_config=ClientConfig(httpx_client=http, streaming=False))
        await _direct_send(client, _request("hello", uuid.uuid4().hex))
        (first,) = _client_spans(exporter)
        assigned = first.attributes["gen_ai.conversation.id"]
        assert "agent_identity.conversation.requested_id" not in first.attributes  # first turn: nothing asked
        exporter.clear()
        await _direct_send(client, _request("again", uuid.uuid4().hex, assigned))
        (span,) = _client_spans(exporter)
        a = span.attributes
        # the caller alone sees it: it asked for `assigned`, the reply came in another context
        assert a["agent_identity.conversation.requested_id"] == a["gen_ai.conversation.id"] == assigned
        assert a["agent_identity.conversation.changed"] is True
        entry = new_context.wait_for(
            lambda s: (
                trace_hex(s["context"]["trace_id"]) == trace_hex(span.context.trace_id)
                and s["kind"] == "SpanKind.SERVER"
                and s["name"].startswith("Send")
            )
        )[0]
        e = entry["attributes"]
        assert e["agent_identity.conversation.requested_id"] == assigned
        assert e["gen_ai.conversation.id"] not in (assigned, None)  # the context it answered in
        assert e["agent_identity.conversation.changed"] is True


async def test_abandoned_streaming_response_ends_its_server_span(instrumentor, exporter, streaming_specialist):
    async with httpx.AsyncClient() as http:
        client = await create_client(
            streaming_specialist.url, client_config=ClientConfig(httpx_client=http, streaming=True)
        )
        stream = client.send_message(_request("tell me a long story of many many words " * 5, uuid.uuid4().hex))
        async for _event in stream:
            break  # the client walks away after the first event
        await stream.aclose()
    (span,) = _client_spans(exporter)
    trace_id = trace_hex(span.context.trace_id)
    entry = streaming_specialist.wait_for(
        lambda s: (
            trace_hex(s["context"]["trace_id"]) == trace_id
            and s["kind"] == "SpanKind.SERVER"
            and s["name"] == "SendStreamingMessage"
        ),
        timeout=8,
    )  # the full stream would take 12 s
    assert entry, "the SERVER span of the abandoned stream never ended"
    assert entry[0]["status"]["status_code"] != "ERROR"


async def _direct_send(client, request: SendMessageRequest) -> list:
    return [event async for event in client.send_message(request)]


def _request(text: str, message_id: str, context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=A2AMessage(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=message_id, context_id=context_id)
    )


@pytest.mark.parametrize("streaming", [False, True])
async def test_direct_client_send_gets_our_client_span_and_a_retry_keeps_its_delegation_id(
    instrumentor, exporter, specialist, streaming
):
    async with httpx.AsyncClient() as http:
        client = await create_client(specialist.url, client_config=ClientConfig(httpx_client=http, streaming=streaming))
        first = _request("hello", uuid.uuid4().hex)
        await _direct_send(client, first)
        await _direct_send(client, first)  # transport-level retry: the same message again
        span1, span2 = _client_spans(exporter)
        context_id = span1.attributes["gen_ai.conversation.id"]  # assigned by the server on turn 1
        assert span1.attributes["agent_identity.delegation.id"] == span2.attributes["agent_identity.delegation.id"]
        assert span1.attributes["a2a.message.id"] == first.message.message_id
        method = "SendStreamingMessage" if streaming else "SendMessage"
        assert span1.attributes["a2a.method.name"] == method
        exporter.clear()
        await _direct_send(client, _request("again", uuid.uuid4().hex, context_id))
        (span3,) = _client_spans(exporter)
        assert span3.attributes["gen_ai.conversation.id"] == context_id  # as sent
        assert span3.attributes["agent_identity.delegation.id"] != span1.attributes["agent_identity.delegation.id"]
        entry, agent_run = _server_view(specialist, span3)
        assert span_hex(entry["parent_id"]) == span_hex(span3.context.span_id)
        assert entry["name"] == method and entry["attributes"]["a2a.method.name"] == method
        assert agent_run["attributes"]["gen_ai.conversation.id"] == context_id


async def test_application_idempotency_key_gives_the_delegation_id(instrumentor, exporter, specialist):
    agent = A2AAgent(name="specialist", url=specialist.url)
    with otel_agent_identity.delegation(key="order-42") as did:
        await agent.run("first try")  # A2AAgent makes a new message id per run ...
        await agent.run("second try")
    spans = _client_spans(exporter)
    assert {s.attributes["agent_identity.delegation.id"] for s in spans} == {did}  # ... the key wins
    assert len({s.attributes["a2a.message.id"] for s in spans}) == 2


async def test_a2a_agent_rerun_of_the_same_message_is_one_delegation_two_executions(instrumentor, exporter, specialist):
    agent = A2AAgent(name="specialist", url=specialist.url)
    session = agent.create_session()
    message = Message(role="user", contents=["book it"], message_id=uuid.uuid4().hex)
    await agent.run(message, session=session)
    await agent.run(message, session=session)  # the response was lost: send the same message again
    first, second = _client_spans(exporter)
    assert first.attributes["agent_identity.delegation.id"] == second.attributes["agent_identity.delegation.id"]
    executions = {_server_view(specialist, s)[1]["attributes"]["agent_identity.execution.id"] for s in (first, second)}
    assert len(executions) == 2  # the callee really ran twice: what the collector counts as a duplicate


async def test_a_send_inside_a_run_is_a_hop_not_a_nested_story(instrumentor, exporter, specialist):
    """An ``A2AAgent`` called from a LangGraph node (thread ``conv-boss``): its CLIENT run records the
    enclosing conversation, but the remote context it continues is no nested story of this
    process: never marked ``parent_differs`` (an in-process nested run with another id is)."""
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    class State(TypedDict):
        text: str

    agent = A2AAgent(name="specialist", url=specialist.url)

    async def ask(state: State) -> State:
        return {"text": (await agent.run(state["text"])).text}

    graph = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").compile()
    await graph.ainvoke({"text": "hi"}, config={"configurable": {"thread_id": "conv-boss"}})
    (client,) = _client_spans(exporter)
    a = client.attributes
    assert a["agent_identity.parent.conversation.id"] == "conv-boss"
    assert a["gen_ai.conversation.id"] not in (None, "conv-boss")  # the context the specialist answered in
    assert "agent_identity.conversation.parent_differs" not in a
