"""Attribute names this package emits. The one table is ``docs/attributes.md``; a test keeps them equal."""

from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_AGENT_ID,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_OPERATION_NAME,
    GenAiOperationNameValues,
)

__all__ = [
    "GEN_AI_AGENT_ID",
    "GEN_AI_AGENT_NAME",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_OPERATION_NAME",
    "INVOKE_AGENT",
    "INVOKE_WORKFLOW",
]

INVOKE_AGENT = GenAiOperationNameValues.INVOKE_AGENT.value
INVOKE_WORKFLOW = GenAiOperationNameValues.INVOKE_WORKFLOW.value

EXECUTION_ID = "agent_identity.execution.id"
PARENT_EXECUTION_ID = "agent_identity.parent.execution.id"
DELEGATION_ID = "agent_identity.delegation.id"
CONVERSATION_REQUESTED_ID = "agent_identity.conversation.requested_id"
CONVERSATION_CHANGED = "agent_identity.conversation.changed"
CONVERSATION_SOURCE = "agent_identity.conversation.source"
UPSTREAM_CONVERSATION_ID = "agent_identity.upstream.conversation.id"
UPSTREAM_EXECUTION_ID = "agent_identity.upstream.execution.id"
UPSTREAM_DELEGATION_ID = "agent_identity.upstream.delegation.id"
UPSTREAM_MISMATCH = "agent_identity.upstream.mismatch"
