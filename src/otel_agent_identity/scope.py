"""The identity scope of the current run, and the public API to supply ids.

The run's scope is a value in the OpenTelemetry ``Context`` (under :data:`SCOPE_KEY`), so it goes
wherever that context goes, and nowhere else: asyncio tasks, ``contextvars.copy_context().run``,
executors, ``opentelemetry-instrumentation-threading``, a worker's ``context.attach(captured)``, an
explicit ``context=`` when a span is started. A span started outside every run, or under a context
captured before the run began, carries none of its ids. The ids supplied for the next run or hop
travel the same way. Applications may supply them:

    with otel_agent_identity.execution("job-42"):
        await agent.run("...")

    with otel_agent_identity.delegation(key=order.idempotency_key):
        await remote_agent.run("...")
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from random import getrandbits  # as OTel's RandomIdGenerator: unique, reseeded after fork
from typing import Any

from opentelemetry import context as otel_context

from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity, extractors
from otel_agent_identity._context import (  # re-exported: the names adapters and the processor use
    SCOPE_KEY,
    SUPPRESS_KEY,
    SUPPRESS_KEY_PLAIN,
    attach_context,
    current_context,
    detach_context,
    suppressed,
    with_value,
)

__all__ = [
    "SCOPE_KEY",
    "SUPPRESS_KEY",
    "SUPPRESS_KEY_PLAIN",
    "IdentityScope",
    "attach_context",
    "current_context",
    "current_scope",
    "delegation",
    "delegation_id_of",
    "detach_context",
    "execution",
    "new_delegation_id",
    "new_execution_id",
    "suppressed",
    "with_value",
]

_logger = logging.getLogger(__name__)
_DELEGATION_NAMESPACE = uuid.UUID("6f1c2a3e-5b7d-4e8f-9a0b-1c2d3e4f5a6b")
_warned: set[tuple[str, str]] = set()  # (what, kind of problem): bounded, whatever the values
_warned_lock = threading.Lock()


def _checked(what: str, value: Any, remember: bool = True) -> str | None:
    """``value`` when it is an acceptable id (the extractor registry's test: a non-empty printable
    str within ``max_id_length``), else None with one warning per ``what`` and kind of problem."""
    problem = extractors.registry.problem(value, remember)  # the configured max_id_length
    if problem is None:
        return value if type(value) is str else str.__str__(value)  # a str subclass: the plain str
    kind = extractors.problem_kind(problem)
    with _warned_lock:
        if (what, kind) in _warned:
            return None
        _warned.add((what, kind))
    _logger.warning("otel-agent-identity: %s is %s; ignored, a generated id is used (warned once)", what, problem)
    return None


def _uuid5_hex(key: str) -> str:
    """``uuid.uuid5(_DELEGATION_NAMESPACE, key).hex``, also for a str with lone surrogates."""
    import hashlib  # here, as uuid.uuid5 does: 3 modules an application without a hop never needs

    digest = hashlib.sha1(_DELEGATION_NAMESPACE.bytes + key.encode("utf-8", "surrogatepass")).digest()
    return uuid.UUID(bytes=digest[:16], version=5).hex


def _refuse(_value: Any) -> bool:
    return False


class IdentityScope:
    """Ids of one agent run (or one hop). ``attributes`` is what every span inside it is stamped with.

    Attributes:
        conversation_id: from the agent's extractor (see :mod:`otel_agent_identity.extractors`), or None.
        execution_id: framework run id, application-supplied, or 32 random hex characters made per run.
        delegation_id: the hop's delegation id, or None outside a hop.
        parent_execution_id: the enclosing run's execution id, for a nested run.
        parent_conversation_id: the enclosing run's conversation id, for a nested run.
        owner: the framework object whose run this is (an agent, a workflow), or None.
        session_id: the durable id of the run's framework session (e.g. ``AgentSession.session_id``),
            so a nested run handed the same session can tell.
        provisional: the conversation id is a framework fallback (a local session id) that an id
            the service assigns during the run replaces (see :meth:`learn`).
        claim_agent_span: set by the run handler: called with the first ``invoke_agent`` span
            started in this scope.
        accepts: validates an id learned during the run (see :meth:`learn`).
        span_ending: set by an adapter: called ``(span, scope)`` just before a span stamped in this
            scope ends (the SDK ``Span``, still open) when one of the scope's ids is not on it as
            the scope has it: something in the run overwrote it, or a count limit evicted it.
    """

    __slots__ = (
        "accepts",
        "attributes",
        "claim_agent_span",
        "conversation_id",
        "delegation_id",
        "execution_id",
        "owner",
        "parent_conversation_id",
        "parent_execution_id",
        "provisional",
        "session_id",
        "span_ending",
    )

    def __init__(
        self,
        conversation_id: str | None,
        execution_id: str | None,
        delegation_id: str | None = None,
        parent_execution_id: str | None = None,
        parent_conversation_id: str | None = None,
        session_id: str | None = None,
        provisional: bool = False,
        owner: Any = None,
        claim_agent_span: Callable[[Any], None] | None = None,
        accepts: Callable[[str], bool] = _refuse,
    ) -> None:
        self.conversation_id, self.execution_id, self.delegation_id = conversation_id, execution_id, delegation_id
        self.parent_execution_id, self.parent_conversation_id = parent_execution_id, parent_conversation_id
        self.session_id, self.provisional, self.owner = session_id, provisional, owner
        self.claim_agent_span, self.accepts, self.span_ending = claim_agent_span, accepts, None
        a: dict[str, Any] = {} if conversation_id is None else {attrs.GEN_AI_CONVERSATION_ID: conversation_id}
        if execution_id is not None:
            a[attrs.EXECUTION_ID] = execution_id
        if delegation_id is not None:
            a[attrs.DELEGATION_ID] = delegation_id
        self.attributes = a

    def __repr__(self) -> str:
        return (
            f"IdentityScope(conversation_id={self.conversation_id!r}, execution_id={self.execution_id!r}, "
            f"delegation_id={self.delegation_id!r}, parent_execution_id={self.parent_execution_id!r})"
        )

    def learn(self, conversation_id: Any) -> bool:
        """Adopt an id the service assigned during the run (first turn), if the scope has none yet
        or only a provisional one (then once: the run's id is not replaced again).

        Spans started from then on carry it. Returns True when adopted.
        """
        if not isinstance(conversation_id, str) or conversation_id == self.conversation_id:
            return False
        if self.conversation_id is not None and not self.provisional:
            return False
        if not self.accepts(conversation_id):
            return False
        self.provisional = False
        self.adopt(conversation_id)
        return True

    def adopt(self, conversation_id: str) -> None:
        """Make ``conversation_id`` (an accepted str) the scope's from now on; what this process
        remembers under the id it replaces (a fallback) moves to it."""
        if self.conversation_id is not None:
            continuity.delegate_contexts.rekey(self.conversation_id, conversation_id)
        self.conversation_id = conversation_id
        self.refresh()

    def refresh(self) -> None:
        """Recompute ``attributes`` after a field changed."""
        a: dict[str, Any] = {}
        if self.conversation_id is not None:
            a[attrs.GEN_AI_CONVERSATION_ID] = self.conversation_id
        if self.execution_id is not None:
            a[attrs.EXECUTION_ID] = self.execution_id
        if self.delegation_id is not None:
            a[attrs.DELEGATION_ID] = self.delegation_id
        self.attributes = a


#: the id of :func:`execution`: a one-element list shared by every task and thread that carries
#: the with-block's context, so the supplied id goes to exactly one run, whichever starts first
_NEXT_EXECUTION_ID = otel_context.create_key("agent_identity.next_execution_id")
#: the id of :func:`delegation`: the str itself, for every hop started in the with-block
_NEXT_DELEGATION_ID = otel_context.create_key("agent_identity.next_delegation_id")


def current_scope() -> IdentityScope | None:
    """The scope of the run the caller is in (from the current OpenTelemetry ``Context``), or None
    outside any instrumented run."""
    return current_context().get(SCOPE_KEY)  # type: ignore[return-value]


def new_execution_id(framework_run_id: str | None = None) -> str:
    """The execution id of a new run: ``framework_run_id``, else one supplied by :func:`execution`,
    else 128 random bits as 32 hex characters.

    The supplied id applies to the first run started in the ``with`` block, in any task or thread
    that carries its OpenTelemetry ``Context``; every other run, nested or concurrent, gets its own id.
    """
    if framework_run_id and _checked("a framework run id", framework_run_id, remember=False):
        return framework_run_id
    supplied: Any = current_context().get(_NEXT_EXECUTION_ID)
    if supplied:
        try:
            return supplied.pop()  # atomic: a second run, in any task or thread, finds it empty
        except IndexError:
            pass
    return f"{getrandbits(128):032x}"


def new_delegation_id(transport_key: str | None = None) -> str:
    """The delegation id of a new hop.

    Args:
        transport_key: a key stable across transport retries of the same hop, e.g. the A2A
            ``Message.message_id``; the id is the UUID5 of it, so a retried send keeps its id.
    Order: an id supplied by :func:`delegation`, else UUID5(``transport_key``) hex, else 128 random bits
    as 32 hex characters.
    """
    supplied: Any = current_context().get(_NEXT_DELEGATION_ID)
    if supplied is not None:
        return supplied
    if isinstance(transport_key, str) and transport_key:
        return _uuid5_hex(transport_key)
    return f"{getrandbits(128):032x}"


def delegation_id_of(transport_key: str) -> str:
    """The delegation id (32 hex characters, UUID5) a send derives from ``transport_key`` (str)."""
    return _uuid5_hex(transport_key)


@contextmanager
def execution(execution_id: str) -> Iterator[None]:
    """Use ``execution_id`` (str, at most ``max_id_length`` characters) for the next agent run started inside.

    An unacceptable id (not a str, empty, longer than ``max_id_length``, control characters or
    lone surrogates) is ignored with one warning per kind of problem: the run gets a generated id.
    Never raises.
    """
    supplied = _checked("execution(execution_id)", execution_id)
    token = attach_context(with_value(current_context(), _NEXT_EXECUTION_ID, [supplied] if supplied else None))
    try:
        yield
    finally:
        detach_context(token)


@contextmanager
def delegation(key: str | None = None, *, delegation_id: str | None = None) -> Iterator[str]:
    """Give every hop started inside one delegation id, and yield it.

    Args:
        key: the application's idempotency key (str, any length); the id is its UUID5, so a retry
            of the same work, even from another process, gets the same delegation id.
        delegation_id: an explicit id (str, at most ``max_id_length`` printable characters)
            instead of ``key``.
    With neither, 32 random hex characters are made here, shared by all sends inside the block
    (manual retries). A bad ``delegation_id`` (see :func:`execution`) or ``key`` (not a non-empty
    str) is ignored with one warning per kind of problem, and the next choice used. Never raises.
    """
    did = _checked("delegation(delegation_id)", delegation_id) if delegation_id is not None else None
    if did is None and key is not None:
        if type(key) is str and key:
            did = _uuid5_hex(key)
        else:
            _checked("delegation(key)", key)
    if did is None:
        did = f"{getrandbits(128):032x}"
    token = attach_context(with_value(current_context(), _NEXT_DELEGATION_ID, did))
    try:
        yield did
    finally:
        detach_context(token)
