"""The benchmarks' one SDK tracer provider: spans are recorded but not exported (what is measured is
the instrumentation, not an exporter). It is made the global provider (the frameworks' own telemetry
uses the global one) explicitly, never at import: by the session fixture below under pytest, by
:func:`use_globally` in each script's main. The offline models come from ``examples/``, installed in
the dev venvs (``make venv``: ``pip install -e examples``); scripts import this module and their
sibling modules from their own directory (Python puts a script's directory first on ``sys.path``)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

PROVIDER = TracerProvider()


def attach_scope(scope: Any) -> Any:
    """Make ``scope`` (an ``IdentityScope``) current as a run does; returns the token for
    ``otel_agent_identity.scope.detach_context``."""
    from otel_agent_identity.scope import SCOPE_KEY, attach_context, current_context, with_value

    return attach_context(with_value(current_context(), SCOPE_KEY, scope))


def use_globally() -> TracerProvider:
    """Make :data:`PROVIDER` the global tracer provider (once per process); returns it."""
    if trace.get_tracer_provider() is not PROVIDER:
        trace.set_tracer_provider(PROVIDER)
    return PROVIDER


@pytest.fixture(scope="session", autouse=True)
def global_provider() -> TracerProvider:
    return use_globally()
