"""Offline Pydantic AI models for the tests: real ``FunctionModel``s whose answers are their ground truth."""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import DeltaToolCall

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
PARENT_EXEC, PARENT_CONV = "agent_identity.parent.execution.id", "agent_identity.parent.conversation.id"
RESUMED, DIFFERS = "agent_identity.conversation.resumed", "agent_identity.conversation.parent_differs"


def _returned(messages) -> list:
    return [p for p in messages[-1].parts if getattr(p, "part_kind", "") == "tool-return"]


def tool_then_count(tool: str, args: dict | None = None):
    """A model function: first calls ``tool`` with ``args``, then answers ``"saw N: <tool result>"``
    (N: the messages it was given, the ground truth of what history the run had)."""

    def model(messages, info):
        returned = _returned(messages)
        if returned:
            return ModelResponse(parts=[TextPart(f"saw {len(messages)}: {returned[-1].content}")])
        return ModelResponse(parts=[ToolCallPart(tool, args or {})])

    return model


def count(messages, info):
    """A model function that answers ``"saw N"`` at once."""
    return ModelResponse(parts=[TextPart(f"saw {len(messages)}")])


async def stream_count(messages, info):
    """A streaming model function: ``"saw "``, then N."""
    yield "saw "
    yield str(len(messages))


def stream_tool_then_count(tool: str, args: dict | None = None):
    """The streaming counterpart of :func:`tool_then_count`."""

    async def model(messages, info):
        returned = _returned(messages)
        if returned:
            yield f"saw {len(messages)}: {returned[-1].content}"
        else:
            yield {0: DeltaToolCall(name=tool, json_args=json.dumps(args or {}))}

    return model
