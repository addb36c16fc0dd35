"""OpenAI Agents SDK (openai-agents).

Wraps ``AgentRunner.run`` (async; ``Runner.run``, ``Runner.run_sync`` and agents used as tools,
``Agent.as_tool``, all arrive there) and ``AgentRunner.run_streamed`` (sync, returns a
``RunResultStreaming`` whose ``run_loop_task`` does the work). The SDK emits no OpenTelemetry
spans, so each run gets one INTERNAL ``invoke_agent {starting agent name}`` span; the SDK's own
tracing (``agents.tracing`` processors, ``set_tracing_disabled``) is left untouched.

Arguments are bound by the signature ``run(starting_agent, input, **options)``: ``as_tool`` passes
``starting_agent=`` by keyword.

Conversation id (framework rule, after a registered override): ``session.session_id`` (str) when
a ``session`` is given (``SQLiteSession("conv-1")``: the caller's id; an
``OpenAIConversationsSession`` learns its id from the Conversations API during the first turn: the
run adopts it as soon as the session's first ``get_items``/``add_items`` returns, and the agent
span reads it after the run), else the ``conversation_id=`` argument (a server-managed
conversation; a resumed ``RunState`` input keeps the one it was started with), else
``RunConfig.group_id`` when the application opts in
(``OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION``), else none.
``previous_response_id`` is a response-chain pointer that changes every turn: never the
conversation id. Execution id: the SDK has no run id, so one is made per run (or given with
``otel_agent_identity.execution()``).

State continuity (``agent_identity.conversation.resumed``, at the run's start): ``true`` when the
run continues a service-side conversation (``conversation_id=``, ``previous_response_id=``), resumes
a ``RunState``, is given earlier items in its input (a list of more than one item: a server that
keeps the history itself), or when its ``session`` had items before the run, as read by the SDK's
own session read (``agents.run_internal.session_persistence._session_get_items``, observed: no
second read); ``false`` otherwise (no session and none of these, or an empty session).

Handoffs stay in the run: the span records the agent that produced the final output
(``agent_identity.last_agent.name``). An agent used as a tool is a nested run: its span has
``agent_identity.parent.execution.id`` and, when it runs without a session or conversation of its
own, the outer run's conversation as ``agent_identity.parent.conversation.id``.

A streamed run's span ends when its run loop task completes (consumed, abandoned, cancelled).
"""

from __future__ import annotations

import importlib
import weakref
from typing import Any

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec, awaiting_run
from otel_agent_identity.adapters._base import BoundedCache, Wrapped, agent_span_spec
from otel_agent_identity.scope import current_scope
from otel_agent_identity.span_processor import set_trusted

NAME = "openai_agents"
REQUIREMENTS = ("openai-agents >= 0.24, < 0.25",)

_wrapped = Wrapped()
_options: dict[str, Any] = {"group_id_as_conversation": False, "run_state": None}
#: session -> scope of the run using it, for sessions whose id the service assigns during the run
_pending: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
#: agent name -> the span spec of its runs (see :func:`_spec_for`)
_SPECS = BoundedCache()
_NO_OPTIONS: dict[str, Any] = {}


def conversation_rule(agent: Any, session: Any, call: Any) -> str | None:
    """Framework rule (see the module docstring); ``call.kwargs`` are the run's options."""
    if session is not None:
        try:
            return session.session_id  # OpenAIConversationsSession raises ValueError before turn 1
        except Exception:
            return None
    options = call.kwargs or _NO_OPTIONS
    conversation_id = options.get("conversation_id")
    if conversation_id is not None:  # the common shape: no look at the input
        return conversation_id
    return _resumed_or_group(call.args, options)


def _resumed_or_group(args: tuple, options: Any) -> str | None:
    """The rarer sources: a resumed ``RunState`` input's id, else the opted-in ``group_id``."""
    state = args[1] if len(args) > 1 else options.get("input")
    run_state = _options["run_state"]
    if type(state) is not str and run_state is not None and isinstance(state, run_state):  # e.g. after an approval
        conversation_id = getattr(state, "_conversation_id", None)  # the SDK resumes with this id
        if conversation_id is not None:
            return conversation_id
    if _options["group_id_as_conversation"]:
        config = options.get("run_config")
        return config.get("group_id") if isinstance(config, dict) else getattr(config, "group_id", None)
    return None


def _record_last_agent(span: Any, result: Any) -> None:
    """``agent_identity.last_agent.name`` (``result.last_agent.name``, a str) on the run's span while
    it is open: a checked str goes straight into the span's store (``set_trusted``), not through
    the SDK's validating ``set_attributes`` (~0.2 bare span per run)."""
    try:
        name = result.last_agent.name
        if isinstance(name, str):
            set_trusted(span, {attrs.LAST_AGENT_NAME: name})
    except Exception:
        pass


async def _run_recording(wrapped: Any, run: Any, args: tuple, kwargs: dict) -> Any:
    """The SDK's ``run`` awaited by ``Run.call`` in the run's scope, and the last agent recorded."""
    result = await wrapped(*args, **kwargs)
    _record_last_agent(run.span, result)
    return result


def _record_when_done(run: Any, result: Any):
    """A done callback of a streamed run's loop task, added before ``Run.finish_when_done``'s (the
    loop calls them in order, so the span is still open): records the last agent of a run that
    completed."""

    def done(fut) -> None:
        if not fut.cancelled() and fut.exception() is None:
            _record_last_agent(run.span, result)

    return done


def _spec_for(agent: Any) -> SpanSpec:
    """The span spec of a run of ``agent``, shared by the runs of agents with the same name (a
    read-only value: the tracer copies its attributes); keyed by the name, so a renamed or cloned
    agent gets its own."""
    name = getattr(agent, "name", None)
    if type(name) is not str or not name:
        return agent_span_spec(str(name or type(agent).__name__), attrs.PROVIDER_OPENAI)
    spec = _SPECS.get(name)
    if spec is None:
        spec = _SPECS.put(name, agent_span_spec(name, attrs.PROVIDER_OPENAI))
    return spec


def resumed_at_start(args: tuple, options: Any) -> bool | None:
    """``resumed`` known from the run's arguments (module docstring); None when its session's
    items tell (read by the SDK during the run)."""
    if options.get("conversation_id") or options.get("previous_response_id"):
        return True
    given = args[1] if len(args) > 1 else options.get("input")
    if type(given) is not str:
        run_state = _options["run_state"]
        if isinstance(given, list):
            if len(given) > 1:
                return True
        elif run_state is not None and isinstance(given, run_state):
            return True
    return None if options.get("session") is not None else False


def _start(handler: RunHandler, args: tuple, kwargs: dict):
    """The run of ``AgentRunner.run``/``run_streamed(starting_agent, input, **options)``, or None
    (also when reading the arguments failed: the call then runs bare)."""
    try:
        return _begin(handler, args, kwargs)
    except Exception:
        return None


def _begin(handler: RunHandler, args: tuple, kwargs: dict):
    agent = args[0] if args else kwargs.get("starting_agent")
    session = kwargs.get("session")
    resumed = resumed_at_start(args, kwargs)
    # without a session the id comes from the call's own arguments: no after-run check needed
    run = handler.start(
        NAME,
        agent,
        session,
        args,
        kwargs,
        rule=conversation_rule,
        span=_spec_for(agent),
        recheck=session is not None,
        resumed=resumed,
    )
    if run is not None and resumed is None:
        run.resumed_later()  # the SDK's read of the session's items tells (_session_items_wrapper)
    if run is None or run.scope.conversation_id is not None:
        return run
    try:  # the run has started (its span is open): nothing below may lose it
        if session is not None:
            _pending[session] = run.scope
    except Exception:
        pass
    return run


def _run_wrapper(handler: RunHandler):
    """Wrapper of ``async AgentRunner.run(starting_agent, input, **options)``."""

    def wrapper(wrapped, instance, args, kwargs):
        run = _start(handler, args, kwargs)
        if run is None:
            return wrapped(*args, **kwargs)
        # an ``async def``: the SDK's run (and its argument check) starts when the caller awaits
        return run.call(_run_recording, (wrapped, run, args, kwargs), _NO_OPTIONS)

    return wrapper


def _streamed_wrapper(handler: RunHandler):
    """Wrapper of ``AgentRunner.run_streamed(starting_agent, input, **options)``: the run loop task
    is created inside the run's scope (``create_task`` copies the context), and ends the run."""

    def wrapper(wrapped, instance, args, kwargs):
        run = _start(handler, args, kwargs)
        if run is None:
            return wrapped(*args, **kwargs)
        tokens = run.enter()
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            run.finish(error=exc)
            raise
        finally:
            run.exit(tokens)
        try:
            task = getattr(result, "run_loop_task", None)  # read after the call: cleanup may replace it
            if task is None:
                _record_last_agent(run.span, result)
                run.finish(result=result)
            else:
                task.add_done_callback(_record_when_done(run, result))
                run.finish_when_done(task, result)
        except Exception:
            run.finish()
        return result

    return wrapper


def _session_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``OpenAIConversationsSession.get_items``/``add_items`` (async): in the run that
    uses this session and has no conversation id yet, adopt the id the call made the service assign."""
    try:
        scope = current_scope()
        learning = scope is not None and scope.conversation_id is None and _pending.get(instance) is scope
    except Exception:
        learning = False
    result = wrapped(*args, **kwargs)
    return _learn_after(result, scope, instance) if learning else result


async def _learn_after(coro, scope, session):
    result = await coro
    try:
        if scope.learn(session.session_id):  # public property; raises while still unknown
            _pending.pop(session, None)
    except Exception:
        pass
    return result


def _session_items_wrapper(wrapped, instance, args, kwargs):
    """Around the SDK's ``async _session_get_items(session, limit=..., *, wrapper=None, ...)``: its
    first read in a run using that session says whether the session had items before the run."""
    try:
        session = args[0] if args else kwargs.get("session")
        run = awaiting_run()
        if run is not None and (run.call_kwargs or _NO_OPTIONS).get("session") is not session:
            run.resumed_later()  # another session's read (e.g. a tool's): not the run's own
            run = None
    except Exception:
        run = None
    result = wrapped(*args, **kwargs)
    return result if run is None else _record_items(result, run)


async def _record_items(coro, run):
    items = await coro
    try:  # noqa: SIM105 - per run: a try is free, contextlib.suppress is not
        run.record_resumed(len(items) > 0)
    except Exception:
        pass
    return items


def instrument(handler: RunHandler) -> None:
    """Wrap ``AgentRunner.run`` and ``AgentRunner.run_streamed`` (not ``run_sync``: it calls ``run``)."""
    config = handler.config
    _options["group_id_as_conversation"] = bool(getattr(config, "openai_agents_group_id_as_conversation", False))
    _options["run_state"] = getattr(importlib.import_module("agents.run_state"), "RunState", None)
    cls = importlib.import_module("agents.run").AgentRunner
    for method, make in (("run", _run_wrapper), ("run_streamed", _streamed_wrapper)):
        _wrapped.wrap(cls, method, make(handler))
    try:
        persistence = importlib.import_module("agents.run_internal.session_persistence")
        if getattr(persistence, "_session_get_items", None) is not None:
            _wrapped.wrap(persistence, "_session_get_items", _session_items_wrapper)
    except ImportError:  # another SDK layout: a run with a session records no resumed
        pass
    try:
        session_cls = importlib.import_module("agents.memory").OpenAIConversationsSession
    except (ImportError, AttributeError):
        return
    for method in ("get_items", "add_items"):
        _wrapped.wrap(session_cls, method, _session_wrapper)


uninstrument = _wrapped.uninstrument
