"""Issue 9, item 5: sub-agents through ``Agent.as_tool`` (real framework, offline model).

``propagate_session=True`` hands the sub-agent the parent's session (same ``session_id``): its run
is the parent's conversation. With the default private session it is its own conversation, joined
to the caller's by ``agent_identity.parent.conversation.id``.
"""

from __future__ import annotations

import pytest
from helpers import CONV, EXEC, agent_spans, by_execution, make_agent

from agent_framework import Content

PARENT_CONV = "agent_identity.parent.conversation.id"
PARENT_EXEC = "agent_identity.parent.execution.id"


def _coordinator(mode: str):
    """A parent whose model calls the sub-agent tool with a ``task`` argument (``as_tool``'s schema)."""
    parent = make_agent(mode, name="coordinator", prefix="parent")
    original = parent.client._reply

    def reply(messages, options):
        return [
            Content.from_function_call(c.call_id, c.name, arguments={"task": "look it up"})
            if c.type == "function_call" and c.name == "researcher"
            else c
            for c in original(messages, options)
        ]

    parent.client._reply = reply
    return parent


def _runs(exporter):
    spans = exporter.get_finished_spans()
    outer = next(s for s in agent_spans(spans) if s.name == "invoke_agent coordinator")
    inner = next(s for s in agent_spans(spans) if s.name == "invoke_agent researcher")
    return spans, outer, inner


@pytest.mark.parametrize("parent_mode", ["service", "local"])
@pytest.mark.parametrize("child_mode", ["service", "local"])
async def test_propagated_session_is_the_parents_conversation(instrumentor, exporter, parent_mode, child_mode):
    child = make_agent(child_mode, name="researcher", prefix="child")
    parent = _coordinator(parent_mode)
    session = parent.create_session()
    await parent.run("please ask researcher", session=session, tools=[child.as_tool(propagate_session=True)])
    spans, outer, inner = _runs(exporter)
    assert child.client.calls >= 1  # the sub-agent really ran
    parent_conv = outer.attributes[CONV]
    assert parent_conv == (session.service_session_id or session.session_id)
    assert inner.attributes[CONV] == parent_conv  # one session, one id
    assert inner.attributes[PARENT_CONV] == parent_conv and inner.attributes[PARENT_EXEC] == outer.attributes[EXEC]
    assert "agent_identity.conversation.changed" not in inner.attributes
    child_run = by_execution(spans)[inner.attributes[EXEC]]
    assert {s.attributes.get(CONV) for s in child_run} == {parent_conv}


@pytest.mark.parametrize("child_mode", ["service", "local"])
async def test_private_session_is_its_own_conversation_joined_to_the_callers(instrumentor, exporter, child_mode):
    child = make_agent(child_mode, name="researcher", prefix="child")
    parent = _coordinator("service")
    session = parent.create_session()
    await parent.run("please ask researcher", session=session, tools=[child.as_tool()])
    spans, outer, inner = _runs(exporter)
    assert outer.attributes[CONV] == session.service_session_id == "conv_parent_1"
    own = inner.attributes[CONV]
    assert own != "conv_parent_1"
    if child_mode == "service":
        assert own == "conv_child_1"  # the sub-agent's service conversation
    assert inner.attributes[PARENT_CONV] == "conv_parent_1"
    child_run = by_execution(spans)[inner.attributes[EXEC]]
    assert {s.attributes.get(CONV) for s in child_run} == {own}
    # the parent's spans after the tool call are still the parent's conversation
    parent_run = by_execution(spans)[outer.attributes[EXEC]]
    assert {s.attributes.get(CONV) for s in parent_run} == {"conv_parent_1"}
