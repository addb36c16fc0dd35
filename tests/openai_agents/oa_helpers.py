"""Offline pieces for the OpenAI Agents tests: ScriptedModel steps whose reply reports what the
model saw (the ground truth), a tool that opens an app span and calls HTTP, and a real local
HTTP service (ThreadingHTTPServer on 127.0.0.1) for tools and the OpenAI Conversations API."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from opentelemetry import trace

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"
PARENT_EXEC = "agent_identity.parent.execution.id"
PARENT_CONV = "agent_identity.parent.conversation.id"
LAST_AGENT = "agent_identity.last_agent.name"

tracer = trace.get_tracer("oa-tests")


def items_seen(call: Any) -> int:
    """How many input items the model got: 1 on a first turn, more when history was resumed."""
    return 1 if isinstance(call.input, str) else len(call.input)


def reply_seen() -> ModelStep:
    """A final answer ``seen N`` (N = input items the model got)."""
    return ModelStep.respond(lambda call: [assistant_message(f"seen {items_seen(call)}")])


_CALL_IDS = itertools.count(1)


def call_tool(name: str, arguments: dict) -> ModelStep:
    """A model turn that calls tool ``name`` (a fresh call id each time, as a real model gives)."""
    return ModelStep(output=[function_call(name, arguments, call_id=f"call_{next(_CALL_IDS)}")])


@function_tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    with tracer.start_as_current_span("tool-work") as span:
        span.set_attribute("city", city)
    return "sunny"


def agent_with_tool(name: str, steps: list, tools: list | None = None, **kwargs) -> Agent:
    return Agent(
        name=name,
        instructions="be brief",
        model=ScriptedModel(steps),
        tools=[lookup] if tools is None else tools,
        **kwargs,
    )


def spans_named(spans, prefix: str) -> list:
    return [s for s in spans if s.name.startswith(prefix)]


class _Handler(BaseHTTPRequestHandler):
    server: LocalService._Server

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, body: dict, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        n = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self) -> None:
        store = self.server.conversations
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[:2] == ["v1", "conversations"] and len(parts) == 4 and parts[3] == "items":
            items = store.get(parts[2], [])
            self._send({"object": "list", "data": items, "first_id": None, "last_id": None, "has_more": False})
        else:
            self._send({"path": self.path, "headers": dict(self.headers)})

    def do_POST(self) -> None:
        store = self.server.conversations
        parts = self.path.split("?")[0].strip("/").split("/")
        body = self._body()
        if parts == ["v1", "conversations"]:
            cid = f"conv_srv_{len(store) + 1}"
            store[cid] = []
            self._send({"id": cid, "object": "conversation", "created_at": 0, "metadata": {}})
        elif parts[:2] == ["v1", "conversations"] and len(parts) == 4 and parts[3] == "items":
            added = []
            for item in body.get("items", []):
                item = dict(item, id=f"item_{len(store[parts[2]]) + len(added)}")
                item.setdefault("type", "message")
                item.setdefault("status", "completed")
                if isinstance(item.get("content"), str):
                    kind = "input_text" if item.get("role") == "user" else "output_text"
                    item["content"] = [{"type": kind, "text": item["content"]}]
                added.append(item)
            store[parts[2]].extend(added)
            self._send({"object": "list", "data": added, "first_id": None, "last_id": None, "has_more": False})
        else:
            self._send({"path": self.path, "headers": dict(self.headers)})


class LocalService:
    """``with LocalService() as svc``: ``svc.url`` is ``http://127.0.0.1:PORT``; ``svc.conversations``
    the server-side conversation items by id."""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        conversations: dict

    def __enter__(self) -> LocalService:
        self._server = self._Server(("127.0.0.1", 0), _Handler)
        self._server.conversations = {}
        self.conversations = self._server.conversations
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
