"""pytest plugin (``-p agent_identity_peer_plugin``) that turns the plugin on for a framework's own
test suite, as ``opentelemetry-instrument`` would at start-up: an SDK tracer provider (recording
spans, exported nowhere) and ``AgentIdentityInstrumentor().instrument()``, before the suite's
modules import the framework (so the import hooks are what wraps it).

``AGENT_IDENTITY_PEER_PROVIDER=0`` (``peers.py`` sets it for a suite that sets its own global
provider): no provider of ours, ``instrument()`` alone, as for an application that sets its
provider after ``opentelemetry-instrument`` (the span processor attaches to it at an agent run's
start)."""

from __future__ import annotations

import os


def pytest_configure(config) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agent_identity import AgentIdentityInstrumentor

    if os.environ.get("AGENT_IDENTITY_PEER_PROVIDER", "1") == "0":
        AgentIdentityInstrumentor().instrument()
        return
    provider = TracerProvider()  # every span records (ALWAYS_ON): every code path of ours runs
    trace.set_tracer_provider(provider)
    AgentIdentityInstrumentor().instrument(tracer_provider=provider)
