"""A2A: the caller forwards its ids only to the allowlisted agent URL; the instrumented specialist
(its own process, under ``opentelemetry-instrument``) records them as ``agent_identity.upstream.*``."""

from __future__ import annotations

import uuid

import pytest

h = pytest.importorskip("a2a_harness")
from agent_framework.a2a import A2AAgent  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from agent_framework import Message  # noqa: E402

pytestmark = pytest.mark.e2e


def server_spans(specialist: h.SpecialistProcess, trace_id: int) -> list[dict]:
    """The A2A ``Send*`` SERVER spans of ``trace_id`` the specialist exported."""
    want = f"0x{trace_id:032x}"
    return specialist.wait_for(lambda s: s["context"]["trace_id"] == want and s["name"].startswith("Send"))


@pytest.fixture(scope="module")
def specialists():
    pair = [
        h.SpecialistProcess("guard-allowed"),
        h.SpecialistProcess("guard-other"),
        h.SpecialistProcess("guard-forgetful", forgetful=True),
    ]
    yield pair
    for s in pair:
        s.stop()


async def _two_turns(url: str, exporter) -> list:
    agent = A2AAgent(name="specialist", url=url)
    session = agent.create_session()
    for turn in range(2):
        await agent.run(Message(role="user", contents=[f"hi {turn}"], message_id=uuid.uuid4().hex), session=session)
    spans = [
        s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name.startswith("invoke_agent")
    ]
    exporter.clear()
    return spans


async def test_only_the_allowlisted_agent_receives_identity(specialists, guard, exporter):
    allowed, other, _forgetful = specialists
    guard(allowlist=[allowed.url])
    for turn, client in enumerate(await _two_turns(allowed.url, exporter)):
        entry = server_spans(allowed, client.context.trace_id)
        assert entry, "the specialist exported no SERVER span in the caller's trace"
        got = entry[0]["attributes"]
        a = client.attributes
        assert got["agent_identity.upstream.delegation.id"] == a["agent_identity.delegation.id"]
        assert got["agent_identity.upstream.execution.id"] == a["agent_identity.execution.id"]
        if turn == 1:  # from turn 2 on the caller continues the A2A context id the server assigned
            assert got["agent_identity.upstream.conversation.id"] == a["gen_ai.conversation.id"]
        assert "agent_identity.upstream.mismatch" not in got
    for client in await _two_turns(other.url, exporter):
        entry = server_spans(other, client.context.trace_id)
        assert entry
        assert not [k for k in entry[0]["attributes"] if k.startswith("agent_identity.upstream.")]


async def test_allowlisted_forgetful_agent_flags_the_upstream_mismatch(specialists, guard, exporter):
    forgetful = specialists[2]
    guard(allowlist=[forgetful.url])
    clients = await _two_turns(forgetful.url, exporter)
    got = server_spans(forgetful, clients[1].context.trace_id)[0]["attributes"]
    # turn 2 asked to continue the context the server assigned; the agent started another one
    assert got["agent_identity.upstream.conversation.id"] == clients[1].attributes["gen_ai.conversation.id"]
    assert got["agent_identity.upstream.mismatch"] is True
