"""A deterministic, offline LLM for LlamaIndex agent workflows (examples, tests, benchmarks).

``offline_llm(delay=0.0)`` is LlamaIndex's own ``MockFunctionCallingLLM`` (``is_chat_model=True``)
driven by :func:`respond`: it reports how many conversation messages (system prompt left out) it
was given, the ground truth of whether the workflow resumed its memory, and makes a ``chat
offline`` span per call (attribute ``offline.seen``), as an instrumented model client would.

What it answers, from the last message:

- the user's ``"call <tool> <json arguments>"`` (a tool the agent has): that tool call;
- anything else: ``"seen=<n>"`` (after a tool result: ``"seen=<n> tool=<result>"``).

``delay`` seconds are awaited before each answer in streamed calls (``FunctionAgent``'s default);
0 by default. ``seen(text)`` reads ``n`` back from an answer.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from opentelemetry import trace

_tracer = trace.get_tracer("offline-llama-index")
_calls = itertools.count(1)


def respond(messages: Sequence[ChatMessage], tools: Sequence[Any] = ()) -> ChatMessage:
    """The model's answer to ``messages`` (see the module docstring)."""
    conversation = [m for m in messages if m.role != MessageRole.SYSTEM]
    with _tracer.start_as_current_span("chat offline") as span:
        span.set_attribute("offline.seen", len(conversation))
        last = conversation[-1] if conversation else None
        text = (last.content or "") if last is not None else ""
        if last is not None and last.role == MessageRole.USER and text.startswith("call "):
            name, _, arguments = text[5:].partition(" ")
            if any(t.metadata.name == name for t in tools):
                call = ToolCallBlock(
                    tool_call_id=f"call_{next(_calls)}", tool_name=name, tool_kwargs=json.loads(arguments or "{}")
                )
                return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        answer = f"seen={len(conversation)}"
        if last is not None and last.role == MessageRole.TOOL:
            answer += f" tool={text}"
        return ChatMessage(role=MessageRole.ASSISTANT, content=answer)


def offline_llm(delay: float = 0.0) -> MockFunctionCallingLLM:
    """The offline model (a ``FunctionCallingLLM``: ``FunctionAgent``, ``AgentWorkflow``)."""

    def generate(messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        if not delay:
            return respond(messages, kwargs.get("tools") or ())
        return _later(delay, messages, kwargs.get("tools") or ())

    return MockFunctionCallingLLM(response_generator=generate, is_chat_model=True)


async def _later(delay: float, messages: Sequence[ChatMessage], tools: Sequence[Any]) -> AsyncIterator[ChatMessage]:
    await asyncio.sleep(delay)
    yield respond(messages, tools)


def seen(text: Any) -> int:
    """``n`` of an answer ``"seen=<n>..."`` (an ``AgentOutput`` or its text)."""
    text = str(getattr(text, "response", text))
    if "seen=" not in text:
        raise ValueError(f"not an offline answer: {text!r}")
    return int(text.split("seen=", 1)[1].split()[0])
