"""A deterministic, offline CrewAI model (``BaseLLM``): no network, no LLM.

``OfflineCrewLLM`` speaks CrewAI's ReAct text. Until a message holds a tool's ``Observation``
(CrewAI appends it to the model's action): with ``delegate_to`` set and the coworker tools listed,
it delegates the task to that coworker (``Action: delegate_work_to_coworker``); else, with a tool
listed (``only one name of [...]`` in the prompt), it calls the first one with ``{"city": "Paris"}``.
Then it answers ``"Final Answer: seen=<n> <observation>"``, where ``n`` is the number of messages
CrewAI gave it. A plain chat call (a conversational Flow turn: no ReAct prompt) answers
``"seen=<n>"``: the ground truth of whether the turn had the session's earlier messages. Each
call's message count is also kept in ``calls``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from crewai.llms.base_llm import BaseLLM

_TOOLS = re.compile(r"only one name of \[([^\]]*)\]")
DELEGATE = "delegate_work_to_coworker"  # CrewAI's "Delegate work to coworker" tool, as the prompt lists it


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    return content if isinstance(content, str) else str(content)


class OfflineCrewLLM(BaseLLM):
    model: str = "offline"
    delegate_to: str | None = None
    calls: list[int] = []  # noqa: RUF012 - a pydantic field: copied per instance

    def __init__(self, **data: Any) -> None:
        data.setdefault("model", "offline")  # CrewAI's validator reads the input, not the default
        super().__init__(**data)

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, **kwargs):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        self.calls.append(len(messages))
        listed = _TOOLS.search(_text(messages[0]))
        if listed is None:
            return f"seen={len(messages)}"
        answered = [t for t in map(_text, messages[1:]) if "Observation:" in t]
        if answered:
            observation = answered[-1].rsplit("Observation:", 1)[1].strip()
            return f"Thought: I now know the final answer\nFinal Answer: seen={len(messages)} {observation}"
        names = [n.strip() for n in listed.group(1).split(",") if n.strip()]
        if self.delegate_to and DELEGATE in names:
            args = {"task": "weather in Paris?", "context": "the user asks", "coworker": self.delegate_to}
            return f"Thought: delegate\nAction: {DELEGATE}\nAction Input: {json.dumps(args)}"
        tool = next((n for n in names if n != DELEGATE and not n.endswith("_to_coworker")), None)
        if tool is None:
            return f"Thought: I now know the final answer\nFinal Answer: seen={len(messages)}"
        return f'Thought: use a tool\nAction: {tool}\nAction Input: {{"city": "Paris"}}'

    async def acall(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, **kwargs):
        return self.call(messages, tools, callbacks, available_functions, from_task, **kwargs)

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False


def seen(text: Any) -> int:
    """``n`` of an answer ``"seen=<n> ..."``."""
    return int(str(text).split("seen=", 1)[1].split()[0])


class OfflineA2ACaller(OfflineCrewLLM):
    """An agent with ``a2a=A2AClientConfig(endpoint=...)``: CrewAI asks it for an ``AgentResponse``
    (JSON). With no earlier A2A exchange in the prompt it delegates the task to the first A2A agent
    listed (``is_a2a=true``); once the remote agent answered, it returns ``"remote: <answer>"``."""

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, **kwargs):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        self.calls.append(len(messages))
        text = "\n".join(map(_text, messages))
        previous = text.split("<PREVIOUS_A2A_CONVERSATION>")[-1].split("</PREVIOUS_A2A_CONVERSATION>")[0].strip()
        listed = re.search(r'"url": "([^"]+)"', text)
        if not previous and listed:  # CrewAI's agent ids are the endpoints, with a trailing slash
            answer = {"a2a_ids": [listed.group(1).rstrip("/") + "/"], "message": "weather in Paris?", "is_a2a": True}
        else:
            answer = {"a2a_ids": [], "message": f"remote: {previous}", "is_a2a": False}
        return json.dumps(answer)
