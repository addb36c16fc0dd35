"""MCP servers on 127.0.0.1 echo the ``_meta`` and headers they received: identity planted in
baggage by the application never arrives, except the documented keys at an allowlisted server."""

from __future__ import annotations

import json
import os

import pytest
from guard_helpers import assert_no_identity, parse_baggage
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from otel_agent_identity.scope import IdentityScope
from scope_helpers import attach, detach

pytestmark = pytest.mark.e2e
SCOPE = {
    "gen_ai.conversation.id": "conv-1",
    "agent_identity.execution.id": "exec-1",
    "agent_identity.delegation.id": "del-1",
}


def _echo(result) -> dict:
    return json.loads(result.content[0].text)


async def _session_http(url):
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return _echo(await session.call_tool("echo_meta", {}))


async def _session_stdio(command):
    async with (
        stdio_client(StdioServerParameters(command=command)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return _echo(await session.call_tool("echo_meta", {}))


async def _client(target):
    async with Client(target) as client:
        return _echo(await client.call_tool("echo_meta", {}))


async def _client_http(url):
    return await _client(url)


async def _client_stdio(command):
    return await _client(StdioServerParameters(command=command))


CLIENTS = {
    "session-http": _session_http,
    "session-stdio": _session_stdio,
    "client-http": _client_http,
    "client-stdio": _client_stdio,
}


def _targets(kind, servers, stdio_commands):
    if kind.endswith("http"):
        return servers["mcp_ok"], servers["mcp_other"]
    return stdio_commands["ok"], stdio_commands["other"]


def _allowlist(kind, servers, stdio_commands):
    if kind.endswith("http"):
        return [servers["mcp_ok"]]
    return [os.path.basename(stdio_commands["ok"])]  # a stdio server is named by its command


def assert_forwarded_exactly(received, expected: dict) -> None:
    meta_bag = parse_baggage(received["meta"].get("baggage"))
    assert received["meta"].get("traceparent")
    identity = {k: v for k, v in meta_bag.items() if k != "tenant"}
    assert identity == expected
    assert meta_bag["tenant"] == "acme"
    headers = received["headers"]
    if headers is not None:  # HTTP: any baggage header carries the same, nothing more
        header_bag = parse_baggage(headers.get("baggage"))
        assert {k: v for k, v in header_bag.items() if k != "tenant"} in ({}, expected)
        assert "alice" not in repr(headers) and "app-conv" not in repr(headers)


@pytest.mark.parametrize("kind", sorted(CLIENTS))
async def test_default_nothing_identity_arrives(kind, servers, stdio_commands, planted, guard):
    guard()
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    try:
        for target in _targets(kind, servers, stdio_commands):
            received = await CLIENTS[kind](target)
            assert_no_identity(received)
            assert not {"conv-1", "exec-1", "del-1"} & set(repr(received).split("'"))
            assert received["meta"]["traceparent"]
            assert parse_baggage(received["meta"]["baggage"]) == {"tenant": "acme"}
    finally:
        detach(token)


@pytest.mark.parametrize("kind", sorted(CLIENTS))
async def test_allowlisted_server_gets_exactly_documented_keys(kind, servers, stdio_commands, planted, guard):
    guard(allowlist=_allowlist(kind, servers, stdio_commands))
    ok, other = _targets(kind, servers, stdio_commands)
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    try:
        assert_forwarded_exactly(await CLIENTS[kind](ok), SCOPE)
        received = await CLIENTS[kind](other)  # same run, not allowlisted
        assert_no_identity(received)
        assert parse_baggage(received["meta"]["baggage"]) == {"tenant": "acme"}
        assert "conv-1" not in repr(received)
    finally:
        detach(token)


async def test_without_instrumentation_identity_leaks(servers, planted):
    """The problem the guard solves: mcp forwards all baggage by default."""
    received = await _session_http(servers["mcp_other"])
    assert parse_baggage(received["meta"]["baggage"])["user.id"] == "alice"


async def test_uninstrument_restores_mcp(servers, planted, guard):
    guard().uninstrument()
    guard().uninstrument()
    received = await _session_http(servers["mcp_other"])
    assert parse_baggage(received["meta"]["baggage"])["user.id"] == "alice"


async def test_application_meta_with_case_variant_baggage_key_leaks_nothing(stdio_commands, planted, guard):
    """mcp injects its own lower-case ``baggage`` beside the application's ``Baggage``: both are filtered."""
    guard()
    async with (
        stdio_client(StdioServerParameters(command=stdio_commands["other"])) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        received = _echo(await session.call_tool("echo_meta", {}, meta={"Baggage": "team=x,user.id=bob"}))
    assert_no_identity(received)
    assert parse_baggage(received["meta"]["Baggage"]) == {"team": "x"}
    assert parse_baggage(received["meta"]["baggage"]) == {"tenant": "acme"}
