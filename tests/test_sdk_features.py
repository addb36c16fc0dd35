"""The OpenTelemetry API the package relies on: public API only (no upper bound on
opentelemetry-api/-sdk/-instrumentation/-semantic-conventions, no private name of theirs read), and
issue 22's guarantee on it, on a provider of its own: the application's own ids exactly as the SDK
alone leaves them, under any count or length limit."""

from __future__ import annotations

import gc
import re
import weakref
from pathlib import Path

import pytest
import tomllib
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from packaging.requirements import Requirement

from app_shapes import LIMITS, SHAPES, check
from otel_agent_identity import _context
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


def test_no_private_opentelemetry_name_is_read():
    """No ``obj._name`` of an OpenTelemetry object, no ``from opentelemetry... import _name``."""
    private = re.compile(r"\b(?:otel_context|context|opentelemetry[\w.]*|span|provider|tracer|store)\._[a-z]\w*")
    found = []
    for path in (ROOT / "src" / "otel_agent_identity").rglob("*.py"):
        text = path.read_text()
        found += [f"{path.name}: {m.group(0)}" for m in private.finditer(text)]
        found += [f"{path.name}: {m.group(0)}" for m in re.finditer(r"from opentelemetry[\w.]* import _\w+", text)]
    assert not found


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
