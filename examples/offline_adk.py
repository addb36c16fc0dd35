"""A deterministic, offline Google ADK model (``BaseLlm``): no network, no LLM.

``OfflineLlm``: when the last content is the user's and the agent has tools, calls the first tool
with the user's text as its ``city`` argument (``request`` for an ``AgentTool``); else answers
``"seen=<n> <last tool result or user text>"``, where ``n`` is the number of contents ADK gave it:
the ground truth of whether the run had the session's earlier events. Streams too (one chunk).
"""

from __future__ import annotations

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def _text(content) -> str:
    for part in content.parts or ():
        if part.text:
            return part.text
        if part.function_response:
            return str((part.function_response.response or {}).get("result", part.function_response.response))
    return ""


class OfflineLlm(BaseLlm):
    model: str = "offline"

    async def generate_content_async(self, llm_request, stream: bool = False):
        contents = llm_request.contents
        last = contents[-1]
        answered = any(p.function_response for p in last.parts or ())
        if llm_request.tools_dict and not answered:
            name, tool = next(iter(llm_request.tools_dict.items()))
            arg = "request" if type(tool).__name__ == "AgentTool" else "city"
            call = types.FunctionCall(name=name, args={arg: _text(last)})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        text = f"seen={len(contents)} {_text(last)}"
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def seen(text: str) -> int:
    """``n`` of an answer ``"seen=<n> ..."``."""
    return int(text.split()[0].split("=")[1])


class OfflineLiveConnection:
    """A live connection of :class:`OfflineLlm`: answers each content sent with
    ``"seen=<n> <text>"`` (``n``: contents of the history and this connection so far), then a
    completed turn."""

    def __init__(self) -> None:
        import asyncio

        self.contents: list = []
        self.replies: asyncio.Queue = asyncio.Queue()

    async def send_history(self, history) -> None:
        self.contents.extend(history)
        if history and history[-1].role == "user":
            await self._reply(history[-1])

    async def send_content(self, content) -> None:
        self.contents.append(content)
        await self._reply(content)

    async def _send_content(self, content, *, partial: bool = False) -> None:
        await self.send_content(content)

    async def send_realtime(self, blob) -> None:
        return None

    async def _reply(self, content) -> None:
        text = f"seen={len(self.contents)} {_text(content)}"
        await self.replies.put(LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)])))
        await self.replies.put(LlmResponse(turn_complete=True))

    async def receive(self):
        while True:
            yield await self.replies.get()

    async def close(self) -> None:
        return None


def _connect(self, llm_request):
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def connection():
        yield OfflineLiveConnection()

    return connection()


OfflineLlm.connect = _connect
