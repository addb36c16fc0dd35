"""The OpenTelemetry API the package relies on: the public API (no upper bound on
opentelemetry-api/-sdk/-instrumentation/-semantic-conventions; no private name of theirs read but in
``_sdk_private.py``, whose writes equal the public API's and which the environment turns off), and
issue 22's guarantee on it, on a provider of its own: the application's own ids exactly as the SDK
alone leaves them, under any count or length limit."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import tomllib
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from packaging.requirements import Requirement

from app_shapes import LIMITS, SHAPES, check
from otel_agent_identity import _context, _sdk_private
from otel_agent_identity.scope import IdentityScope
from otel_agent_identity.span_processor import IdentitySpanProcessor, before_end, replace_ending
from scope_helpers import attach, detach

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
ROOT = Path(__file__).resolve().parent.parent
OTEL = ("opentelemetry-api", "opentelemetry-sdk", "opentelemetry-instrumentation", "opentelemetry-semantic-conventions")


def _provider(**limits):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(**limits))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(IdentitySpanProcessor())
    return provider.get_tracer("features"), exporter


def _in_scope(fn, span_ending=None):
    scope = IdentityScope("conv_features", "e" * 32)
    scope.span_ending = span_ending
    token = attach(scope)
    try:
        return fn()
    finally:
        detach(token)


def test_no_upper_bound_blocks_an_opentelemetry_upgrade():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = {r.name: r for r in map(Requirement, deps)}
    for name in OTEL:
        assert not [s for s in reqs[name].specifier if s.operator in ("<", "<=", "==", "~=")], reqs[name]


def test_no_private_opentelemetry_name_is_read_but_in_one_short_module():
    """No ``obj._name`` of an OpenTelemetry object, no ``from opentelemetry... import _name``, but in
    ``_sdk_private.py`` (under 300 lines)."""
    private = re.compile(r"\b(?:otel_context|context|opentelemetry[\w.]*|span|provider|tracer|store)\._[a-z]\w*")
    found = []
    one = ROOT / "src" / "otel_agent_identity" / "_sdk_private.py"
    assert private.search(one.read_text()) and len(one.read_text().splitlines()) < 300
    for path in (ROOT / "src" / "otel_agent_identity").rglob("*.py"):
        if path == one:
            continue
        text = path.read_text()
        found += [f"{path.name}: {m.group(0)}" for m in private.finditer(text)]
        found += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"from opentelemetry[\w.]* import _\w+", text)]
    assert not found


def _enabled_in_a_process(value):
    env = {k: v for k, v in os.environ.items() if k != "OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API"}
    if value is not None:
        env["OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API"] = value
    code = "from otel_agent_identity import _sdk_private; print(_sdk_private.enabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def test_the_private_write_is_detected_and_the_environment_turns_it_off():
    assert _enabled_in_a_process(None) == "True"  # this SDK has it
    assert _enabled_in_a_process("false") == "False"
    off = os.environ.get("OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API", "").lower() == "false"
    assert _sdk_private.enabled() is not off  # make test-public-sdk: off in this process too


WRITES = {
    "plain": ({}, {}, {CONV: "c1", EXEC: "e1"}),
    "after theirs": ({}, {"a": 1, "b": "x"}, {CONV: "c1", EXEC: "e1"}),
    "a key again": ({}, {CONV: "theirs", "a": 1}, {CONV: "c1", "r": True}),
    "count limit fits": ({"max_span_attributes": 4}, {"a": 1}, {CONV: "c1", EXEC: "e1"}),
    "count limit evicts": ({"max_span_attributes": 3}, {"a": 1, "b": 2}, {CONV: "c1", EXEC: "e1"}),
    "value length limit": ({"max_span_attribute_length": 4}, {"a": "long value"}, {CONV: "c1", EXEC: "e12345"}),
    "a value to clean": ({}, {}, {CONV: "c1", "n": ["x", 1]}),
    "ended": ({}, {"a": 1}, {CONV: "c1"}),
}


@pytest.mark.parametrize("case", list(WRITES))
@pytest.mark.parametrize("starting", [False, True])
def test_a_private_write_is_the_public_one_or_none(case, starting):
    """``_sdk_private.write`` leaves a span as ``set_attributes`` does (attributes in order, dropped
    count), or writes nothing and says so (the caller then uses ``set_attributes``)."""
    if not _sdk_private.enabled():
        pytest.skip("the private write is off (make test-public-sdk)")
    limits, created, values = WRITES[case]
    tracer = TracerProvider(span_limits=SpanLimits(**limits)).get_tracer("features")
    public, private = (tracer.start_span("s", attributes=created) for _ in range(2))
    if case == "ended":
        public.end()
        private.end()
    public.set_attributes(values)
    before = list(private.attributes.items())
    written = _sdk_private.write(private, values, starting)
    if not written:
        assert list(private.attributes.items()) == before
        private.set_attributes(values)
    assert written is (case in ("plain", "after theirs", "a key again", "count limit fits"))
    assert list(private.attributes.items()) == list(public.attributes.items())
    assert private.dropped_attributes == public.dropped_attributes


def test_the_context_is_read_on_the_contextvar_attach_returns_and_suppression_is_seen():
    """The current ``Context`` through the ``ContextVar`` of the ``Token`` ``context.attach``
    returns (public), the same as the API's; ``suppress_instrumentation``'s key, as it sets it."""
    from opentelemetry import context
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    assert _context._CURRENT is not None
    token = _context.attach_context(context.Context({"k": 1}))
    try:
        assert context.get_current() is _context.current_context() and context.get_value("k") == 1
    finally:
        _context.detach_context(token)
    with suppress_instrumentation():
        assert context.get_current().get(_context.SUPPRESS_KEY) is True and _context.suppressed()
    assert _context.SUPPRESS_KEY != _context.SUPPRESS_KEY_PLAIN and not _context.suppressed()


def test_a_finisher_runs_once_and_leaves_no_reference_cycle():
    """before_end: stacked finishers run once each, the latest first, and the span's own end is back
    after; the ended span is freed by reference counting alone (a shadowed ``end`` that referenced
    itself made every watched span, and all it held, garbage for the collector: ~33 objects per
    Agent Framework turn, benchmarks in docs/benchmarks.md)."""
    provider = TracerProvider()  # no exporter: nothing else keeps the span
    provider.add_span_processor(IdentitySpanProcessor())
    tracer, order = provider.get_tracer("features"), []
    span = tracer.start_span("watched")
    before_end(span, order.append, 1)
    before_end(span, order.append, 2)
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


@pytest.mark.parametrize("length", [None, 4])
@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_applications_own_id_wins_with_an_ending_hook(shape, limit, length):
    """Issue 22 with a run's ``span_ending`` hook on every span (Agent Framework's): the exporter
    sees the application's value exactly as the SDK alone leaves it."""
    tracer, exporter = _provider(max_span_attributes=limit, max_span_attribute_length=length)
    _in_scope(lambda: SHAPES[shape](tracer), span_ending=lambda span, scope: None)
    (span,) = exporter.get_finished_spans()
    check(span, shape, limit, "e" * 32, length)


@pytest.mark.parametrize("crowd", [0, 3, 8])
def test_our_ids_go_before_the_applications_creation_ids(crowd):
    """A span created with the application's id and ``crowd`` attributes more, then crowded under a
    limit of 4: the SDK evicts ours first, theirs as without us."""
    tracer, exporter = _provider(max_span_attributes=4)
    created = {CONV: "app-own", **{f"c{i}": i for i in range(crowd)}}

    def app():
        span = tracer.start_span("app", attributes=created)
        span.set_attributes({"late0": 0, "late1": 1})
        span.end()

    _in_scope(app)
    (span,) = exporter.get_finished_spans()
    truth = dict(list({**created, "late0": 0, "late1": 1}.items())[-4:])  # the SDK alone: the newest 4
    assert {k: v for k, v in span.attributes.items() if k != EXEC} == {
        k: v for k, v in truth.items() if k in span.attributes
    }
    assert span.attributes.get(CONV) == truth.get(CONV)


def test_the_span_ending_hook_runs_before_the_end_and_what_it_sets_is_exported():
    seen = []

    def ending(span, scope):
        seen.append(span.name)
        replace_ending(span, CONV, scope.conversation_id)

    tracer, exporter = _provider()

    def run():
        with tracer.start_as_current_span("chat") as span:
            span.set_attribute(CONV, "resp_previous")  # a framework's write over our stamp
        tracer.start_span("quiet").end()

    _in_scope(run, span_ending=ending)
    chat, quiet = exporter.get_finished_spans()
    assert seen == ["chat"]
    assert chat.attributes[CONV] == "conv_features" and quiet.attributes[CONV] == "conv_features"
