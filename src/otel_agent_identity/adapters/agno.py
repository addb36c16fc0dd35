"""Agno (``agno`` 3.1+): ``session_id`` is the conversation, ``run_id`` the execution.

Wraps ``run``, ``arun``, ``continue_run`` and ``acontinue_run`` of ``agno.agent.Agent`` and
``agno.team.Team``, and ``run``/``arun``/``continue_run``/``acontinue_run`` of
``agno.workflow.Workflow``. Agno emits no OTel spans, so each run gets one INTERNAL span:
``invoke_agent {name}`` for an Agent or a Team, ``invoke_workflow {name}`` for a Workflow. Every
return shape (output object, coroutine, generator, async generator) keeps its type; each step of
a stream runs in the run's scope, and an abandoned or closed stream ends the span.

Conversation id (``gen_ai.conversation.id``): the session id the run really uses, in Agno's own
order: the ``session_id`` argument, else ``agent.session_id``, else the uuid4 Agno generates in its
dispatch (``agno.agent._session.initialize_session``, ``agno.team._init._initialize_session``,
``Workflow._initialize_session``; adopted the moment Agno makes it, before any model or tool call,
so turn 1 carries it too). A continued run uses ``run_response.session_id`` when no argument says
otherwise. After a non-streamed run the ``RunOutput.session_id`` is checked.

Execution id (``agent_identity.execution.id``): the run's ``run_id``, as on ``RunOutput.run_id`` and
every event. When the caller passes none, this module passes Agno the uuid4 Agno would otherwise
make itself (``run_id = run_id or str(uuid4())``), so the id is known from the run's first span on.
A continued run keeps ``run_response.run_id`` (or its ``run_id`` argument); a forked or
regenerated one gets a new id from Agno that is not known at the start, so it gets our own.

State continuity (``agent_identity.conversation.resumed``, at the run's start) of an Agent or Team
run: read from the session Agno itself loads for the run (its ``read_or_create_session``: the
cached session, else the db's, else a new one; observed, not read again): ``true`` when that
session had earlier runs and they reach the model (``add_history_to_context`` of the run, else of
the agent; ``read_chat_history``; or a session summary with ``add_session_summary_to_context``),
``false`` otherwise (a new session, no db, or history kept but not given to the model). Team
members and workflow steps (Agno reads no session of theirs) record none.

Team members and workflow steps are runs nested in the leader's or the workflow's run: they get
their own span with Agno's shared ``session_id`` and ``agent_identity.parent.execution.id`` = the
enclosing run's ``run_id`` (Agno's ``parent_run_id``).

``arun(background=True)`` of an Agent or Team returns a pending ``RunOutput`` (or an SSE stream)
while the run goes on in a task Agno spawns (``agno.run.background._spawn_background``): the span
ends when that task does, not when the call returns. ``Workflow.arun(background=True)`` is not
covered (Agno makes that run's id and task inside ``Workflow._arun_background``): it runs bare.
Memory and learning work Agno submits to its own ``background_executor`` thread pool runs without
the run's context (Agno does not copy it), so spans there carry no ids.
"""

from __future__ import annotations

import contextvars
import inspect
import sys
import weakref
from typing import Any
from uuid import uuid4

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec, awaiting_run
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec
from otel_agent_identity.scope import current_scope

NAME = "agno"
REQUIREMENTS = ("agno >= 3.1.3, < 4",)
PROVIDER = "agno"

_RUN_METHODS = ("run", "arun", "continue_run", "acontinue_run")
_TARGETS = [
    ("agno.agent.agent", "Agent", "agent"),
    ("agno.team.team", "Team", "agent"),
    ("agno.workflow.workflow", "Workflow", "workflow"),
]
#: where Agno resolves a run's session id (generating one when neither argument nor instance has it)
_SESSION_RESOLVERS: list[tuple[str, str | None, str]] = [
    ("agno.agent._run", None, "initialize_session"),
    ("agno.team._init", None, "_initialize_session"),
    ("agno.workflow.workflow", "Workflow", "_initialize_session"),
]
_SPAWN = ("agno.run.background", "_spawn_background")
#: where Agno reads (or creates) the session of an Agent's or a Team's run
_SESSION_READERS = [
    ("agno.agent._storage", "read_or_create_session"),
    ("agno.agent._storage", "aread_or_create_session"),
    ("agno.team._storage", "_read_or_create_session"),
    ("agno.team._storage", "_aread_or_create_session"),
]

_wrapped = Wrapped()
#: (instance, run) whose dispatch is running now: its session resolver's result is the run's id
_RESOLVING: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("otel_agent_identity_agno", default=None)
#: background runs waiting for the task Agno spawns for them, by id() of their scope
_HANDOFFS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def session_rule(agent: Any, session: Any, call: Any) -> str | None:
    """Framework rule: the session id (str) Agno runs with.

    ``session`` is the session id the caller gave (the ``session_id`` argument, or the continued
    ``run_response.session_id``); else, before the run, ``agent.session_id``; after a non-streamed
    run, ``RunOutput.session_id``. None when Agno is still to generate it (learned later).
    """
    if isinstance(session, str) and session:
        return session
    if call.phase == "after":
        sid = getattr(call.result, "session_id", None)
        return sid if isinstance(sid, str) and sid else None
    sid = getattr(agent, "session_id", None)
    return sid if isinstance(sid, str) and sid else None


class _Signature:
    """Where ``run_id``, ``session_id``, ``run_response`` and ``background`` sit in one method's
    parameters (Workflow takes them positionally too)."""

    __slots__ = ("index",)

    def __init__(self, fn: Any) -> None:
        params = list(inspect.signature(fn).parameters.values())[1:]  # without self
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self.index = {p.name: i for i, p in enumerate(params) if p.kind in positional}

    def get(self, args: tuple, kwargs: dict, name: str) -> Any:
        if name in kwargs:
            return kwargs[name]
        i = self.index.get(name)
        return args[i] if i is not None and i < len(args) else None


#: (kind, type, name, id) -> the run's SpanSpec: built once per agent, not per run (a renamed agent
#: gets a new one)
_SPECS = BoundedCache(1024)


def _span_spec(instance: Any, kind: str) -> SpanSpec:
    raw_name, agent_id = getattr(instance, "name", None), getattr(instance, "id", None)
    key = (kind, type(instance), raw_name, agent_id)
    try:
        spec = _SPECS.get(key)
    except TypeError:  # a name or id that is not hashable
        spec = None
    if spec is not None:
        return spec
    name = str(raw_name or agent_id or type(instance).__name__)
    if kind == "workflow":
        spec = agent_span_spec(name, PROVIDER, operation=attrs.INVOKE_WORKFLOW, name_key=attrs.GEN_AI_WORKFLOW_NAME)
    else:
        has_id = isinstance(agent_id, str) and agent_id
        spec = agent_span_spec(name, PROVIDER, extra={attrs.GEN_AI_AGENT_ID: agent_id} if has_id else None)
    return _SPECS.put(key, spec)


def _known_session(instance: Any, session_id: Any) -> bool:
    """The session id is known before Agno's dispatch (``session_rule``'s answer before the run)."""
    if isinstance(session_id, str) and session_id:
        return True
    sid = getattr(instance, "session_id", None)
    return isinstance(sid, str) and bool(sid)


def _run_wrapper(handler: RunHandler, kind: str, method: str, sig: _Signature):
    continued = method.endswith("continue_run")
    bare_background = kind == "workflow" and method == "arun"  # not covered: Agno makes its id and task inside
    handed_background = kind == "agent" and method == "arun"
    # where the ids sit when they are not keywords (Workflow takes them positionally too)
    session_at, run_at = sig.index.get("session_id"), sig.index.get("run_id")

    def wrapper(wrapped, instance, args, kwargs):
        if bare_background and sig.get(args, kwargs, "background"):
            return wrapped(*args, **kwargs)
        try:
            if continued:
                call_args, call_kwargs, run_id, session_id = _continued_ids(sig, args, kwargs)
            else:
                session_id = kwargs.get("session_id")
                if session_id is None and session_at is not None and session_at < len(args):
                    session_id = args[session_at]
                run_id = kwargs.get("run_id")
                if run_id is None and run_at is not None and run_at < len(args):
                    run_id = args[run_at]
                call_args, call_kwargs = args, kwargs
                if not run_id:
                    run_id = str(uuid4())  # what Agno does itself when none is given
                    if run_at is not None and run_at < len(args):
                        call_args = (*args[:run_at], run_id, *args[run_at + 1 :])
                    else:
                        call_kwargs = {**kwargs, "run_id": run_id}
            run = handler.start(
                NAME,
                instance,
                session_id,
                args,
                kwargs,
                rule=session_rule,
                span=_span_spec(instance, kind),
                run_id=run_id if isinstance(run_id, str) else None,
                recheck=not (isinstance(session_id, str) and session_id),
            )
            runner = run
            if run is not None and kind == "agent":
                run.resumed_later()  # the session Agno loads tells (_session_read_wrapper)
            if run is not None and handed_background and sig.get(args, kwargs, "background"):
                runner = run.hand_off()
                _HANDOFFS[id(run.scope)] = runner
        except Exception:
            run = None
        if run is None:
            return wrapped(*args, **kwargs)
        if _known_session(instance, session_id):  # Agno's resolver returns it: nothing to adopt
            return runner.call(wrapped, call_args, call_kwargs)
        token = _RESOLVING.set((instance, run))  # the dispatch before the first await is synchronous
        try:
            return runner.call(wrapped, call_args, call_kwargs)
        finally:
            _RESOLVING.reset(token)

    return wrapper


def _continued_ids(sig: _Signature, args: tuple, kwargs: dict):
    """(args, kwargs, run_id, session_id) of a ``continue_run``/``acontinue_run`` call."""
    session_id = sig.get(args, kwargs, "session_id")
    run_id = sig.get(args, kwargs, "run_id")
    previous = sig.get(args, kwargs, "run_response")
    if session_id is None:
        session_id = getattr(previous, "session_id", None)
    if sig.get(args, kwargs, "fork") or sig.get(args, kwargs, "regenerate"):
        return args, kwargs, None, session_id  # Agno gives the fork a new run id inside
    return args, kwargs, getattr(previous, "run_id", None) or run_id, session_id


def _resolver_wrapper(wrapped, instance, args, kwargs):
    """Around Agno's session resolution, ``(owner, session_id=None, user_id=None) -> (session_id,
    user_id)``: a run that started without a session id adopts the one Agno resolved."""
    resolving = _RESOLVING.get()
    if resolving is None:
        return wrapped(*args, **kwargs)
    result = wrapped(*args, **kwargs)
    try:
        owner = instance if instance is not None else (args[0] if args else None)
        if owner is resolving[0]:
            resolving[1].learn(result[0])
    except Exception:
        pass
    return result


def _option(owner: Any, kwargs: dict, name: str) -> Any:
    """A run option as Agno resolves it: the run's argument, else the agent's (or team's) own."""
    value = kwargs.get(name)
    return getattr(owner, name, None) if value is None else value


def session_resumed(owner: Any, session: Any, kwargs: dict) -> bool | None:
    """Whether the run of ``owner`` (an Agent or Team, run with keyword arguments ``kwargs``) on
    the ``session`` Agno loaded for it resumes prior state that reaches the model (module
    docstring); None for a team member or workflow step (Agno reads no session of its own)."""
    if getattr(owner, "team_id", None) or getattr(owner, "workflow_id", None):
        return None
    if not getattr(session, "runs", None):
        return False
    if _option(owner, kwargs, "add_history_to_context") or getattr(owner, "read_chat_history", False):
        return True
    return bool(_option(owner, kwargs, "add_session_summary_to_context") and getattr(session, "summary", None))


def _session_read_wrapper(wrapped, instance, args, kwargs):
    """Around Agno's ``[a]read_or_create_session(owner, session_id, user_id=None)``: the session
    it returns tells the awaiting run of ``owner`` whether it resumed (:func:`session_resumed`)."""
    try:
        owner = args[0] if args else kwargs.get("agent", kwargs.get("team"))
        run = awaiting_run(owner)
    except Exception:
        run = None
    result = wrapped(*args, **kwargs)
    if run is None:
        return result
    if inspect.iscoroutine(result):
        return _record_after(result, run, owner)
    _record_resumed(run, owner, result)
    return result


async def _record_after(coro, run, owner):
    session = await coro
    _record_resumed(run, owner, session)
    return session


def _record_resumed(run: Any, owner: Any, session: Any) -> None:
    try:  # noqa: SIM105 - per run: a try is free, contextlib.suppress is not
        run.record_resumed(session_resumed(owner, session, run.call_kwargs or {}))
    except Exception:
        pass


def _spawn_wrapper(wrapped, instance, args, kwargs):
    """Around ``_spawn_background(coro)``: the background run's span follows the spawned task."""
    try:
        scope = current_scope()
        handoff = _HANDOFFS.pop(id(scope), None) if scope is not None else None
        if handoff is not None and args and inspect.iscoroutine(args[0]):
            args = (handoff.task(args[0]), *args[1:])
    except Exception:
        pass
    return wrapped(*args, **kwargs)


def instrument(handler: RunHandler) -> None:
    """Wrap what the application has imported of Agno and is not wrapped yet: the run methods of
    Agent, Team and Workflow, Agno's session resolvers and its background spawner. Imports nothing:
    called as each of their modules finishes importing (a module still initialising, as
    ``agno.team.team`` is while it imports ``agno.agent``, is wrapped when its own import ends)."""
    for module_name, cls_name, kind in _TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if cls is None:
            continue
        for method in _RUN_METHODS:
            fn = getattr(cls, method, None)
            if fn is None or (cls, method) in _wrapped:
                continue
            _wrapped.wrap(cls, method, _run_wrapper(handler, kind, method, _Signature(fn)))
    for module_name, owner_name, name in [*_SESSION_RESOLVERS, (_SPAWN[0], None, _SPAWN[1])]:
        owner = sys.modules.get(module_name)
        owner = getattr(owner, owner_name, None) if owner_name else owner
        if owner is None or getattr(owner, name, None) is None or (owner, name) in _wrapped:
            continue
        _wrapped.wrap(owner, name, _resolver_wrapper if name != _SPAWN[1] else _spawn_wrapper)
    for module_name, name in _SESSION_READERS:
        module = sys.modules.get(module_name)
        if module is None or getattr(module, name, None) is None or (module, name) in _wrapped:
            continue
        _wrapped.wrap(module, name, _session_read_wrapper)


uninstrument = _wrapped.uninstrument
