"""Configuration parsing, and the one attribute table against the code."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from otel_agent_identity import attributes
from otel_agent_identity.config import DEFAULT_MAX_ID_LENGTH, Config

TABLE = Path(__file__).resolve().parent.parent / "docs" / "attributes.md"


def _table_rows() -> dict[str, str]:
    rows = {}
    for line in TABLE.read_text().splitlines():
        match = re.match(r"\|\s*`([a-z0-9_.]+)`\s*\|\s*([a-z]+)\s*\|\s*([a-z, ]+)\s*\|", line)
        if match:
            rows[match.group(1)] = match.group(3)
    return rows


def test_every_python_attribute_is_a_row_set_by_py_and_vice_versa():
    rows = _table_rows()
    ours = {v for k, v in vars(attributes).items() if k.isupper() and isinstance(v, str) and "." in v}
    assert ours, "attributes.py defines no names"
    assert ours - rows.keys() == set()
    py_rows = {name for name, by in rows.items() if "py" in by and name.startswith("agent_identity.")}
    assert py_rows - ours == set()


def test_genai_names_are_the_semconv_packages():
    """attributes.py spells the GenAI names as literals (start-up cost); they are the semconv's."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as semconv

    for name in attributes.__all__:
        if name.startswith("GEN_AI_"):
            assert getattr(attributes, name) == getattr(semconv, name), name
    assert semconv.GenAiOperationNameValues.INVOKE_AGENT.value == attributes.INVOKE_AGENT
    assert semconv.GenAiOperationNameValues.INVOKE_WORKFLOW.value == attributes.INVOKE_WORKFLOW
    assert semconv.GenAiProviderNameValues.OPENAI.value == attributes.PROVIDER_OPENAI


def test_env_and_kwargs(monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH", "64")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_FRAMEWORKS", "agent_framework, a2a")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_STAMP_SPANS", "false")
    config = Config.load()
    assert (config.max_id_length, config.frameworks, config.stamp_spans) == (64, {"agent_framework", "a2a"}, False)
    assert Config.load(max_id_length=128).max_id_length == 128  # argument wins


@pytest.mark.parametrize("raw", ["abc", "0", "99999", "-3"])
def test_malformed_value_warns_once_and_uses_default(monkeypatch, caplog, raw):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH", raw)
    with caplog.at_level(logging.WARNING):
        assert Config.load().max_id_length == DEFAULT_MAX_ID_LENGTH
    assert len(caplog.records) == 1
    assert "OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH" in caplog.records[0].getMessage()


def test_unknown_framework_name_warns_and_keeps_every_framework(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_FRAMEWORKS", "agent-framework,a2a")
    with caplog.at_level(logging.WARNING):
        assert Config.load().frameworks is None  # the default: all, not "a2a only"
    assert len(caplog.records) == 1 and "agent-framework" in caplog.records[0].getMessage()


def test_option_names_follow_the_environment_variables(caplog):
    config = Config.load(baggage_keys=["app.customer_ref"])
    assert "app.customer_ref" in config.identity_baggage_keys
    with caplog.at_level(logging.WARNING):
        Config.load(identity_keys=["x"], tracer_provider=None)
    assert [r.getMessage() for r in caplog.records] == [
        "otel-agent-identity: unknown instrument() options ['identity_keys'] ignored"
    ]
