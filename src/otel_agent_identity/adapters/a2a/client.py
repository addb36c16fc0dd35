"""The A2A client side: ``BaseClient.send_message`` is a delegation (see the package docstring).

Delegation id of a send: ``otel_agent_identity.delegation(key=...)`` when the application gave one,
else UUID5 of the request's ``Message.message_id`` (so re-sending the same message keeps the id),
else random. Conversation id of a direct send: ``Message.context_id`` as sent, else the
``context_id`` the server assigned in its first response event.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity, metrics
from otel_agent_identity._errors import is_one_of
from otel_agent_identity._runs import RunHandler
from otel_agent_identity._streams import NO_OWNER, StreamProxy
from otel_agent_identity.adapters._base import agent_span_spec
from otel_agent_identity.adapters.a2a import attributes as facts
from otel_agent_identity.scope import current_scope, new_delegation_id
from otel_agent_identity.span_processor import set_trusted

NAME = "a2a"  # the framework label of a direct send's run and its metrics

_logger = logging.getLogger(__name__)
_CANCELLED = (asyncio.CancelledError,)
_PROPAGATOR = TraceContextTextMapPropagator()  # traceparent/tracestate only; baggage never rides along


class SendTarget:
    """What the extractor of a direct send looks at (the ``session`` of its run).

    ``context_id`` is the request's ``Message.context_id``, replaced by the server's when the
    request had none (first turn). Register an override for ``BaseClient`` to report another id.
    """

    def __init__(self, context_id: str | None) -> None:
        self.context_id = context_id or None


def context_rule(agent: Any, session: Any, call: Any) -> str | None:
    """Framework rule of a direct send: the A2A ``contextId`` (str) of :class:`SendTarget`."""
    return getattr(session, "context_id", None)


def inject_trace_context(request_context: Any, ctx: Any = None) -> Any:
    """Return a ``ClientCallContext`` whose ``service_parameters`` carry ``traceparent`` of ``ctx``.

    Args:
        request_context: the caller's ``a2a.client.ClientCallContext`` or None (a new one is made;
            the caller's is copied, never mutated).
        ctx: an OpenTelemetry ``Context``; the current one when None.
    """
    from a2a.client.client import ClientCallContext

    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=ctx)
    if not carrier:
        return request_context
    if request_context is None:
        return ClientCallContext(service_parameters=carrier)
    params = dict(request_context.service_parameters or {})
    params.update(carrier)
    return request_context.model_copy(update={"service_parameters": params})


def _enclosing_agent_span(scope: Any) -> trace.Span | None:
    """The CLIENT ``invoke_agent`` span of an ``A2AAgent`` run, when this send is that run's."""
    span = trace.get_current_span()
    if scope is None or scope.delegation_id is None or not span.is_recording():
        return None
    if getattr(span, "kind", None) is not SpanKind.CLIENT:
        return None
    return span if facts.span_attribute(span, attrs.GEN_AI_OPERATION_NAME) == attrs.INVOKE_AGENT else None


def send_wrapper(handler: RunHandler):
    """Wrapper of ``BaseClient.send_message(request, *, context=None)`` (an async generator)."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            hop = _begin_send(handler, instance, args, kwargs)
        except Exception:
            _logger.debug("otel-agent-identity: a2a send tracking failed", exc_info=True)
            hop = None
        if hop is None:
            return wrapped(*args, **kwargs)
        run, kwargs, seen = hop
        if run is not None:  # its span's end reads a cancellation (SpanSpec.on_error)
            return StreamProxy(run.call(wrapped, args, kwargs), NO_OWNER, seen)
        return StreamProxy(wrapped(*args, **kwargs), seen, seen)  # A2AAgent: its span outlives the send

    return wrapper


def _begin_send(handler: RunHandler, client: Any, args: tuple, kwargs: dict):
    """Set up one send of ``request: SendMessageRequest`` by ``client: BaseClient``.

    Returns ``(run or None (an A2AAgent run's send), kwargs with the traceparent context, the
    send's _Responses)``, or None when no tracking could start. May raise (the wrapper catches it).
    """
    request = args[0] if args else kwargs.get("request")
    message = getattr(request, "message", None)
    did = new_delegation_id(transport_key=getattr(message, "message_id", None) or None)
    request_attrs = facts.request_attributes(request, client, streaming=facts.client_streams(client))
    requested = facts.requested_context(message)
    destination = facts.transport_url(client) or facts.card_name(client) or ""
    if requested:  # a context this endpoint never answered this process in is a first turn
        request_attrs[attrs.CONVERSATION_ANSWERED_BEFORE] = continuity.answered_contexts.has(
            f"{destination}\0{requested}"
        )
    scope = current_scope()
    span: Any = _enclosing_agent_span(scope)
    kwargs = dict(kwargs)
    if span is not None and scope is not None:  # A2AAgent run: its span is this delegation
        if scope.delegation_id != did:
            scope.delegation_id = did
            scope.refresh()
        request_attrs.pop(attrs.GEN_AI_CONVERSATION_ID, None)  # the A2AAgent extractor's to set (requested_id stays)
        span.set_attributes(request_attrs)
        set_trusted(span, {attrs.DELEGATION_ID: did})
        kwargs["context"] = inject_trace_context(kwargs.get("context"))
        memo = _check_restart(span, scope.parent_conversation_id, client, message, _a2a_agent_framework(scope))
        return None, kwargs, _Responses(span, scope, None, requested, memo, destination)
    outer = scope
    name = facts.card_name(client)
    target = SendTarget(getattr(message, "context_id", None))
    seen = _Responses(None, None, target, requested, None, destination)
    spec = agent_span_spec(
        name or "a2a",
        None,
        kind=SpanKind.CLIENT,
        name_key=attrs.GEN_AI_AGENT_NAME if name else None,
        extra=request_attrs,
    )
    spec.on_error = seen.cancelled
    run = handler.start(NAME, client, target, args, kwargs, rule=context_rule, span=spec, delegation_id=did)
    if run is None:
        return None
    kwargs["context"] = inject_trace_context(kwargs.get("context"), trace.set_span_in_context(run.span))
    seen.span, seen.scope = run.span, run.scope
    seen.memo = _check_restart(run.span, outer.conversation_id if outer else None, client, message, NAME)
    return run, kwargs, seen


def _a2a_agent_framework(scope: Any) -> str:
    """The framework label of an ``A2AAgent`` run's send: ``strands`` or ``agent_framework``."""
    return "strands" if type(scope.owner).__module__.startswith("strands.") else "agent_framework"


def _remote_key(client: Any) -> str | None:
    """The remote agent of a send: its Agent Card ``name``, else the transport URL."""
    return facts.card_name(client) or facts.transport_url(client)


def _check_restart(span: Any, own: str | None, client: Any, message: Any, framework: str):
    """A delegate restarted: in the caller's conversation ``own`` a context was in effect with this
    remote agent and the send requests another one (or none). Marks ``span`` with the previous
    context and counts it, unless inside :func:`otel_agent_identity.new_conversation`.

    Returns ``(own, remote)`` for :class:`_Responses` to remember the context in effect, or None
    (no own conversation: nothing to compare with)."""
    remote = _remote_key(client)
    if not own or not remote:
        return None
    requested = facts.requested_context(message)
    last = continuity.delegate_contexts.last(own, remote)
    if last and requested != last and not continuity.new_conversation_declared():
        span.set_attribute(attrs.CONVERSATION_PREVIOUS_ID, last)
        local_name = facts.span_attribute(span, attrs.GEN_AI_AGENT_NAME)  # A2AAgent(name=...)
        metrics.count(metrics.DELEGATE_RESTARTS, agent=facts.card_name(client) or local_name, framework=framework)
    if requested:
        continuity.delegate_contexts.remember(own, remote, requested)
    return own, remote


class _Responses:
    """Sees each response event of a send (``on_item`` of its :class:`StreamProxy`): its task id
    and state go on the delegation span.

    A response in another context than the one sent (``requested``) marks the span
    ``agent_identity.conversation.changed=true``: the caller alone sees a callee that answered
    elsewhere, instrumented or not. Each context answered in is remembered per destination
    (``continuity.answered_contexts``): a later send requesting it carries
    ``agent_identity.conversation.answered_before=true``. First turn (no contextId sent): the ``context_id`` the server
    assigned becomes the hop's conversation id, for spans started from then on (``scope.learn``)
    and on the delegation span (a direct send: through :func:`context_rule` when its run finishes;
    an ``A2AAgent`` run without a session, whose extractor has nothing to report: set here).

    A send cancelled before any response event, or after events that left the task SUBMITTED or
    WORKING (``asyncio.wait_for``, ``asyncio.timeout``, a cancelled task), marks the span
    ``agent_identity.send.cancelled=true`` (:meth:`cancelled`; the
    status stays UNSET): the collector then counts the callee's completed work as a lost response.
    It is also the owner of an ``A2AAgent`` send's stream (``enter``/``exit``/``finish``), whose
    span ends later, with the run.
    """

    __slots__ = ("answered", "answered_in", "destination", "memo", "requested", "scope", "span", "state", "target")

    def __init__(
        self,
        span: Any,
        scope: Any,
        target: SendTarget | None,
        requested: str | None,
        memo: tuple[str, str] | None,
        destination: str,
    ) -> None:
        self.span, self.scope, self.target, self.requested, self.memo = span, scope, target, requested, memo
        self.destination = destination
        self.answered = False
        self.state: str | None = None  # the last task state an event carried
        self.answered_in: str | None = None  # the context last remembered as answered (once per send)

    def cancelled(self, error: BaseException) -> dict[str, Any]:
        """``{agent_identity.send.cancelled: True}`` when ``error`` is ``asyncio.CancelledError`` and
        no response event arrived or the last one left the task SUBMITTED/WORKING, else empty
        (``SpanSpec.on_error`` of a direct send)."""
        if (self.answered and self.state not in facts.PENDING_STATES) or not is_one_of(error, _CANCELLED):
            return {}
        return {attrs.SEND_CANCELLED: True}

    def enter(self) -> None:
        return None

    def exit(self, token: Any) -> None:
        pass

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """The end of an ``A2AAgent`` send's stream: marks a cancelled one on the run's span. Never raises."""
        if error is None:
            return
        try:
            if self.span.is_recording():
                self.span.set_attributes(self.cancelled(error))
        except Exception:
            _logger.debug("otel-agent-identity: could not mark a cancelled a2a send", exc_info=True)

    def __call__(self, item: Any) -> None:
        self.answered = True
        try:
            observed = facts.event_facts(item)
            span, target, assigned = self.span, self.target, observed.get("context_id")
            self.state = observed.get("state", self.state)
            if assigned and assigned != self.answered_in:  # a stream's events repeat it: remembered once
                self.answered_in = assigned
                continuity.answered_contexts.seen_before(f"{self.destination}\0{assigned}")
            if target is not None and target.context_id is None and assigned:
                target.context_id = assigned  # first turn: the server's id
            scope = self.scope
            if assigned and scope is not None and scope.learn(assigned) and target is None and span.is_recording():
                set_trusted(span, {attrs.GEN_AI_CONVERSATION_ID: scope.conversation_id})
            if span.is_recording():
                span.set_attributes(facts.event_attributes(observed))
                facts.mark_failed_task(span, observed)
                if facts.mark_changed(span, self.requested, assigned):
                    metrics.count(
                        metrics.CONVERSATION_CHANGES,
                        agent=facts.span_attribute(span, attrs.GEN_AI_AGENT_NAME),
                        framework=NAME,
                        reason=metrics.REASON_CALLEE,
                    )
            if assigned and self.memo is not None:  # the context in effect with this remote agent
                continuity.delegate_contexts.remember(*self.memo, assigned)
        except Exception:
            _logger.debug("otel-agent-identity: could not read an a2a event", exc_info=True)
