"""Framework adapters, one module each. Each module defines ``NAME``, ``REQUIREMENTS`` (pip
requirement strings of the versions it knows), ``instrument(handler)`` and ``uninstrument()``."""

#: adapter name -> module, in instrumentation order
ADAPTERS = {
    "agent_framework": "otel_agent_identity.adapters.agent_framework",
}
