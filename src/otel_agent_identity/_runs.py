"""The run lifecycle: one handler turns an agent run into an identity scope and (where needed) an
agent span.

Adapters only gather facts from framework objects and call :meth:`RunHandler.start`; the handler
never raises into the application: on an internal error it returns None and the adapter calls the
original method unchanged. A :class:`Run` then: builds its scope (the ids), starts its agent span
or claims the framework's, brackets each piece of execution (:meth:`Run.enter`/:meth:`Run.exit`;
the return shapes of :class:`~otel_agent_identity._streams.Shapes` call them), and finishes once
(:meth:`Run.finish`: the post-run extraction, the rules of :mod:`._conversation`, the signals of
:mod:`._signals`, the error status).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from opentelemetry import trace

from otel_agent_identity import _signals as signals
from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity
from otel_agent_identity._agent_span import AgentSpan, SpanSpec, _warn_short_values
from otel_agent_identity._conversation import conversation_attributes
from otel_agent_identity._streams import Shapes
from otel_agent_identity.extractors import (
    SOURCE_FRAMEWORK,
    Extracted,
    Extractor,
    ExtractorRegistry,
    RunCall,
)
from otel_agent_identity.scope import (
    SCOPE_KEY,
    IdentityScope,
    attach_context,
    current_context,
    current_scope,
    detach_context,
    new_execution_id,
    suppressed,
    with_value,
)
from otel_agent_identity.span_processor import (
    IdentitySpanProcessor,
    note_writes,
    set_trusted,
)

_logger = logging.getLogger(__name__)
_PROCESSORS: weakref.WeakKeyDictionary[Any, IdentitySpanProcessor] = weakref.WeakKeyDictionary()
#: runs whose ``resumed`` the framework's own read of its store tells later (an adapter's hook
#: observes it: :func:`awaiting_run`), by id() of their scope; an entry leaves when taken or when
#: its run finishes (a plain dict: a weak one costs ~0.05 span per run)
_AWAITING: dict[int, Run] = {}


class RunHandler:
    """Shared by all adapters: extraction before and after a run, scope, span enrichment."""

    def __init__(self, tracer: trace.Tracer, processor: IdentitySpanProcessor, registry: ExtractorRegistry) -> None:
        self.tracer = tracer
        self.processor = processor
        self.registry = registry
        self.provider: Any = None  # a global provider still to attach the processor to
        self._attached = False
        self.config: Any = None  # the instrumentor's Config, for adapter options

    def attach_processor(self, provider: Any) -> None:
        """Add the span processor to an SDK provider; a proxy provider is retried at each run start
        (the tracer, a proxy tracer then, follows the global provider by itself)."""
        if self._attached:
            return
        if isinstance(provider, trace.ProxyTracerProvider):
            provider = trace.get_tracer_provider()
        if hasattr(provider, "add_span_processor"):
            # one processor per provider, re-enabled by a later instrument(): never stacked
            existing = _PROCESSORS.get(provider)
            if existing is None:
                provider.add_span_processor(self.processor)
                _PROCESSORS[provider] = self.processor
            else:
                existing.stamp_spans, existing.enabled = self.processor.stamp_spans, True
                self.processor = existing
            self._attached = True
            _warn_short_values(provider, self.config)
        elif self.provider is None:
            _logger.warning(
                "otel-agent-identity: the tracer provider is not an SDK TracerProvider; "
                "agent spans carry identity, spans inside runs do not"
            )

    def start(
        self,
        framework: str,
        agent: Any,
        session: Any,
        args: tuple,
        kwargs: dict,
        /,
        *,
        rule: Extractor | None = None,
        span: SpanSpec | None = None,
        run_id: str | None = None,
        delegation_id: str | None = None,
        resumed: bool | None = None,
        agent_step: Extractor | None = None,
        claim: bool = True,
        recheck: bool = True,
    ) -> Run | None:
        """Begin a run; None if anything failed here, or while instrumentation is suppressed
        (``suppress_instrumentation``): the caller then runs the original, bare.

        Args:
            framework: the adapter's ``NAME`` (extractors see it as ``call.framework``; a metric label).
            agent: the framework's agent, workflow or client object the run belongs to.
            session: what the adapter read for the conversation id (given to ``rule``).
            args, kwargs: the wrapped call's arguments (given to extractors).
            span: create this span; None when the framework emits its own ``invoke_agent`` span,
                which is then enriched.
            run_id: the framework's own run id (becomes ``agent_identity.execution.id``).
            delegation_id: set for hops to another agent.
            agent_step: the adapter's reading of the agent's own step (see
                :meth:`~otel_agent_identity.extractors.ExtractorRegistry.extract`).
            claim: with ``span=None``, enrich the first ``invoke_agent`` span started in the run
                (the framework's); False for a run that has no agent span of its own (a plain
                workflow run: its spans are only stamped).
            resumed: whether the run starts from prior conversation state (the adapter's
                per-framework source); None: unknown, not recorded.
            recheck: ask the extractors again after the run (the continuity-break check, and an id
                the service assigned during it); False when the id comes from the call's own
                arguments and cannot change during the run (LangGraph's ``thread_id``). A
                registered override is always asked again.
        """
        try:
            if suppressed():
                return None
            if not self._attached and self.provider is not None:
                self.attach_processor(self.provider)
            return Run(
                self,
                framework=framework,
                args=args,
                kwargs=kwargs,
                agent=agent,
                session=session,
                rule=rule,
                span_spec=span,
                run_id=run_id,
                delegation_id=delegation_id,
                agent_step=agent_step,
                claim=claim,
                resumed=resumed,
                recheck=recheck or self.registry.has_overrides,
            )
        except Exception:
            _logger.debug("otel-agent-identity: could not start run tracking", exc_info=True)
            return None


class Run(Shapes, AgentSpan):
    """One tracked run. ``enter()``/``exit()`` bracket every piece of the run's execution; ``call``,
    ``wrap_result``, ``finish_when_done`` (from :class:`~otel_agent_identity._streams.Shapes`) run
    the wrapped call with its return shape kept.

    One run, one conversation id: every span of the run carries the scope's id, fixed when first
    known (before the run, else when the service assigns one; a framework fallback, a local
    session id, is replaced by the service's id once). The agent span reports the same id; only
    a continuity break (the same extractor step answers differently after the run) reports the id
    after the run there, with the one asked for as ``requested_id``.
    """

    __slots__ = (
        "__weakref__",
        "_agent",
        "_agent_step",
        "_base",
        "_call",
        "_ctx",
        "_finished",
        "_h",
        "_noted",
        "_own_story",
        "_pre",
        "_recheck",
        "_resumed",
        "_rule",
        "_session",
        "_spec",
        "scope",
        "span",
    )

    @property
    def call_kwargs(self) -> dict:
        """The keyword arguments of the wrapped call that started the run (read only)."""
        return self._call.kwargs

    def __init__(  # untyped (mypy then leaves the body alone): the types are RunHandler.start's
        self,
        handler,
        *,
        framework,
        args,
        kwargs,
        agent,
        session,
        rule,
        span_spec,
        run_id,
        delegation_id,
        agent_step=None,
        claim=True,
        resumed=None,
        recheck=True,
    ):
        """The keyword arguments are :meth:`RunHandler.start`'s; the enclosing run (if any) is the
        current ``Context``'s."""
        self._h = handler
        self._resumed, self._recheck = resumed, recheck
        self._agent, self._session, self._rule, self._agent_step = agent, session, rule, agent_step
        base = current_context()
        outer = base.get(SCOPE_KEY)
        self._call = call = RunCall(framework, args, kwargs, "before", None, outer)
        self._pre = pre = handler.registry.extract(agent, session, call, rule, agent_step)
        session_id = None
        if session is not None and type(session) is not dict and type(session) is not str:  # a config, an id
            try:  # noqa: SIM105 - per run: a try is free, contextlib.suppress is not
                session_id = session.session_id
            except Exception:
                pass  # OpenAIConversationsSession raises until the service assigned it)
            if type(session_id) is not str:
                session_id = None
        cid, provisional = None, False
        if pre is not None:
            cid = pre.conversation_id
            # only the local session id is a fallback; a session shared with the enclosing run is its story
            provisional = (
                pre.source == SOURCE_FRAMEWORK
                and cid == session_id
                and not (outer is not None and session_id is not None and outer.session_id == session_id)
            )
        self.scope = scope = IdentityScope(
            cid,
            new_execution_id(run_id),
            delegation_id,
            None if outer is None else outer.execution_id,
            None if outer is None else outer.conversation_id,
            session_id,
            provisional,
            agent,
            None,
            handler.registry.accepts,
        )
        if outer is None:
            self._own_story = False  # read only for a nested run
            if resumed is False and continuity.serving_answered_before():
                signals.count_not_resumed(agent, framework)
            continuity.note_execution()
        else:
            self._own_story = continuity.new_conversation_declared()
        self._finished = False
        self._spec = span_spec
        self.span = self._ctx = self._base = self._noted = None
        if span_spec is None:
            if claim:
                scope.claim_agent_span = self._claim
            return
        # the span gets this run's ids, not the enclosing run's; its parent is the current span. Ours go
        # in with the spec's at its creation, after them (one validation pass instead of two: ~0.15 span)
        first, spec_attrs = self._first_attributes(), span_spec.attributes
        apart = spec_attrs.keys().isdisjoint(first)
        self.span = span = handler.tracer.start_span(
            span_spec.name,
            context=None if outer is None else with_value(base, SCOPE_KEY, None),
            kind=span_spec.kind,
            attributes={**spec_attrs, **first} if apart else spec_attrs,
        )
        if not apart:  # a key of ours the spec has too: ours set after, the newest (as the SDK orders it)
            set_trusted(span, first)
        try:
            self._noted = note_writes(span)  # the application's writes of our ids on it: theirs win
        except Exception:  # a span without a __dict__ (not the SDK's)
            self._noted = None
        self._ctx = trace.set_span_in_context(span, with_value(base, SCOPE_KEY, scope))

    # -- scope -------------------------------------------------------------------------------
    def enter(self) -> Any:
        """Make the run's OpenTelemetry ``Context`` current: the current one with the run's scope
        (and, for a run with its own span, the context the run started in with its span and scope).
        Returns the token for :meth:`exit`."""
        ctx = self._ctx
        if ctx is None:  # the scope on top of whatever is current now
            base = current_context()
            cached = self._base  # (base, ctx), read and written as one: tasks and threads may enter at once
            if cached is not None and cached[0] is base:  # Contexts are immutable: the same one, the same result
                ctx = cached[1]
            else:
                ctx = with_value(base, SCOPE_KEY, self.scope)
                self._base = (base, ctx)
        return attach_context(ctx)

    def exit(self, token: Any) -> None:
        """Restore the ``Context`` that was current before :meth:`enter` (a token from another
        context, e.g. a stream finished in another task, is ignored)."""
        detach_context(token)

    # -- what the framework tells later -----------------------------------------------------------
    def resumed_later(self) -> None:
        """``resumed`` is not known at the start: the framework's own read of its store (a
        checkpoint, a session), which an adapter's hook observes early in the run, tells it
        (:func:`awaiting_run`, then :meth:`record_resumed`)."""
        _AWAITING[id(self.scope)] = self

    def record_resumed(self, value: bool | None) -> None:
        """Record ``agent_identity.conversation.resumed`` (bool; None: unknown, nothing recorded)
        learnt after the span started; a serving run that did not resume a context this process
        answered in before is counted (:func:`~otel_agent_identity.continuity.serving_answered_before`)."""
        if value is None or self._resumed is not None:
            return
        self._resumed = value
        if self.span is not None:
            set_trusted(self.span, {attrs.CONVERSATION_RESUMED: value})
        if value is False and self.scope.parent_execution_id is None and continuity.serving_answered_before():
            signals.count_not_resumed(self._agent, self._call.framework)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """End the run once: our own span (if any) gets the post-run id, status and end time."""
        if self._finished:
            return
        self._finished = True
        if _AWAITING:  # a run the framework's read never reached (it failed first)
            _AWAITING.pop(id(self.scope), None)
        span = self.span
        if span is None:
            return
        self._end_own_span(span, result, error)

    def learn(self, conversation_id: Any) -> bool:
        """Adopt the conversation id the framework resolved during the run when the run started
        without one (Agno generates a session id inside its dispatch): spans started from then on,
        the run's span and its post-run check use it, with source ``framework``. A bad value is
        refused (see :meth:`ExtractorRegistry.problem`). Returns True when adopted."""
        if self._pre is not None or not self.scope.learn(conversation_id):
            return False
        self._pre = Extracted(conversation_id, SOURCE_FRAMEWORK)
        if self.span is not None:
            set_trusted(self.span, conversation_attributes(self._pre, None))
        return True

    def hand_off(self) -> HandOff:
        """A view of this run for a call whose work goes on in a task it spawns (Agno
        ``arun(background=True)``): see :class:`HandOff`."""
        return HandOff(self)


class HandOff(Shapes):
    """A run whose call returns while its work goes on in a task the call spawns.

    :meth:`call`/:meth:`wrap_result` keep every return shape and the run's scope as the run's own
    do; until :meth:`task` takes the run over, the result's end (or error) ends the run as usual.
    After it, only the task's coroutine ends the run, when it completes, fails or is cancelled:
    a caller that stops reading a background stream does not end a run that is still working.
    """

    __slots__ = ("__weakref__", "handed", "run")

    def __init__(self, run: Run) -> None:
        self.run, self.handed = run, False

    def enter(self) -> Any:
        return self.run.enter()

    def exit(self, token: Any) -> None:
        self.run.exit(token)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        if not self.handed:
            self.run.finish(result=result, error=error)

    def task(self, coro: Any) -> Any:
        """Return ``coro`` (the body of the task about to be spawned) running in the run's scope;
        the run ends when it ends."""
        self.handed = True
        return self.run.wrap_result(coro)


def awaiting_run(owner: Any = None) -> Run | None:
    """The run of the current scope that waits for the framework's read of its state
    (:meth:`Run.resumed_later`), taken (once), or None; with ``owner``, only if the scope's owner
    (the agent, the graph) is that object."""
    if not _AWAITING:
        return None
    scope = current_scope()
    if scope is None or (owner is not None and scope.owner is not owner):
        return None
    return _AWAITING.pop(id(scope), None)
