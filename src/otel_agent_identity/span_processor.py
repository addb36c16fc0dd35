"""Stamps the run's ids on every span started inside it, and finishes agent spans as they end.

The application's own value of one of our attributes always wins: an id it set when creating the
span, or later, is never overwritten by a stamp, and one that a count limit evicted is never put
back as ours. How (the SDK's attribute store, its attribute-write path and its ``_on_ending`` hook:
private API, each detected as the processor is attached, with a public-API fallback) is all in
:mod:`otel_agent_identity._sdk`; the helpers adapters use to set ids are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from otel_agent_identity import _sdk
from otel_agent_identity._sdk import PROTECTED, attributes_of, replace_ending, set_ids, set_trusted, theirs
from otel_agent_identity.scope import SCOPE_KEY, SUPPRESS_KEY, SUPPRESS_KEY_PLAIN, current_context

__all__ = [
    "PROTECTED",
    "Finisher",
    "IdentitySpanProcessor",
    "attributes_of",
    "replace_ending",
    "set_ids",
    "set_trusted",
    "theirs",
]

_logger = logging.getLogger(__name__)

Finisher = Callable[[Span], None]


class IdentitySpanProcessor(SpanProcessor):
    """Adds ``gen_ai.conversation.id``, ``agent_identity.execution.id`` and ``agent_identity.delegation.id``
    of the run's :class:`~otel_agent_identity.scope.IdentityScope` to each span when it starts: the
    scope in the ``parent_context`` its ``on_start`` receives (the current context when None). An
    id the span already has (the application's, set at its creation) is kept; nothing is stamped
    while instrumentation is suppressed (``suppress_instrumentation``).

    As a span ends, our ids a count limit evicted are put back and the run's ``span_ending`` hook
    runs (:func:`otel_agent_identity._sdk.finish`: the SDK's ``_on_ending``, or its fallback). It
    also runs a *finisher* on a watched span just before it ends: that is how a framework's own
    ``invoke_agent`` span gets the conversation id the service assigned during the run. Register with
    ``TracerProvider.add_span_processor``; :class:`AgentIdentityInstrumentor` does this itself.
    Constructing one detects, once per process, the SDK private API it uses
    (:func:`otel_agent_identity._sdk.attach`; never raises).
    """

    def __init__(self, stamp_spans: bool = True) -> None:
        _sdk.attach(type(self))  # the SDK's private API this class uses, detected once
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
            _sdk.stamp(span, scope)

    # _on_ending (the SDK's hook as a span ends) is _sdk.finish, set on the class by _sdk.attach
    # where the SDK calls it (else each span that needs it is finished just before its end)

    def watch(self, span: Span, finisher: Finisher) -> None:
        """Call ``finisher(span)`` once, just before ``span`` ends, while it still takes attributes
        (``span.end`` shadowed on this one span object: no per-span hook is paid by the other spans;
        public API, see :func:`otel_agent_identity._sdk.before_end`). ``finisher``'s exceptions are
        logged, never raised."""
        _sdk.before_end(span, finisher, span)
