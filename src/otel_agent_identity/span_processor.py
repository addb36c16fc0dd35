"""Stamps the run's ids on every span started inside it, and finishes agent spans as they end.

Public API of the OpenTelemetry SDK (``span.attributes``, ``span.dropped_attributes``,
``span.set_attributes``, ``span.end``), as contrib's ``BaggageSpanProcessor``; our checked ids go
straight into the span's store where the SDK would do nothing more (:mod:`._sdk_private`, the one
use of its private API, with this public path as its fallback). The application's
own value of one of our attributes always wins: an id it set when creating the span, or later, is
never overwritten by a stamp, and under an attribute count limit (the SDK evicts the oldest
attribute first) the exporter sees the application's ids exactly as the SDK alone leaves them.
An id of ours that a count limit evicts from a span is not put back (who wrote that key last is
not public: the evicted value may have been the application's); on the agent span of a run, the
run's own span, the run's end writes its ids again (:meth:`~otel_agent_identity._runs.Run.finish`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from otel_agent_identity import attributes as attrs
from otel_agent_identity._sdk_private import write
from otel_agent_identity.scope import SCOPE_KEY, SUPPRESS_KEY, SUPPRESS_KEY_PLAIN, current_context

__all__ = [
    "PROTECTED",
    "Finisher",
    "IdentitySpanProcessor",
    "attributes_of",
    "before_end",
    "forget_writes",
    "note_writes",
    "replace_ending",
    "set_ids",
    "set_trusted",
    "stamp",
    "theirs",
]

_logger = logging.getLogger(__name__)

Finisher = Callable[[Span], None]

#: our ids: never written over the application's own value
PROTECTED = frozenset(
    {
        attrs.GEN_AI_CONVERSATION_ID,
        attrs.EXECUTION_ID,
        attrs.DELEGATION_ID,
        attrs.PARENT_EXECUTION_ID,
        attrs.PARENT_CONVERSATION_ID,
    }
)


class IdentitySpanProcessor(SpanProcessor):
    """Adds ``gen_ai.conversation.id``, ``agent_identity.execution.id`` and ``agent_identity.delegation.id``
    of the run's :class:`~otel_agent_identity.scope.IdentityScope` to each span when it starts: the
    scope in the ``parent_context`` its ``on_start`` receives (the current context when None). An
    id the span already has (the application's, set at its creation) is kept; nothing is stamped
    while instrumentation is suppressed (``suppress_instrumentation``).

    A run's ``span_ending`` hook runs just before a span stamped in its scope ends (:func:`stamp`).
    It also runs a *finisher* on a watched span just before it ends: that is how a framework's own
    ``invoke_agent`` span gets the conversation id the service assigned during the run. Register with
    ``TracerProvider.add_span_processor``; :class:`AgentIdentityInstrumentor` does this itself.
    """

    def __init__(self, stamp_spans: bool = True) -> None:
        self.enabled = True
        self.stamp_spans = stamp_spans

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        ctx = current_context() if parent_context is None else parent_context
        scope: Any = ctx.get(SCOPE_KEY)
        if scope is None or not self.enabled or ctx.get(SUPPRESS_KEY) or ctx.get(SUPPRESS_KEY_PLAIN):
            return
        claim = scope.claim_agent_span
        if claim is not None and span.name.startswith("invoke_agent"):
            scope.claim_agent_span = None
            try:
                claim(span)  # the run's agent span: its ids and what the run knows at its start
                return
            except Exception:
                _logger.debug("otel-agent-identity: could not enrich the agent span", exc_info=True)
        if scope.attributes and self.stamp_spans:
            stamp(span, scope)

    def watch(self, span: Span, finisher: Finisher) -> None:
        """Call ``finisher(span)`` once, just before ``span`` ends, while it still takes attributes
        (:func:`before_end`). ``finisher``'s exceptions are logged, never raised."""
        before_end(span, finisher, span)


def stamp(span: Any, scope: Any) -> None:
    """Stamp a span as it starts with the ids of the run's ``scope`` (its ``attributes``, a dict of
    str ids) that the span has not (an id set at its creation is the application's and stays).
    Under a count limit our ids go before every id the application gave the span at its creation
    (re-setting its creation attributes after ours: the SDK evicts the oldest first), and a span
    created over its limit gets none (an id the application gave it may be among the evicted).
    With the scope's ``span_ending`` hook, the span is finished just before its end
    (:func:`before_end`). Never raises."""
    try:
        values, theirs = scope.attributes, span.attributes
        if not theirs:
            if not write(span, values, True):
                _set_public(span, values)
        elif not span.dropped_attributes:
            if not theirs.keys().isdisjoint(values):
                values = {k: v for k, v in values.items() if k not in theirs}
            if values:
                _stamp_before(span, values, theirs)
        if scope.span_ending is not None:
            before_end(span, _ending, span, scope)
    except Exception:
        _logger.debug("otel-agent-identity: could not stamp a span", exc_info=True)


def _stamp_before(span: Any, values: dict, theirs: Mapping[str, Any]) -> None:
    """``values`` onto a span with creation attributes ``theirs``: after them when none of these
    is an id (under a count limit the oldest of theirs may give way, as to any later attribute),
    else before them (theirs are set again: the SDK moves a key set again to the newest place, and
    evicts the oldest when a new key does not fit; ours then make room)."""
    if theirs.keys().isdisjoint(PROTECTED):
        _set(span, values)
        return
    creation = dict(theirs)
    span.set_attributes(values)
    if span.dropped_attributes:  # ours did not fit: some of theirs went, the oldest first
        now = span.attributes
        span.set_attributes({k: v for k, v in creation.items() if k in now})  # after ours
    span.set_attributes(creation)  # the evicted come back in place of ours, all in their order


def _set(span: Any, values: Mapping[str, Any], trusted: bool = False) -> None:
    """``span.set_attributes(values)``: straight into the span's store where the SDK would do
    nothing more (:mod:`._sdk_private`), else as ``set_attribute`` per key for one or two values
    (the SDK also cleans the mapping of ``set_attributes`` as a whole: ~8 K instructions, ~0.08
    bare span, a call). ``trusted``: through the span's class (see :func:`set_trusted`)."""
    if not write(span, values):
        _set_public(span, values, trusted)


def _set_public(span: Any, values: Mapping[str, Any], trusted: bool = False) -> None:
    """:func:`_set` on the SDK's public API only (the private write declined, or was tried already)."""
    cls = type(span) if trusted else None
    if len(values) > 2:
        if cls is None:
            span.set_attributes(values)
        else:
            cls.set_attributes(span, values)
        return
    for key, value in values.items():
        if cls is None:
            span.set_attribute(key, value)
        else:
            cls.set_attribute(span, key, value)


def _ending(span: Any, scope: Any) -> None:
    """Just before a span stamped in ``scope`` ends: its ``span_ending`` hook, when one of the
    scope's ids is not on the span as the scope has it (something in the run wrote over it, or a
    count limit evicted it)."""
    current = span.attributes or {}
    for key, value in scope.attributes.items():
        if current.get(key) != value:
            scope.span_ending(span, scope)
            return


def before_end(span: Any, fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn(*args)`` once, just before ``span`` ends, while it still takes attributes: its ``end``
    is shadowed on this one span object (every caller, ``use_span`` and ``start_as_current_span``
    included, reaches it through attribute lookup). ``fn``'s exceptions are logged."""
    original = span.end
    mine: list[Callable[..., None]] = []

    def end(end_time: int | None = None) -> None:
        # `mine` holds this function (not its own closure: no reference cycle keeping the span and
        # everything it references alive until the garbage collector runs), emptied at the first call
        if mine and span.__dict__.get("end") is mine.pop():
            del span.end  # once; the class's end (or an earlier shadow) from now on
        try:
            fn(*args)
        except Exception:
            _logger.debug("otel-agent-identity: a span's finisher failed", exc_info=True)
        original(end_time)

    mine.append(end)
    span.end = end


def set_trusted(span: Any, values: dict, scope: Any = None) -> None:
    """Set attributes whose values are ours (checked id strings, bools) on a span: its class's
    ``set_attributes`` (not a write :func:`note_writes` notes), a value the span has replaced (the
    adapter's decision, e.g. the run's id on its agent span). ``scope``: the run whose stamp this
    is (its ``span_ending`` hook then applies to the span)."""
    _set(span, values, True)
    if scope is not None and scope.span_ending is not None:
        before_end(span, _ending, span, scope)


def note_writes(span: Any) -> set[str]:
    """The keys of :data:`PROTECTED` that anyone but :func:`set_trusted` writes on ``span`` (a span
    of ours, e.g. a run's agent span) from now on, through its ``set_attribute``/``set_attributes``
    (shadowed on this one span object, until :func:`forget_writes`): a set, filled as they come."""
    noted: set[str] = set()
    cls = type(span)

    def set_attribute(key: str, value: Any) -> None:
        if key in PROTECTED:
            noted.add(key)
        cls.set_attribute(span, key, value)

    def set_attributes(attributes: Mapping[str, Any]) -> None:
        try:  # noqa: SIM105 - per write: a try is free, contextlib.suppress is not
            noted.update(PROTECTED.intersection(attributes))
        except Exception:  # not a mapping of str keys: the SDK tells
            pass
        cls.set_attributes(span, attributes)

    span.set_attribute, span.set_attributes = set_attribute, set_attributes
    return noted


def forget_writes(span: Any) -> None:
    """Undo :func:`note_writes` on ``span`` (its closures reference the span: no cycle left)."""
    span.__dict__.pop("set_attribute", None)
    span.__dict__.pop("set_attributes", None)


def set_ids(span: Any, values: dict) -> None:
    """``span.set_attributes(values)`` for ids that are not checked ones of ours (e.g. an A2A
    ``contextId`` as the server sent it): the SDK validates them."""
    span.set_attributes(values)


def replace_ending(span: Any, key: str, value: str | None) -> None:
    """On a span about to end (a ``span_ending`` hook): set ``key`` to ``value`` (a checked id; the
    newest attribute then, so a count limit does not evict it). None: nothing is set (an attribute
    cannot be removed through the public API)."""
    if value is not None and span.is_recording():
        span.set_attribute(key, value)


def attributes_of(span: Any) -> Mapping[str, Any]:
    """A span's attributes (``span.attributes``; an empty mapping for a span without any)."""
    return span.attributes or {}


def theirs(span: Any, key: str, ours: Any = None) -> bool:
    """Whether the open ``span``'s value of ``key`` (one of :data:`PROTECTED`) is someone else's (the
    application's, a framework's): present and not ``ours`` (the value we last wrote, or None), so a
    run's end must not write ours over it."""
    value = attributes_of(span).get(key)
    return value is not None and value != ours
