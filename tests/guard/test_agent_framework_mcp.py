"""Agent Framework's own MCP tools (which inject the global propagators into ``_meta``) against
the echo MCP servers, called directly and from inside an agent run."""

from __future__ import annotations

import json
import sys

import pytest
from guard_helpers import SERVERS, assert_no_identity, parse_baggage

af = pytest.importorskip("agent_framework")
from offline_chat import OfflineChatClient  # noqa: E402

from agent_framework import Agent, AgentSession, MCPStdioTool, MCPStreamableHTTPTool  # noqa: E402
from otel_agent_identity.scope import IdentityScope  # noqa: E402
from scope_helpers import attach, detach  # noqa: E402

pytestmark = pytest.mark.e2e


def _tool(kind: str, name: str, servers) -> object:
    if kind == "http":
        return MCPStreamableHTTPTool(name=name, url=servers["mcp_ok" if name == "echo-ok" else "mcp_other"])
    return MCPStdioTool(name=name, command=sys.executable, args=[str(SERVERS), "mcp-stdio"])


def _parse(result) -> dict:
    text = result if isinstance(result, str) else "".join(getattr(c, "text", "") or "" for c in result)
    data = json.loads(text[text.index("{") : text.rindex("}") + 1])
    return json.loads(data["result"]) if isinstance(data.get("result"), str) else data  # structured output


async def _call(tool) -> dict:
    async with tool:
        return _parse(await tool.call_tool("echo_meta"))


@pytest.mark.parametrize("kind", ["http", "stdio"])
async def test_af_tool_default_nothing_identity_arrives(kind, servers, planted, guard):
    guard()
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    try:
        for name in ("echo-ok", "echo-other"):
            received = await _call(_tool(kind, name, servers))
            assert_no_identity(received)
            assert "conv-1" not in repr(received)
            assert received["meta"]["traceparent"]
            assert parse_baggage(received["meta"]["baggage"]) == {"tenant": "acme"}
    finally:
        detach(token)


@pytest.mark.parametrize("kind", ["http", "stdio"])
async def test_af_tool_allowlisted_by_tool_name(kind, servers, planted, guard):
    guard(allowlist=["echo-ok"])
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    try:
        ok = await _call(_tool(kind, "echo-ok", servers))
        assert parse_baggage(ok["meta"]["baggage"]) == {
            "tenant": "acme",
            "gen_ai.conversation.id": "conv-1",
            "agent_identity.execution.id": "exec-1",
            "agent_identity.delegation.id": "del-1",
        }
        other = await _call(_tool(kind, "echo-other", servers))
        assert_no_identity(other)
        assert parse_baggage(other["meta"]["baggage"]) == {"tenant": "acme"}
    finally:
        detach(token)


@pytest.mark.parametrize("kind", ["http", "stdio"])
@pytest.mark.parametrize("allowlisted", [False, True])
async def test_af_agent_run_calls_mcp_tool(kind, allowlisted, servers, planted, guard):
    """A real agent run: the run's scope (conversation = session id) is what an allowlisted server gets."""
    guard(allowlist=["echo-ok"] if allowlisted else [])
    tool = _tool(kind, "echo-ok", servers)
    agent = Agent(client=OfflineChatClient(mode="local"), name="caller", tools=[tool])
    async with tool:
        response = await agent.run("please call echo_meta", session=AgentSession(session_id="sess-1"))
    received = _parse(response.text)
    assert_no_identity(received)
    bag = parse_baggage(received["meta"]["baggage"])
    if not allowlisted:
        assert bag == {"tenant": "acme"}
        return
    assert set(bag) == {"tenant", "gen_ai.conversation.id", "agent_identity.execution.id"}
    assert bag["gen_ai.conversation.id"] == "sess-1"
