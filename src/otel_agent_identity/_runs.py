"""One handler turns an agent run into an identity scope and (where needed) an agent span.

Adapters only gather facts from framework objects and call :meth:`RunHandler.start`; the handler
never raises into the application: on an internal error it returns None and the adapter calls the
original method unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import AsyncGeneratorType, CoroutineType, FunctionType, GeneratorType
from typing import Any

import wrapt
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity, metrics
from otel_agent_identity._errors import is_one_of, record_error
from otel_agent_identity.boundary import check_served
from otel_agent_identity.extractors import (
    SOURCE_FRAMEWORK,
    SOURCE_SERVICE,
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
from otel_agent_identity.span_processor import IdentitySpanProcessor, attributes_of, set_trusted

_logger = logging.getLogger(__name__)
#: how a run can stop that is not its failure: cancellation, a consumer closing a stream early
_NOT_FAILURES = (asyncio.CancelledError, GeneratorExit)
_PROCESSORS: weakref.WeakKeyDictionary[Any, IdentitySpanProcessor] = weakref.WeakKeyDictionary()
_tuple_new = tuple.__new__  # a NamedTuple built without its Python-level __new__
#: runs whose ``resumed`` the framework's own read of its store tells later (an adapter's hook
#: observes it: :func:`awaiting_run`), by id() of their scope; an entry leaves when taken or when
#: its run finishes (a plain dict: a weak one costs ~0.05 span per run)
_AWAITING: dict[int, Run] = {}


@dataclass
class SpanSpec:
    """An agent span to create because the framework emits none (``kind``: CLIENT for remote agents).

    ``on_end(result) -> dict``: attributes read from the run's result just before the span ends
    (called only when the run returned one; what it raises is logged, the span still ends).
    """

    name: str
    kind: SpanKind = SpanKind.INTERNAL
    attributes: dict[str, Any] = field(default_factory=dict)
    #: exception types that end the run as control flow, not as its failure (e.g. LangGraph's
    #: ``GraphBubbleUp``: an interrupt or a ``Command`` to the parent graph); the span stays OK
    not_failures: tuple = ()
    on_end: Callable[[Any], dict[str, Any]] | None = None


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
        elif self.provider is None:
            _logger.warning(
                "otel-agent-identity: the tracer provider is not an SDK TracerProvider; "
                "agent spans carry identity, spans inside runs do not"
            )

    def start(
        self,
        *,
        framework: str,
        agent: Any,
        session: Any,
        args: tuple,
        kwargs: dict,
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
                framework,
                agent,
                session,
                args,
                kwargs,
                rule,
                span,
                run_id,
                delegation_id,
                agent_step,
                claim,
                resumed,
                recheck or bool(self.registry._by_type),
            )
        except Exception:
            _logger.debug("otel-agent-identity: could not start run tracking", exc_info=True)
            return None


class Run:
    """One tracked run. ``enter()``/``exit()`` bracket every piece of the run's execution.

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

    def __init__(
        self,
        handler,
        framework,
        agent,
        session,
        args,
        kwargs,
        rule,
        span_spec,
        run_id,
        delegation_id,
        agent_step=None,
        claim=True,
        resumed=None,
        recheck=True,
    ):
        self._h = handler
        self._resumed, self._recheck = resumed, recheck
        self._agent, self._session, self._rule, self._agent_step = agent, session, rule, agent_step
        base = current_context()
        outer = base.get(SCOPE_KEY)
        self._call = call = _tuple_new(RunCall, (framework, args, kwargs, "before", None, outer))
        self._pre = pre = handler.registry.extract(agent, session, call, rule, agent_step)
        session_id = None
        if session is not None and type(session) is not dict and type(session) is not str:  # a config, an id
            try:
                session_id = session.session_id
            except Exception:
                pass  # OpenAIConversationsSession raises until the service assigned it)
            if type(session_id) is not str:
                session_id = None
        cid, provisional = None, False
        if pre is not None:
            cid = pre[0]
            # only the local session id is a fallback; a session shared with the enclosing run is its story
            provisional = (
                pre[1] == SOURCE_FRAMEWORK
                and cid == session_id
                and not (outer is not None and session_id is not None and outer.session_id == session_id)
            )
        if outer is None:
            self.scope = scope = IdentityScope(
                cid,
                new_execution_id(run_id),
                delegation_id,
                None,
                None,
                session_id,
                provisional,
                agent,
                None,
                handler.registry.accepts,
            )
            self._own_story = False  # read only for a nested run
            if resumed is False and continuity.serving_requested():
                self._count_not_resumed()
            continuity.note_execution()
        else:
            self.scope = scope = IdentityScope(
                cid,
                new_execution_id(run_id),
                delegation_id,
                outer.execution_id,
                outer.conversation_id,
                session_id,
                provisional,
                agent,
                None,
                handler.registry.accepts,
            )
            self._own_story = continuity.new_conversation_declared()
        self._finished = False
        self._spec = span_spec
        self.span = self._ctx = self._base = None
        if span_spec is None:
            if claim:
                scope.claim_agent_span = self._claim
            return
        # the span gets this run's ids below, not the enclosing run's; its parent is the current span
        self.span = span = handler.tracer.start_span(
            span_spec.name,
            context=None if outer is None else with_value(base, SCOPE_KEY, None),
            kind=span_spec.kind,
            attributes=span_spec.attributes,
        )
        set_trusted(span, self._first_attributes())
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

    def context(self) -> contextvars.Context:
        """A copy of the current ``contextvars`` context in which this run's OpenTelemetry
        ``Context`` (its scope, and span) is current, for work run with ``Context.run`` (a
        generator's steps): no attach or detach per piece."""
        ctx = contextvars.copy_context()
        ctx.run(self.enter)  # the tokens are not needed: the context is the run's own
        return ctx

    # -- agent span ----------------------------------------------------------------------------
    def _first_attributes(self) -> dict:
        """Agent span attributes known at its start: the scope's ids, the conversation's source,
        the enclosing run's ids, whether the run resumes state."""
        scope, pre = self.scope, self._pre
        first = dict(scope.attributes)
        if pre is not None:
            first[attrs.GEN_AI_CONVERSATION_ID] = pre[0]
            first[attrs.CONVERSATION_SOURCE] = pre[1]
        if scope.parent_execution_id:
            first[attrs.PARENT_EXECUTION_ID] = scope.parent_execution_id
        if self._resumed is not None:
            first[attrs.CONVERSATION_RESUMED] = self._resumed
        if scope.parent_conversation_id:
            first[attrs.PARENT_CONVERSATION_ID] = scope.parent_conversation_id
        return first

    def _claim(self, span) -> None:
        """The framework's own invoke_agent span started in this run: enrich it, finish it as it ends."""
        set_trusted(span, self._first_attributes())
        self._h.processor.watch(span, self._finish_span)

    def _finish_span(self, span, result: Any = None) -> None:
        pre, scope = self._pre, self.scope
        if self._recheck:
            c = self._call
            post = self._h.registry.extract(
                self._agent,
                self._session,
                _tuple_new(RunCall, (c[0], c[1], c[2], "after", result, c[5])),
                self._rule,
                self._agent_step,
            )
        else:
            post = pre
        effective = scope.conversation_id
        if post == pre and (effective is None if pre is None else pre[0] == effective):
            # the common turn: the same answer before and after, nothing learnt: the first attributes stand,
            # unless the framework set its own value on its span since
            if effective is not None and attributes_of(span).get(attrs.GEN_AI_CONVERSATION_ID) != effective:
                set_trusted(span, {attrs.GEN_AI_CONVERSATION_ID: effective})
        else:
            effective = self._finish_changed(span, pre, post)
        if scope.parent_execution_id is None:  # the run serving an inbound hop, if any
            check_served(effective)
            self._check_served_conversation(span, effective)
        elif scope.parent_conversation_id:
            self._check_parent(span, effective)

    def _finish_changed(self, span, pre, post) -> str | None:
        """The post-run id differs from the run's: a continuity break, an id learnt during the run,
        or a fallback replaced. Returns the agent span's conversation id."""
        out = run_conversation_attributes(pre, post, self.scope.conversation_id)
        current = attributes_of(span)
        changed = {k: v for k, v in out.items() if current.get(k) != v}
        if changed:
            set_trusted(span, changed)
        effective = out.get(attrs.GEN_AI_CONVERSATION_ID)
        if changed.get(attrs.CONVERSATION_CHANGED):  # newly marked: counted once per span
            metrics.count(
                metrics.CONVERSATION_CHANGES,
                agent=self._agent_name(),
                framework=self._call.framework,
                reason=metrics.REASON_RUN,
            )
        scope = self.scope
        if effective and effective != scope.conversation_id:
            if scope.conversation_id is not None:  # the service's id replaces a fallback
                continuity.delegate_contexts.rekey(scope.conversation_id, effective)
            scope.conversation_id = effective
            scope.refresh()
        return effective

    # -- continuity signals ----------------------------------------------------------------------
    def _agent_name(self) -> str | None:
        name = getattr(self._agent, "name", None)
        return name if isinstance(name, str) else None

    def _count_not_resumed(self) -> None:
        """A run serving an A2A request that asked to continue a context, started from no state."""
        metrics.count(metrics.STATE_NOT_RESUMED, agent=self._agent_name(), framework=self._call.framework)

    def resumed_later(self) -> None:
        """``resumed`` is not known at the start: the framework's own read of its store (a
        checkpoint, a session), which an adapter's hook observes early in the run, tells it
        (:func:`awaiting_run`, then :meth:`record_resumed`)."""
        _AWAITING[id(self.scope)] = self

    def record_resumed(self, value: bool | None) -> None:
        """Record ``agent_identity.conversation.resumed`` (bool; None: unknown, nothing recorded)
        learnt after the span started; a serving run that did not resume is counted."""
        if value is None or self._resumed is not None:
            return
        self._resumed = value
        if self.span is not None:
            set_trusted(self.span, {attrs.CONVERSATION_RESUMED: value})
        if value is False and self.scope.parent_execution_id is None and continuity.serving_requested():
            self._count_not_resumed()

    def _check_served_conversation(self, span, effective: str | None) -> None:
        """The run serving an A2A request: a contextId this process served under another agent
        conversation last time is marked ``agent_identity.conversation.previous_id`` (that one) and,
        unless the framework says the run resumed state, counted."""
        last = continuity.served_run(self._agent_name(), effective)
        if last is not None:
            set_trusted(span, {attrs.CONVERSATION_PREVIOUS_ID: last})
            if self._resumed is not True:
                metrics.count(metrics.CONVERSATION_REBUILT, agent=self._agent_name(), framework=self._call.framework)

    def _check_parent(self, span, effective: str | None) -> None:
        """A nested in-process run (not a hop) whose conversation id ``effective`` is another than
        its parent's (recorded as ``agent_identity.parent.conversation.id`` at its start), with no
        mapping declared (:func:`otel_agent_identity.new_conversation`): marked and counted."""
        parent = self.scope.parent_conversation_id
        if not parent or not effective or effective == parent or self.scope.delegation_id is not None:
            return
        if not self._own_story:
            span.set_attribute(attrs.CONVERSATION_PARENT_DIFFERS, True)
            metrics.count(metrics.PARENT_CONVERSATION_DIFFERS, agent=self._agent_name(), framework=self._call.framework)

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
        spec = self._spec
        try:
            self._finish_span(span, result)
            if result is not None and spec.on_end is not None:
                span.set_attributes(spec.on_end(result))
        except Exception:
            _logger.debug("otel-agent-identity: finishing the run failed", exc_info=True)
        if error is not None and not is_one_of(error, _NOT_FAILURES + spec.not_failures):
            record_error(span, error)  # never raises: the caller re-raises the application's own error
        try:
            span.end()
        except Exception:
            _logger.debug("otel-agent-identity: ending the run's span failed", exc_info=True)

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

    # -- return shapes -----------------------------------------------------------------------
    def call(self, wrapped, args, kwargs):
        """Call ``wrapped`` inside the run and wrap what it returns, keeping its type."""
        try:
            lazy = _NO_CODE[getattr(wrapped, "__func__", wrapped)]
        except (KeyError, TypeError):
            lazy = _runs_no_code(wrapped)
        if lazy:
            # calling an ``async def`` or a generator function only binds its arguments: none of the
            # run's code runs before the result is awaited or iterated (inside the scope)
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                self.finish(error=exc)
                raise
        else:
            tokens = self.enter()
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                self.finish(error=exc)
                raise
            finally:
                self.exit(tokens)
        if isinstance(result, CoroutineType):
            return self._await(result)
        return self.wrap_result(result)

    def wrap_result(self, result):
        """Keep ``result``'s shape, with the rest of the run inside its scope: a coroutine stays a
        coroutine, a generator a generator, an async generator an async generator, another async
        iterable (e.g. Agent Framework ``ResponseStream``) a :class:`ScopedStream` proxy; anything
        else is the finished run's result."""
        if isinstance(result, CoroutineType):
            return self._await(result)
        if isinstance(result, AsyncGeneratorType):
            return self._finish_if_dropped(scoped_async_generator(result, self))
        if isinstance(result, GeneratorType):
            return self._finish_if_dropped(scoped_generator(result, self))
        if hasattr(result, "__aiter__"):
            return ScopedStream(result, self)
        self.finish(result=result)
        return result

    def _finish_if_dropped(self, gen):
        """A generator dropped before its first step never runs its ``finally``: end the run when
        it is collected (a no-op for one that ran: it finished the run itself)."""
        weakref.finalize(gen, self.finish)
        return gen

    def finish_when_done(self, future, result: Any = None) -> None:
        """Task-based runs (a background task, a run loop task): end the run when ``future``
        (an ``asyncio.Future``/``Task`` or ``concurrent.futures.Future``) completes.

        ``result``: the run's result object (e.g. a streamed result the task fills in), given to
        the after-run extraction and ``SpanSpec.on_end`` when the future completed successfully.
        """

        def done(fut) -> None:
            # a done callback: what it raises is only logged by the loop, and the run would never end
            try:
                cancelled = fut.cancelled()
                error = None if cancelled else fut.exception()
            except BaseException as exc:
                cancelled, error = False, exc
            try:
                self.finish(result=result if error is None and not cancelled else None, error=error)
            except Exception:
                _logger.debug("otel-agent-identity: ending a task-based run failed", exc_info=True)

        future.add_done_callback(done)

    async def _await(self, coro):
        tokens = self.enter()
        try:
            result = await coro
        except BaseException as exc:
            self.finish(error=exc)
            raise
        finally:
            self.exit(tokens)
        self.finish(result=result)
        return result


class HandOff:
    """A run whose call returns while its work goes on in a task the call spawns.

    ``call``/``wrap_result`` keep every return shape and the run's scope as :meth:`Run.call` does;
    until :meth:`task` takes the run over, the result's end (or error) ends the run as usual.
    After it, only the task's coroutine ends the run, when it completes, fails or is cancelled:
    a caller that stops reading a background stream does not end a run that is still working.
    """

    __slots__ = ("__weakref__", "handed", "run")

    def __init__(self, run: Run) -> None:
        self.run, self.handed = run, False

    def enter(self) -> tuple:
        return self.run.enter()

    def exit(self, tokens: tuple) -> None:
        self.run.exit(tokens)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        if not self.handed:
            self.run.finish(result=result, error=error)

    def task(self, coro):
        """Return ``coro`` (the body of the task about to be spawned) running in the run's scope;
        the run ends when it ends."""
        self.handed = True
        return self.run.wrap_result(coro)

    def __getattr__(self, name: str) -> Any:
        # Run's shape methods (call, wrap_result, ...) bound to this view, so the enter/exit/finish
        # above are the ones they use; anything else is the run's own attribute
        attr = getattr(Run, name, None)
        if inspect.isfunction(attr):
            return attr.__get__(self, HandOff)
        return getattr(self.run, name)


_NO_CODE: dict[Any, bool] = {}  # function -> calling it runs none of its code: bounded by the wrapped methods
_LAZY = inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR


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


def _runs_no_code(fn: Any) -> bool:
    """``fn`` (a function or a method bound to one) is a plain ``async def`` or generator function:
    calling it only binds its arguments and returns the coroutine or generator."""
    key = getattr(fn, "__func__", fn)
    try:
        return _NO_CODE[key]
    except KeyError:
        pass
    except TypeError:  # not hashable
        return False
    # exactly a function object: a proxy (another instrumentation's wrapt wrapper) may run code
    found = type(key) is FunctionType and bool(key.__code__.co_flags & _LAZY)
    if len(_NO_CODE) < 1024:
        _NO_CODE[key] = found
    return found


def run_conversation_attributes(pre: Extracted | None, post: Extracted | None, run_id: str | None) -> dict[str, Any]:
    """The agent span's conversation attributes at the run's end.

    Args:
        pre / post: the extractor's answers before and after the run.
        run_id: the id the run's spans carry (the scope's), or None.
    A continuity break (same step, another id) reports ``post`` with ``requested_id``/``changed``;
    otherwise the run's id, else ``post``'s. The source is the step that gave that id, or
    ``service`` for an id only the service's response gave (a run without a session).
    """
    if pre and post and pre.source == post.source and post.conversation_id != pre.conversation_id:
        return conversation_attributes(pre, post)
    cid = run_id or (post.conversation_id if post else None)
    if cid is None:
        return {}
    if post is not None and post.conversation_id == cid:
        source = post.source
    elif pre is not None and pre.conversation_id == cid:
        source = pre.source
    else:
        source = SOURCE_SERVICE
    return {attrs.GEN_AI_CONVERSATION_ID: cid, attrs.CONVERSATION_SOURCE: source}


def conversation_attributes(pre: Extracted | None, post: Extracted | None) -> dict[str, Any]:
    """The agent span's conversation attributes from the ids before and after the run.

    A continuity break is an id that changed between two answers of the same extractor step;
    a framework fallback before the run replaced by the service's id after it is the first turn.
    """
    effective = post or pre
    if effective is None:
        return {}
    out: dict[str, Any] = {
        attrs.GEN_AI_CONVERSATION_ID: effective.conversation_id,
        attrs.CONVERSATION_SOURCE: effective.source,
    }
    if pre and post and pre.source == post.source and post.conversation_id != pre.conversation_id:
        out[attrs.CONVERSATION_REQUESTED_ID] = pre.conversation_id
        out[attrs.CONVERSATION_CHANGED] = True
    return out


class ScopedStream(wrapt.ObjectProxy):
    """An async-iterable, awaitable result (e.g. Agent Framework ``ResponseStream``) whose every pull
    runs inside the run's scope, in whichever task or thread consumes it. The run finishes when the
    stream is exhausted, fails, yields its final response, or is dropped unfinished.

    Combinators keep the scope: a public method that returns the wrapped stream itself (the
    framework's ``with_transform_hook``/``with_result_hook``/... return ``self``) returns this
    proxy; one that returns a new async iterable (``map``, ``flat_map``, ``with_finalizer``)
    returns a proxy of it for the same run, which keeps this one alive (the run ends with the
    derived stream, not when this proxy is dropped). ``await stream`` gives what awaiting the
    wrapped object gives: this proxy when that is the stream itself (Agent Framework resolves the
    stream and returns it), else the final result, which ends the run.
    """

    def __init__(self, wrapped: Any, run: Run, parent: Any = None) -> None:
        super().__init__(wrapped)
        self._self_run = run
        self._self_iter = None
        self._self_parent = parent  # a proxy this one was derived from: kept alive with it
        weakref.finalize(self, run.finish)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.__wrapped__, name)
        if (name.startswith("_") and not name.startswith("_with_")) or not callable(value) or inspect.isclass(value):
            return value

        def chained(*args: Any, **kwargs: Any) -> Any:
            return self._self_adopt(value(*args, **kwargs))

        return chained

    def _self_adopt(self, result: Any) -> Any:
        try:
            if result is self.__wrapped__:
                return self
            if hasattr(result, "__aiter__") and not isinstance(result, ScopedStream) and not inspect.isasyncgen(result):
                return ScopedStream(result, self._self_run, parent=self)
        except Exception:
            _logger.debug("otel-agent-identity: could not scope a derived stream", exc_info=True)
        return result

    def __aiter__(self):
        return self

    async def __anext__(self):
        run = self._self_run
        tokens = run.enter()
        try:
            if self._self_iter is None:
                self._self_iter = self.__wrapped__.__aiter__()
            return await self._self_iter.__anext__()
        except StopAsyncIteration:
            run.finish()
            raise
        except BaseException as exc:
            run.finish(error=exc)
            raise
        finally:
            run.exit(tokens)

    async def get_final_response(self, *args: Any, **kwargs: Any):
        # an async def around run._await: its frame keeps this proxy (whose finaliser ends the run)
        # alive, e.g. in ``agent.run(..., stream=True).get_final_response()``
        return await self._self_run._await(self.__wrapped__.get_final_response(*args, **kwargs))

    def __await__(self):
        if not hasattr(self.__wrapped__, "__await__"):
            return self.get_final_response().__await__()
        return self._self_resolve().__await__()

    async def _self_resolve(self):
        run = self._self_run
        tokens = run.enter()
        try:
            result = await self.__wrapped__
        except BaseException as exc:
            run.finish(error=exc)
            raise
        finally:
            run.exit(tokens)
        if result is self.__wrapped__:
            return self  # resolved, not consumed: the run goes on while the caller iterates
        run.finish(result=result)
        return result

    async def aclose(self) -> None:
        """Close an async generator early (``contextlib.aclosing``): the run ends now."""
        try:
            await self.__wrapped__.aclose()
        finally:
            self._self_run.finish()

    async def close(self, *args: Any, **kwargs: Any) -> None:
        """Agent Framework ``ResponseStream.close()``: the run ends now."""
        try:
            await self.__wrapped__.close(*args, **kwargs)
        finally:
            self._self_run.finish()

    async def __aenter__(self):
        await self.__wrapped__.__aenter__()
        return self  # ``async with run(...) as stream``: iterate through this proxy, in the run's scope

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        finally:
            self._self_run.finish(error=exc_info[1])


def scoped_generator(gen, run: Run):
    """A generator over ``gen`` whose every step runs in the run's scope (and current span), never
    across the caller's code between steps. The run ends when ``gen`` is exhausted or raises, or
    when this generator is closed or collected (an early ``break``): ``GeneratorExit`` is no failure.
    ``send()`` and ``throw()`` reach ``gen``; its return value is kept.

    Each step runs with ``Context.run`` in one context of the run's own (:meth:`Run.context`), so
    a context variable a step sets is seen by the next step and never by the caller."""
    step = run.context().run
    error: BaseException | None = None
    try:
        sent, thrown = None, None
        while True:
            try:
                item = step(gen.send, sent) if thrown is None else step(gen.throw, thrown)
            except StopIteration as stop:
                return stop.value
            except BaseException as exc:
                error = exc
                raise
            sent, thrown = None, None
            try:
                sent = yield item
            except GeneratorExit:
                raise
            except BaseException as exc:  # thrown in by the consumer: hand it to gen
                thrown = exc
    finally:
        if error is None:
            try:
                step(gen.close)
            except BaseException as exc:
                error = exc
                raise
            finally:
                run.finish(error=error)
        else:
            run.finish(error=error)


async def scoped_async_generator(agen, run: Run):
    """The async counterpart of :func:`scoped_generator`: an ``async def`` generator (not a proxy),
    so the event loop's async-generator finaliser closes it, and ends the run, when the caller
    leaves ``async for`` with ``break`` and drops it. ``asend()``/``athrow()`` reach ``agen``."""
    error: BaseException | None = None
    try:
        sent, thrown = None, None
        while True:
            tokens = run.enter()
            try:
                item = await (agen.athrow(thrown) if thrown is not None else agen.asend(sent))
            except StopAsyncIteration:
                return
            except BaseException as exc:
                error = exc
                raise
            finally:
                run.exit(tokens)
            sent, thrown = None, None
            try:
                sent = yield item
            except GeneratorExit:
                raise
            except BaseException as exc:
                thrown = exc
    finally:
        try:
            if error is None:
                tokens = run.enter()
                try:
                    await agen.aclose()
                except BaseException as exc:
                    error = exc
                    raise
                finally:
                    run.exit(tokens)
        finally:
            run.finish(error=error)
