"""A Pydantic AI agent with its own instrumentation on puts ``gen_ai.agent.name``,
``gen_ai.agent.call.id`` and ``gen_ai.conversation.id`` in OpenTelemetry baggage. Real MCP servers
(stdio and streamable HTTP, through Pydantic AI's ``MCPToolset``) and an HTTP tool on 127.0.0.1
echo what they received: none of it arrives, nor what the application planted, except the
documented keys at an allowlisted destination."""

from __future__ import annotations

import json
import os

import httpx
import pytest
from guard_helpers import assert_no_identity, parse_baggage
from opentelemetry import propagate

pytest.importorskip("pydantic_ai")
pytest.importorskip("fastmcp")

from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from pydantic_ai import Agent

pytestmark = pytest.mark.e2e
KINDS = ("mcp-http", "mcp-stdio", "http-tool")


def _echoing_model(tool: str, args: dict):
    """Calls ``tool`` once, then answers with exactly what the tool returned."""

    def model(messages, info):
        returned = [p for p in messages[-1].parts if getattr(p, "part_kind", "") == "tool-return"]
        if returned:
            content = returned[-1].content
            return ModelResponse(parts=[TextPart(content if isinstance(content, str) else json.dumps(content))])
        return ModelResponse(parts=[ToolCallPart(tool, args)])

    return model


def _fetch(url: str) -> str:
    """The HTTP tool: a GET with the headers any HTTP instrumentation injects."""
    headers: dict = {}
    propagate.inject(headers)
    assert "gen_ai.agent.call.id=" in headers["baggage"]  # the framework's baggage is there to strip
    return json.dumps({"meta": {}, "headers": httpx.get(url, headers=headers).json()["headers"]})


def _agent(kind: str, target: str) -> Agent:
    if kind == "http-tool":
        agent = Agent(FunctionModel(_echoing_model("fetch", {"url": target})), name="guarded")
        agent.tool_plain(name="fetch")(_fetch)
    else:
        toolset = MCPToolset(target if kind == "mcp-http" else StdioTransport(command=target, args=[]))
        agent = Agent(FunctionModel(_echoing_model("echo_meta", {})), name="guarded", toolsets=[toolset])
    agent.instrument = True  # the framework's own spans and baggage
    return agent


def _targets(kind, servers, stdio_commands):
    if kind == "mcp-http":
        return servers["mcp_ok"], servers["mcp_other"], servers["mcp_ok"]
    if kind == "http-tool":
        return servers["http_ok"], servers["http_other"], servers["http_ok"]
    return stdio_commands["ok"], stdio_commands["other"], os.path.basename(stdio_commands["ok"])


async def _received(kind, target) -> tuple[dict, object]:
    result = await _agent(kind, target).run("echo", conversation_id="pa-conv")
    return json.loads(result.output), result


def _identity_of(received) -> dict:
    bag = parse_baggage(received["meta"].get("baggage"))
    headers = received["headers"] or {}
    bag.update(parse_baggage(headers.get("baggage")))
    return {k: v for k, v in bag.items() if k != "tenant"}


@pytest.mark.parametrize("kind", KINDS)
async def test_default_no_identity_reaches_the_tool(kind, servers, stdio_commands, planted, guard):
    guard()
    for target in _targets(kind, servers, stdio_commands)[:2]:
        received, result = await _received(kind, target)
        assert_no_identity(received)
        text = repr(received)
        assert result.run_id not in text and "pa-conv" not in text and "gen_ai.agent" not in text
        assert _identity_of(received) == {}
        if kind != "http-tool":
            assert received["meta"]["traceparent"]  # trace context is not identity


@pytest.mark.parametrize("kind", KINDS)
async def test_allowlisted_destination_gets_exactly_the_documented_keys(kind, servers, stdio_commands, planted, guard):
    ok, other, entry = _targets(kind, servers, stdio_commands)
    guard(allowlist=[entry])
    received, result = await _received(kind, ok)
    assert _identity_of(received) == {"gen_ai.conversation.id": "pa-conv", "agent_identity.execution.id": result.run_id}
    assert "gen_ai.agent" not in repr(received) and "alice" not in repr(received)
    received, result = await _received(kind, other)
    assert_no_identity(received)
    assert _identity_of(received) == {} and result.run_id not in repr(received)


async def test_without_the_guard_the_framework_baggage_leaks(servers, planted):
    """The problem: Pydantic AI's baggage reaches every MCP server by default."""
    received, result = await _received("mcp-http", servers["mcp_other"])
    bag = parse_baggage(received["meta"]["baggage"])
    assert bag["gen_ai.agent.call.id"] == result.run_id and bag["gen_ai.agent.name"] == "guarded"
