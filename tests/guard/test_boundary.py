"""The policy itself: identity keys, allowlist matching, header and ``_meta`` filtering, receiver side."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_agent_identity import boundary
from otel_agent_identity.boundary import Destination, Policy
from otel_agent_identity.config import Config
from otel_agent_identity.scope import IdentityScope
from scope_helpers import attach, detach


@pytest.fixture(autouse=True)
def default_policy():
    boundary.configure(None)
    yield
    boundary.configure(None)


@pytest.fixture
def scope():
    token = attach(IdentityScope("conv-1", "exec-1", None))
    yield
    detach(token)


@pytest.mark.parametrize(
    "key",
    [
        "gen_ai.conversation.id",
        "session.id",
        "Session.Id",
        "agent_identity.execution.id",
        "agent_identity.anything",
        "thread_id",
        "user.id",
        "user.email",
        "enduser.id",
        "session.previous_id",
        "langfuse.session.id",
        " conversation_id ",
    ],
)
def test_default_identity_keys(key):
    assert Policy().is_identity_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "tenant",
        "gen_ai.request.model",
        "agent_identityx",
        "session",
        "traceparent",
        "user_agent.original",
        "sessionid.x",
    ],
)
def test_not_identity(key):
    assert not Policy().is_identity_key(key)


def test_configured_keys_extend_defaults(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_BAGGAGE_KEYS", "app.customer_ref, app.tenant.*")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST", "calc,http://10.0.0.1/mcp")
    policy = boundary.configure(Config.load())
    assert policy.is_identity_key("app.customer_ref") and policy.is_identity_key("app.tenant.x")
    assert policy.is_identity_key("session.id")
    assert policy.allowlist == ("calc", "http://10.0.0.1/mcp")
    assert boundary.configure(Config.load(allowlist=["other"])).allowlist == ("other",)  # the API wins


@pytest.mark.parametrize(
    ("entry", "url", "allowed"),
    [
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp", True),
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp/sub?x=1", True),
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcpx", False),
        ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8001/mcp", False),
        ("http://127.0.0.1:8000/mcp", "https://127.0.0.1:8000/mcp", False),
        ("https://api.example", "https://api.example:443/x", True),
        ("https://api.example", "https://api.example.evil.test/x", False),
        ("https://api.example", "https://user@evil.test/?https://api.example", False),
        ("*.internal.example", "https://a.internal.example/x", True),
        ("*.internal.example", "https://A.Internal.Example/x", True),
        ("*.internal.example", "https://internal.example/x", False),
        ("api.example", "http://api.example:8080/", True),
        ("calc", "http://calc.example/", False),
    ],
)
def test_allowlist_urls(entry, url, allowed):
    assert Policy(allowlist=[entry]).allows(Destination(url=url)) is allowed


def test_allowlist_names_and_unknown():
    policy = Policy(allowlist=["calc"])
    assert policy.allows(Destination(names=("/usr/bin/calc", "calc")))
    assert not policy.allows(Destination(names=("calculator",)))
    assert not policy.allows(None)
    assert not Policy().allows(Destination(url="http://x/"))


def test_filter_header_strips_identity_keeps_rest():
    value = "tenant=acme;p=1, gen_ai.conversation.id=c,session.id=s ,user%2Eid=u, color=red"
    assert boundary.filter_baggage_header(value, Destination(url="http://x/")) == "tenant=acme;p=1,color=red"
    assert boundary.filter_baggage_header(b"session.id=s", None) is None
    assert boundary.filter_baggage_header(None, None) is None


def test_filter_header_malformed_passes_minus_identity():
    value = "garbage,,session.id;prop,=novalue,tenant=acme,%zz=1"
    assert boundary.filter_baggage_header(value, None) == "garbage,=novalue,tenant=acme,%zz=1"


def test_allowlisted_gets_documented_keys_from_scope(scope):
    boundary.configure(Config.load(allowlist=["http://ok/"]))
    value = "gen_ai.conversation.id=app,session.id=s,tenant=acme"
    assert boundary.filter_baggage_header(value, Destination(url="http://ok/x")) == (
        "tenant=acme,gen_ai.conversation.id=conv-1,agent_identity.execution.id=exec-1"
    )
    assert boundary.filter_baggage_header(value, Destination(url="http://other/x")) == "tenant=acme"


def test_allowlisted_outside_a_run_forwards_nothing():
    boundary.configure(Config.load(allowlist=["http://ok/"]))
    assert boundary.filter_baggage_header("gen_ai.conversation.id=app", Destination(url="http://ok/")) is None


def test_filter_meta():
    meta = {"traceparent": "00-1-2-01", "baggage": "user.id=u,a=b", "progressToken": 3}
    out = boundary.filter_meta(meta, None)
    assert out == {"traceparent": "00-1-2-01", "baggage": "a=b", "progressToken": 3}
    assert meta["baggage"] == "user.id=u,a=b"  # a new dict
    assert boundary.filter_meta({"baggage": "user.id=u"}, None) == {}
    assert boundary.filter_meta({"baggage": 42}, None) == {"baggage": "42"}  # str() of a stray value


def test_filter_meta_every_case_variant_of_baggage(scope):
    meta = {"Baggage": "tenant=x,user.id=u", "baggage": "gen_ai.conversation.id=secret,a=b", "BAGGAGE": "session.id=s"}
    assert boundary.filter_meta(meta, None) == {"Baggage": "tenant=x", "baggage": "a=b"}
    boundary.configure(Config.load(allowlist=["http://ok/"]))
    out = boundary.filter_meta({"Baggage": "tenant=x,user.id=u"}, Destination(url="http://ok/"))
    assert out == {"Baggage": "tenant=x,gen_ai.conversation.id=conv-1,agent_identity.execution.id=exec-1"}


def _span():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("t").start_span("server"), exporter


def test_record_upstream_and_mismatch():
    span, exporter = _span()
    boundary.record_upstream(
        span,
        {
            "gen_ai.conversation.id": "up",
            "agent_identity.execution.id": "e",
            "agent_identity.delegation.id": "d",
            "session.id": "ignored",
        },
        "local",
    )
    span.end()
    attrs = dict(exporter.get_finished_spans()[0].attributes)
    assert attrs == {
        "agent_identity.upstream.conversation.id": "up",
        "agent_identity.upstream.execution.id": "e",
        "agent_identity.upstream.delegation.id": "d",
        "agent_identity.upstream.mismatch": True,
    }


@pytest.mark.parametrize("local", ["up", None])
def test_record_upstream_no_mismatch(local):
    span, exporter = _span()
    boundary.record_upstream(span, {"gen_ai.conversation.id": "up", "agent_identity.execution.id": "x" * 5000}, local)
    span.end()
    assert dict(exporter.get_finished_spans()[0].attributes) == {"agent_identity.upstream.conversation.id": "up"}


def test_record_upstream_never_raises():
    boundary.record_upstream(None, {}, None)
    boundary.record_upstream(object(), {"gen_ai.conversation.id": "x"}, "y")
