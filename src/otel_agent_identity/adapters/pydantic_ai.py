"""Pydantic AI (``pydantic-ai-slim`` 2.68+).

Wraps ``pydantic_ai.agent.Agent.iter`` (an async context manager), which every entry point enters
exactly once per run (``run``, ``run_sync``, ``run_stream``, ``run_stream_sync``,
``run_stream_events``; ``WrapperAgent`` subclasses delegate to it), and ``Agent._prepare_run``,
where ``iter`` resolves the run's ids before it opens the run (and the framework's own span).
Only ``iter`` is wrapped, never ``run``/``run_sync``: a Python-level wrapper there would become the
frame Pydantic AI infers an unnamed agent's name from.

The run starts as soon as the framework has resolved its ids, before any span of the run opens,
and is current for the whole ``async with agent.iter(...)`` body (the graph's model requests, tool
calls, nested agent runs): every span started inside carries the ids.

- Conversation id (``gen_ai.conversation.id``, source ``framework``): the run's own
  ``conversation_id`` as Pydantic AI resolved it (``AgentRun.conversation_id``): the
  ``conversation_id=`` argument, else the most recent one on ``message_history`` (or on
  ``conversation=``), else the UUID7 the framework generated for this run. Adopted as it exists,
  never made up here. A registered override for the agent type still comes first.
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

import contextvars
import importlib
import weakref
from typing import Any, Optional

import wrapt
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import SpanKind
from wrapt import wrap_function_wrapper

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec

NAME = "pydantic_ai"
REQUIREMENTS = ("pydantic-ai-slim >= 2.68, < 3",)
PROVIDER = "pydantic_ai"

_wrapped: list[tuple[Any, str]] = []
#: the ``iter`` call whose ``_prepare_run`` is running now in this context: ``_Opening``
_OPENING: contextvars.ContextVar[Optional["_Opening"]] = contextvars.ContextVar(
    "otel_agent_identity_pydantic_ai", default=None)
_SPECS: dict[str, SpanSpec] = {}  # agent name -> the span spec of its runs (bounded: emptied when full)
_SPECS_MAX = 256


def conversation_rule(agent: Any, conversation_id: Any, call: Any) -> Optional[str]:
    """Framework rule: the conversation id Pydantic AI resolved for the run (a str), passed in as
    the ``session``."""
    return conversation_id


def _spec_for(agent: Any) -> SpanSpec:
    name = getattr(agent, "name", None)
    if type(name) is not str or not name:
        name = "agent"  # what Pydantic AI names an unnamed agent's run
    spec = _SPECS.get(name)
    if spec is None:
        if len(_SPECS) >= _SPECS_MAX:
            _SPECS.clear()
        spec = _SPECS[name] = SpanSpec(
            f"{attrs.INVOKE_AGENT} {name}", SpanKind.INTERNAL,
            {attrs.GEN_AI_OPERATION_NAME: attrs.INVOKE_AGENT, attrs.GEN_AI_AGENT_NAME: name,
             attrs.GEN_AI_PROVIDER_NAME: PROVIDER})
    return spec


class _Opening:
    """One ``iter`` call: its agent and arguments, and the run once ``_prepare_run`` started it."""

    __slots__ = ("agent", "args", "kwargs", "run", "tokens")

    def __init__(self, agent: Any, args: tuple, kwargs: dict) -> None:
        self.agent, self.args, self.kwargs = agent, args, kwargs
        self.run = self.tokens = None


class _ScopedRun(wrapt.ObjectProxy):
    """The context manager ``iter`` returns: entering it starts the run (in ``_prepare_run``) and
    keeps it current until the ``async with`` block exits, which ends it."""

    def __init__(self, wrapped: Any, opening: _Opening) -> None:
        super().__init__(wrapped)
        self._self_opening = opening
        weakref.finalize(self, _abandoned, opening)  # entered, never exited: the run still ends

    async def __aenter__(self):
        opening = self._self_opening
        token = _OPENING.set(opening)
        try:
            return await self.__wrapped__.__aenter__()
        except BaseException as exc:
            _close(opening, exc)
            raise
        finally:
            _OPENING.reset(token)

    async def __aexit__(self, *exc_info: Any) -> Any:
        error = exc_info[1]
        try:
            return await self.__wrapped__.__aexit__(*exc_info)
        except BaseException as exc:
            error = exc
            raise
        finally:
            _close(self._self_opening, error)


def _abandoned(opening: _Opening) -> None:
    """The context manager was dropped without ``__aexit__``: end the run (its scope went with
    the context it was set in)."""
    run = opening.run
    if run is not None:
        opening.run = opening.tokens = None
        run.finish()


def _close(opening: _Opening, error: Optional[BaseException]) -> None:
    run, tokens = opening.run, opening.tokens
    if run is None:
        return
    opening.run = opening.tokens = None
    if tokens is not None:
        run.exit(tokens)
    run.finish(error=error)


def _iter_wrapper(handler: RunHandler):
    """Wrapper of ``Agent.iter(user_prompt=None, *, ...)``: returns its context manager, proxied."""

    def wrapper(wrapped, instance, args, kwargs):
        cm = wrapped(*args, **kwargs)
        try:
            return _ScopedRun(cm, _Opening(instance, args, kwargs))
        except Exception:  # noqa: BLE001 - never break the application
            return cm

    return wrapper


def _prepare_wrapper(handler: RunHandler):
    """Wrapper of ``async Agent._prepare_run(...) -> _PreparedAgentRun``: once the framework has
    resolved the run's ids (``prepared.state``) and whether it instruments the run
    (``prepared.graph_deps.instrumentation_settings``), the run starts and becomes current for the
    rest of ``iter``'s ``__aenter__`` and the ``async with`` block (same task, same context)."""

    async def prepare(wrapped, instance, args, kwargs):
        prepared = await wrapped(*args, **kwargs)
        opening = _OPENING.get()
        if opening is None or opening.agent is not instance or opening.run is not None:
            return prepared
        try:
            state = prepared.state
            native = getattr(prepared.graph_deps, "instrumentation_settings", None) is not None
            run_id = state.run_id
            run = handler.start(
                framework=NAME, agent=instance, session=state.conversation_id, args=opening.args,
                kwargs=opening.kwargs, rule=conversation_rule, span=None if native else _spec_for(instance),
                run_id=run_id if type(run_id) is str else None, resumed=bool(state.message_history),
                recheck=False,  # the id is resolved: it does not change during the run
            )
            if run is not None:
                opening.run, opening.tokens = run, run.enter()
        except Exception:  # noqa: BLE001 - the run goes on untracked
            pass
        return prepared

    def wrapper(wrapped, instance, args, kwargs):
        if _OPENING.get() is None:
            return wrapped(*args, **kwargs)
        return prepare(wrapped, instance, args, kwargs)

    return wrapper


def instrument(handler: RunHandler) -> None:
    """Wrap ``Agent.iter`` and ``Agent._prepare_run``. Raises ImportError/AttributeError when this
    Pydantic AI has neither (the instrumentor then skips the adapter with a warning)."""
    cls = importlib.import_module("pydantic_ai.agent").Agent
    for method, make in (("_prepare_run", _prepare_wrapper), ("iter", _iter_wrapper)):
        getattr(cls, method)  # AttributeError: an unknown shape
        wrap_function_wrapper(cls, method, make(handler))
        _wrapped.append((cls, method))


def uninstrument() -> None:
    """Restore the wrapped methods."""
    while _wrapped:
        cls, method = _wrapped.pop()
        unwrap(cls, method)
