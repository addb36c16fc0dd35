"""Test helpers: make a run's :class:`~otel_agent_identity.scope.IdentityScope` current by hand, as
an adapter's run does (:meth:`otel_agent_identity._runs.Run.enter`)."""

from __future__ import annotations

from contextvars import Token

from otel_agent_identity.scope import (
    SCOPE_KEY,
    IdentityScope,
    attach_context,
    current_context,
    detach_context,
    with_value,
)


def attach(scope: IdentityScope | None) -> Token:
    """Make ``scope`` current (in a new current ``Context``); pass the token to :func:`detach`."""
    return attach_context(with_value(current_context(), SCOPE_KEY, scope))


def detach(token: Token) -> None:
    """Restore the scope that was current before :func:`attach`; a token from another context is ignored."""
    detach_context(token)
