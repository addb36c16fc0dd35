"""LlamaIndex workflows and agent workflows (``llama-index-workflows`` 2.x, ``llama-index-core`` 0.14).

Wraps ``workflows.Workflow.run``, which every agent class reaches (``FunctionAgent``,
``ReActAgent``, ``CodeActAgent``, ``AgentWorkflow``: one user call, one ``Workflow.run``, handoffs
included). ``run()`` is sync and returns a ``WorkflowHandler`` at once; the work runs in a task it
creates, inside the run's scope, so every step, tool and model call (sync tools run in threads
with a copy of the context) carries the run's ids. The span ends when the handler's result task
does (awaited, streamed with ``handler.stream_events()`` or not consumed at all); a run cancelled
with ``handler.cancel_run()`` (``WorkflowCancelledByUser``) or an ``asyncio`` cancellation is no
failure. LlamaIndex emits no OpenTelemetry spans, so each run gets one INTERNAL span:
``invoke_agent {agent.name}`` for an agent, ``invoke_agent {root_agent}`` for an ``AgentWorkflow``
(with ``agent_identity.last_agent.name``, the agent that produced the output),
``invoke_workflow {workflow_name}`` for any other ``Workflow``.

- Conversation id (source ``framework``, after a registered override or the workflow's
  ``_get_otel_conversation_id``): the memory given to the run (``run(memory=...)``, the start
  event's ``memory``): ``Memory.session_id`` (``Memory.from_defaults(session_id=...)``; random
  when not given, and then one per ``Memory`` object), else a ``ChatMemoryBuffer``'s
  ``chat_store_key`` other than the default ``"chat_history"``; else, the same read of the memory
  a reused or restored ``ctx`` carried, adopted as the run sets up its context (before any model
  or tool call). None otherwise: a ``Context`` has no id, and none is invented.
- Execution id: the run's ``run_id`` (``run(run_id=...)``); when the caller gives none, the
  adapter passes LlamaIndex the run's new execution id as ``run_id`` (32 hex characters, or the
  one given with ``otel_agent_identity.execution()``), so ``handler.run_id`` and the
  ``llamaindex.run_id`` tag of every dispatcher event are the execution id.
- Delegation id: an ``AgentWorkflow`` handoff (the built-in ``handoff`` tool, accepted) is a hop
  to the agent handed to: spans started from then on in the run carry a new
  ``agent_identity.delegation.id`` (one per handoff; ``otel_agent_identity.delegation(key=...)``
  supplies it).
- Nested runs (an agent run from a tool of another run) record the enclosing run's execution and
  conversation ids.

State continuity (``agent_identity.conversation.resumed``) of an agent run: whether the memory the
run really uses held conversation messages before the new message is added. That memory is the
one the framework's set-up (``_init_context``) keeps or makes: the memory in the run's context (a
reused or restored ``ctx`` whose memory survived), else the one given (``memory=``), else a new,
empty one. ``true`` when it held conversation messages or ``chat_history=`` brings earlier
messages; ``false`` otherwise: among them a ``Context`` reused, or restored with
``Context.from_dict``, whose memory LlamaIndex failed to serialise (with pydantic 2.14,
``SimpleChatStore`` cannot be serialised; LlamaIndex drops the memory with an
``UnserializableKeyWarning`` and the run starts from nothing). A run that continues a running
context (``ctx.is_running``): ``true``. The memory's messages are read once more for this: a run
in a new context (no ``ctx=``) with no memory, or a memory on an in-process ``SimpleChatStore``,
at its start (no await, no read of the context's state store); any other run (a ``ctx`` given, a
SQL-backed ``Memory``: ``aget_all()``, one query per run) as its first step (the one receiving the
start event) starts: workflows' step-argument binder ``partial`` is wrapped, not a method of the
agent (LlamaIndex lists the workflow's members with ``inspect.getmembers`` before every step, and
a ``wrapt`` proxy among them costs about 1.4 bare spans per run; ``docs/benchmarks.md``). A plain
``Workflow`` records none.

A finished run's scope lets go of its workflow: contexts a run leaves behind (a step's timer
handle) keep the scope, and LlamaIndex's own tests require that nothing in them pins the workflow.
"""

from __future__ import annotations

import logging
from typing import Any

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec, awaiting_run
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec, nonempty_str
from otel_agent_identity.scope import current_scope, new_delegation_id

NAME = "llama_index"
REQUIREMENTS = ("llama-index-workflows >= 2.26, < 3",)
#: the agent classes' version (checked when the application imports them; a mismatch leaves
#: agent runs with ids and no ``resumed`` or handoff delegation, with one warning)
CORE_REQUIREMENTS = ("llama-index-core >= 0.14, < 0.15",)
PROVIDER = "llama_index"
_DEFAULT_KEY = "chat_history"  # ChatMemoryBuffer's constant default key: not a conversation

_logger = logging.getLogger(__name__)
_SPECS = BoundedCache()
_KINDS = BoundedCache()  # workflow class -> (agent / team / workflow, has its own id step)
_types: dict[str, Any] = {"agent": (), "team": (), "stop": None, "simple_store": None, "start": None}
_not_failures: tuple = ()


def memory_rule(workflow: Any, memory: Any, call: Any) -> str | None:
    """Framework rule: the conversation id of the memory given to the run (module docstring):
    ``memory.session_id`` (a str), else its ``chat_store_key`` unless the default."""
    if memory is None:
        return None
    try:
        fields = getattr(memory, "__dict__", None)
        if type(fields) is dict and ("session_id" in fields or "chat_store_key" in fields):
            session_id, key = fields.get("session_id"), fields.get("chat_store_key")  # pydantic: no attribute miss
        else:
            session_id, key = getattr(memory, "session_id", None), getattr(memory, "chat_store_key", None)
        if session_id is not None:
            return session_id if type(session_id) is str else None
        key = nonempty_str(key)
        return key if key != _DEFAULT_KEY else None
    except Exception:
        return None


def _given(workflow: Any, conversation_id: Any, call: Any) -> Any:
    """Framework rule when the adapter already read the memory's id (:func:`memory_rule`)."""
    return conversation_id


def _own_step(workflow: Any, memory: Any, call: Any) -> Any:
    """The workflow class's own ``_get_otel_conversation_id(memory)`` (looked up once per class by
    :func:`_kind`: a miss on a pydantic model raises inside ``getattr``, a few bare spans per run)."""
    return workflow._get_otel_conversation_id(memory)


def _no_step(workflow: Any, memory: Any, call: Any) -> None:
    return None


def _last_agent(result: Any) -> dict[str, Any]:
    name = nonempty_str(getattr(result, "current_agent_name", None))
    return {attrs.LAST_AGENT_NAME: name} if name else {}


def _kind(workflow: Any) -> tuple[str, bool]:
    """(``agent``, ``team`` (an ``AgentWorkflow``) or ``workflow``; whether its class has its own
    ``_get_otel_conversation_id``), cached per class."""
    cls = type(workflow)
    kind = _KINDS.get(cls)
    if kind is None:
        name = "workflow"
        if issubclass(cls, _types["agent"]):
            name = "agent"
        elif issubclass(cls, _types["team"]):
            name = "team"
        kind = _KINDS.put(cls, (name, callable(getattr(cls, "_get_otel_conversation_id", None))))
    return kind


def _span_spec(workflow: Any, kind: str) -> SpanSpec:
    """``invoke_agent {name}`` of an agent or an ``AgentWorkflow`` (its root agent), else
    ``invoke_workflow {workflow_name}``; one spec per (kind, name)."""
    if kind == "agent":
        name = getattr(workflow, "name", None)
    elif kind == "team":
        name = getattr(workflow, "root_agent", None)
    else:
        name = getattr(workflow, "_workflow_name", None)
    name = name if type(name) is str and name else type(workflow).__name__
    key = (kind, name)
    spec = _SPECS.get(key)
    if spec is None:
        if kind == "workflow":
            spec = agent_span_spec(
                name,
                PROVIDER,
                operation=attrs.INVOKE_WORKFLOW,
                name_key=attrs.GEN_AI_WORKFLOW_NAME,
                not_failures=_not_failures,
            )
        else:
            spec = agent_span_spec(name, PROVIDER, not_failures=_not_failures)
            if kind == "team":
                spec.on_end = _last_agent
        _SPECS.put(key, spec)
    return spec


def _messages_in_process(memory: Any) -> list | None:
    """The messages of a memory on an in-process ``SimpleChatStore`` (read without awaiting; its
    async read is a thread hop, ~3 bare spans), else None."""
    fields = getattr(memory, "__dict__", None)
    if not isinstance(fields, dict):
        return None
    store = fields.get("chat_store")  # from the fields: a miss on a pydantic model raises inside getattr
    if store is None or type(store) is not _types["simple_store"]:
        return None
    return store.get_messages(fields.get("chat_store_key"))


def _known_history(start_event: Any, fields: dict, memory: Any) -> bool | None:
    """``resumed`` of an agent run in a new context, when known without awaiting (the framework
    sets the given memory up as is, or a new empty ``ChatMemoryBuffer``): ``chat_history`` beyond
    the new message, else whether the memory's in-process store holds conversation messages; None
    when it takes an async read (:func:`_first_step_wrapper` then reads it)."""
    try:
        if type(start_event) is not _types["start"]:
            return None
        history = fields.get("chat_history")
        if history:
            return len(history) > (0 if fields.get("user_msg") else 1)
        if memory is None:
            return False
        messages = _messages_in_process(memory)
        return None if messages is None else any(getattr(m, "role", None) != "system" for m in messages)
    except Exception:
        return None


def _event_fields(start_event: Any, kwargs: dict) -> dict:
    """The start event's fields (``memory``, ``chat_history``, ``user_msg``...), else the run's
    keyword arguments. Read from pydantic's ``__pydantic_private__`` once: each ``event.get()``
    finds the event's private ``_data`` through two ``__getattr__`` (3 Python calls)."""
    if start_event is None:
        return kwargs
    try:
        private = getattr(start_event, "__pydantic_private__", None)
        data = private.get("_data") if type(private) is dict else None
        return data if type(data) is dict else {"memory": start_event.get("memory", None)}
    except Exception:
        return {}


def _start(handler: RunHandler, workflow: Any, args: tuple, kwargs: dict):
    """The run of ``Workflow.run(self, ctx=None, start_event=None, **kwargs)``, or None, and the
    workflow's kind (:func:`_kind`)."""
    ctx = args[0] if args else kwargs.get("ctx")
    start_event = args[1] if len(args) > 1 else kwargs.get("start_event")
    run_id = kwargs.get("run_id")
    kind, own = _kind(workflow)
    fields = _event_fields(start_event, kwargs)
    memory = fields.get("memory")
    if ctx is not None:
        resumed = True if ctx.is_running else None
    else:  # a new context: the run's memory is the one given (or a new, empty one)
        resumed = _known_history(start_event, fields, memory) if kind != "workflow" else None
    registry = handler.registry
    rule: Any = memory_rule
    if own or (registry.has_overrides and registry.override_for(type(workflow)) is not None):
        session = memory  # the class's step or an override reads the memory itself
    else:  # the common case: the id read here, no attribute read of the memory in the run core
        session, rule = memory_rule(workflow, memory, None), _given
    run = handler.start(
        NAME,
        workflow,
        session,
        args,
        kwargs,
        rule=rule,
        span=_span_spec(workflow, kind),
        run_id=run_id if type(run_id) is str else None,
        resumed=resumed,
        agent_step=_own_step if own else _no_step,
        recheck=False,
    )
    if run is not None and resumed is None and kind != "workflow":
        run.resumed_later()  # read as the run's first step starts (_first_step_wrapper)
    return run, kind


def _run_wrapper(handler: RunHandler):
    """Wrapper of ``Workflow.run(self, ctx=None, start_event=None, **kwargs) -> WorkflowHandler``."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            run, kind = _start(handler, instance, args, kwargs)
            if run is not None and kwargs.get("run_id") is None:
                kwargs = {**kwargs, "run_id": run.scope.execution_id}
        except Exception:
            _logger.debug("otel-agent-identity: llama_index run not tracked", exc_info=True)
            run, kind = None, ""
        if run is None:
            return wrapped(*args, **kwargs)
        token = run.enter()  # the run's tasks are created here: they copy the run's context
        try:
            workflow_handler = wrapped(*args, **kwargs)
        except BaseException as exc:
            run.finish(error=exc)
            _release(run)
            raise
        finally:
            run.exit(token)
        try:
            workflow_handler._result_task.add_done_callback(_finish_when_done(run, kind == "team"))
        except Exception:
            _logger.debug("otel-agent-identity: llama_index run ended at once", exc_info=True)
            run.finish()
            _release(run)
        return workflow_handler

    return wrapper


def _finish_when_done(run: Any, wants_result: bool):
    """A done callback of the handler's result task: the run ends with its error, cancelled, or
    (``wants_result``: an ``AgentWorkflow``'s last agent) with its result (the stop event's
    ``result``, as ``await handler`` gives it; read only when needed: each read of an event's
    field raises and catches inside pydantic)."""

    def done(task: Any) -> None:
        try:
            if task.cancelled():
                run.finish()
            elif task.exception() is not None:
                run.finish(error=task.exception())
            elif wants_result:
                stop = task.result()
                run.finish(result=stop.result if type(stop) is _types["stop"] else stop)
            else:
                run.finish()
        except BaseException:
            _logger.debug("otel-agent-identity: ending a llama_index run failed", exc_info=True)
            run.finish()
        finally:
            _release(run)

    return done


def _release(run: Any) -> None:
    """Drop the scope's reference to the workflow: contexts a run leaves behind (a step's timer
    handle) keep its scope, and LlamaIndex takes care that nothing in them pins the workflow."""
    run.scope.owner = None


def _first_step_wrapper(wrapped, instance, args, kwargs):
    """Around workflows' ``async partial(func, step_config, event, context, workflow, ...)``, which
    binds a step's arguments before the step runs (a module function: LlamaIndex's per-step look-up
    of the workflow's members, ``inspect.getmembers``, never meets it). The step that receives an
    agent run's start event (``init_run``, the run's first) reads the run's ``resumed`` first."""
    try:
        event = kwargs.get("event")
        run = awaiting_run(kwargs.get("workflow")) if isinstance(event, _types["start"]) else None
    except Exception:
        run = None
    if run is None:
        return wrapped(*args, **kwargs)
    return _read_then(run, kwargs.get("context"), event, wrapped, args, kwargs)


async def _read_then(run: Any, ctx: Any, event: Any, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    """Record ``resumed`` of the memory the run's set-up (``_init_context``) keeps or makes: the one
    in the run's context (a reused or restored ``ctx``), else the start event's ``memory``, else a
    new, empty one; then ``await wrapped(*args, **kwargs)`` (what our read raises is logged at
    debug)."""
    try:
        memory = await ctx.store.get("memory", default=None)
        if not memory:  # the set-up's own test
            memory = event.get("memory", None)
        if run.scope.conversation_id is None:
            learnt = memory_rule(None, memory, None)
            if learnt is not None:
                run.learn(learnt)
        run.record_resumed(await _had_history(memory, event))
    except Exception:
        _logger.debug("otel-agent-identity: llama_index: reading the run's memory failed", exc_info=True)
    return await wrapped(*args, **kwargs)


async def _then(wrapped: Any, args: tuple, kwargs: dict, second: str, observe: Any) -> Any:
    """``await wrapped(ctx, <second>, ...)``, then ``await observe(ctx, <second>)`` (what it raises
    is logged at debug: the framework's result is returned whatever happens)."""
    result = await wrapped(*args, **kwargs)
    try:
        ctx = args[0] if args else kwargs.get("ctx")
        await observe(ctx, args[1] if len(args) > 1 else kwargs.get(second))
    except Exception:
        _logger.debug("otel-agent-identity: llama_index: reading %s failed", second, exc_info=True)
    return result


async def _had_history(memory: Any, event: Any) -> bool:
    """Whether the run starts with earlier conversation messages: ``chat_history`` beyond the new
    message, else the memory's messages before the new one is added."""
    history = event.get("chat_history", None)
    if history:
        return len(history) > (0 if event.get("user_msg", None) else 1)
    if memory is None:  # the set-up makes a new, empty one
        return False
    messages = _messages_in_process(memory)
    if messages is None:
        messages = await memory.aget_all()
    return any(getattr(m, "role", None) != "system" for m in messages)


def _handoff_wrapper(wrapped, instance, args, kwargs):
    """Around ``AgentWorkflow``'s ``async handoff(ctx, to_agent, reason)`` tool function: an
    accepted handoff (the framework set ``next_agent``) starts a delegation in the run's scope."""
    scope = current_scope()
    if scope is None:
        return wrapped(*args, **kwargs)

    async def handed(ctx: Any, to_agent: Any) -> None:
        if to_agent is not None and await ctx.store.get("next_agent", default=None) == to_agent:
            scope.delegation_id = new_delegation_id()
            scope.refresh()

    return _then(wrapped, args, kwargs, "to_agent", handed)


def instrument(handler: RunHandler) -> None:
    """Wrap ``workflows.workflow.Workflow.run``.

    Raises:
        ImportError / AttributeError: this llama-index-workflows lacks a piece we rely on (the
            instrumentor then skips the adapter with a warning).
    """
    global _not_failures
    from workflows.errors import WorkflowCancelledByUser
    from workflows.events import StopEvent
    from workflows.workflow import Workflow

    _types["stop"], _not_failures = StopEvent, (WorkflowCancelledByUser,)
    _SPECS.clear()
    _wrapped.wrap(Workflow, "run", _run_wrapper(handler))


def instrument_agents(handler: RunHandler) -> None:
    """Wrap workflows' step-argument binder ``partial`` (an agent run's ``resumed``, read as its
    first step starts) and the ``handoff`` tool function (llama-index-core's agent workflows,
    imported by the application); a llama-index-core outside :data:`CORE_REQUIREMENTS` is left
    alone, with one warning.

    Raises:
        ImportError / AttributeError: this llama-index-workflows lacks ``partial`` (then neither
            ``resumed`` nor handoffs are recorded; runs keep their ids), with one warning.
    """
    from opentelemetry.instrumentation.dependencies import get_dependency_conflicts

    conflict = get_dependency_conflicts(CORE_REQUIREMENTS)
    if conflict is not None:
        _logger.warning("otel-agent-identity: llama_index agents: %s; resumed and handoffs not recorded", conflict)
        return
    from llama_index.core.agent.workflow import base_agent, multi_agent_workflow
    from llama_index.core.agent.workflow.workflow_events import AgentWorkflowStartEvent
    from llama_index.core.storage.chat_store import SimpleChatStore
    from workflows.runtime.types import step_function

    agent, team = base_agent.BaseWorkflowAgent, multi_agent_workflow.AgentWorkflow
    _types.update(agent=(agent,), team=(team,), simple_store=SimpleChatStore, start=AgentWorkflowStartEvent)
    _SPECS.clear()
    _KINDS.clear()
    if (step_function, "partial") not in _wrapped:
        _wrapped.wrap(step_function, "partial", _first_step_wrapper)
    if (multi_agent_workflow, "handoff") not in _wrapped:
        _wrapped.wrap(multi_agent_workflow, "handoff", _handoff_wrapper)


def _reset() -> None:
    _types.update(agent=(), team=(), stop=None, simple_store=None, start=None)
    _SPECS.clear()
    _KINDS.clear()


_wrapped = Wrapped(_reset)
uninstrument = _wrapped.uninstrument
