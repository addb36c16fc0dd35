"""A deterministic, offline Strands Agents model (``strands.models.Model``): no network, no LLM.

``OfflineModel``: when the last message is the user's and the agent has tools, calls the first tool
with the user's text as its ``input`` argument (Strands' agent-as-tool argument), or as
``tool_input`` when ``tool_arg`` says so; else answers ``"seen=<n> <last tool result or user
text>"``, where ``n`` is the number of messages Strands gave it: the ground truth of whether the run
had the session's earlier messages. ``handoff_to``: a Swarm node's model, which first calls the
``handoff_to_agent`` tool to that agent.
"""

from __future__ import annotations

from typing import Any


def _text(message: dict) -> str:
    for block in message.get("content") or ():
        if "text" in block:
            return block["text"]
        if "toolResult" in block:
            for part in block["toolResult"].get("content") or ():
                if "text" in part:
                    return part["text"]
    return ""


def _answered(message: dict) -> bool:
    return any("toolResult" in block for block in message.get("content") or ())


def seen(text: str) -> int:
    """``n`` of an answer ``"seen=<n> ..."``."""
    return int(str(text).split()[0].split("=")[1])


def _model_base():
    from strands.models import Model

    return Model


class OfflineModel(_model_base()):  # type: ignore[misc]
    """The offline model. ``tool_arg``: the argument name the first tool gets the user's text in;
    ``handoff_to``: call ``handoff_to_agent`` to this agent first (a Swarm); ``fail``: raise this
    exception from the model call."""

    def __init__(self, tool_arg: str = "input", handoff_to: str | None = None, fail: BaseException | None = None):
        self.config: dict[str, Any] = {"model_id": "offline"}
        self.tool_arg, self.handoff_to, self.fail = tool_arg, handoff_to, fail

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):  # pragma: no cover
        raise NotImplementedError
        yield

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        if self.fail is not None:
            raise self.fail
        last = messages[-1]
        yield {"messageStart": {"role": "assistant"}}
        if tool_specs and not _answered(last):
            if self.handoff_to is not None:
                name, args = "handoff_to_agent", {"agent_name": self.handoff_to, "message": _text(last)}
            else:
                name, args = tool_specs[0]["name"], {self.tool_arg: _text(last)}
            if name in {spec["name"] for spec in tool_specs}:
                import json

                use_id = f"tool-{len(messages)}"
                yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": use_id, "name": name}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
                yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {}}}
                return
        yield {"contentBlockDelta": {"delta": {"text": f"seen={len(messages)} {_text(last)}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {}}}
