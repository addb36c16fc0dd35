"""A deterministic, offline langchain-core chat model for LangGraph examples and tests.

``OfflineToolModel`` calls the first bound tool (``bind_tools``) with the user's text as its
``city`` argument when the last message is the user's, else answers ``"seen=<n> weather=<tool
result>"``, where ``n`` is the number of messages it was given: the ground truth of whether the
graph resumed the thread's history; an async call takes ``OFFLINE_MODEL_LATENCY`` seconds
(``model_latency``). It makes a ``chat offline`` span per call (attribute
``offline.seen``), as an instrumented model client would.
"""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from model_latency import think
from opentelemetry import trace

_tracer = trace.get_tracer("offline-langchain")
_calls = itertools.count(1)


class OfflineToolModel(BaseChatModel):
    """Calls the first bound tool when the last message is the user's, else answers
    ``"seen=<n> weather=<tool result>"`` where n is the number of messages it was given."""

    @property
    def _llm_type(self) -> str:
        return "offline"

    def bind_tools(self, tools: Any, **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        with _tracer.start_as_current_span("chat offline") as span:
            span.set_attribute("offline.seen", len(messages))
            tools = kwargs.get("tools") or []
            last = messages[-1]
            if tools and isinstance(last, HumanMessage):
                name = tools[0]["function"]["name"]
                message = AIMessage(
                    content="",
                    tool_calls=[{"name": name, "args": {"city": str(last.content)}, "id": f"call_{next(_calls)}"}],
                )
            else:
                result = last.content if isinstance(last, ToolMessage) else "-"
                message = AIMessage(content=f"seen={len(messages)} weather={result}")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        await think()  # OFFLINE_MODEL_LATENCY seconds, then the same answer as a sync call
        return self._generate(messages, stop, None, **kwargs)
