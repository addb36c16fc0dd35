"""Pydantic AI (``pydantic-ai-slim`` 2.68+).

Wraps ``_PreparedAgentRun.open`` (``pydantic_ai.agent``), the async context manager that
``Agent.iter`` opens exactly once per run, whatever the entry point (``run``, ``run_sync``,
``run_stream``, ``run_stream_sync``, ``run_stream_events``, ``iter``; ``WrapperAgent`` subclasses
delegate to ``iter``), once the framework has resolved the run's ids and before the run's first
span. The wrapper is synchronous and nothing public is wrapped: Pydantic AI reads its caller's
frames (an unnamed agent's name from the caller's variables; whether an installed package started
the run, for its first-run banner), and a Python-level wrapper of ``run``/``run_sync``/``iter``
would be the frame it finds.

The run starts as soon as the framework has resolved its ids, before any span of the run opens,
and is current for the whole ``async with agent.iter(...)`` body (the graph's model requests, tool
calls, nested agent runs): every span started inside carries the ids.

- Conversation id (``gen_ai.conversation.id``, source ``framework``): the run's own
  ``conversation_id`` as Pydantic AI resolved it (``AgentRun.conversation_id``): the
  ``conversation_id=`` argument, else the most recent one on ``message_history`` (or on
  ``conversation=``), else the UUID7 the framework generated for this run. Adopted as it exists,
  never made up here. A registered override for the agent type still comes first; extractors get
  the agent and that id as ``session`` (``RunCall.args``/``kwargs`` are empty: the call's
  arguments are not seen here).
- Execution id (``agent_identity.execution.id``): the run's ``run_id`` (the ``run_id=`` argument,
  else the framework's UUID7).
- ``agent_identity.conversation.resumed``: whether the run received earlier messages
  (``message_history``, or a ``conversation=`` that has messages).
- Span: when the framework's instrumentation is on for the run (``agent.instrument``,
  ``Agent.instrument_all()``, an ``Instrumentation`` capability, an ``InstrumentedModel``), its
  ``invoke_agent {name}`` span is enriched; otherwise we create one (INTERNAL, ``invoke_agent
  {agent.name}``, provider ``pydantic_ai``).
- An agent run inside another run (a tool that calls ``other.run(...)``) is a nested run: its span
  records the outer run's execution and conversation ids, and ``parent_differs`` when it runs in
  another conversation (Pydantic AI gives it a new one unless ``conversation_id=`` is passed).

The framework's instrumentation also puts ``gen_ai.agent.name``, ``gen_ai.agent.call.id`` and
``gen_ai.conversation.id`` into OpenTelemetry baggage; the boundary guard strips them from every
MCP request and HTTP request to a destination that is not allowlisted (``gen_ai.agent.*`` is an
identity baggage key by default).
"""

from __future__ import annotations

import importlib
import weakref
from typing import Any

import wrapt

from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec

NAME = "pydantic_ai"
REQUIREMENTS = ("pydantic-ai-slim >= 2.68, < 3",)
PROVIDER = "pydantic_ai"

_wrapped = Wrapped()
_SPECS = BoundedCache()  # agent name -> the span spec of its runs


def conversation_rule(agent: Any, conversation_id: Any, call: Any) -> str | None:
    """Framework rule: the conversation id Pydantic AI resolved for the run (a str), passed in as
    the ``session``."""
    return conversation_id


def _spec_for(agent: Any) -> SpanSpec:
    name = getattr(agent, "name", None)
    if type(name) is not str or not name:
        name = "agent"  # what Pydantic AI names an unnamed agent's run
    spec = _SPECS.get(name)
    if spec is None:
        spec = _SPECS.put(name, agent_span_spec(name, PROVIDER))
    return spec


class _ScopedRun(wrapt.ObjectProxy):
    """The context manager ``_PreparedAgentRun.open()`` returns: entering it makes the run current
    (in the task that runs ``iter``, for the rest of the ``async with agent.iter(...)`` block);
    exiting it ends the run."""

    def __init__(self, wrapped: Any, run: Any) -> None:
        super().__init__(wrapped)
        self._self_state = state = [run, None]  # the run (None once ended), its scope tokens
        weakref.finalize(self, _abandoned, state)  # entered, never exited: the run still ends

    async def __aenter__(self):
        state = self._self_state
        state[1] = state[0].enter()
        try:
            return await self.__wrapped__.__aenter__()
        except BaseException as exc:
            _close(state, exc)
            raise

    async def __aexit__(self, *exc_info: Any) -> Any:
        error = exc_info[1]
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        except BaseException as exc:
            error = exc
            raise
        finally:
            _close(self._self_state, error)


def _abandoned(state: list) -> None:
    """Dropped without ``__aexit__``: end the run (its scope went with the context it was set in)."""
    run = state[0]
    if run is not None:
        state[0] = state[1] = None
        run.finish()


def _close(state: list, error: BaseException | None) -> None:
    run, tokens = state
    if run is None:
        return
    state[0] = state[1] = None
    if tokens is not None:
        run.exit(tokens)
    run.finish(error=error)


def _open_wrapper(handler: RunHandler):
    """Wrapper of ``_PreparedAgentRun.open()`` (an async context manager): ``iter`` calls it once
    the framework has resolved the run's ids (``prepared.state``) and whether it instruments the
    run (``prepared.graph_deps.instrumentation_settings``), and before the run's first span. A
    synchronous wrapper, so no frame of ours is on the stack where Pydantic AI looks at its
    caller's frames (the agent name, its first-run banner)."""

    def wrapper(wrapped, instance, args, kwargs):
        cm = wrapped(*args, **kwargs)
        try:
            state, deps = instance.state, instance.graph_deps
            agent = deps.agent
            native = getattr(deps, "instrumentation_settings", None) is not None
            run_id = state.run_id
            run = handler.start(
                NAME,
                agent,
                state.conversation_id,
                (),
                {},
                rule=conversation_rule,
                span=None if native else _spec_for(agent),
                run_id=run_id if type(run_id) is str else None,
                resumed=bool(state.message_history),
                recheck=False,
            )
        except Exception:
            run = None
        return cm if run is None else _ScopedRun(cm, run)

    return wrapper


def instrument(handler: RunHandler) -> None:
    """Wrap ``pydantic_ai.agent._PreparedAgentRun.open``. Raises ImportError/AttributeError when
    this Pydantic AI has none (the instrumentor then skips the adapter with a warning)."""
    cls = importlib.import_module("pydantic_ai.agent")._PreparedAgentRun
    _wrapped.wrap(cls, "open", _open_wrapper(handler))


uninstrument = _wrapped.uninstrument
