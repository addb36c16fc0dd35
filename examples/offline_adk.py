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
