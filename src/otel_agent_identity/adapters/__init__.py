"""Framework adapters, one module each. Each module defines ``NAME``, ``REQUIREMENTS`` (pip
requirement strings of the versions it knows), ``instrument(handler)`` and ``uninstrument()``."""

#: adapter name -> module, in instrumentation order
ADAPTERS = {
    "agent_framework": "otel_agent_identity.adapters.agent_framework",
    "agno": "otel_agent_identity.adapters.agno",
    "langgraph": "otel_agent_identity.adapters.langgraph",
    "a2a": "otel_agent_identity.adapters.a2a_sdk",
    "mcp": "otel_agent_identity.adapters.mcp",
    "openai_agents": "otel_agent_identity.adapters.openai_agents",
    "pydantic_ai": "otel_agent_identity.adapters.pydantic_ai",
    "google_adk": "otel_agent_identity.adapters.google_adk",
    "http": "otel_agent_identity.adapters.http_clients",
}

#: boundary guards (identity never leaves the process): installed whenever their library is
#: importable, whatever ``frameworks`` says
GUARDS = frozenset({"mcp", "http"})
