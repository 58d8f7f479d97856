"""Loopback model providers: HTTP servers that speak the OpenAI Chat Completions or Anthropic
Messages wire format and play a scripted conversation, so the official SDK clients are tested
for real with no network.

A *responder* sees every request (parsed into a :class:`ProviderRequest`: system prompt, tools
declared, messages) and returns the next :class:`Text`, :class:`Calls` or :class:`Failure`. Every
request is recorded in ``server.requests`` for the test to check afterwards.

Usage is a fixed :data:`INPUT_TOKENS` / :data:`OUTPUT_TOKENS` per reply, unless the server is
given a prompt cache model (``cache=AnthropicCache()`` or ``OpenAICache()``, from
:mod:`tests.support.prompt_cache`): then input tokens are counted (characters ÷ 4) and the cache
figures are what that model says, as the provider would report them.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.support.prompt_cache import AnthropicCache, OpenAICache

Wire = Literal["openai", "anthropic"]

#: Token counts every scripted reply reports (the usage tests add them up).
INPUT_TOKENS, OUTPUT_TOKENS = 11, 7


@dataclass(frozen=True)
class Text:
    """A final answer."""

    text: str


@dataclass(frozen=True)
class Calls:
    """Tool calls in one turn: ``(name, arguments)`` pairs, with optional text before them."""

    calls: list[tuple[str, dict[str, Any]]]
    text: str = ""


@dataclass(frozen=True)
class Failure:
    """An HTTP error in the provider's error format."""

    status: int
    message: str


Reply = Text | Calls | Failure


@dataclass
class ProviderRequest:
    """One request as received, reduced to what the tests check."""

    wire: Wire
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    system: str | None = None
    tool_names: list[str] = field(default_factory=list)
    tool_results: dict[str, str] = field(default_factory=dict)
    #: The ``usage`` object the reply carried.
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def last_user_text(self) -> str:
        """The text of the last plain user message (not a tool result)."""
        for message in reversed(self.body["messages"]):
            if message["role"] != "user":
                continue
            content = message["content"]
            if isinstance(content, str):
                return content
            texts = [block["text"] for block in content if block.get("type") == "text"]
            if texts:
                return "".join(texts)
        return ""


Responder = Callable[[ProviderRequest], Reply]


def scripted(*replies: Reply) -> Responder:
    """Answer requests with ``replies`` in order; one request too many gets a 400."""
    queue = list(replies)
    lock = threading.Lock()

    def respond(_request: ProviderRequest) -> Reply:
        with lock:
            return queue.pop(0) if queue else Failure(400, "the scripted conversation has no more replies")

    return respond


def _parse(wire: Wire, path: str, headers: dict[str, str], body: dict[str, Any]) -> ProviderRequest:
    request = ProviderRequest(wire, path, headers, body)
    messages = body.get("messages") or []
    if wire == "openai":
        if messages and messages[0]["role"] == "system":
            request.system = messages[0]["content"]
        request.tool_names = [tool["function"]["name"] for tool in body.get("tools") or []]
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            request.tool_results[message["tool_call_id"]] = message["content"]
    else:
        system = body.get("system")
        request.system = system if isinstance(system, str | None) else "".join(b["text"] for b in system)
        request.tool_names = [tool["name"] for tool in body.get("tools") or []]
        last = messages[-1] if messages else {"content": ""}
        for block in last["content"] if isinstance(last["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                text = content if isinstance(content, str) else "".join(part["text"] for part in content)
                request.tool_results[block["tool_use_id"]] = text
    return request


def _openai_usage(cache: OpenAICache | None, body: dict[str, Any]) -> dict[str, Any]:
    if cache is None:
        prompt, details = INPUT_TOKENS, {}
    else:
        counted = cache.usage(body)
        prompt, details = (
            counted["prompt_tokens"],
            {"prompt_tokens_details": {"cached_tokens": counted["cached_tokens"]}},
        )
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": prompt + OUTPUT_TOKENS,
    }
    return {**usage, **details}


def _anthropic_usage(cache: AnthropicCache | None, body: dict[str, Any]) -> dict[str, Any]:
    counted = {"input_tokens": INPUT_TOKENS} if cache is None else cache.usage(body)
    return {**counted, "output_tokens": OUTPUT_TOKENS}


def _openai_body(reply: Text | Calls, number: int, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if isinstance(reply, Calls):
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for index, (name, arguments) in enumerate(reply.calls)
        ]
    finish = "tool_calls" if isinstance(reply, Calls) else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }


def _anthropic_body(reply: Text | Calls, number: int, model: str, usage: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    if isinstance(reply, Calls):
        content += [
            {"type": "tool_use", "id": f"toolu_{number}_{index}", "name": name, "input": arguments}
            for index, (name, arguments) in enumerate(reply.calls)
        ]
    return {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if isinstance(reply, Calls) else "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _error_body(wire: Wire, failure: Failure) -> dict[str, Any]:
    if wire == "openai":
        return {"error": {"message": failure.message, "type": "invalid_request_error", "code": None}}
    return {"type": "error", "error": {"type": "invalid_request_error", "message": failure.message}}


class ProviderServer:
    """A scripted provider on 127.0.0.1 (a free port); ``base_url`` is what the SDK client takes."""

    def __init__(
        self, wire: Wire, responder: Responder, cache: AnthropicCache | OpenAICache | None = None
    ) -> None:
        self.wire = wire
        self.responder = responder
        self.cache = cache
        self.requests: list[ProviderRequest] = []
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # A short poll: ``stop`` waits for the serving loop to see the shutdown, 0.5 s by default.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=f"{wire}-provider", daemon=True
        )

    @property
    def base_url(self) -> str:
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}/v1" if self.wire == "openai" else f"http://127.0.0.1:{port}"

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]]:
        expected = "/v1/chat/completions" if self.wire == "openai" else "/v1/messages"
        if path.split("?", 1)[0] != expected:
            return 404, _error_body(self.wire, Failure(404, f"no such endpoint {path}"))
        body = json.loads(raw)
        request = _parse(self.wire, path, headers, body)
        with self._lock:
            self.requests.append(request)
            number = next(self._numbers)
        reply = self.responder(request)
        if isinstance(reply, Failure):
            return reply.status, _error_body(self.wire, reply)
        model = str(body.get("model"))
        if self.wire == "openai":
            assert self.cache is None or isinstance(self.cache, OpenAICache), (
                "an OpenAI server models OpenAI's cache"
            )
            request.usage = _openai_usage(self.cache, body)
            return 200, _openai_body(reply, number, model, request.usage)
        assert self.cache is None or isinstance(self.cache, AnthropicCache), (
            "an Anthropic server models Anthropic's cache"
        )
        request.usage = _anthropic_usage(self.cache, body)
        return 200, _anthropic_body(reply, number, model, request.usage)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {key.lower(): value for key, value in self.headers.items()}
                status, payload = server._answer(self.path, headers, raw)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler


@contextmanager
def provider_server(
    wire: Wire, responder: Responder, cache: AnthropicCache | OpenAICache | None = None
) -> Iterator[ProviderServer]:
    """A running :class:`ProviderServer`, stopped on exit."""
    server = ProviderServer(wire, responder, cache).start()
    try:
        yield server
    finally:
        server.stop()
