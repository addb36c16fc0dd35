"""Issue 9, item 6: ids given through ``execution()`` and ``delegation()`` are validated like
extractor results: a bad one is ignored with one warning, a generated one is used, and every
exported span still encodes as OTLP (what the collector receives)."""

from __future__ import annotations

import logging
import re

import pytest
from helpers import EXEC, agent_spans, make_agent
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

import otel_agent_identity
from otel_agent_identity import scope as scope_module

BAD = [
    pytest.param("x" * 1_000_000, id="1MB"),
    pytest.param("job\x00\n42", id="control-chars"),
    pytest.param("job-\ud800", id="lone-surrogate"),
    pytest.param(42, id="non-string"),
    pytest.param("", id="empty"),
]
HEX32 = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture(autouse=True)
def _fresh_warnings():
    getattr(scope_module, "_warned", set()).clear()
    yield
    getattr(scope_module, "_warned", set()).clear()


def _encodes(spans) -> None:
    encode_spans(spans).SerializeToString()  # raises on a value protobuf cannot carry


@pytest.mark.parametrize("bad", BAD)
async def test_bad_execution_id_is_ignored_with_one_warning(instrumentor, exporter, caplog, bad):
    agent = make_agent("service")
    session = agent.create_session()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        for _ in range(3):
            with otel_agent_identity.execution(bad):
                response = await agent.run("what's the weather?", session=session)
            assert "sunny" in response.text
    warnings = [r for r in caplog.records if "execution(execution_id)" in r.getMessage()]
    assert len(warnings) == 1
    assert len(warnings[0].getMessage()) < 300  # the value itself is never logged
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 3
    assert all(HEX32.match(s.attributes[EXEC]) for s in spans)
    _encodes(spans)


@pytest.mark.parametrize("bad", BAD)
async def test_bad_delegation_id_is_ignored_with_one_warning(instrumentor, caplog, bad):
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        with otel_agent_identity.delegation(delegation_id=bad) as did:
            pass
        with otel_agent_identity.delegation(delegation_id=bad) as again:
            pass
    assert HEX32.match(did) and HEX32.match(again) and did != again
    assert len([r for r in caplog.records if "delegation(delegation_id)" in r.getMessage()]) == 1


async def test_delegation_key_of_any_text_is_a_stable_uuid5(instrumentor):
    for key in ("order-7", "k" * 1_000_000, "ключ\x00", "lone-\udc80"):
        with otel_agent_identity.delegation(key=key) as first:
            pass
        with otel_agent_identity.delegation(key=key) as second:
            pass
        assert first == second and HEX32.match(first)


async def test_good_ids_are_used_unchanged(instrumentor, exporter):
    with otel_agent_identity.execution("job-42"):
        await make_agent("local").run("hello")
    assert {s.attributes[EXEC] for s in exporter.get_finished_spans()} == {"job-42"}
    with otel_agent_identity.delegation(delegation_id="hop-1") as did:
        assert did == "hop-1"


class _Uncomparable:
    """A key whose comparisons raise (as a numpy array's truth value does)."""

    def __eq__(self, other):
        raise RuntimeError("eq")

    def __ne__(self, other):
        raise RuntimeError("ne")

    __hash__ = object.__hash__


class _LyingStr(str):
    def __len__(self):
        return 3

    def isprintable(self):
        raise RuntimeError("isprintable")


async def test_odd_keys_and_str_subclasses_never_raise(instrumentor, exporter, caplog):
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        with otel_agent_identity.delegation(key=_Uncomparable()) as did:
            pass
        with otel_agent_identity.delegation(delegation_id=_LyingStr("d" * 100_000)) as huge:
            pass
    assert HEX32.match(did) and HEX32.match(huge)  # refused (its real length), a generated id used
    assert any("delegation(key) is a _Uncomparable" in r.getMessage() for r in caplog.records)
    with otel_agent_identity.delegation(delegation_id=_LyingStr("hop-1")) as given:
        pass
    assert given == "hop-1" and type(given) is str  # a str subclass is used as the plain str it holds
    with otel_agent_identity.execution(_LyingStr("job-7")):
        await make_agent("local").run("hello")
    spans = exporter.get_finished_spans()
    assert {s.attributes[EXEC] for s in spans} == {"job-7"} and all(type(s.attributes[EXEC]) is str for s in spans)
    _encodes(spans)
