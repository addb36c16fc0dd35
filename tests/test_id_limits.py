"""What the README's "Limits" paragraph states: the SDK's attribute value length limit cuts our ids
(a warning at start-up when it is shorter than ``max_id_length``), a tight count limit keeps the
GenAI required attributes on our own agent span, and an extractor's bad values are warned once per
agent type, step and kind of problem. (What the collector makes of cut ids:
``collector/processor/agentidentityprocessor/truncation_test.go``.)"""

from __future__ import annotations

import logging

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a_serve import ReplyExecutor, executor_app
from helpers import make_agent
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from agent_framework import Agent, AgentSession
from otel_agent_identity import AgentIdentityInstrumentor, register_extractor, registry

SHORT = "span attribute values are cut"


def _instrument(provider, caplog) -> list[str]:
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=provider)
    inst.uninstrument()
    return [r.getMessage() for r in caplog.records if SHORT in r.getMessage()]


@pytest.mark.parametrize(
    ("env", "limits", "max_id", "warned"),
    [
        ({"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, None, None, True),
        ({"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100"}, None, None, True),
        # given in code: not public API (the SDK keeps it in TracerProvider._span_limits), not warned
        ({}, {"max_span_attribute_length": 255}, None, False),
        ({"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "256"}, None, None, False),
        ({"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "64"}, None, "64", False),  # ids of at most 64 accepted
        ({}, None, None, False),  # no limit
    ],
)
def test_a_value_length_limit_below_max_id_length_is_warned_once_at_start_up(
    env, limits, max_id, warned, monkeypatch, caplog
):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if max_id:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH", max_id)
    provider = TracerProvider(span_limits=SpanLimits(**limits) if limits else None)
    messages = _instrument(provider, caplog)
    assert len(messages) == (1 if warned else 0), messages
    if warned:
        limit = next(iter(env.values()), "255")
        assert f"cut at {limit} characters" in messages[0] and "context_changed" in messages[0]


class _Echo(ReplyExecutor):
    async def reply(self, context):
        return "ok", 1, context.context_id


@pytest.mark.parametrize("count", [4, 6, 8, 13, 16])
async def test_our_agent_span_keeps_its_operation_name_and_ids_under_a_count_limit(limited, exporter, count):
    """A real a2a-sdk send (client and server in process, httpx's ASGI transport): our CLIENT
    ``invoke_agent`` span has 13 attributes (``agent_identity.conversation.answered_before`` the
    13th); under a count limit the ids and
    ``gen_ai.operation.name`` (which the collector's default rule matches) stay, the a2a ones go."""
    limited(max_span_attributes=count)
    url = "http://127.0.0.1:9/"  # never dialled: the transport calls the app
    app = executor_app(_Echo(False, None), url, "echo")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
        message = Message(role=Role.ROLE_USER, parts=[Part(text="hi")], message_id="m-limits", context_id="ctx-1")
        async for _ in client.send_message(SendMessageRequest(message=message)):
            pass
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent echo"]
    kept = dict(span.attributes)
    assert len(kept) == count if count < 13 else not span.dropped_attributes
    assert kept["gen_ai.operation.name"] == "invoke_agent"
    assert kept["gen_ai.conversation.id"] == "ctx-1"
    assert {"agent_identity.execution.id", "agent_identity.delegation.id"} <= kept.keys()


@pytest.fixture
def clean_registry():
    registry._warned.clear()
    yield registry
    registry.unregister(Agent)
    registry._warned.clear()


async def test_bad_extractor_values_warned_once_per_agent_type_and_kind(instrumentor, exporter, clean_registry, caplog):
    values = iter(["x" * 300, "y" * 5000, "conv\x00id", "conv\nid", 12345, 678, "z" * 999])
    register_extractor(Agent, lambda *_: next(values))
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        for _ in range(7):
            await make_agent("local").run("hello", session=AgentSession())
    warned = [r.getMessage() for r in caplog.records if "extractor returned" in r.getMessage()]
    assert len(warned) == 3, warned  # too long, control characters, not a string: one each
    assert any("300 characters" in m for m in warned) and any("control" in m for m in warned)
    assert any("not a string" in m for m in warned)
