"""A local stand-in of the OpenAI Responses API (``POST /v1/responses``, JSON and ``stream: true``
SSE) on 127.0.0.1, so the real ``agent_framework_openai.OpenAIChatClient`` runs offline.

It keeps history like the service: responses by id (a ``previous_response_id`` chain) and, for
requests that name a ``conversation``, conversations by id. Its answers are the ground truth of
continuity: every reply ends with ``[seen N]``, the number of input items the model saw (the
stored chain or conversation plus the new input). ``replace_conversations`` makes it answer a
``conv_*`` request in a new conversation (a service that lost the old one).

When the request offers tools and the last user text contains "weather", it first calls
``get_weather(city="Paris")``; a ``function_call_output`` input gets ``(tool said) <output>``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ResponsesStandIn:
    def __init__(self) -> None:
        self.responses: dict[str, list] = {}  # response id -> the items the chain holds after it
        self.conversations: dict[str, list] = {}
        self.requests: list[dict] = []
        self.replace_conversations = False
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if not self.path.endswith("/responses"):
                    return self._send(404, {"error": {"message": "not found"}})
                try:
                    response = standin.respond(body)
                except KeyError as exc:
                    return self._send(400, {"error": {"message": f"unknown id {exc}", "type": "invalid_request_error"}})
                if body.get("stream"):
                    return self._sse(response)
                return self._send(200, response)

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, response: dict) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event in _events(response):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ResponsesStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    # -- the model --------------------------------------------------------------------------
    def respond(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(body)
            new_items = body.get("input") or []
            if isinstance(new_items, str):
                new_items = [{"role": "user", "content": new_items}]
            conversation = body.get("conversation")
            if isinstance(conversation, dict):
                conversation = conversation.get("id")
            previous = body.get("previous_response_id")
            if conversation:
                if self.replace_conversations or conversation not in self.conversations:
                    conversation = f"conv_{next(self._ids)}"
                    self.conversations[conversation] = []
                history = self.conversations[conversation]
            elif previous:
                history = list(self.responses[previous])  # KeyError: 400 like the service
            else:
                history = []
            seen = history + list(new_items)
            output = [self._reply(seen, body)]
            rid = f"resp_{next(self._ids)}"
            if body.get("store", True):
                self.responses[rid] = seen + output
                if conversation:
                    self.conversations[conversation][:] = seen + output
            response = {
                "id": rid,
                "object": "response",
                "created_at": int(time.time()),
                "status": "completed",
                "model": body.get("model", "gpt-standin"),
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "error": None,
                "incomplete_details": None,
                "instructions": None,
                "metadata": {},
                "temperature": 1.0,
                "top_p": 1.0,
                "usage": {
                    "input_tokens": len(seen),
                    "output_tokens": 3,
                    "total_tokens": len(seen) + 3,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
            if conversation:
                response["conversation"] = {"id": conversation}
            return response

    def _reply(self, seen: list, body: dict) -> dict:
        last = seen[-1] if seen else {}
        if last.get("type") == "function_call_output":
            return _message(f"(tool said) {last.get('output')} [seen {len(seen)}]")
        text = _text(last)
        if body.get("tools") and "weather" in text.lower():
            n = next(self._ids)
            return {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": "get_weather",
                "arguments": json.dumps({"city": "Paris"}),
                "status": "completed",
            }
        return _message(f"echo: {text} [seen {len(seen)}]")


def _text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _message(text: str) -> dict:
    return {
        "type": "message",
        "id": f"msg_{abs(hash(text)) % 10**8}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _events(response: dict):
    seq = itertools.count()
    started = dict(response, status="in_progress", output=[])
    yield {"type": "response.created", "sequence_number": next(seq), "response": started}
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            empty = dict(item, status="in_progress", content=[])
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item": empty,
            }
            for word in item["content"][0]["text"].split(" "):
                yield {
                    "type": "response.output_text.delta",
                    "sequence_number": next(seq),
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": word + " ",
                    "logprobs": [],
                }
        else:
            yield {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": index,
                "item": dict(item, arguments="", status="in_progress"),
            }
            yield {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(seq),
                "item_id": item["id"],
                "output_index": index,
                "arguments": item["arguments"],
                "name": item["name"],
            }
        yield {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": index, "item": item}
    yield {"type": "response.completed", "sequence_number": next(seq), "response": response}
