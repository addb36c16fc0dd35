"""The SDK private API of :mod:`otel_agent_identity._sdk`: every feature found on the installed SDK
(this fails loudly when a supported SDK stops calling a hook or changes its attribute store), the
installed SDK within pyproject.toml's tested range, and issue 22's guarantees on each public-API
fallback (the feature disabled), on a provider of its own."""

from __future__ import annotations

import gc
import logging
import re
import weakref
from importlib.metadata import version
from pathlib import Path

import pytest
import tomllib
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import SpanLimits, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from packaging.requirements import Requirement

from app_shapes import LIMITS, SHAPES, check
from otel_agent_identity import _sdk
from otel_agent_identity.scope import IdentityScope, attach, detach
from otel_agent_identity.span_processor import IdentitySpanProcessor

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _provider(**limits):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(**limits))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(IdentitySpanProcessor())  # attaches: the detected features apply
    return provider.get_tracer("features"), exporter


def _in_scope(fn, span_ending=None):
    scope = IdentityScope("conv_features", "e" * 32)
    scope.span_ending = span_ending
    token = attach(scope)
    try:
        return fn()
    finally:
        detach(token)


@pytest.fixture
def without(request):
    """The features named by the test's parameter disabled (their fallbacks used), then detected again."""
    _sdk.detect(without=request.param)
    yield request.param
    _sdk.detect()
    _sdk.attach(IdentitySpanProcessor)


def test_the_installed_sdk_has_every_feature_we_use():
    """When this fails, the SDK changed what _sdk relies on: the fallbacks are in use (one warning
    each); adapt _sdk to the new SDK before raising pyproject.toml's upper bound."""
    assert _sdk.detect() == {"store": True, "writes": True, "ending": True}
    _sdk.attach(IdentitySpanProcessor)
    assert IdentitySpanProcessor._on_ending is _sdk.finish and _sdk.is_hooked()


def test_the_sdk_calls_our_hooks_on_a_real_span():
    """The SDK's end calls _on_ending (no shadowed end on the span) and its writes go through the
    hook: an application's id written later is noted, so ours is not put back in its place."""
    calls = []

    def spy(processor, span):
        calls.append(span.name)
        _sdk.finish(processor, span)

    tracer, exporter = _provider(max_span_attributes=3)
    IdentitySpanProcessor._on_ending = spy
    try:

        def app():
            span = tracer.start_span("app")
            assert "end" not in vars(span)  # the SDK's hook finishes it, not a shadowed end
            span.set_attribute(CONV, "app-own")
            span.set_attributes({"a": 1, "b": 2, "c": 3})  # evicts everything before
            span.end()

        _in_scope(app)
    finally:
        _sdk.attach(IdentitySpanProcessor)
    (span,) = exporter.get_finished_spans()
    assert calls == ["app"]
    # the application's id was evicted by the SDK: ours is not put back in its place; our execution id is
    assert CONV not in span.attributes and span.attributes[EXEC] == "e" * 32


def test_a_finisher_runs_once_and_leaves_no_reference_cycle():
    """before_end: stacked finishers run once each, the latest first, and the span's own end is back
    after; the ended span is freed by reference counting alone (a shadowed ``end`` that referenced
    itself made every watched span, and all it held, garbage for the collector: ~33 objects per
    Agent Framework turn, benchmarks in docs/benchmarks.md)."""
    provider = TracerProvider()  # no exporter: nothing else keeps the span
    provider.add_span_processor(IdentitySpanProcessor())
    tracer, order = provider.get_tracer("features"), []
    span = tracer.start_span("watched")
    _sdk.before_end(span, order.append, 1)
    _sdk.before_end(span, order.append, 2)
    ref = weakref.ref(span)
    gc.disable()
    try:
        span.end()
        assert order == [2, 1] and "end" not in vars(span)
        span.end()  # the SDK's own end (it warns): no finisher again
        assert order == [2, 1]
        del span
        assert ref() is None
    finally:
        gc.enable()


def test_the_installed_sdk_is_within_the_tested_range():
    """pyproject.toml bounds opentelemetry-sdk above (the newest version these tests passed on)."""
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (sdk,) = [Requirement(d) for d in deps if re.match(r"opentelemetry-sdk\b", d)]
    assert any(spec.operator in ("<", "<=") for spec in sdk.specifier), sdk
    assert sdk.specifier.contains(version("opentelemetry-sdk")), (sdk, version("opentelemetry-sdk"))


def test_an_sdk_that_stops_calling_the_ending_hook_is_detected_once(monkeypatch, caplog):
    monkeypatch.setattr(SynchronousMultiSpanProcessor, "_on_ending", lambda self, span: None)
    monkeypatch.setattr(_sdk, "_warned", set())
    try:
        with caplog.at_level(logging.WARNING, logger="otel_agent_identity._sdk"):
            assert _sdk.detect() == {"store": True, "writes": True, "ending": False}
            _sdk.detect()
        assert [r.getMessage() for r in caplog.records if "'ending'" in r.getMessage()] == [
            caplog.records[0].getMessage()
        ]
        tracer, exporter = _provider(max_span_attributes=4)  # finished just before its end instead
        _in_scope(lambda: _crowded(tracer))
        (span,) = exporter.get_finished_spans()
        assert dict(span.attributes) == {"a7": 7, "a8": 8, CONV: "conv_features", EXEC: "e" * 32}
        assert not _sdk.recorded(span)
    finally:
        monkeypatch.undo()
        _sdk.detect()
        _sdk.attach(IdentitySpanProcessor)


def test_an_sdk_without_the_write_path_gets_no_hook():
    original = BoundedAttributes.__dict__["_setitem_locked"]
    _sdk.uninstall()
    try:
        del BoundedAttributes._setitem_locked
        assert _sdk.detect()["writes"] is False
    finally:
        BoundedAttributes._setitem_locked = original
        _sdk.detect()
        _sdk.attach(IdentitySpanProcessor)
    assert _sdk.is_hooked()


def _crowded(tracer):
    span = tracer.start_span("chat", attributes={"a0": 0})
    for i in range(1, 9):
        span.set_attribute(f"a{i}", i)
    span.end()


FALLBACKS = [("ending",), ("writes",), ("writes", "ending"), ("store",)]
#: without the store, a stamp under a count limit may evict the oldest creation attribute (the
#: application's id among them): the "store" fallback holds issue 22 without a count limit only
CASES = [
    pytest.param(off, shape, limit, length, id=f"{'+'.join(off)}-{shape}-{limit}-{length}")
    for off in FALLBACKS
    for shape in SHAPES
    for limit in (LIMITS if "store" not in off else [None])
    for length in (None, 4)
]


@pytest.mark.parametrize(("without", "shape", "limit", "length"), CASES, indirect=["without"])
def test_the_applications_own_id_wins_on_every_fallback(without, shape, limit, length):
    """Issue 22 on each fallback: the exporter sees the application's value exactly as the SDK
    alone leaves it; without a limit, our ids on every span."""
    tracer, exporter = _provider(max_span_attributes=limit, max_span_attribute_length=length)
    _in_scope(lambda: SHAPES[shape](tracer))
    (span,) = exporter.get_finished_spans()
    check(span, shape, limit, "e" * 32, length)
    assert not _sdk.recorded(span)


@pytest.mark.parametrize("without", FALLBACKS, indirect=True, ids="+".join)
def test_the_span_ending_hook_runs_on_every_fallback(without):
    """The run's span_ending hook sees a span whose conversation id is not the run's, once, and
    what it sets is exported."""
    seen = []

    def ending(span, scope):
        seen.append(span.name)
        _sdk.replace_ending(span, CONV, scope.conversation_id)

    tracer, exporter = _provider()

    def run():
        with tracer.start_as_current_span("chat") as span:
            span.set_attribute(CONV, "resp_previous")  # a framework's write over our stamp
        tracer.start_span("quiet").end()

    _in_scope(run, span_ending=ending)
    chat, quiet = exporter.get_finished_spans()
    assert seen == ["chat"]
    assert chat.attributes[CONV] == "conv_features" and quiet.attributes[CONV] == "conv_features"


@pytest.mark.parametrize("without", [("ending",), ("writes",)], indirect=True, ids="+".join)
def test_count_limit_on_a_fallback(without):
    """Without the ending hook, ours are put back just before the end; without the write notes,
    they are not put back (the evicted value may have been the application's)."""
    tracer, exporter = _provider(max_span_attributes=4)
    _in_scope(lambda: _crowded(tracer))
    (span,) = exporter.get_finished_spans()
    if "writes" in without:
        assert dict(span.attributes) == {"a5": 5, "a6": 6, "a7": 7, "a8": 8}
    else:
        assert dict(span.attributes) == {"a7": 7, "a8": 8, CONV: "conv_features", EXEC: "e" * 32}


def test_a_disabled_sdk_is_not_reported_as_missing_features(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    monkeypatch.setattr(_sdk, "_warned", set())
    try:
        with caplog.at_level(logging.WARNING, logger="otel_agent_identity._sdk"):
            assert not any(_sdk.detect().values())
        assert not caplog.records
    finally:
        monkeypatch.undo()
        _sdk.detect()
        _sdk.attach(IdentitySpanProcessor)
