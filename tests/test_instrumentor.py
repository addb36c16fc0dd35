"""Instrumentor behaviour that does not depend on one framework's run semantics."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from agent_framework import Agent
from otel_agent_identity import AgentIdentityInstrumentor, ExtractorRegistry, RunCall
from otel_agent_identity.adapters import agent_framework as af_adapter


def test_unknown_framework_version_is_skipped_with_one_warning(tracer_provider, monkeypatch, caplog):
    monkeypatch.setattr(af_adapter, "REQUIREMENTS", ("agent-framework-core < 1",))
    original = Agent.run
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=tracer_provider)
    try:
        assert Agent.run is original
        skipped = [r for r in caplog.records if "agent_framework" in r.getMessage()]
        assert len(skipped) == 1 and "agent-framework-core < 1" in skipped[0].getMessage()
    finally:
        inst.uninstrument()


def test_entry_point_extractors_are_loaded_and_a_broken_one_is_skipped(monkeypatch, caplog):
    class Bot:
        pass

    def good(registry):
        registry.register(Bot, lambda agent, session, call: "from-plugin")

    def broken(registry):
        raise RuntimeError("plugin bug")

    eps = [SimpleNamespace(name="good", load=lambda: good), SimpleNamespace(name="broken", load=lambda: broken)]
    monkeypatch.setattr("otel_agent_identity.extractors.entry_points", lambda group: eps)
    registry = ExtractorRegistry()
    with caplog.at_level(logging.WARNING):
        registry.load_entry_points()
    assert registry.extract(Bot(), None, RunCall("x")).conversation_id == "from-plugin"
    assert any("'broken'" in r.getMessage() for r in caplog.records)


async def test_application_exception_reaches_the_caller_unchanged(instrumentor, exporter):
    from helpers import make_agent

    agent = make_agent("service")

    class Boom(Exception):
        pass

    async def explode(*args, **kwargs):
        raise Boom("model down")

    agent.client._inner_get_response = lambda **kw: explode()
    with pytest.raises(Boom, match="model down"):
        await agent.run("hi", session=agent.create_session())
    assert any(s.name.startswith("invoke_agent") for s in exporter.get_finished_spans())
