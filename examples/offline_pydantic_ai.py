"""Deterministic, offline Pydantic AI models (``FunctionModel``): no network, no LLM.

``tool_model(tool)``: when the last message is the user's, calls ``tool`` with the user's text as
its ``city`` argument; else answers ``"seen=<n> <tool result>"``. ``echo_model()``: answers
``"seen=<n> echo: <text>"`` at once. ``n`` is the number of messages Pydantic AI gave the model:
the ground truth of whether the run had the conversation's earlier messages. Both stream too.
"""

from __future__ import annotations

import json

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel


def _last_user_text(messages) -> str:
    for part in reversed(messages[-1].parts):
        if getattr(part, "part_kind", "") == "user-prompt" and isinstance(part.content, str):
            return part.content
    return ""


def _tool_result(messages):
    returned = [p for p in messages[-1].parts if getattr(p, "part_kind", "") == "tool-return"]
    return returned[-1].content if returned else None


def tool_model(tool: str) -> FunctionModel:
    """Calls ``tool(city=<user text>)``, then answers ``"seen=<n> <tool result>"``."""

    def answer(messages):
        result = _tool_result(messages)
        if result is not None:
            return f"seen={len(messages)} {result}"
        return None

    def model(messages, info):
        text = answer(messages)
        if text is not None:
            return ModelResponse(parts=[TextPart(text)])
        return ModelResponse(parts=[ToolCallPart(tool, {"city": _last_user_text(messages)})])

    async def stream(messages, info):
        text = answer(messages)
        if text is not None:
            yield text
        else:
            yield {0: DeltaToolCall(name=tool, json_args=json.dumps({"city": _last_user_text(messages)}))}

    return FunctionModel(model, stream_function=stream, model_name="offline-tool")


def echo_model() -> FunctionModel:
    """Answers ``"seen=<n> echo: <user text>"``."""

    def model(messages, info):
        return ModelResponse(parts=[TextPart(f"seen={len(messages)} echo: {_last_user_text(messages)}")])

    async def stream(messages, info):
        yield f"seen={len(messages)} echo: {_last_user_text(messages)}"

    return FunctionModel(model, stream_function=stream, model_name="offline-echo")


def seen(output: str) -> int:
    """``n`` of an answer ``"seen=<n> ..."``."""
    return int(output.split()[0].split("=")[1])
