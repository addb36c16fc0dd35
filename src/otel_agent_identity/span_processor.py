"""Stamps the current run's ids on every span at start, and finishes agent spans as they end."""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Optional

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from otel_agent_identity import attributes as attrs
from otel_agent_identity.scope import _SCOPE

_logger = logging.getLogger(__name__)

Finisher = Callable[[Span], None]
#: our ids: evicted by ``max_span_attributes``, they are put back as the span ends, in place of others
PROTECTED = frozenset({attrs.GEN_AI_CONVERSATION_ID, attrs.EXECUTION_ID, attrs.DELEGATION_ID,
                       attrs.PARENT_EXECUTION_ID, attrs.PARENT_CONVERSATION_ID})
#: spans we wrote ids on, while open, by span id: the run's scope (a stamp: ``scope.attributes``),
#: or ``(our attributes, the run's scope or None)``.
#: At the span's end (:meth:`IdentitySpanProcessor._on_ending`) the ids a count limit evicted are
#: put back (the SDK evicts the oldest attribute first, which is ours: we write at start), and the
#: run's ``span_ending`` hook sees a span whose conversation id was overwritten. Bounded: when full
#: (spans that never end), the oldest record goes first.
_KEPT: dict[int, Any] = {}
_KEPT_MAX = 16384


def _keep(span: Span, values: dict, scope: Any = None) -> None:
    """Remember ``values`` (ours, on ``span``) to restore at its end if the count limit evicts them,
    and the run's ``scope`` (a stamp) for its ``span_ending`` hook."""
    try:
        sid = span._context.span_id
    except AttributeError:
        return
    kept = _KEPT.get(sid)
    if kept is None:
        _bound()
        _KEPT[sid] = (values, scope)
    else:
        kept, stamped = kept if type(kept) is tuple else (kept.attributes, kept)
        _KEPT[sid] = ({**kept, **values}, stamped if scope is None else scope)


def _bound() -> None:
    """Make room for one record: the oldest goes (a span that never ended, most likely)."""
    while len(_KEPT) >= _KEPT_MAX:
        try:
            del _KEPT[next(iter(_KEPT))]
        except (KeyError, StopIteration, RuntimeError):  # changed by another thread meanwhile
            return


def set_ids(span: Span, values: dict) -> None:
    """``span.set_attributes(values)`` for ids that are not checked ones of ours (e.g. an A2A
    ``contextId`` as the server sent it): the SDK validates them; under a count limit, an evicted
    one is put back as the span ends, as by :func:`set_trusted`."""
    span.set_attributes(values)
    if getattr(getattr(span, "_attributes", None), "maxlen", None) is not None:
        _keep(span, values)


def replace_ending(span: Span, key: str, value: Optional[str]) -> None:
    """On a span that is ending (a ``span_ending`` hook): replace the value of ``key``, which it
    has, by ``value`` (a checked id, cut to ``max_value_len`` as the SDK cuts str values), or remove
    it when ``value`` is None. In place: the span's store takes no API writes any more."""
    store = span._attributes
    if value is None:
        store._dict.pop(key, None)
    elif key in store._dict:
        cut = store.max_value_len
        store._dict[key] = value if cut is None else value[:cut]


def _restore(store: BoundedAttributes, kept: dict) -> None:
    """Put back our ids the count limit evicted from an ending span's ``store``, each in place of the
    oldest attribute that is not one of :data:`PROTECTED` (the eviction was counted in ``dropped``
    already), cut to ``max_value_len`` as the SDK cuts str values."""
    plain, maxlen, cut = store._dict, store.maxlen, store.max_value_len
    for key, value in kept.items():
        if key not in PROTECTED or key in plain or type(value) is not str:
            continue
        if maxlen is not None and len(plain) >= maxlen:
            victim = next((k for k in plain if k not in PROTECTED), None)
            if victim is None:
                return
            del plain[victim]
        plain[key] = value if cut is None else value[:cut]


def attributes_of(span: Span) -> Mapping[str, Any]:
    """A span's attributes as a read-only-by-convention mapping: the SDK's own store when there is
    one (``span.attributes`` builds a new view on every access), else ``span.attributes``."""
    plain = getattr(getattr(span, "_attributes", None), "_dict", None)
    return plain if plain is not None else (span.attributes or {})


def set_trusted(span: Span, values: dict, scope: Any = None) -> None:
    """Set attributes whose values are ours and already valid (checked id strings, bools) on a
    recording span: straight into the span's attribute store when no SDK limit applies to them
    (the SDK's per-value validation is most of a ``set_attributes`` call), else through the public
    API, which applies the limits exactly as on every other span. Under a count limit, our ids
    among ``values`` that the SDK evicts later are put back as the span ends (see :func:`_restore`);
    ``scope``: the run whose stamp this is (its ``span_ending`` hook then applies to the span).

    No lock: only the thread that started or is ending the span writes here, and one
    ``dict.update`` of str keys is atomic under the GIL.
    """
    try:
        store = span._attributes
        plain, maxlen = store._dict, store.maxlen
        open_ = span._end_time is None
    except AttributeError:  # not an SDK span: the API decides
        open_ = False
    if open_:
        if maxlen is not None or scope is not None:
            _keep(span, values, scope)
        if maxlen is not None:
            if len(plain) + len(values) > maxlen:
                open_ = False
        if open_ and store.max_value_len is None:
            plain.update(values)
            return
    span.set_attributes(values)  # limits apply, not an SDK span, or ended: the SDK's API decides


class IdentitySpanProcessor(SpanProcessor):
    """Adds ``gen_ai.conversation.id``, ``agent_identity.execution.id`` and ``agent_identity.delegation.id``
    of the current :class:`~otel_agent_identity.scope.IdentityScope` to each span when it starts.

    It also runs a *finisher* on a watched span just before it ends: that is how a framework's own
    ``invoke_agent`` span gets the conversation id the service assigned during the run. Register with
    ``TracerProvider.add_span_processor``; :class:`AgentIdentityInstrumentor` does this itself.
    """

    def __init__(self, stamp_spans: bool = True) -> None:
        self.enabled = True
        self.stamp_spans = stamp_spans

    def on_start(self, span: Span, parent_context: Optional[Context] = None) -> None:
        scope = _SCOPE.get()
        if scope is None or not self.enabled:
            return
        claim = scope.claim_agent_span
        if claim is not None and span.name.startswith("invoke_agent"):
            scope.claim_agent_span = None
            try:
                claim(span)  # the run's agent span: its ids and what the run knows at its start
                return
            except Exception:  # noqa: BLE001 - never break span creation
                _logger.debug("otel-agent-identity: could not enrich the agent span", exc_info=True)
        attributes = scope.attributes
        if not attributes or not self.stamp_spans:
            return
        try:  # set_trusted's common case inline (this runs for every span inside a run)
            store = span._attributes
            if type(store) is BoundedAttributes and store.max_value_len is None and span._end_time is None:
                plain, maxlen = store._dict, store.maxlen
                if maxlen is None or len(plain) + len(attributes) <= maxlen:
                    plain.update(attributes)
                    if maxlen is not None or scope.span_ending is not None:
                        if len(_KEPT) >= _KEPT_MAX:
                            _bound()
                        _KEPT[span._context.span_id] = scope
                    return
        except AttributeError:
            pass
        set_trusted(span, attributes, scope)

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook as a span ends (end time set, before any processor's ``on_end``): our ids
        that the attribute count limit evicted are put back; a span whose conversation id is not
        the run's any more goes to the run's ``span_ending`` hook (see
        :class:`~otel_agent_identity.scope.IdentityScope`)."""
        try:
            kept = _KEPT.pop(span._context.span_id, None)
            if kept is None:
                return
            if type(kept) is tuple:
                kept, scope = kept
            else:  # a stamp: the scope itself
                scope = kept
                if scope.span_ending is None and not span._attributes.dropped:
                    return  # the common case: nothing evicted, no hook
                kept = scope.attributes
            store = span._attributes
            if store.dropped:
                _restore(store, kept)
            if scope is not None and scope.span_ending is not None and \
                    store._dict.get(attrs.GEN_AI_CONVERSATION_ID) != scope.conversation_id:
                scope.span_ending(span, scope)
        except Exception:  # noqa: BLE001 - never break the span's end
            _logger.debug("otel-agent-identity: could not finish an ending span", exc_info=True)

    def watch(self, span: Span, finisher: Finisher) -> None:
        """Call ``finisher(span)`` once, just before ``span`` ends, while it still takes attributes.

        The span's ``end`` is shadowed on this one span object (every caller, ``use_span`` and
        ``start_as_current_span`` included, reaches it through attribute lookup): no per-span hook
        is paid by the other spans, and no SDK internals are touched.
        """
        original = span.end

        def end(end_time: Optional[int] = None) -> None:
            if span.__dict__.get("end") is end:
                del span.end  # once; the class's end (or an earlier watcher's) from now on
            try:
                finisher(span)
            except Exception:  # noqa: BLE001 - never break the span's end
                _logger.debug("otel-agent-identity: finisher failed", exc_info=True)
            original(end_time)

        span.end = end
