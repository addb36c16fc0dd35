"""CrewAI (``crewai`` 1.15+).

Wraps ``Crew.kickoff`` and ``Crew.akickoff`` (``kickoff_async`` and ``kickoff_for_each`` reach
``kickoff``), ``Agent.kickoff`` and ``Agent.kickoff_async`` (a standalone agent, no crew;
``akickoff`` reaches ``kickoff_async``), ``Flow.kickoff_async`` (``Flow.kickoff``, ``akickoff``, ``handle_turn``,
``stream_turn`` and ``chat`` reach it) and the coworker tools' ``BaseAgentTool._execute``
(``Delegate work to coworker``, ``Ask question to coworker``: the delegation tools of agents with
``allow_delegation`` and of a hierarchical crew's manager). CrewAI emits no spans on the
application's tracer provider, so each run gets one INTERNAL span: ``invoke_agent {crew name}``
for a crew (``gen_ai.agent.id`` = ``Crew.id``), ``invoke_agent {flow name}`` for a conversational
Flow turn, ``invoke_workflow {flow name}`` for another Flow run, ``invoke_agent {coworker role}``
for a delegation, ``invoke_agent {agent role}`` for a standalone agent kickoff
(``gen_ai.agent.id`` = ``Agent.id``). A streamed kickoff (``stream=True``) runs the crew or flow again, unstreamed, in
a worker thread that copies the consumer's context: that inner call is the run (the outer one
only returns the stream), so a stream gets one span, not two.

Conversation id (``gen_ai.conversation.id``, source ``framework``): a conversational Flow turn's
session id, ``handle_turn(session_id=...)`` else the flow's ``state.id`` (CrewAI passes it to the
turn's kickoff as ``inputs["id"]``, read there). A ``Crew`` has none (``Crew.id`` is per
instance, not a conversation), nor a standalone agent (``Agent.kickoff(messages)``: a message list
is the application's, with no id): a crew run, an agent kickoff, a delegation or a plain flow run
gets the enclosing CrewAI run's id (a crew or an agent kicked off in a conversational turn, a
coworker in that crew), else none.

Execution id (``agent_identity.execution.id``): CrewAI has no public run id, so each kickoff
(crew or agent), turn and delegation gets its own. A crew, flow or coworker run inside another run records
``agent_identity.parent.execution.id``; a delegation has ``agent_identity.delegation.id`` (new
per coworker call, or ``otel_agent_identity.delegation(key=...)``'s).

State continuity (``agent_identity.conversation.resumed``) of a conversational turn: whether the
flow's conversation already held messages when CrewAI applied the turn's user message, which it
does after restoring ``@persist`` state for the session id (``_apply_pending_kickoff_context``,
observed): ``true`` when the model gets earlier messages (restored, or kept in the same flow
instance), ``false`` when the turn starts from nothing (a new session, or a restore that found
nothing). Crew and plain flow runs record none.

A2A (wrapped when the application imports CrewAI's A2A helpers, a2a-sdk 0.3): each send of
``crewai.a2a.utils.delegation`` (an agent with ``a2a=A2AClientConfig(...)``, or a direct
``execute_a2a_delegation``) is a CLIENT ``invoke_agent {endpoint}`` run with a new delegation id,
in the contextId it asks for, else the one the server answered in. A request served by
``crewai.a2a.utils.task.execute`` (from the application's a2a-sdk ``AgentExecutor``) is an
``invoke_agent {role}`` run in the request's contextId, ``resumed=false``: CrewAI builds a fresh
``Task`` per request and keeps no memory by contextId. An agent given ``a2a=`` has its kickoff
rebound by CrewAI to the unwrapped ``Agent.kickoff`` (``crewai.a2a.wrapper``): no agent run of its
own there, its A2A sends are runs.

CrewAI's own telemetry (anonymous OTLP to CrewAI's servers, its AMP tracing) uses private tracer
providers: untouched here; ``CREWAI_DISABLE_TELEMETRY=true`` and ``CREWAI_TRACING_ENABLED=false``
switch it off.
"""

from __future__ import annotations

import importlib
from typing import Any

from opentelemetry.trace import SpanKind

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec, awaiting_run
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec, nonempty_str
from otel_agent_identity.scope import current_scope, new_delegation_id

NAME = "crewai"
REQUIREMENTS = ("crewai >= 1.15, < 2",)
PROVIDER = "crewai"

_wrapped = Wrapped()
#: (kind, type, name, id) -> the run's SpanSpec, built once per crew, flow or coworker
_SPECS = BoundedCache(1024)
#: the owners of CrewAI runs (Crew, Flow, BaseAgent), set by :func:`instrument`
_OWNERS: tuple[type, ...] = ()


def _internal(flow: Any) -> bool:
    """A flow of CrewAI's own (an agent's ``AgentExecutor``), not the application's."""
    return type(flow).__module__.startswith("crewai.")


def session_rule(owner: Any, session: Any, call: Any) -> str | None:
    """Framework rule: the conversational turn's session id (str, the ``session``), else the
    enclosing CrewAI run's conversation id (``call.outer``), else None."""
    if isinstance(session, str) and session:
        return session
    outer = call.outer
    if outer is not None and isinstance(outer.owner, _OWNERS):
        return outer.conversation_id
    return None


def _spec(kind: str, owner: Any, raw_name: Any, agent_id: Any = None, span_kind=SpanKind.INTERNAL) -> SpanSpec:
    key = (kind, type(owner), raw_name, agent_id)
    try:
        spec = _SPECS.get(key)
    except TypeError:  # an unhashable name
        spec = None
    if spec is not None:
        return spec
    name = nonempty_str(raw_name) or type(owner).__name__
    if kind == "workflow":
        spec = agent_span_spec(name, PROVIDER, operation=attrs.INVOKE_WORKFLOW, name_key=attrs.GEN_AI_WORKFLOW_NAME)
    else:
        extra = {attrs.GEN_AI_AGENT_ID: agent_id} if agent_id else None
        spec = agent_span_spec(name, PROVIDER, kind=span_kind, extra=extra)
    return _SPECS.put(key, spec)


def _restoring(args: tuple, kwargs: dict) -> bool:
    """The kickoff restores a checkpoint (``from_checkpoint.restore_from``): CrewAI kicks off the
    restored copy, whose own kickoff is the run."""
    checkpoint = kwargs.get("from_checkpoint", args[2] if len(args) > 2 else None)
    return getattr(checkpoint, "restore_from", None) is not None


def _wrapper(handler: RunHandler, facts):
    """A wrapt wrapper that runs the call as one run: ``facts(instance, args, kwargs)`` gives
    the run's ``agent`` and ``session`` and ``handler.start``'s keyword arguments (``later=True``:
    ``resumed`` is learnt later), or None for
    a call that is no run of its own (it runs bare, as on any error of ours)."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            known = facts(instance, args, kwargs)
            run = None
            if known is not None:
                later = known.pop("later", False)
                run = handler.start(NAME, known.pop("agent"), known.pop("session"), args, kwargs, **known)
                if run is not None and later:
                    run.resumed_later()
        except Exception:
            run = None
        if run is None:
            return wrapped(*args, **kwargs)
        return run.call(wrapped, args, kwargs)

    return wrapper


def _crew_facts(crew: Any, args: tuple, kwargs: dict) -> dict | None:
    """``Crew.kickoff`` / ``Crew.akickoff(inputs=None, input_files=None, from_checkpoint=None)``."""
    if crew.stream is True or _restoring(args, kwargs):
        return None
    span = _spec("crew", crew, crew.name, str(crew.id))
    return {"agent": crew, "session": None, "rule": session_rule, "span": span, "recheck": False}


def _agent_facts(agent: Any, args: tuple, kwargs: dict) -> dict | None:
    """``Agent.kickoff`` / ``Agent.kickoff_async(messages, response_format=None, input_files=None,
    from_checkpoint=None)``: a standalone agent run, one execution, no conversation of its own.
    ``kickoff`` inside an event loop returns ``kickoff_async``'s coroutine: that inner call, in the
    agent's own run, is part of it (as a restore is of the restored copy's kickoff)."""
    scope = current_scope()
    checkpoint = kwargs.get("from_checkpoint", args[3] if len(args) > 3 else None)
    if getattr(checkpoint, "restore_from", None) is not None or (scope is not None and scope.owner is agent):
        return None
    span = _spec("agent", agent, agent.role, str(agent.id))
    return {"agent": agent, "session": None, "rule": session_rule, "span": span, "recheck": False}


def _flow_facts(flow: Any, args: tuple, kwargs: dict) -> dict | None:
    """``Flow.kickoff_async(inputs=None, input_files=None, from_checkpoint=None,
    restore_from_state_id=None)``: one run per turn or flow run; a re-entrant kickoff of the same
    flow, inside its own run, is part of that run. A turn's ``resumed``: :func:`_turn_wrapper`."""
    scope = current_scope()
    if (
        _internal(flow)  # CrewAI's own flows (an agent's AgentExecutor): part of the run
        or flow.stream is True
        or _restoring(args, kwargs)
        or (scope is not None and scope.owner is flow)
    ):
        return None
    turn = flow._should_apply_pending_kickoff_context() is True
    session = None
    if turn:
        inputs = kwargs.get("inputs", args[0] if args else None)
        session = inputs.get("id") if isinstance(inputs, dict) else None
    span = _spec("turn" if turn else "workflow", flow, flow.name or type(flow).__name__)
    return {"agent": flow, "session": session, "rule": session_rule, "span": span, "recheck": False, "later": turn}


def _turn_wrapper(wrapped, instance, args, kwargs):
    """Around ``Flow._apply_pending_kickoff_context()`` (after CrewAI restored the session's
    persisted state, before it appends the turn's user message): the awaiting turn resumed when the
    conversation already holds messages."""
    try:
        run = awaiting_run(instance)
        if run is not None:
            run.record_resumed(len(instance.conversation_messages) > 0)
    except Exception:
        pass
    return wrapped(*args, **kwargs)


def _coworker(tool: Any, agent_name: Any) -> Any:
    """The agent of ``tool.agents`` that CrewAI's ``_execute`` picks for ``agent_name``, or None."""
    wanted = tool.sanitize_agent_name(agent_name or "")
    for agent in tool.agents:
        if tool.sanitize_agent_name(agent.role) == wanted:
            return agent
    return None


def _delegation_facts(tool: Any, args: tuple, kwargs: dict) -> dict | None:
    """``BaseAgentTool._execute(agent_name, task, context=None) -> str``: the coworker it picks runs
    a delegated task (no coworker by that name: no run, CrewAI answers an error)."""
    agent = _coworker(tool, kwargs.get("agent_name", args[0] if args else None))
    if agent is None:
        return None
    span = _spec("coworker", agent, agent.role, str(agent.id))
    return {
        "agent": agent,
        "session": None,
        "rule": session_rule,
        "span": span,
        "delegation_id": new_delegation_id(),
        "recheck": False,
    }


def instrument(handler: RunHandler) -> None:
    """Wrap ``Crew.kickoff``/``akickoff``, ``Agent.kickoff``/``kickoff_async``, ``Flow.kickoff_async``,
    ``Flow._apply_pending_kickoff_context`` and ``BaseAgentTool._execute``. Raises
    ImportError/AttributeError for a CrewAI without them (the instrumentor then skips the adapter
    with a warning)."""
    global _OWNERS
    crew = importlib.import_module("crewai.crew").Crew
    agent = importlib.import_module("crewai.agent.core").Agent
    flow = importlib.import_module("crewai.flow.flow").Flow
    tool = importlib.import_module("crewai.tools.agent_tools.base_agent_tools").BaseAgentTool
    for owner, name in ((flow, "_apply_pending_kickoff_context"), (flow, "conversation_messages"), (tool, "agents")):
        if not hasattr(owner, name) and name not in getattr(owner, "model_fields", {}):
            raise AttributeError(f"{owner.__name__}.{name}")
    _OWNERS = (crew, flow, importlib.import_module("crewai.agents.agent_builder.base_agent").BaseAgent)
    for method in ("kickoff", "akickoff"):
        _wrapped.wrap(crew, method, _wrapper(handler, _crew_facts))
    for method in ("kickoff", "kickoff_async"):
        _wrapped.wrap(agent, method, _wrapper(handler, _agent_facts))
    _wrapped.wrap(flow, "kickoff_async", _wrapper(handler, _flow_facts))
    _wrapped.wrap(flow, "_apply_pending_kickoff_context", _turn_wrapper)
    _wrapped.wrap(tool, "_execute", _wrapper(handler, _delegation_facts))


def a2a_rule(owner: Any, context_id: Any, call: Any) -> str | None:
    """Framework rule of an A2A send: the contextId asked for (the ``context_id`` argument), else,
    after the send, the one the remote agent answered in (the reply's ``Message.context_id``)."""
    if isinstance(context_id, str) and context_id:
        return context_id
    if call.phase == "after" and isinstance(call.result, dict):
        for message in reversed(call.result.get("history") or ()):
            answered = getattr(message, "context_id", None)
            if isinstance(answered, str) and answered:
                return answered
    return None


def _a2a_send_facts(_: Any, args: tuple, kwargs: dict) -> dict:
    """``crewai.a2a.utils.delegation._aexecute_a2a_delegation_impl(endpoint, auth, timeout,
    task_description, context, context_id, task_id, ...)`` (async; every A2A send of a CrewAI
    agent, sync or async, reaches it, one per turn of the delegation loop): a CLIENT
    ``invoke_agent {endpoint}`` run with a new delegation id, in the remote agent's conversation."""
    endpoint = kwargs.get("endpoint", args[0] if args else None)
    return {
        "agent": kwargs.get("from_agent"),
        "session": kwargs.get("context_id", args[5] if len(args) > 5 else None),
        "rule": a2a_rule,
        "span": _spec("a2a", endpoint, endpoint, span_kind=SpanKind.CLIENT),
        "delegation_id": new_delegation_id(),
    }


def _a2a_serve_facts(_: Any, args: tuple, kwargs: dict) -> dict:
    """``crewai.a2a.utils.task._execute_impl(agent, context, event_queue, ...)`` (async; ``execute``
    and ``execute_with_extensions``, called from the application's a2a-sdk ``AgentExecutor``): the
    served request runs a fresh ``Task`` on the agent, with no memory keyed by the contextId, so the
    run is in the request's contextId and never resumed."""
    agent = kwargs.get("agent", args[0] if args else None)
    context = kwargs.get("context", args[1] if len(args) > 1 else None)
    span = _spec("served", agent, getattr(agent, "role", None), str(getattr(agent, "id", "")) or None)
    session = getattr(context, "context_id", None)
    return {"agent": agent, "session": session, "rule": a2a_rule, "span": span, "resumed": False, "recheck": False}


def instrument_a2a_client(handler: RunHandler) -> None:
    """Wrap CrewAI's A2A sends (``crewai.a2a.utils.delegation``, imported by the application)."""
    _wrapped.wrap(
        importlib.import_module("crewai.a2a.utils.delegation"),
        "_aexecute_a2a_delegation_impl",
        _wrapper(handler, _a2a_send_facts),
    )


def instrument_a2a_server(handler: RunHandler) -> None:
    """Wrap CrewAI's A2A executor helper (``crewai.a2a.utils.task``, imported by the application)."""
    _wrapped.wrap(
        importlib.import_module("crewai.a2a.utils.task"), "_execute_impl", _wrapper(handler, _a2a_serve_facts)
    )


uninstrument = _wrapped.uninstrument
