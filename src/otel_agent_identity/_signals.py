"""Continuity signals a run reports beyond its ids: marks on its agent span and counted metrics.

One function per rule; :class:`otel_agent_identity._runs.Run` calls them as it starts, learns
whether it resumed state, and ends. ``agent`` is the framework object whose run it is (its ``name``
labels the metrics), ``framework`` the adapter's name.
"""

from __future__ import annotations

from typing import Any

from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity, metrics
from otel_agent_identity.scope import IdentityScope
from otel_agent_identity.span_processor import set_trusted


def agent_name(agent: Any) -> str | None:
    """The ``name`` of a framework agent when it is a str, else None."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else None


def count_not_resumed(agent: Any, framework: str) -> None:
    """A run serving an A2A request that asked to continue a context started from no state."""
    metrics.count(metrics.STATE_NOT_RESUMED, agent=agent_name(agent), framework=framework)


def count_changed(agent: Any, framework: str) -> None:
    """A run's agent span newly marked ``agent_identity.conversation.changed`` (a continuity break)."""
    metrics.count(metrics.CONVERSATION_CHANGES, agent=agent_name(agent), framework=framework, reason=metrics.REASON_RUN)


def check_served_conversation(span: Any, agent: Any, framework: str, effective: str | None, resumed: Any) -> None:
    """The run serving an A2A request ended in conversation ``effective``: a contextId this process
    served under another agent conversation last time marks ``span``
    ``agent_identity.conversation.previous_id`` (that one) and, unless the framework says the run
    resumed state (``resumed is True``), is counted."""
    last = continuity.served_run(agent_name(agent), effective)
    if last is not None:
        set_trusted(span, {attrs.CONVERSATION_PREVIOUS_ID: last})
        if resumed is not True:
            metrics.count(metrics.CONVERSATION_REBUILT, agent=agent_name(agent), framework=framework)


def check_parent(
    span: Any, scope: IdentityScope, effective: str | None, own_story: bool, agent: Any, framework: str
) -> None:
    """A nested in-process run (not a hop: the caller passes no CLIENT run; an in-process delegation,
    such as an agent used as a tool or a Swarm node, is one) whose conversation id ``effective`` is
    another than its parent's (``scope.parent_conversation_id``, on its span since the start), with
    no mapping declared (``own_story``: inside :func:`otel_agent_identity.new_conversation`): marked
    ``agent_identity.conversation.parent_differs`` and counted."""
    parent = scope.parent_conversation_id
    if not parent or not effective or effective == parent or own_story:
        return
    span.set_attribute(attrs.CONVERSATION_PARENT_DIFFERS, True)
    metrics.count(metrics.PARENT_CONVERSATION_DIFFERS, agent=agent_name(agent), framework=framework)
