"""Extractor order and bad values on real runs; instrument/uninstrument lifecycle."""

from __future__ import annotations

import logging
import random

import pytest
from agent_framework.a2a import A2AAgent
from helpers import CONV, agent_spans, make_agent

import otel_agent_identity
from agent_framework import Agent, AgentSession
from otel_agent_identity import AgentIdentityInstrumentor, RunCall, register_extractor, registry


@pytest.fixture
def clean_registry():
    yield registry
    for cls in (Agent, A2AAgent):
        registry.unregister(cls)
    registry._warned.clear()


async def test_registered_extractor_overrides_default(instrumentor, exporter, clean_registry):
    register_extractor(Agent, lambda agent, session, call: f"app-{session.state['ticket']}")
    agent = make_agent("service")
    session = agent.create_session()
    session.state["ticket"] = "T-7"
    await agent.run("hello", session=session)
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.attributes[CONV] == "app-T-7"
    assert span.attributes["agent_identity.conversation.source"] == "override"
    assert {s.attributes[CONV] for s in exporter.get_finished_spans()} == {"app-T-7"}


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda *_: 1 / 0, id="raises"),
        pytest.param(lambda *_: 12345, id="non-string"),
        pytest.param(lambda *_: "x" * 1_000_000, id="1MB"),
        pytest.param(lambda *_: "y" * random.randint(300, 100_000), id="varying-lengths"),
        pytest.param(lambda *_: "conv\x00\nid", id="control-chars"),
    ],
)
async def test_bad_extractor_never_changes_the_run(instrumentor, exporter, clean_registry, caplog, bad):
    bare = await make_agent("local").run("hello")
    register_extractor(Agent, bad)
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        first = await make_agent("local").run("hello", session=AgentSession())
        second = await make_agent("local").run("hello", session=AgentSession())
        third = await make_agent("local").run("hello", session=AgentSession())
    assert first.text == second.text == third.text == bare.text
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())
    warnings = [r for r in caplog.records if "Agent" in r.getMessage()]
    assert len(warnings) == 1  # once per agent type, not per run
    assert len(registry._warned) == 1  # bounded by agent types, not by values


def test_structured_a2a_session_resolves_to_context_id(instrumentor):
    agent = A2AAgent(name="remote", url="http://127.0.0.1:9/")
    session = AgentSession(service_session_id={"context_id": "ctx-42", "task_id": "task-1", "task_state": "completed"})
    found = registry.extract(agent, session, RunCall("agent_framework"))
    assert (found.conversation_id, found.source) == ("ctx-42", "agent")


def test_nearest_class_in_mro_wins(clean_registry):
    class Special(Agent):
        pass

    register_extractor(Agent, lambda *_: "base")
    register_extractor(Special, lambda *_: "special")
    try:
        special = Special(client=make_agent().client, name="s")
        assert registry.extract(special, None, RunCall("agent_framework")).conversation_id == "special"
        assert registry.extract(make_agent(), None, RunCall("agent_framework")).conversation_id == "base"
    finally:
        registry.unregister(Special)


async def test_uninstrument_restores_and_double_instrument_does_not_double_wrap(tracer_provider, exporter):
    original = Agent.run
    inst = AgentIdentityInstrumentor()
    for _ in range(2):
        inst.instrument(tracer_provider=tracer_provider)
        inst.instrument(tracer_provider=tracer_provider)  # no-op
        wrapped = Agent.run
        assert hasattr(wrapped, "__wrapped__") and not hasattr(wrapped.__wrapped__, "__wrapped__")
        agent = make_agent("service")
        await agent.run("hi", session=agent.create_session())
        assert len(agent_spans(exporter.get_finished_spans())) == 1
        assert agent_spans(exporter.get_finished_spans())[0].attributes[CONV] == "conv_offline_1"
        inst.uninstrument()
        assert Agent.run is original
        exporter.clear()
        agent = make_agent("service")
        await agent.run("hi", session=agent.create_session())
        assert all("agent_identity.execution.id" not in s.attributes for s in exporter.get_finished_spans())
        exporter.clear()


async def test_framework_telemetry_off_we_create_the_agent_span(instrumentor, exporter, monkeypatch):
    from agent_framework.observability import OBSERVABILITY_SETTINGS

    monkeypatch.setattr(type(OBSERVABILITY_SETTINGS), "ENABLED", property(lambda self: False))
    agent = make_agent("service")
    await agent.run("weather?", session=agent.create_session())
    spans = exporter.get_finished_spans()
    (span,) = agent_spans(spans)
    assert span.name == "invoke_agent helper"
    assert span.instrumentation_scope.name == "otel_agent_identity"  # ours, not the framework's
    assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert span.attributes[CONV] == "conv_offline_1"  # the id after the first turn


async def test_execution_api_ignores_an_empty_id():
    with otel_agent_identity.execution(""):  # never raises into the application (issue 9, item 6)
        pass
