"""A deterministic, offline ``agno.models.base.Model`` for the Agno example: no network, no LLM.

``OfflineToolModel`` calls the first tool it is given with the user's text as its ``city``
argument when the last message is the user's, else answers ``"seen=<n> weather=<tool result>"``,
where ``n`` is the number of messages Agno gave it: the ground truth of whether the run resumed
the session's history. The same rules as ``offline_langchain.OfflineToolModel``; async calls take
``OFFLINE_MODEL_LATENCY`` seconds (``model_latency``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from agno.models.base import Model
from agno.models.response import ModelResponse
from model_latency import think

_calls = itertools.count(1)


@dataclass
class OfflineToolModel(Model):
    id: str = "offline"
    name: str | None = "offline"
    provider: str | None = "offline"

    def _respond(self, messages: list, tools: list | None) -> ModelResponse:
        last = messages[-1]
        if tools and last.role == "user":
            name = (tools[0].get("function") or tools[0])["name"]
            return ModelResponse(
                role="assistant",
                content="",
                tool_calls=[
                    {
                        "id": f"call_{next(_calls)}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"city": last.get_content_string()})},
                    }
                ],
            )
        result = last.content if last.role == "tool" else "-"
        return ModelResponse(role="assistant", content=f"seen={len(messages)} weather={result}")

    def invoke(
        self,
        messages,
        assistant_message=None,
        response_format=None,
        tools=None,
        tool_choice=None,
        run_response=None,
        **kwargs,
    ) -> ModelResponse:
        return self._respond(messages, tools)

    async def ainvoke(
        self,
        messages,
        assistant_message=None,
        response_format=None,
        tools=None,
        tool_choice=None,
        run_response=None,
        **kwargs,
    ) -> ModelResponse:
        await think()
        return self._respond(messages, tools)

    def invoke_stream(
        self,
        messages,
        assistant_message=None,
        response_format=None,
        tools=None,
        tool_choice=None,
        run_response=None,
        **kwargs,
    ) -> Iterator[ModelResponse]:
        yield self._respond(messages, tools)

    async def ainvoke_stream(
        self,
        messages,
        assistant_message=None,
        response_format=None,
        tools=None,
        tool_choice=None,
        run_response=None,
        **kwargs,
    ) -> AsyncIterator[ModelResponse]:
        await think()
        yield self._respond(messages, tools)

    def _parse_provider_response(self, response: Any, **kwargs) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response
