"""Environment variables read by :class:`otel_agent_identity.AgentIdentityInstrumentor`.

Each is read once, at ``instrument()``; an argument of the same name (lower case, without the
prefix) given to ``instrument()`` wins (``..._SDK_PRIVATE_API``: environment only, read at the first
stamp). A malformed value logs one warning and the default is used.
"""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_FRAMEWORKS = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_FRAMEWORKS"
"""Comma-separated adapters to enable, e.g. ``agent_framework,a2a``. Default: every supported
framework that is importable. Unknown names are warned about and ignored."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH"
"""Longest identifier accepted from an extractor, in characters (integer 1..4096, default 256).
A longer id is dropped (never truncated: a cut id could merge two conversations), with one warning
per agent type."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_STAMP_SPANS = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_STAMP_SPANS"
"""``true`` (default) or ``false``: stamp the run's ids on every span started inside the run."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST"
"""Comma-separated destinations that may receive the run's ids as baggage (``gen_ai.conversation.id``,
``agent_identity.execution.id``, ``agent_identity.delegation.id``): URLs (an entry with ``://``:
same scheme, host and port, path prefix at a ``/`` boundary), client-side MCP server names (an
Agent Framework MCP tool's ``name``, a stdio server's command or its base name) or host patterns
(``fnmatch``, e.g. ``*.internal.example``). Default: empty, identity goes nowhere. See
``docs/threat-model.md``."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_BAGGAGE_KEYS = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_BAGGAGE_KEYS"
"""Comma-separated extra baggage keys that count as identity (``*`` wildcards, case-insensitive),
added to ``config.DEFAULT_IDENTITY_BAGGAGE_KEYS``; the guard strips them from MCP ``_meta`` and
outbound HTTP ``baggage`` headers. Default: empty."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION = (
    "OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION"
)
"""``true`` or ``false`` (default): an OpenAI Agents run with neither a ``session`` nor a
``conversation_id`` reports its ``RunConfig.group_id`` (the SDK's "e.g. a chat thread ID", which
otherwise only reaches the SDK's own traces) as ``gen_ai.conversation.id``. Opt in only when your
application sets ``group_id`` to a durable conversation id."""

OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API = "OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API"
"""``true`` (default) or ``false``: write the run's checked ids straight into an SDK span's attribute
store where the SDK's ``set_attributes`` would do nothing more (the package's one use of the SDK's
private API, detected at run time: ~0.2 bare span less per stamped span, docs/benchmarks.md);
``false``: the SDK's public API only. Read at the first write, not at ``instrument()``."""
