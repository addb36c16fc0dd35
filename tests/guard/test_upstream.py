"""``otel_agent_identity.upstream()``: inside the serving code (an a2a-sdk ``AgentExecutor``, an
Agent Framework ``A2AExecutor`` and the agent run it serves, with a2a-sdk's own spans on or off) the
allowlisted caller's ids; None when the caller did not allowlist the server. Real processes: the
specialist (``upstream_server.py``, under ``opentelemetry-instrument``) answers with what it saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

h = pytest.importorskip("a2a_harness")
from a2a_delegate import connect  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

import otel_agent_identity  # noqa: E402

pytestmark = pytest.mark.e2e
SERVER = Path(__file__).with_name("upstream_server.py")
KINDS = [(kind, spans) for kind in ("plain", "a2a-executor") for spans in ("false", "true")]


@pytest.fixture(scope="module")
def servers():
    started = {}
    try:
        for kind, spans in KINDS:
            started[kind, spans] = h.start_server(
                str(SERVER), f"upstream-{kind}", None, "--kind", kind, OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=spans
            )
        yield {key: url for key, (_proc, url) in started.items()}
    finally:
        for proc, _url in started.values():
            h.stop(proc)


async def _ask(url: str) -> dict | None:
    async with connect(url) as delegate:
        return json.loads(await delegate.ask("order-42"))


@pytest.mark.parametrize("kind,spans", KINDS)
async def test_allowlisted_caller_ids_inside_the_serving_code(servers, guard, exporter, kind, spans):
    url = servers[kind, spans]
    guard(allowlist=[url])
    with otel_agent_identity.delegation(key="order-42:charge") as delegation_id:
        got = await _ask(url)
    (client,) = [
        s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name.startswith("invoke_agent")
    ]
    assert got == {
        "conversation_id": None,  # a first turn: the send continues no context
        "execution_id": client.attributes["agent_identity.execution.id"],
        "delegation_id": delegation_id,
    }


@pytest.mark.parametrize("kind,spans", [KINDS[0], KINDS[2]])
async def test_none_when_the_caller_did_not_allowlist_the_server(servers, guard, exporter, kind, spans):
    guard(allowlist=["http://127.0.0.1:1/"])
    with otel_agent_identity.delegation(key="order-42:charge"):
        assert await _ask(servers[kind, spans]) is None


def test_none_outside_a_served_request():
    assert otel_agent_identity.upstream() is None
