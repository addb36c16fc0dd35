"""LangGraph (``langgraph`` 1.x).

Wraps ``langgraph.pregel.Pregel.stream`` and ``.astream``, through which every entry point funnels
exactly once per graph run (``invoke``/``batch``/``stream_events`` -> ``stream``;
``ainvoke``/``abatch``/``astream_events`` -> ``astream``), and ``.invoke``/``.ainvoke``: a run
entered there is in scope for the whole call (only LangGraph's own loop runs between its steps),
and the one stream it opens belongs to it (marked in a contextvar, consumed when opened). So each
run gets one span and no entry point gets two. ``CompiledStateGraph`` (``StateGraph.compile()``,
``create_react_agent``, ``langchain.agents.create_agent``) and ``@entrypoint`` graphs are ``Pregel``
subclasses. LangGraph emits no OTel spans, so we create ``invoke_agent {graph.name}`` (INTERNAL).
``RemoteGraph`` is not a ``Pregel`` and is not seen.

Ids come from the run's **effective** config, the one ``Pregel.stream`` itself computes
(``langgraph._internal._config.ensure_config(graph.config, config)``): a graph invoked in a node
without a config inherits its parent's config through langchain-core's contextvar
``var_child_runnable_config``; one given its own ``thread_id`` (or another checkpoint coordinate)
drops the inherited one. It is read when ``stream()``/``astream()`` is called (LangGraph computes
it again at the first step; the two differ only for a stream created in one node's context and
first iterated in another's). The thread id is read from the three configs with
``ensure_config``'s own precedence, without building the merged config; the whole effective config
is built only for a graph type with a registered override.

- Conversation id, in order: a registered override for the graph's type; then this module's rule,
  ``config["configurable"]["thread_id"]`` (a str; an int or ``uuid.UUID`` as ``str()``). LangGraph
  never generates a thread id: none given, no conversation id. Extractors receive the graph as
  ``agent`` and the effective config (a ``RunnableConfig`` dict) as ``session``.
- Execution id: ``config["run_id"]`` of the config argument (a str or ``uuid.UUID``;
  ``astream_events`` injects a UUID; ``batch`` passes each run its own config) as ``str()``, else
  generated. Not one bound with ``Pregel.with_config(run_id=...)``, which every run of that graph
  would share. LangGraph does not pass ``run_id`` on to nested graphs.
- Nested graphs (a subgraph node, a graph invoked in a node with or without its own config) run
  while the parent's scope is current, so their span records the parent's execution id.

An ``invoke()``/``ainvoke()`` run is in scope from the call to its return. A ``stream()``/``astream()``
generator body runs only while it is iterated: the run core keeps the (async) generator shape,
makes the span current around each step only (never across the caller's code between steps) and
ends it on exhaustion, error, ``close()``/``aclose()``, a ``break`` or garbage collection. Node
tasks are submitted to LangGraph's executors during a step, with a copy of the step's context, so
spans made in tools and models (threads included) carry the run's ids. ``GraphBubbleUp``
(an ``interrupt()`` or a ``Command(graph=Command.PARENT)`` leaving a subgraph) is control flow,
not a failure.

State continuity (``agent_identity.conversation.resumed``, at the run's start): read from what the
run's own loop loaded, observed where LangGraph's loop applies its input
(``PregelLoop._first``, right after ``__enter__``/``__aenter__`` read the thread's checkpoint with
the checkpointer's ``get_tuple``/``aget_tuple``; no second read): ``true`` when the loaded
checkpoint had a step (metadata ``step`` >= 0) or the input carries earlier messages (a
``messages`` list, or a list input, of more than one message: a server that keeps the history
itself and feeds it to a graph without a checkpointer); ``false`` when neither (no checkpoint, or
one with only the input step, and one new message; with a checkpointer and an input without
messages); not recorded for a graph without a checkpointer whose input has no messages.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from otel_agent_identity._runs import RunHandler, SpanSpec, awaiting_run
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec, call_in
from otel_agent_identity.scope import current_scope

NAME = "langgraph"
REQUIREMENTS = ("langgraph >= 1.2.6, < 2",)
PROVIDER = "langgraph"

_logger = logging.getLogger(__name__)
#: the graph whose next stream()/astream() in this context is the one its tracked invoke opens
_OWN_STREAM: ContextVar[Any] = ContextVar("otel_agent_identity_langgraph_own_stream", default=None)
_wrapped = Wrapped()
_ensure_config: Any = None  # langgraph._internal._config.ensure_config, imported at instrument()
_child_config: Any = None  # langchain_core.runnables.config.var_child_runnable_config
_COORDINATES: tuple = ()  # the configurable keys that address a checkpoint lineage (thread_id, ...)
_not_failures: tuple = ()
_warned: set[str] = set()
_SPECS = BoundedCache()  # graph name -> the span spec of its runs


def thread_rule(graph: Any, config: Any, call: Any) -> Any | None:
    """Framework rule: ``config["configurable"]["thread_id"]`` of the effective config.

    An int or ``uuid.UUID`` thread id is reported as ``str()`` (checkpointers key threads by it);
    any other non-string is returned as it is, so the registry drops it with one warning.
    """
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(configurable, dict):
        return None
    return _as_id(configurable.get("thread_id"))


def _as_id(thread_id: Any) -> Any:
    if type(thread_id) is str or thread_id is None:
        return thread_id
    if isinstance(thread_id, uuid.UUID) or (isinstance(thread_id, int) and not isinstance(thread_id, bool)):
        return str(thread_id)
    return thread_id


def _given_thread(graph: Any, thread_id: Any, call: Any) -> Any:
    """Framework rule when the adapter already read the effective thread id (see :func:`effective_thread_id`)."""
    return thread_id


def _not_empty(value: Any) -> bool:
    return len(value) > 0 if isinstance(value, (list, tuple, dict)) else value is not None


def effective_thread_id(graph_config: Any, config: Any) -> Any:
    """``ensure_config(graph_config, config)["configurable"].get("thread_id")``, read without
    building the merged config (the thread id as given: any type, or None).

    Precedence as ``ensure_config``: ``config`` (a top-level ``thread_id`` key, then its
    ``configurable``), then ``graph_config`` (``with_config``) likewise, then the configurable of
    the enclosing run (``var_child_runnable_config``), which a checkpoint coordinate in either
    config's configurable drops. Configs that are not plain dicts go to ``ensure_config`` itself.
    """
    inherited = _child_config.get()
    if not inherited and graph_config is None:  # the common case: only the call's own config
        if config is None:
            return None
        if type(config) is dict and "thread_id" not in config:
            own = config.get("configurable")
            if type(own) is dict:
                return own.get("thread_id")
    return _merged_thread_id(graph_config, config, inherited)


def _merged_thread_id(graph_config: Any, config: Any, inherited: Any) -> Any:
    mine, bound = _configurable(config), _configurable(graph_config)
    if mine is _ODD or bound is _ODD:
        return _ensure_config(graph_config, config)["configurable"].get("thread_id")
    thread_id = None
    if inherited:
        conf = inherited.get("configurable")
        if conf:
            if type(conf) is not dict:
                return _ensure_config(graph_config, config)["configurable"].get("thread_id")
            if not any(own and any(_not_empty(own.get(k)) for k in _COORDINATES) for own in (bound, mine)):
                thread_id = conf.get("thread_id")
    for own, c in ((bound, graph_config), (mine, config)):
        if own and "thread_id" in own:
            thread_id = own["thread_id"]
        if c:
            top = c.get("thread_id")  # not a RunnableConfig key: ensure_config moves it into configurable
            if top is not None and _not_empty(top):
                thread_id = top
    return thread_id


_ODD = object()


def _configurable(config: Any) -> Any:
    """``config["configurable"]`` when ``config`` is None or a plain dict (None when absent or empty);
    ``_ODD`` for a shape only ``ensure_config`` itself should read."""
    if config is None:
        return None
    if type(config) is not dict:
        return _ODD
    own = config.get("configurable")
    if type(own) is dict:
        return own or None
    return None if own is None else _ODD


def _run_id(run_id: Any, accepts: Any) -> str | None:
    """``config["run_id"]`` (not None) as a str, or None (malformed, or the enclosing run's own id)."""
    value = str(run_id) if isinstance(run_id, (str, uuid.UUID)) else None
    if value is None or not accepts(value):
        if "run_id" not in _warned:
            _warned.add("run_id")
            _logger.warning(
                "otel-agent-identity: langgraph config run_id %s is not a usable id; a new "
                "execution id is generated (warned once)",
                type(run_id).__name__,
            )
        return None
    outer = current_scope()
    return None if outer is not None and outer.execution_id == value else value


def _span_spec(graph: Any) -> SpanSpec:
    """The run's span, one per graph name (a cached spec: read-only)."""
    name = getattr(graph, "name", None) or type(graph).__name__
    try:
        spec = _SPECS.get(name)
    except TypeError:  # an unhashable name
        spec = None
    if spec is None:
        spec = agent_span_spec(str(name), PROVIDER, not_failures=_not_failures)
        if type(name) is str:
            _SPECS.put(name, spec)
    return spec


def _start(handler: RunHandler, instance: Any, args: tuple, kwargs: dict) -> Any:
    """The graph run of a call ``(self, input, config=None, ...)``, or None when not tracked."""
    try:
        config = args[1] if len(args) > 1 else kwargs.get("config")
        registry = handler.registry
        run_id = config.get("run_id") if type(config) is dict else None
        if run_id is not None:
            run_id = _run_id(run_id, registry.accepts)
        rule: Callable[[Any, Any, Any], Any]
        # an extractor other than the thread rule reads the whole effective config: an override
        # registered for the graph's type, or the graph's own _get_otel_conversation_id
        if getattr(instance, "_get_otel_conversation_id", None) is not None or (
            registry.has_overrides and registry.override_for(type(instance)) is not None
        ):
            session, rule = _ensure_config(instance.config, config), thread_rule
        else:
            session, rule = effective_thread_id(instance.config, config), _given_thread
            if type(session) is not str and session is not None:
                session = _as_id(session)
        run = handler.start(
            NAME, instance, session, args, kwargs, rule=rule, span=_span_spec(instance), run_id=run_id, recheck=False
        )
        if run is not None:
            run.resumed_later()  # the loop's checkpoint read tells (_first_wrapper)
        return run
    except Exception:
        _logger.debug("otel-agent-identity: langgraph run not tracked", exc_info=True)
        return None


def _stream_wrapper(handler: RunHandler):
    """Wrapper of ``Pregel.stream``/``astream(self, input, config=None, *, ...)``."""

    def wrapper(wrapped, instance, args, kwargs):
        if _OWN_STREAM.get() is instance:  # opened by our invoke()/ainvoke(): part of its run
            _OWN_STREAM.set(None)  # once: a node calling this graph's stream() again is a new run
            return wrapped(*args, **kwargs)
        run = _start(handler, instance, args, kwargs)
        return call_in(run, wrapped, args, kwargs)

    return wrapper


def _invoke_wrapper(handler: RunHandler):
    """Wrapper of ``Pregel.invoke(self, input, config=None, *, ...)``: one run, in scope for the
    whole call (LangGraph's own loop over its stream, no caller code), so the stream it opens is
    not wrapped per step."""

    def wrapper(wrapped, instance, args, kwargs):
        run = _start(handler, instance, args, kwargs)
        if run is None:
            return wrapped(*args, **kwargs)
        token = _OWN_STREAM.set(instance)
        try:
            return run.call(wrapped, args, kwargs)
        finally:
            _OWN_STREAM.reset(token)

    return wrapper


def _ainvoke_wrapper(handler: RunHandler):
    """Wrapper of ``Pregel.ainvoke``: as :func:`_invoke_wrapper`, awaited in the run's scope."""

    def wrapper(wrapped, instance, args, kwargs):
        run = _start(handler, instance, args, kwargs)
        if run is None:
            return wrapped(*args, **kwargs)
        return run.call(_owning, (wrapped, instance, args, kwargs), {})

    return wrapper


async def _owning(wrapped: Any, instance: Any, args: tuple, kwargs: dict) -> Any:
    """``await wrapped(*args, **kwargs)``, the astream it opens marked as its own."""
    token = _OWN_STREAM.set(instance)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _OWN_STREAM.reset(token)


def carries_history(value: Any) -> bool | None:
    """Whether a run's input carries earlier messages: a ``messages`` list (a dict input) or a
    list input of more than one message; None when the input holds no messages at all."""
    if type(value) is dict or isinstance(value, dict):
        value = value.get("messages")
        if value is None:
            return None
    if isinstance(value, (list, tuple)):
        return len(value) > 1
    return None


def _first_wrapper(wrapped, instance, args, kwargs):
    """Around ``PregelLoop._first(*, input_keys, updated_channels)``, which runs as the loop
    enters, after it loaded the thread's checkpoint: the run's ``resumed`` (module docstring)."""
    try:
        run = awaiting_run()
        if run is not None:
            meta = instance.checkpoint_metadata
            step = meta.get("step") if type(meta) is dict else None
            if type(step) is int and step >= 0:
                run.record_resumed(True)
            else:
                carried = carries_history(instance.input)
                run.record_resumed(False if carried is None and instance.checkpointer else carried)
    except Exception:
        _logger.debug("otel-agent-identity: langgraph resumed not read", exc_info=True)
    return wrapped(*args, **kwargs)


def instrument(handler: RunHandler) -> None:
    """Wrap ``Pregel.stream``, ``.astream``, ``.invoke`` and ``.ainvoke``.

    Raises:
        ImportError / AttributeError: this langgraph lacks a piece we rely on (the instrumentor
            then skips the adapter with a warning).
    """
    global _ensure_config, _child_config, _COORDINATES, _not_failures
    from langchain_core.runnables.config import var_child_runnable_config
    from langgraph._internal._config import ensure_config
    from langgraph._internal._constants import _CHECKPOINT_COORDINATE_KEYS
    from langgraph.errors import GraphBubbleUp
    from langgraph.pregel import Pregel
    from langgraph.pregel._loop import PregelLoop

    _ensure_config, _child_config, _not_failures = ensure_config, var_child_runnable_config, (GraphBubbleUp,)
    _COORDINATES = tuple(_CHECKPOINT_COORDINATE_KEYS)
    _SPECS.clear()
    wrappers = (
        ("stream", _stream_wrapper),
        ("astream", _stream_wrapper),
        ("invoke", _invoke_wrapper),
        ("ainvoke", _ainvoke_wrapper),
    )
    for method, make in wrappers:
        _wrapped.wrap(Pregel, method, make(handler))
    _wrapped.wrap(PregelLoop, "_first", _first_wrapper)


uninstrument = _wrapped.uninstrument
