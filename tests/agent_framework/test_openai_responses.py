"""Issue 9, items 1-3: the real ``agent_framework_openai.OpenAIChatClient`` (Responses API) against a
local stand-in of ``POST /v1/responses`` (JSON and SSE); only the model is faked.

Ground truth: the stand-in reports how many items it saw (``[seen N]``), so a test knows whether
the service really continued the chain or conversation, and asserts the product's ids agree.
"""

from __future__ import annotations

import re

import pytest
from helpers import CONV, agent_spans, by_execution, get_weather, make_agent
from responses_standin import ResponsesStandIn

from agent_framework import Agent, AgentSession

CHANGED = "agent_identity.conversation.changed"
REQUESTED = "agent_identity.conversation.requested_id"


@pytest.fixture
def standin():
    with ResponsesStandIn() as server:
        yield server


def _agent(standin, **kwargs) -> Agent:
    from agent_framework_openai import OpenAIChatClient

    client = OpenAIChatClient(model="gpt-standin", api_key="test-key", base_url=standin.base_url)
    return Agent(client=client, name="responder", tools=[get_weather], **kwargs)


def _seen(text: str) -> int:
    return int(re.search(r"\[seen (\d+)\]", text).group(1))


async def _turn(agent, text, session, stream):
    if stream:
        return "".join([u.text async for u in agent.run(text, session=session, stream=True)])
    return (await agent.run(text, session=session)).text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_response_chain_is_one_conversation_the_sessions_own_id(instrumentor, exporter, standin, stream):
    agent = _agent(standin)
    session = agent.create_session()
    seen = []
    for text in ("hello", "what's the weather?", "and tomorrow?"):
        seen.append(_seen(await _turn(agent, text, session, stream)))
    assert seen[0] < seen[1] < seen[2]  # ground truth: the service continued the chain every turn
    assert session.service_session_id.startswith("resp_")  # a new response id every turn
    spans = exporter.get_finished_spans()
    runs = by_execution(spans)
    assert len(runs) == 3 and None not in runs
    assert {s.attributes.get(CONV) for s in spans} == {session.session_id}  # turn 1 included
    for span in agent_spans(spans):
        assert CHANGED not in span.attributes and REQUESTED not in span.attributes
        assert span.attributes["agent_identity.conversation.source"] == "framework"
    response_ids = {s.attributes.get("gen_ai.response.id") for s in spans if s.name.startswith("chat")}
    assert response_ids and all(r.startswith("resp_") for r in response_ids)  # response attributes stay

    # the session restored elsewhere continues the same story under the same id
    exporter.clear()
    restored = AgentSession.from_dict(session.to_dict())
    assert _seen(await _turn(_agent(standin), "still there?", restored, stream)) > seen[-1]
    assert {s.attributes.get(CONV) for s in exporter.get_finished_spans()} == {session.session_id}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_conversations_api_keeps_its_conv_id_and_flags_only_a_real_change(
    instrumentor, exporter, standin, stream
):
    standin.conversations["conv_support"] = []
    agent = _agent(standin)
    session = AgentSession(service_session_id="conv_support")
    first = _seen(await _turn(agent, "hello", session, stream))
    second = _seen(await _turn(agent, "what's the weather?", session, stream))
    assert second > first and session.service_session_id == "conv_support"
    spans = exporter.get_finished_spans()
    assert {s.attributes.get(CONV) for s in spans} == {"conv_support"}
    assert not any(CHANGED in s.attributes for s in spans)

    exporter.clear()
    standin.replace_conversations = True  # the service lost it and answered in a new conversation
    assert _seen(await _turn(agent, "again", session, stream)) == 1  # ground truth: nothing carried over
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.attributes[CHANGED] is True and span.attributes[REQUESTED] == "conv_support"
    assert span.attributes[CONV] == session.service_session_id != "conv_support"


async def test_run_without_session_is_a_single_response_with_no_conversation(instrumentor, exporter, standin):
    """No conversation of ours on any span; a chat span keeps what the framework wrote on it (the
    previous response id of the run's own Responses chain: the public API removes no attribute)."""
    await _agent(standin).run("what's the weather?")
    spans = exporter.get_finished_spans()
    assert spans and not any(CONV in s.attributes for s in spans if not s.name.startswith("chat"))
    assert all(s.attributes.get(CONV, "resp_").startswith("resp_") for s in spans)


# -- item 2: one run, one id ----------------------------------------------------------------------
async def test_undeclared_service_history_one_id_for_every_span_of_the_run(instrumentor, exporter, monkeypatch):
    """A client that returns a conversation id without declaring STORES_BY_DEFAULT."""
    from offline_chat import RawOfflineChatClient

    monkeypatch.setattr(RawOfflineChatClient, "STORES_BY_DEFAULT", property(lambda self: False))
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("what's the weather?", session=session)
    await agent.run("and tomorrow?", session=session)
    assert session.service_session_id == "conv_offline_1"
    spans = exporter.get_finished_spans()
    for run in by_execution(spans).values():
        assert len({s.attributes.get(CONV) for s in run}) == 1, [(s.name, s.attributes.get(CONV)) for s in run]
    # and the two turns of the one session are one conversation
    assert {s.attributes.get(CONV) for s in agent_spans(spans)} == {"conv_offline_1"}


async def test_run_without_session_agent_span_agrees_with_its_children(instrumentor, exporter):
    await make_agent("service").run("what's the weather?")
    spans = exporter.get_finished_spans()
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}


# -- item 3: effective options ---------------------------------------------------------------------
@pytest.mark.parametrize("where", ["default_options", "run_options"])
async def test_store_false_in_default_options_is_local_history(instrumentor, exporter, where):
    kwargs = {"default_options": {"store": False}} if where == "default_options" else {}
    agent = make_agent("local", **kwargs)
    agent.client.__class__.STORES_BY_DEFAULT = property(lambda self: True)  # the client would store
    try:
        session = agent.create_session()
        options = {"store": False} if where == "run_options" else None
        await agent.run("hello", session=session, options=options)
        await agent.run("again", session=session, options=options)
    finally:
        del agent.client.__class__.STORES_BY_DEFAULT
    spans = exporter.get_finished_spans()
    assert {s.attributes.get(CONV) for s in spans} == {session.session_id}


async def test_store_false_default_options_on_the_real_responses_client(instrumentor, exporter, standin):
    agent = _agent(standin, default_options={"store": False})
    session = agent.create_session()
    await agent.run("hello", session=session)
    assert _seen((await agent.run("again", session=session)).text) == 3  # local history resent
    assert session.service_session_id is None
    assert {s.attributes.get(CONV) for s in exporter.get_finished_spans()} == {session.session_id}
