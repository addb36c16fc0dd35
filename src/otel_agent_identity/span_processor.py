"""Stamps the current run's ids on every span at start, and finishes agent spans as they end."""

from __future__ import annotations

import logging
from typing import Callable, Optional

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from otel_agent_identity.scope import _SCOPE

_logger = logging.getLogger(__name__)

Finisher = Callable[[Span], None]
_FINISHER = "_otel_agent_identity_finisher"


class IdentitySpanProcessor(SpanProcessor):
    """Adds ``gen_ai.conversation.id``, ``agent_identity.execution.id`` and ``agent_identity.delegation.id``
    of the current :class:`~otel_agent_identity.scope.IdentityScope` to each span when it starts.

    It also runs a *finisher* on a watched span while it is ending (SDK ``_on_ending``, before the
    span becomes read-only): that is how a framework's own ``invoke_agent`` span gets the
    conversation id the service assigned during the run. Register with
    ``TracerProvider.add_span_processor``; :class:`AgentIdentityInstrumentor` does this itself.
    """

    def __init__(self, stamp_spans: bool = True) -> None:
        self.enabled = True
        self.stamp_spans = stamp_spans

    def on_start(self, span: Span, parent_context: Optional[Context] = None) -> None:
        scope = _SCOPE.get()
        if scope is None or not self.enabled:
            return
        attributes = scope.attributes
        if attributes and self.stamp_spans:
            # Hot path: the values are ours and already checked (strings within max_id_length), so
            # when the SDK's store has room they skip its per-value validation; else the public API.
            store = getattr(span, "_attributes", None)
            plain = getattr(store, "_dict", None)
            if plain is not None and (store.maxlen is None or len(plain) + len(attributes) <= store.maxlen):
                with store._lock:
                    plain.update(attributes)
            else:
                span.set_attributes(attributes)
        claim = scope.claim_agent_span
        if claim is not None and span.name.startswith("invoke_agent"):
            scope.claim_agent_span = None
            claim(span)

    def watch(self, span: Span, finisher: Finisher) -> None:
        """Call ``finisher(span)`` once, while ``span`` is ending (it can still take attributes)."""
        span.__dict__[_FINISHER] = finisher  # lives and dies with the span: nothing to clean up

    def _on_ending(self, span: Span) -> None:
        try:
            finisher = span.__dict__.pop(_FINISHER, None)
        except AttributeError:  # not an SDK span
            return
        if finisher is not None:
            try:
                finisher(span)
            except Exception:  # noqa: BLE001 - never break span export
                _logger.debug("otel-agent-identity: finisher failed", exc_info=True)


def set_while_ending(span: Span, attributes: dict) -> None:
    """Set attributes on a span from ``_on_ending``.

    The OTel spec lets OnEnding mutate the span, but the Python SDK marks it ended first, so the
    public setters refuse: write through the SDK's attribute store under the span's lock.
    """
    if span.is_recording():
        span.set_attributes(attributes)
        return
    store = getattr(span, "_attributes", None)
    lock = getattr(span, "_lock", None)
    if store is None or lock is None or not hasattr(store, "_immutable"):
        _logger.debug("otel-agent-identity: this SDK's spans cannot take attributes while ending")
        return
    with lock:
        store._immutable = False
        try:
            for key, value in attributes.items():
                store[key] = value
        finally:
            store._immutable = True
