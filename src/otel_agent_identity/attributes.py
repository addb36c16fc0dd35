"""Attribute names this package emits. The one table is ``docs/attributes.md``; a test keeps them equal."""

# The GenAI semconv names, as literals: importing the semconv package's incubating
# ``gen_ai_attributes`` module (hundreds of constants and enums) cost every application ~200
# gc-tracked objects and a module at start-up for seven strings. A test checks them against it.
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"

__all__ = [
    "GEN_AI_AGENT_DESCRIPTION",
    "GEN_AI_AGENT_ID",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_PROVIDER_NAME",
    "GEN_AI_WORKFLOW_NAME",
    "INVOKE_AGENT",
    "INVOKE_WORKFLOW",
]

INVOKE_AGENT = "invoke_agent"  # gen_ai.operation.name values
INVOKE_WORKFLOW = "invoke_workflow"
PROVIDER_OPENAI = "openai"  # a gen_ai.provider.name value

EXECUTION_ID = "agent_identity.execution.id"
PARENT_EXECUTION_ID = "agent_identity.parent.execution.id"
PARENT_CONVERSATION_ID = "agent_identity.parent.conversation.id"
CONVERSATION_PARENT_DIFFERS = "agent_identity.conversation.parent_differs"
CONVERSATION_PREVIOUS_ID = "agent_identity.conversation.previous_id"
LAST_AGENT_NAME = "agent_identity.last_agent.name"
DELEGATION_ID = "agent_identity.delegation.id"
CONVERSATION_REQUESTED_ID = "agent_identity.conversation.requested_id"
CONVERSATION_ANSWERED_BEFORE = "agent_identity.conversation.answered_before"
CONVERSATION_CHANGED = "agent_identity.conversation.changed"
CONVERSATION_SOURCE = "agent_identity.conversation.source"
CONVERSATION_RESUMED = "agent_identity.conversation.resumed"
UPSTREAM_CONVERSATION_ID = "agent_identity.upstream.conversation.id"
UPSTREAM_EXECUTION_ID = "agent_identity.upstream.execution.id"
UPSTREAM_DELEGATION_ID = "agent_identity.upstream.delegation.id"
UPSTREAM_MISMATCH = "agent_identity.upstream.mismatch"
DELEGATION_DUPLICATE = "agent_identity.delegation.duplicate"
DELEGATION_REDELIVERED = "agent_identity.delegation.redelivered"
SEND_CANCELLED = "agent_identity.send.cancelled"

# A2A semantic conventions (GenAI semconv "Agent2Agent Protocol" page, docs/gen-ai/a2a.md and
# docs/registry/attributes/a2a.md in open-telemetry/semantic-conventions-genai, status Development).
# The installed opentelemetry-semantic-conventions package does not define them yet.
A2A_METHOD_NAME = "a2a.method.name"
A2A_MESSAGE_ID = "a2a.message.id"
A2A_MESSAGE_REFERENCE_TASK_IDS = "a2a.message.reference_task_ids"
A2A_TASK_ID = "a2a.task.id"
A2A_TASK_STATE = "a2a.task.state"
A2A_TENANT = "a2a.tenant"
A2A_PROTOCOL_VERSION = "a2a.protocol.version"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
