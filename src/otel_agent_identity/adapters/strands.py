"""Strands Agents (``strands-agents`` 1.62+).

Wraps ``strands.agent.agent.Agent.stream_async`` (an async generator: ``agent(prompt)``, which runs
``invoke_async`` in a thread of its own with a copy of the caller's context, and ``invoke_async``
both arrive there), ``Swarm.stream_async`` and ``Graph.stream_async`` (multi-agent runs), and
``A2AAgent.stream_async`` (the A2A client agent, ``strands.agent.a2a_agent``). Every step of a run's
generator runs in one context of the run's own (Strands keeps its ``invoke_agent`` span current
across its yields), never in the caller's code between steps.

Strands emits its own spans on the global tracer provider (``invoke_agent {name}``,
``execute_event_loop_cycle``, ``chat``, ``execute_tool {tool}``, ``invoke_swarm``, ``invoke_graph``),
with no conversation id: an agent run's ``invoke_agent`` span is enriched with the run's ids, parent
ids and ``resumed`` (no span of ours is added), and every span of the run is stamped.

- Conversation id (``gen_ai.conversation.id``, source ``framework``): the session manager's
  ``session_id`` (``Agent(session_manager=FileSessionManager(session_id="conv-1"))``, the same for a
  ``Swarm``/``Graph`` given one). An Agent without a session manager has a random 8-hex
  ``agent.session_id`` per instance: not a conversation, never reported.
- Execution id: one per run (Strands has no run id), or given with ``otel_agent_identity.execution()``.
- ``agent_identity.conversation.resumed``: whether the agent held earlier messages when the run
  started (restored by its session manager when the Agent was built, or kept in memory from a
  previous call), or the prompt is a list of more than one message.
- An agent run inside another Strands run (an agent used as a tool, a ``Swarm`` handoff, a
  ``Graph`` node) is a delegation: its span has ``agent_identity.delegation.id`` (new),
  ``agent_identity.parent.execution.id`` and the outer conversation as
  ``agent_identity.parent.conversation.id``.
- ``A2AAgent`` (a remote agent): a CLIENT ``invoke_agent {name}`` span of ours, enriched by the
  a2a-sdk adapter's send (delegation id, ``a2a.*``, the ``contextId`` the server assigned). Strands
  never sends a ``contextId``: inside a conversation every call after the first starts a new remote
  conversation, marked ``agent_identity.conversation.previous_id`` and counted as a delegate restart.
"""

from __future__ import annotations

import importlib
import sys
import weakref
from typing import Any

from opentelemetry.trace import SpanKind

from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity._streams import context_async_generator
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec, nonempty_str
from otel_agent_identity.scope import current_scope, new_delegation_id

NAME = "strands"
REQUIREMENTS = ("strands-agents >= 1.62, < 2",)

#: the Strands classes whose runs we track (an outer run of one of them makes a delegation)
_OWNERS: list[type] = []
_wrapped = Wrapped(_OWNERS.clear)
#: A2AAgent name -> the span spec of its runs
_SPECS = BoundedCache()


def session_rule(agent: Any, session_id: Any, call: Any) -> str | None:
    """Framework rule: the session manager's ``session_id`` (str), passed in as the ``session``."""
    return session_id


def session_id_of(owner: Any) -> str | None:
    """The ``session_id`` (str) of ``owner``'s session manager (an Agent's ``_session_manager``, a
    Swarm's or Graph's ``session_manager``), None without one (an Agent's own random id is not read)."""
    manager = getattr(owner, "_session_manager", None)
    if manager is None:
        manager = getattr(owner, "session_manager", None)
    return nonempty_str(getattr(manager, "session_id", None)) if manager is not None else None


def resumed_at_start(agent: Any, args: tuple, kwargs: dict) -> bool | None:
    """Whether the agent's run starts from earlier messages (module docstring); None: unknown."""
    try:
        if len(agent.messages) > 0:
            return True
        prompt = args[0] if args else kwargs.get("prompt")
        return isinstance(prompt, list) and sum(1 for m in prompt if isinstance(m, dict) and "role" in m) > 1
    except Exception:
        return None


def _delegated() -> bool:
    """Whether the current run (if any) is one of ours: a Strands run inside it is a delegation."""
    scope = current_scope()
    return scope is not None and isinstance(scope.owner, tuple(_OWNERS))


def _a2a_spec(agent: Any) -> SpanSpec:
    name = nonempty_str(getattr(agent, "name", None))
    spec = _SPECS.get(name) if name else None
    if spec is None:
        spec = agent_span_spec(name or "a2a_agent", None, kind=SpanKind.CLIENT)
        if name:
            _SPECS.put(name, spec)
    return spec


def _run_wrapper(handler: RunHandler, kind: str):
    """Wrapper of ``stream_async(prompt_or_task, ...)`` (an async generator) of an Agent
    (``kind="agent"``), a Swarm or Graph (``"multi"``: no agent span of its own, its spans are
    stamped), or an A2AAgent (``"a2a"``: a CLIENT span of ours)."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            delegated = _delegated()
            if kind == "a2a":
                session, resumed, span = None, None, _a2a_spec(instance)
            else:
                session, span = session_id_of(instance), None
                resumed = resumed_at_start(instance, args, kwargs) if kind == "agent" else None
            run = handler.start(
                NAME,
                instance,
                session,
                args,
                kwargs,
                rule=session_rule,
                span=span,
                delegation_id=new_delegation_id() if delegated or kind == "a2a" else None,
                resumed=resumed,
                claim=kind == "agent",
                recheck=False,
            )
        except Exception:
            run = None
        if run is None:
            return wrapped(*args, **kwargs)
        try:
            agen = wrapped(*args, **kwargs)  # an ``async def`` generator: only binds its arguments
        except BaseException as exc:
            run.finish(error=exc)
            raise
        try:
            stream = context_async_generator(agen, run)
            weakref.finalize(stream, run.finish)  # dropped before its first step: never ran its finally
        except Exception:
            run.finish()
            return agen
        return stream

    return wrapper


#: (module, class, kind) of each wrapped ``stream_async``, when its module is imported
_TARGETS = (
    ("strands.agent.agent", "Agent", "agent"),
    ("strands.multiagent.swarm", "Swarm", "multi"),
    ("strands.multiagent.graph", "Graph", "multi"),
)


def instrument(handler: RunHandler) -> None:
    """Wrap ``stream_async`` of ``Agent``, ``Swarm`` and ``Graph``, each whose module is imported
    and not wrapped yet (imports nothing of Strands but ``strands.agent.agent``). Raises
    AttributeError when this Strands has no ``Agent.stream_async`` (the instrumentor then skips the
    adapter with a warning)."""
    importlib.import_module("strands.agent.agent").Agent.stream_async  # noqa: B018 - the shape we know
    for module_name, cls_name, kind in _TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if cls is not None and (cls, "stream_async") not in _wrapped:
            _wrapped.wrap(cls, "stream_async", _run_wrapper(handler, kind))
            _OWNERS.append(cls)


def instrument_a2a_agent(handler: RunHandler) -> None:
    """Wrap ``A2AAgent.stream_async`` (module ``strands.agent.a2a_agent``, imported by the application)."""
    cls = importlib.import_module("strands.agent.a2a_agent").A2AAgent
    if (cls, "stream_async") not in _wrapped:
        _wrapped.wrap(cls, "stream_async", _run_wrapper(handler, "a2a"))
        _OWNERS.append(cls)


uninstrument = _wrapped.uninstrument
