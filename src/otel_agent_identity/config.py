"""Options of the instrumentation, from ``instrument()`` arguments or ``OTEL_INSTRUMENTATION_AGENT_IDENTITY_*``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, NamedTuple

from otel_agent_identity import environment_variables as env

_logger = logging.getLogger(__name__)

DEFAULT_MAX_ID_LENGTH = 256
MAX_ID_LENGTH_LIMIT = 4096

#: Baggage keys that carry identity (case-insensitive, ``*`` wildcards); the guard strips them
#: unless the destination is allowlisted. ``session.*``/``user.*``/``enduser.*`` are the semconv
#: namespaces (``session.id``, ``session.previous_id``, ``user.id``, ``user.email``, ``enduser.id``).
DEFAULT_IDENTITY_BAGGAGE_KEYS = (
    "gen_ai.conversation.id",
    "gen_ai.agent.*",  # Pydantic AI puts the agent name and its run id (gen_ai.agent.call.id) in baggage
    "agent_identity.*",
    "session.*",
    "user.*",
    "enduser.*",
    "conversation.id",
    "conversation_id",
    "session_id",
    "thread_id",
    "thread.id",
    "user_id",
    "langfuse.session.id",
    "langfuse.user.id",
)


#: ``instrument()`` options of ours (env var name, lower case, without the prefix)
_OPTIONS = frozenset(
    {
        "frameworks",
        "max_id_length",
        "stamp_spans",
        "allowlist",
        "baggage_keys",
        "openai_agents_group_id_as_conversation",
    }
)
#: options every OTel instrumentor may be given
_OTEL_KWARGS = frozenset(
    {"tracer_provider", "meter_provider", "logger_provider", "event_logger_provider", "skip_dep_check"}
)


class Config(NamedTuple):
    """Resolved options. ``frameworks`` of None means every supported, importable framework.
    (Immutable: a NamedTuple, not a frozen dataclass, whose definition cost every application
    ~5 M instructions at start-up, a NamedTuple's ~1 M.)"""

    frameworks: frozenset[str] | None = None
    max_id_length: int = DEFAULT_MAX_ID_LENGTH
    stamp_spans: bool = True
    allowlist: tuple[str, ...] = ()
    identity_baggage_keys: tuple[str, ...] = DEFAULT_IDENTITY_BAGGAGE_KEYS
    openai_agents_group_id_as_conversation: bool = False

    @classmethod
    def load(cls, **kwargs: Any) -> Config:
        """Build from ``instrument()`` kwargs, falling back to the environment, then to defaults.

        Args:
            frameworks (Iterable[str] | str): adapter names.
            max_id_length (int): characters, 1..4096.
            stamp_spans (bool): stamp ids on every span inside a run.
            allowlist (Iterable[str] | str): destinations that may receive identity.
            baggage_keys (Iterable[str] | str): extra identity baggage keys.
            openai_agents_group_id_as_conversation (bool): OpenAI Agents ``RunConfig.group_id``
                is the conversation id of a run without session or ``conversation_id``.
        Never raises: a malformed value (an unknown framework name included) logs one warning and
        the default is used; an unknown option name logs one warning and is ignored.
        """
        unknown = set(kwargs) - _OPTIONS - _OTEL_KWARGS
        if unknown:
            _logger.warning("otel-agent-identity: unknown instrument() options %s ignored", sorted(unknown))
        frameworks = _pick(kwargs, "frameworks", env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_FRAMEWORKS, _frameworks, None)
        return cls(
            frameworks=frozenset(frameworks) if frameworks else None,
            max_id_length=_pick(
                kwargs,
                "max_id_length",
                env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH,
                _bounded_int,
                DEFAULT_MAX_ID_LENGTH,
            ),
            stamp_spans=_pick(kwargs, "stamp_spans", env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_STAMP_SPANS, _bool, True),
            allowlist=tuple(_pick(kwargs, "allowlist", env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST, _names, ())),
            identity_baggage_keys=DEFAULT_IDENTITY_BAGGAGE_KEYS
            + tuple(_pick(kwargs, "baggage_keys", env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_BAGGAGE_KEYS, _names, ())),
            openai_agents_group_id_as_conversation=_pick(
                kwargs,
                "openai_agents_group_id_as_conversation",
                env.OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION,
                _bool,
                False,
            ),
        )


def _pick(kwargs: dict, key: str, var: str, parse: Callable[[Any], Any], default: Any) -> Any:
    raw = kwargs.get(key)
    source = key
    if raw is None:
        raw, source = os.environ.get(var), var
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except (TypeError, ValueError) as exc:
        _logger.warning("otel-agent-identity: ignoring %s=%r (%s); using the default %r", source, raw, exc, default)
        return default


def _names(raw: Any) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    if not all(isinstance(i, str) for i in items):
        raise TypeError("expected strings")
    return [i.strip() for i in items if i.strip()]


def _frameworks(raw: Any) -> list[str]:
    from otel_agent_identity.adapters import ADAPTERS

    names = _names(raw)
    unknown = [n for n in names if n not in ADAPTERS]
    if unknown:
        raise ValueError(f"unknown framework names {unknown}; known: {sorted(ADAPTERS)}")
    return names


def _bounded_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError("expected an integer")
    value = int(raw)
    if not 1 <= value <= MAX_ID_LENGTH_LIMIT:
        raise ValueError(f"must be 1..{MAX_ID_LENGTH_LIMIT}")
    return value


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")
