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
#: our ids: under ``max_span_attributes`` other attributes are evicted before these
PROTECTED = frozenset({attrs.GEN_AI_CONVERSATION_ID, attrs.EXECUTION_ID, attrs.DELEGATION_ID,
                       attrs.PARENT_EXECUTION_ID, attrs.PARENT_CONVERSATION_ID})


class _IdentityKeepingAttributes(BoundedAttributes):
    """A span's ``BoundedAttributes`` under a count limit: when full, the oldest attribute that is
    not one of :data:`PROTECTED` is evicted (the SDK evicts the oldest, which is ours: we stamp at
    start). Installed by changing the class of the span's own store; nothing else differs."""

    def _setitem_locked(self, key, value) -> None:
        plain = self._dict
        if key in plain:
            del plain[key]
        if self.maxlen is not None and len(plain) >= self.maxlen:
            victim = next((k for k in plain if k not in PROTECTED), None)
            if victim is None:
                victim = next(iter(plain))
            del plain[victim]
            self.dropped += 1
        plain[key] = value


_CAN_KEEP = hasattr(BoundedAttributes, "_setitem_locked")  # the SDK's eviction step (opentelemetry-api >= 1.39)


def attributes_of(span: Span) -> Mapping[str, Any]:
    """A span's attributes as a read-only-by-convention mapping: the SDK's own store when there is
    one (``span.attributes`` builds a new view on every access), else ``span.attributes``."""
    plain = getattr(getattr(span, "_attributes", None), "_dict", None)
    return plain if plain is not None else (span.attributes or {})


def set_trusted(span: Span, values: dict, keep_ours: bool = False) -> None:
    """Set attributes whose values are ours and already valid (checked id strings, bools) on a
    recording span: straight into the span's attribute store when no SDK limit applies to them
    (the SDK's per-value validation is most of a ``set_attributes`` call), else through the public
    API, which applies the limits exactly as on every other span. ``keep_ours``: under a count
    limit, later evictions spare our ids (see :class:`_IdentityKeepingAttributes`).

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
        if maxlen is not None:
            if keep_ours and type(store) is BoundedAttributes and _CAN_KEEP:
                store.__class__ = _IdentityKeepingAttributes
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
                if maxlen is None:
                    plain.update(attributes)
                    return
                if len(plain) + len(attributes) <= maxlen and _CAN_KEEP:
                    store.__class__ = _IdentityKeepingAttributes
                    plain.update(attributes)
                    return
        except AttributeError:
            pass
        set_trusted(span, attributes, keep_ours=True)

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
