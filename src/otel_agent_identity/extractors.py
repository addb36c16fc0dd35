"""The extractor registry: which conversation id an agent reports, in a fixed order.

Order, first hit wins:

1. an extractor registered for the agent's type (the nearest class in the MRO);
2. the agent's own ``_get_otel_conversation_id(session)`` (Agent Framework ADR-0029), when it
   returns a string;
3. the adapter's framework rule (for example Agent Framework ``AgentSession.session_id``).

Nothing here generates an id: a run whose extractors all return None has no conversation id.
Values are checked: a non-string, an empty string, a string longer than ``max_id_length`` or one
with control characters is dropped (never truncated) with one warning per agent type, extractor
step and kind of problem.
An extractor that raises is treated as returning None, likewise warned once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, NamedTuple

from otel_agent_identity._errors import describe, error_type

_logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "otel_agent_identity_extractors"

#: ``extract(agent, session, call) -> str | None``. ``agent`` is the framework agent object,
#: ``session`` the framework's session/thread object or None, ``call`` a :class:`RunCall`.
Extractor = Callable[[Any, Any, "RunCall"], str | None]

SOURCE_OVERRIDE = "override"
SOURCE_AGENT = "agent"
SOURCE_FRAMEWORK = "framework"
#: not an extractor step: the id the service assigned during a run whose extractors had none
SOURCE_SERVICE = "service"


class RunCall(NamedTuple):
    """What an extractor may look at besides agent and session.

    Attributes:
        framework: adapter name, e.g. ``"agent_framework"``.
        args / kwargs: the wrapped run method's arguments, as the application passed them.
        phase: ``"before"`` the run or ``"after"`` it (the service may assign an id in the first turn).
        result: the run's result in the ``"after"`` phase when one is at hand, else None.
        outer: the enclosing run's :class:`~otel_agent_identity.scope.IdentityScope` for a nested
            run (its ``conversation_id``, ``session_id``), else None.
    """

    framework: str
    args: tuple = ()
    kwargs: Mapping[str, Any] | None = None
    phase: str = "before"
    result: Any = None
    outer: Any = None


class Extracted(NamedTuple):
    """A checked conversation id and the step that produced it (``override``/``agent``/``framework``)."""

    conversation_id: str
    source: str


#: the ids last accepted (a cache of :meth:`ExtractorRegistry.problem`'s verdict), cleared when full
_ACCEPTED_MAX = 256
#: agent type -> whether it defines ``_get_otel_conversation_id`` (ADR-0029); at most 1,024 types
_HAS_OWN_STEP: dict[type, bool] = {}


def _own_step(own: Any, session: Any, _call: RunCall) -> Any:
    """Step 2 by default: the agent's bound ``_get_otel_conversation_id`` called with the session."""
    return own(session)


class ExtractorRegistry:
    """Extractors by agent type. Thread-safe; lookups are cached per concrete type."""

    def __init__(self, max_id_length: int = 256) -> None:
        #: ids found acceptable (a bounded set, emptied when full): a run checks the same id
        #: before and after it and on every turn; a known id is one hash lookup (the str caches
        #: its hash), not a per-character scan, so the cost does not grow with the id's length
        self._accepted: dict[str, None] = {}
        self.max_id_length = max_id_length
        self._by_type: dict[type, Extractor] = {}
        #: whether any override is registered (a plain attribute: read at every run's start)
        self.has_overrides = False
        self._cache: dict[type, Extractor | None] = {}
        self._warned: set[tuple[str, str, str]] = set()  # (agent type, step, kind)
        self._lock = threading.Lock()

    @property
    def max_id_length(self) -> int:
        """Longest acceptable id, in characters (``OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH``)."""
        return self._max_id_length

    @max_id_length.setter
    def max_id_length(self, value: int) -> None:
        self._max_id_length = value
        self._accepted.clear()

    def register(self, agent_type: type, extractor: Extractor) -> None:
        """Use ``extractor`` for ``agent_type`` and its subclasses (unless a nearer class has one).

        Raises:
            TypeError: ``agent_type`` is not a class or ``extractor`` is not callable.
        """
        if not isinstance(agent_type, type) or not callable(extractor):
            raise TypeError("register(agent_type: type, extractor: callable)")
        with self._lock:
            self._by_type[agent_type] = extractor
            self.has_overrides = True
            self._cache.clear()

    def unregister(self, agent_type: type) -> None:
        """Remove the extractor registered for exactly ``agent_type``; absent is fine."""
        with self._lock:
            self._by_type.pop(agent_type, None)
            self.has_overrides = bool(self._by_type)
            self._cache.clear()

    def load_entry_points(self) -> None:
        """Call every ``otel_agent_identity_extractors`` entry point with this registry.

        Each entry point names a callable ``(registry: ExtractorRegistry) -> None`` that registers
        its extractors. One that fails to load or raises is logged and skipped.
        """
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                ep.load()(self)
            except Exception:
                _logger.warning("otel-agent-identity: extractor entry point %r failed", ep.name, exc_info=True)

    def override_for(self, cls: type) -> Extractor | None:
        """The override registered for ``cls`` or its nearest base class, or None."""
        try:
            return self._cache[cls]
        except KeyError:
            found = next((self._by_type[c] for c in cls.__mro__ if c in self._by_type), None)
            self._cache[cls] = found
            return found

    def extract(
        self,
        agent: Any,
        session: Any,
        call: RunCall,
        framework_rule: Extractor | None = None,
        agent_step: Extractor | None = None,
    ) -> Extracted | None:
        """Return the agent's conversation id, or None. Never raises.

        ``agent_step``: the adapter's reading of step 2, for an adapter that owns the shape of the
        agent's answer (e.g. it knows a value is single-result identity, not the conversation); by
        default ``agent._get_otel_conversation_id(session)``.
        """
        override = self.override_for(type(agent)) if self._by_type else None
        if override is not None:  # an override is final: its None means no conversation id
            return self._checked(agent, SOURCE_OVERRIDE, override, session, call)
        if agent_step is None:
            cls = type(agent)
            has_own = _HAS_OWN_STEP.get(cls)
            if has_own is None:  # a type's answer is cached: a missing attribute costs an exception each time
                has_own = hasattr(cls, "_get_otel_conversation_id") or hasattr(cls, "__getattr__")  # a proxy may
                if len(_HAS_OWN_STEP) < 1024:
                    _HAS_OWN_STEP[cls] = has_own
            own = getattr(agent, "_get_otel_conversation_id", None) if has_own else None
            found = None if own is None else self._checked(agent, SOURCE_AGENT, _own_step, session, call, own)
        else:  # _checked, its common case inline (an adapter's step runs before and after every run)
            try:
                value = agent_step(agent, session, call)
            except Exception as exc:
                self._raised(agent, SOURCE_AGENT, exc)
                value = None
            if type(value) is str and value in self._accepted:
                return Extracted(value, SOURCE_AGENT)
            found = None if value is None else self._value(agent, SOURCE_AGENT, value)
        if found is not None:
            return found
        if framework_rule is not None:
            return self._checked(agent, SOURCE_FRAMEWORK, framework_rule, session, call)
        return None

    def _checked(
        self, agent: Any, source: str, fn: Extractor, session: Any, call: RunCall, target: Any = None
    ) -> Extracted | None:
        """``fn(target or agent, session, call)``, checked."""
        try:
            value = fn(agent if target is None else target, session, call)
        except Exception as exc:
            self._raised(agent, source, exc)
            return None
        if value is None:
            return None
        if type(value) is str and value in self._accepted:  # the common case: an id seen before
            return Extracted(value, source)
        return self._value(agent, source, value)

    def _raised(self, agent: Any, source: str, exc: Exception) -> None:
        self._warn_once(
            agent, source, "raised", f"{source} extractor raised {error_type(exc)}: {(describe(exc) or '?')[:200]!r}"
        )  # bounded: never a huge line

    def _value(self, agent: Any, source: str, value: Any) -> Extracted | None:
        problem = self.problem(value)
        if problem is None:
            return Extracted(value if type(value) is str else str.__str__(value), source)
        if value is not None and value != "":
            self._warn_once(agent, source, problem_kind(problem), f"{source} extractor returned {problem}; dropped")
        return None

    def accepts(self, value: Any) -> bool:
        """True when ``value`` is an acceptable id (see :meth:`problem`)."""
        return (type(value) is str and value in self._accepted) or self.problem(value) is None

    def problem(self, value: Any, remember: bool = True) -> str | None:
        """Why ``value`` is not an acceptable id (None, non-string, empty, too long, control characters).

        ``remember``: an acceptable str is kept in the bounded set of known ids (conversation ids,
        asked about on every turn); False for an id seen once (a run id)."""
        if type(value) is str and value in self._accepted:
            return None
        if type(value) is not str:
            if not isinstance(value, str):
                return "None" if value is None else f"a {type(value).__name__}, not a string"
            value = str.__str__(value)  # a str subclass: judged as the plain str it holds (callers use that)
        if not value:
            return "an empty string"
        if len(value) > self.max_id_length:
            return f"{len(value)} characters (max_id_length is {self.max_id_length})"
        if not value.isprintable():
            return "control or non-printable characters"
        if remember and type(value) is str:
            accepted = self._accepted
            if len(accepted) >= _ACCEPTED_MAX:
                accepted.clear()
            accepted[value] = None
        return None

    def _warn_once(self, agent: Any, source: str, kind: str, message: str) -> None:
        """One warning per agent type, extractor step and kind (``raised``, or the kind of bad value:
        :func:`problem_kind`): the set of keys stays bounded by the agent types, whatever the values are."""
        cls = type(agent)  # module too: agno.agent.Agent and agents.Agent are both "Agent"
        key = (f"{cls.__module__}.{cls.__qualname__}", source, kind)
        if key in self._warned:
            return
        self._warned.add(key)
        _logger.warning("otel-agent-identity: agent type %s: %s (warned once)", key[0], message)


def problem_kind(problem: str) -> str:
    """The kind of an :meth:`ExtractorRegistry.problem` answer, one warning each: the answer itself,
    but every length one kind (``"N characters (max_id_length is M)"`` -> ``"characters (...)"``)."""
    return problem.split(" ", 1)[-1] if problem[0].isdigit() else problem


#: The process-wide registry the instrumentor uses.
registry = ExtractorRegistry()


def register_extractor(agent_type: type, extractor: Extractor) -> None:
    """Register ``extractor(agent, session, call) -> str | None`` for ``agent_type`` in the global registry.

    Raises:
        TypeError: ``agent_type`` is not a class or ``extractor`` is not callable.
    """
    registry.register(agent_type, extractor)
