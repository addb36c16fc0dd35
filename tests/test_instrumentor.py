"""Instrumentor behaviour that does not depend on one framework's run semantics."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from agent_framework import Agent
from otel_agent_identity import AgentIdentityInstrumentor, ExtractorRegistry, RunCall
from otel_agent_identity.adapters import agent_framework as af_adapter


@pytest.mark.parametrize("tested", ["older", "newer"])
def test_unknown_framework_version_is_skipped_with_one_warning(tracer_provider, monkeypatch, caplog, tested):
    """A release outside the adapter's tested range (``REQUIREMENTS``; pyproject.toml's extras
    have no upper bound, so pip installs a newer one beside us): the adapter is skipped with one
    warning naming the range, the application runs bare."""
    from importlib.metadata import version

    installed = version("agent-framework-core")
    requirement = "agent-framework-core < 1" if tested == "older" else f"agent-framework-core >= 1.23, < {installed}"
    monkeypatch.setattr(af_adapter, "REQUIREMENTS", (requirement,))
    original = Agent.run
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=tracer_provider)
    try:
        assert Agent.run is original
        skipped = [r for r in caplog.records if "agent_framework" in r.getMessage()]
        assert len(skipped) == 1 and requirement.split(",")[-1].strip() in skipped[0].getMessage()
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


def test_instrumentation_dependencies_are_the_adapters_requirements_any_one_suffices(monkeypatch):
    """contrib's instruments-any: the instrumentor's list, pyproject.toml's ``instruments-any`` extra
    and the adapters' own REQUIREMENTS are one list; a framework not installed disables nothing."""
    import importlib
    from pathlib import Path

    import tomllib
    from packaging.requirements import Requirement

    from otel_agent_identity import package
    from otel_agent_identity.adapters import ADAPTERS

    inst = AgentIdentityInstrumentor()
    listed = {str(Requirement(r)) for r in inst.instrumentation_dependencies()}
    extras = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    extra = {str(Requirement(r.split(";")[0])) for r in extras["project"]["optional-dependencies"]["instruments-any"]}
    adapters = {str(Requirement(r)) for name in ADAPTERS for r in importlib.import_module(ADAPTERS[name]).REQUIREMENTS}
    assert listed == extra == adapters
    assert inst._check_dependency_conflicts() is None
    monkeypatch.setattr(package, "_instruments_any", ("not-installed-framework >= 1", *package._instruments_any))
    monkeypatch.setattr("otel_agent_identity._instruments_any", package._instruments_any)
    assert inst._check_dependency_conflicts() is None  # one missing: the others still instrument
    monkeypatch.setattr("otel_agent_identity._instruments_any", ("not-installed-framework >= 1",))
    assert inst._check_dependency_conflicts() is not None  # none installed: the launcher skips us


def test_tracer_and_meter_carry_the_schema_url(tracer_provider):
    from opentelemetry.semconv.schemas import Schemas

    from otel_agent_identity import metrics

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        assert inst._handler.tracer._instrumentation_scope.schema_url == Schemas.V1_37_0.value
        assert metrics._counters  # created on the meter of that schema (the API keeps no scope to read)
    finally:
        inst.uninstrument()
