"""Framework adapters, one module (A2A: one package) each. Each defines ``NAME``, ``REQUIREMENTS``
(pip requirement strings of the versions it knows), the wrap functions :data:`HOOKS` names and
``uninstrument()`` (restores everything it wrapped: :class:`._base.Wrapped` does both)."""

#: adapter name -> module (imported only when one of its :data:`HOOKS` modules is imported)
ADAPTERS = {
    "agent_framework": "otel_agent_identity.adapters.agent_framework",
    "agno": "otel_agent_identity.adapters.agno",
    "langgraph": "otel_agent_identity.adapters.langgraph",
    "a2a": "otel_agent_identity.adapters.a2a",
    "mcp": "otel_agent_identity.adapters.mcp",
    "openai_agents": "otel_agent_identity.adapters.openai_agents",
    "pydantic_ai": "otel_agent_identity.adapters.pydantic_ai",
    "google_adk": "otel_agent_identity.adapters.google_adk",
    "strands": "otel_agent_identity.adapters.strands",
    "crewai": "otel_agent_identity.adapters.crewai",
    "llama_index": "otel_agent_identity.adapters.llama_index",
    "http": "otel_agent_identity.adapters.http_clients",
}

#: What is wrapped when: ``(module the application imports, adapter name, function of the adapter
#: module)``. ``instrument()`` registers a post-import hook per module (wrapt); when the application
#: imports it (or had imported it already), the adapter module is loaded, its ``REQUIREMENTS``
#: checked once, and the function called with the run handler. A function may import more of the
#: same framework, never another library; where a framework's modules import each other in a cycle
#: (Agno), each module gets a row and the function wraps only what is fully imported (idempotent).
#: A new adapter adds its rows here.
HOOKS = (
    ("agent_framework", "agent_framework", "instrument"),
    ("agent_framework_a2a", "agent_framework", "instrument_a2a_agent"),
    ("agno.agent.agent", "agno", "instrument"),  # Agno: each module as it finishes (imports cycle)
    ("agno.agent._run", "agno", "instrument"),
    ("agno.team.team", "agno", "instrument"),
    ("agno.team._init", "agno", "instrument"),
    ("agno.workflow.workflow", "agno", "instrument"),
    ("agno.run.background", "agno", "instrument"),
    ("agno.agent._storage", "agno", "instrument"),
    ("agno.team._storage", "agno", "instrument"),
    ("langgraph.pregel", "langgraph", "instrument"),
    ("a2a.client.base_client", "a2a", "instrument_client"),
    ("a2a.server.request_handlers.default_request_handler_v2", "a2a", "instrument_server"),
    ("a2a.server.request_handlers.default_request_handler", "a2a", "instrument_server"),
    ("a2a.server.routes.jsonrpc_dispatcher", "a2a", "instrument_server"),
    ("a2a.server.routes.rest_dispatcher", "a2a", "instrument_server"),
    ("mcp", "mcp", "instrument"),
    ("agent_framework._mcp", "mcp", "instrument_agent_framework_tools"),
    ("agents", "openai_agents", "instrument"),
    ("pydantic_ai", "pydantic_ai", "instrument"),
    ("google.adk.runners", "google_adk", "instrument"),
    ("strands", "strands", "instrument"),  # Strands: Agent; Swarm and Graph as their modules load
    ("strands.multiagent.swarm", "strands", "instrument"),
    ("strands.multiagent.graph", "strands", "instrument"),
    ("strands.agent.a2a_agent", "strands", "instrument_a2a_agent"),
    ("crewai", "crewai", "instrument"),  # the package: its __init__ imports Crew, Flow and the agent tools
    ("crewai.a2a.utils.delegation", "crewai", "instrument_a2a_client"),
    ("crewai.a2a.utils.task", "crewai", "instrument_a2a_server"),
    ("workflows.workflow", "llama_index", "instrument"),
    ("llama_index.core.agent.workflow", "llama_index", "instrument_agents"),
    ("httpcore", "http", "instrument"),
    ("httpcore2", "http", "instrument"),
    ("requests.adapters", "http", "instrument"),
    ("urllib3.connection", "http", "instrument"),
    ("aiohttp.client_reqrep", "http", "instrument"),
)

#: boundary guards (identity never leaves the process): installed whenever their library is
#: imported, whatever ``frameworks`` says
GUARDS = frozenset({"mcp", "http"})
