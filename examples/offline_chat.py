"""A deterministic, offline Agent Framework chat client: the only fake part of the demo and tests.

``OfflineChatClient(mode=...)``:
  - ``"service"``: acts like a service that stores history: the first turn gets a conversation id
    ``conv_<prefix>_<n>`` and later turns that send it back keep it (``conversation_id`` option).
  - ``"forgetful"``: a new conversation id on every call, whatever it was asked to continue.
  - ``"local"``: no service-side history; never returns a conversation id.
It reports how many messages it saw on each call (the ground truth of continuity: 1, 3, 5 on a
conversation that continues, 1, 1, 1 on one that forgets): in ``seen`` and, with ``truth=PATH``
(default: the ``OFFLINE_CHAT_TRUTH`` environment variable), as one JSON line per call
``{"trace_id", "messages", "conversation_id"}`` appended to that file. With service-side history the
service counts the messages it holds for the conversation plus those sent. Each call takes
``OFFLINE_MODEL_LATENCY`` seconds (``model_latency``; default 0).
When the agent has a tool and the user's last message contains ``"weather"``, it first asks for the
tool ``get_weather(city=...)``; when it names another of the agent's tools, it asks for that tool with
no arguments; then it answers with the tool's result (so runs have tool spans).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import Any

from agent_framework.observability import ChatTelemetryLayer
from model_latency import think
from opentelemetry import trace

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return "sunny"


class RawOfflineChatClient(BaseChatClient):
    OTEL_PROVIDER_NAME = "offline"

    def __init__(self, mode: str = "service", prefix: str = "offline", truth: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mode = mode
        self.prefix = prefix
        self._ids = itertools.count(1)
        self.calls = 0
        self.seen: list[int] = []  # messages the model had in context, per call
        self._threads: dict[str, int] = {}  # service-side history: conversation id -> messages held
        self.truth = truth if truth is not None else os.environ.get("OFFLINE_CHAT_TRUTH")
        # seconds between streamed words (``OFFLINE_CHAT_STREAM_DELAY``): a slow stream to walk away from
        self.stream_delay = float(os.environ.get("OFFLINE_CHAT_STREAM_DELAY") or 0)

    @property
    def STORES_BY_DEFAULT(self) -> bool:
        return self.mode != "local"

    def _conversation_id(self, options: Any) -> str | None:
        if self.mode == "local":
            return None
        asked = options.get("conversation_id") if hasattr(options, "get") else None
        if self.mode == "service" and asked:
            return asked
        return f"conv_{self.prefix}_{next(self._ids)}"

    def _reply(self, messages: list[Message], options: Any) -> list[Content]:
        last = messages[-1] if messages else None
        tools = options.get("tools") if hasattr(options, "get") else None
        text = (last.text or "") if last is not None else ""
        if tools and last is not None and last.role == "user":
            if "weather" in text.lower():
                return [Content.from_function_call(f"call_{self.calls}", "get_weather", arguments={"city": "Paris"})]
            named = next((t.name for t in tools if getattr(t, "name", None) and t.name in text), None)
            if named:
                return [Content.from_function_call(f"call_{self.calls}", named, arguments={})]
        if last is not None and last.role == "tool":
            result = next((c.result for c in last.contents if c.type == "function_result"), "")
            return [Content.from_text(f"(tool said) {result}")]
        return [Content.from_text(f"echo: {text}")]

    def _count(self, messages: list[Message], options: Any, conversation_id: str | None) -> int:
        """Messages in the model's context this call; the service keeps the thread's count."""
        asked = options.get("conversation_id") if hasattr(options, "get") else None
        held = self._threads.get(asked, 0) if conversation_id is not None and asked == conversation_id else 0
        seen = held + len(messages)
        if conversation_id is not None:
            self._threads[conversation_id] = seen + 1  # and the reply
        self.seen.append(seen)
        if self.truth:
            ctx = trace.get_current_span().get_span_context()
            line = {"trace_id": format(ctx.trace_id, "032x"), "messages": seen, "conversation_id": conversation_id}
            with open(self.truth, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
        return seen

    def _inner_get_response(self, *, messages, stream: bool, options, **kwargs: Any):
        self.calls += 1
        contents = self._reply(list(messages), options)
        conversation_id = self._conversation_id(options)
        self._count(list(messages), options, conversation_id)
        if not stream:

            async def _get() -> ChatResponse:
                await think()
                return ChatResponse(
                    messages=[Message(role="assistant", contents=contents)],
                    conversation_id=conversation_id,
                    model="offline-1",
                )

            return _get()

        async def _updates():
            await think()
            for content in contents:
                if content.type == "text":
                    for word in content.text.split(" "):
                        if self.stream_delay:
                            await asyncio.sleep(self.stream_delay)
                        yield ChatResponseUpdate(
                            role="assistant", contents=[Content.from_text(word + " ")], conversation_id=conversation_id
                        )
                else:
                    yield ChatResponseUpdate(role="assistant", contents=[content], conversation_id=conversation_id)

        return ResponseStream(_updates(), finalizer=ChatResponse.from_updates)


class OfflineChatClient(FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, RawOfflineChatClient):
    """The offline client composed with the framework's own layers, like the real clients."""
