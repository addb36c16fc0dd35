"""HTTP tool endpoints on 127.0.0.1 echo the headers they received: the ``baggage`` header loses
identity for every destination but an allowlisted one, which gets exactly the documented keys."""

from __future__ import annotations

import httpx
import httpx2
import pytest
import requests
from guard_helpers import assert_no_identity, parse_baggage
from opentelemetry import propagate

from otel_agent_identity.scope import IdentityScope
from scope_helpers import attach, detach

pytestmark = pytest.mark.e2e
SCOPE = {
    "gen_ai.conversation.id": "conv-1",
    "agent_identity.execution.id": "exec-1",
    "agent_identity.delegation.id": "del-1",
}


def _headers() -> dict:
    headers = {"x-app": "1"}
    propagate.inject(headers)  # what any HTTP instrumentation (or the tool itself) does
    assert "user.id=alice" in headers["baggage"]
    return headers


async def _httpx(url):
    return httpx.get(url, headers=_headers()).json()["headers"]


async def _httpx_async(url):
    async with httpx.AsyncClient() as client:
        return (await client.post(url, headers=_headers(), json={})).json()["headers"]


async def _httpx2(url):
    with httpx2.Client() as client:
        return client.get(url, headers=_headers()).json()["headers"]


async def _httpx2_async(url):
    async with httpx2.AsyncClient() as client:
        return (await client.get(url, headers=_headers())).json()["headers"]


async def _requests(url):
    return requests.get(url, headers=_headers(), timeout=10).json()["headers"]


async def _requests_session(url):
    with requests.Session() as session:
        return session.post(url, headers=_headers(), json={}, timeout=10).json()["headers"]


async def _urllib3(url):  # botocore and many vendor SDKs use urllib3 directly (issue 9, item 9)
    import json

    import urllib3

    with urllib3.PoolManager() as pool:
        return json.loads(pool.request("GET", url, headers=_headers()).data)["headers"]


async def _urllib3_pool_headers(url):
    """Baggage in the pool's default headers (urllib3 sends ``pool.headers`` when a request has none)."""
    import json

    import urllib3

    pool = urllib3.connectionpool.connection_from_url(url, headers=_headers())
    try:
        return json.loads(pool.urlopen("GET", "/" + url.split("/", 3)[3]).data)["headers"]
    finally:
        pool.close()


async def _aiohttp(url):
    import aiohttp

    async with aiohttp.ClientSession() as session, session.post(url, headers=_headers(), json={}) as response:
        return (await response.json())["headers"]


async def _aiohttp_session_headers(url):
    import aiohttp

    async with aiohttp.ClientSession(headers=_headers()) as session, session.get(url) as response:
        return (await response.json())["headers"]


CLIENTS = {
    "httpx": _httpx,
    "httpx-async": _httpx_async,
    "httpx2": _httpx2,
    "httpx2-async": _httpx2_async,
    "requests": _requests,
    "requests-session": _requests_session,
    "urllib3": _urllib3,
    "urllib3-pool-headers": _urllib3_pool_headers,
    "aiohttp": _aiohttp,
    "aiohttp-session-headers": _aiohttp_session_headers,
}


@pytest.fixture
def scope():
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    yield
    detach(token)


@pytest.mark.parametrize("kind", sorted(CLIENTS))
async def test_default_nothing_identity_arrives(kind, servers, planted, guard, scope):
    guard()
    for url in (servers["http_ok"], servers["http_other"]):
        headers = await CLIENTS[kind](url)
        assert_no_identity(headers)
        assert "conv-1" not in repr(headers)
        assert headers["traceparent"] and headers["x-app"] == "1"
        assert parse_baggage(headers["baggage"]) == {"tenant": "acme"}


@pytest.mark.parametrize("kind", sorted(CLIENTS))
async def test_allowlisted_endpoint_gets_exactly_documented_keys(kind, servers, planted, guard, scope):
    guard(allowlist=[servers["http_ok"].rsplit("/", 1)[0] + "/"])
    headers = await CLIENTS[kind](servers["http_ok"])
    assert parse_baggage(headers["baggage"]) == {"tenant": "acme", **SCOPE}
    assert headers["traceparent"]
    other = await CLIENTS[kind](servers["http_other"])
    assert_no_identity(other)
    assert parse_baggage(other["baggage"]) == {"tenant": "acme"}


async def test_allowlisted_without_baggage_header_gets_forwarded_ids(servers, guard, scope):
    """No propagator configured: an allowlisted destination still receives the run's ids."""
    guard(allowlist=[servers["http_ok"]])
    assert parse_baggage(httpx.get(servers["http_ok"]).json()["headers"].get("baggage")) == SCOPE
    assert "baggage" not in httpx.get(servers["http_other"]).json()["headers"]


async def test_host_pattern_allowlist(servers, planted, guard, scope):
    guard(allowlist=["127.0.0.*"])
    for url in (servers["http_ok"], servers["http_other"]):
        assert parse_baggage(requests.get(url, headers=_headers(), timeout=10).json()["headers"]["baggage"]) == {
            "tenant": "acme",
            **SCOPE,
        }


async def test_malformed_baggage_passes_minus_identity(servers, guard):
    guard()
    raw = "tenant=acme;prop, garbage-without-equals,session.id=s1 , =x,%%%"
    headers = httpx.get(servers["http_other"], headers={"baggage": raw}).json()["headers"]
    assert headers["baggage"] == "tenant=acme;prop,garbage-without-equals,=x,%%%"


async def test_uninstrument_restores_http(servers, planted, guard):
    guard().uninstrument()
    assert "user.id=alice" in httpx.get(servers["http_other"], headers=_headers()).json()["headers"]["baggage"]


async def test_guard_stays_on_when_frameworks_leave_it_out(servers, planted, tracer_provider):
    from otel_agent_identity import AgentIdentityInstrumentor

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, frameworks=["agent_framework"], baggage_keys=["app.*"])
    try:
        headers = httpx.get(servers["http_other"], headers=_headers()).json()["headers"]
    finally:
        inst.uninstrument()
    assert parse_baggage(headers["baggage"]) == {"tenant": "acme"}


async def test_allowlist_from_environment(servers, planted, scope, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST", servers["http_ok"])
    from otel_agent_identity import AgentIdentityInstrumentor

    inst = AgentIdentityInstrumentor()
    inst.instrument(baggage_keys=["app.*"])
    try:
        ok = httpx.get(servers["http_ok"], headers=_headers()).json()["headers"]
        other = httpx.get(servers["http_other"], headers=_headers()).json()["headers"]
    finally:
        inst.uninstrument()
    assert parse_baggage(ok["baggage"]) == {"tenant": "acme", **SCOPE}
    assert parse_baggage(other["baggage"]) == {"tenant": "acme"}


def test_ipv6_literal_destination_matches_its_allowlist_entry(guard, scope):
    import httpcore

    from otel_agent_identity.adapters.http_clients import _filter_core_request

    guard(allowlist=["http://[::1]:8080/tools"])
    for target, forwarded in (("http://[::1]:8080/tools/x", True), ("http://[::1]:8081/tools/x", False)):
        request = httpcore.Request("GET", target, headers=[(b"baggage", b"tenant=acme,user.id=alice")])
        _filter_core_request(request)
        sent = parse_baggage(dict(request.headers)[b"baggage"].decode())
        assert sent == ({"tenant": "acme", **SCOPE} if forwarded else {"tenant": "acme"})


@pytest.mark.parametrize("kind", ["urllib3", "aiohttp"])
async def test_agent_tool_calling_out_sends_no_identity(kind, servers, planted, guard):
    """Issue 9, item 9: a real Agent Framework run whose tool calls an HTTP endpoint with urllib3
    or aiohttp; the run has ids in scope and the application planted identity in baggage."""
    from helpers import make_agent

    from agent_framework import tool

    guard()
    received = {}

    @tool(name="fetch_report")
    async def fetch_report() -> str:
        """Fetch the report."""
        received.update(await CLIENTS[kind](servers["http_other"]))
        return "fetched"

    agent = make_agent("service", name="reporter")
    response = await agent.run("please fetch_report", session=agent.create_session(), tools=[fetch_report])
    assert "fetched" in response.text and received
    assert_no_identity(received)
    assert parse_baggage(received["baggage"]) == {"tenant": "acme"} and received["traceparent"]
