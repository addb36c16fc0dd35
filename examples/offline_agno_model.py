"""A deterministic offline ``agno.models.base.Model``: no network, no LLM.

Rules, on the last message:
- a user message with ``weather in <city>`` and a ``get_weather`` tool: call the tool;
- a user message ``delegate: <task>`` and a ``delegate_task_to_member`` tool: delegate ``<task>``
  to the member ``delegate_to``;
- a tool result: ``<prefix>: <result>``;
- anything else: ``<prefix>: <text> (history=<n>)``, ``n`` = the user messages before it (what the
  model really saw of the session's history).

Every call is recorded in ``calls`` with the ``RunOutput`` run id and session id Agno handed it:
the ground truth the tests compare the spans with.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse


@dataclass
class Call:
    run_id: str | None
    session_id: str | None
    history: int


@dataclass
class OfflineModel(Model):
    id: str = "offline"
    name: str | None = "offline"
    provider: str | None = "offline"
    prefix: str = "offline"
    delegate_to: str | None = None
    calls: list[Call] = field(default_factory=list)
    _lock: Any = field(default_factory=threading.Lock, repr=False)

    def _respond(self, messages: list[Message], tools: list | None, run_response: Any) -> ModelResponse:
        last = messages[-1]
        users = [m for m in messages if m.role == "user"]
        history = max(len(users) - 1, 0)
        with self._lock:
            self.calls.append(
                Call(getattr(run_response, "run_id", None), getattr(run_response, "session_id", None), history)
            )
        names = {(t.get("function") or t).get("name") for t in tools or []}
        text = last.get_content_string() if hasattr(last, "get_content_string") else str(last.content)
        if last.role == "tool":
            return ModelResponse(role="assistant", content=f"{self.prefix}: {last.content}")
        match = re.search(r"weather in (\w+)", text or "")
        if match and "get_weather" in names:
            return self._tool_call("get_weather", {"city": match.group(1)})
        if text and text.startswith("delegate:") and "delegate_task_to_member" in names:
            return self._tool_call(
                "delegate_task_to_member", {"member_id": self.delegate_to, "task": text[len("delegate:") :].strip()}
            )
        return ModelResponse(role="assistant", content=f"{self.prefix}: {text} (history={history})")

    @staticmethod
    def _tool_call(name: str, arguments: dict) -> ModelResponse:
        return ModelResponse(
            role="assistant",
            content="",
            tool_calls=[
                {
                    "id": f"call_{name}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        )

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
        return self._respond(messages, tools, run_response)

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
        return self._respond(messages, tools, run_response)

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
        yield from self._chunks(self._respond(messages, tools, run_response))

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
        for chunk in self._chunks(self._respond(messages, tools, run_response)):
            yield chunk

    @staticmethod
    def _chunks(response: ModelResponse) -> Iterator[ModelResponse]:
        if response.tool_calls:
            yield response
            return
        words = (response.content or "").split(" ")
        for i, word in enumerate(words):
            yield ModelResponse(role="assistant", content=word if i == 0 else " " + word)

    def _parse_provider_response(self, response: Any, **kwargs) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response
