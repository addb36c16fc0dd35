"""What this instrumentation instruments, as opentelemetry-python-contrib packages declare it.

``_instruments``: required all together (none: no framework is required). ``_instruments_any``: any
one of them suffices (contrib's ``instruments-any`` convention; pyproject.toml's ``instruments-any``
extra lists the same, for the ``opentelemetry-instrument`` launcher's check of the distribution), one
per adapter, the requirement its ``REQUIREMENTS`` checks when the application imports that
framework: a framework missing or of another version disables its own adapter, never the others.
tests/test_instrumentor.py keeps the three lists equal. ``SCHEMA_URL``: the schema of our tracer and
meter.
"""

from opentelemetry.semconv.schemas import Schemas

#: semantic conventions 1.37.0, where ``gen_ai.provider.name`` (which our agent spans carry) replaced
#: ``gen_ai.system``; the GenAI names are still Development
SCHEMA_URL = Schemas.V1_37_0.value

_instruments: tuple[str, ...] = ()
_instruments_any = (
    "agent-framework-core >= 1.23, < 2",
    "a2a-sdk >= 0.3, < 2, != 1.0.*, != 1.1.*, != 1.2.*",
    "mcp >= 2.3, < 3",
    "agno >= 3.1.3, < 4",
    "langgraph >= 1.2.6, < 2",
    "openai-agents >= 0.24, < 0.25",
    "pydantic-ai-slim >= 2.68, < 3",
    "google-adk >= 2.13, < 3",
    "strands-agents >= 1.62, < 2",
    "crewai >= 1.15, < 2",
    "llama-index-workflows >= 2.26, < 3",
)
