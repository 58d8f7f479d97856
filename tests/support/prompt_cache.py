"""Provider prompt caches, modelled for the loopback servers of :mod:`tests.support.providers`.

Tokens are counted as characters ÷ 4 of each block as it arrived (its JSON, keys in the order
sent), so a prefix is "the same" only when it is byte-identical — a reordered key is a miss.

**Anthropic** (``AnthropicCache``): a request is a sequence of blocks in the order tools → system
→ messages. At each ``cache_control`` breakpoint the server looks for a cached prefix ending at
that block or at any of the ``lookback`` blocks before it (Anthropic's 20-block lookback); the
longest one found is ``cache_read_input_tokens``. Every breakpoint's prefix of at least
``min_tokens`` is then written (or its lifetime renewed), for the breakpoint's ``ttl`` (``5m`` or
``1h``); what lies between the hit and the last written breakpoint is
``cache_creation_input_tokens``, the rest ``input_tokens``.

**OpenAI** (``OpenAICache``): automatic, no breakpoints. A request is the tool list then each
message, as sent; requests are routed by ``prompt_cache_key`` (or, without one, by their first
256 tokens), and the longest prefix shared with an earlier prompt on that route is cached,
counted in 128-token steps from 1,024 (``prompt_tokens_details.cached_tokens``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

CHARS_PER_TOKEN = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class Clock:
    """A clock the test moves by hand (``advance``), so lifetimes are tested without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _without_marker(block: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


class _Prefixes:
    """Digests and token counts of every prefix of a block sequence (block ``i`` included)."""

    def __init__(self, seed: str, units: list[str]) -> None:
        digest = hashlib.sha256(seed.encode())
        chars = 0
        self.digests: list[str] = []
        self.tokens: list[int] = []
        for unit in units:
            digest.update(unit.encode("utf-8", "surrogatepass") + b"\0")
            chars += len(unit)
            self.digests.append(digest.copy().hexdigest())
            self.tokens.append(chars // CHARS_PER_TOKEN)
        self.total = chars // CHARS_PER_TOKEN


def anthropic_blocks(body: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """``(block as sent, its breakpoint's ttl or None)`` in cache order: tools, system, messages."""

    def marked(block: dict[str, Any], prefix: str = "") -> tuple[str, str | None]:
        control = block.get("cache_control")
        ttl = control.get("ttl", "5m") if isinstance(control, dict) else None
        return prefix + _text(_without_marker(block)), ttl

    for tool in body.get("tools") or []:
        yield marked(tool, "tool:")
    system = body.get("system")
    if isinstance(system, str):
        yield "system:" + _text(system), None
    elif system:
        yield from (marked(block, "system:") for block in system)
    for message in body.get("messages") or []:
        content = message["content"]
        if isinstance(content, str):
            yield f"{message['role']}:" + _text(content), None
            continue
        for block in content:
            yield marked(block, f"{message['role']}:")


class AnthropicCache:
    """Anthropic's prompt cache as described in the module docstring; ``entries`` maps a prefix
    digest to ``(expires at, lifetime)``: a read renews an entry for its lifetime."""

    def __init__(
        self, *, min_tokens: int = 1024, lookback: int = 20, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.min_tokens, self.lookback, self.clock = min_tokens, lookback, clock
        self.entries: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _live(self, digest: str, now: float) -> bool:
        return self.entries.get(digest, (-1.0, 0.0))[0] > now

    def _keep(self, digest: str, now: float, lifetime: float) -> None:
        expires, kept = self.entries.get(digest, (now, 0.0))
        self.entries[digest] = (max(expires, now + lifetime), max(kept, lifetime))

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = list(anthropic_blocks(body))
        prefixes = _Prefixes(str(body.get("model")), [text for text, _ in blocks])
        breakpoints = [(index, ttl) for index, (_, ttl) in enumerate(blocks) if ttl is not None]
        with self._lock:
            now = self.clock()
            hit = -1
            for index, _ in breakpoints:
                earlier = range(index, max(-1, index - self.lookback), -1)
                longest = next((p for p in earlier if self._live(prefixes.digests[p], now)), -1)
                hit = max(hit, longest)
            read = prefixes.tokens[hit] if hit >= 0 else 0
            if hit >= 0:
                self._keep(prefixes.digests[hit], now, self.entries[prefixes.digests[hit]][1])
            written = read
            for index, ttl in breakpoints:
                if prefixes.tokens[index] >= self.min_tokens:
                    self._keep(prefixes.digests[index], now, TTL_SECONDS[ttl])
                    written = max(written, prefixes.tokens[index])
        return {
            "input_tokens": prefixes.total - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written - read,
        }


def common_prefix_length(first: str, second: str) -> int:
    """Characters two strings share from the start (binary search over C-speed slice compares)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class OpenAICache:
    """OpenAI's automatic prompt cache as described in the module docstring: per route, the
    longest prefix (in characters) this request shares with one of the last ``keep`` prompts."""

    def __init__(
        self, *, min_tokens: int = 1024, step: int = 128, routing_tokens: int = 256, keep: int = 64
    ) -> None:
        self.min_tokens, self.step, self.routing_tokens, self.keep = min_tokens, step, routing_tokens, keep
        self.prompts: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        prompt = f"{body.get('model')}\0" + _text(body.get("tools") or [])
        prompt += "".join(_text(message) for message in body["messages"])
        route = body.get("prompt_cache_key") or prompt[: self.routing_tokens * CHARS_PER_TOKEN]
        with self._lock:
            previous = self.prompts.setdefault(route, [])
            shared = max((common_prefix_length(prompt, seen) for seen in previous), default=0)
            previous.append(prompt)
            del previous[: -self.keep]
        matched = shared // CHARS_PER_TOKEN
        cached = 0
        if matched >= self.min_tokens:
            cached = self.min_tokens + (matched - self.min_tokens) // self.step * self.step
        return {"prompt_tokens": len(prompt) // CHARS_PER_TOKEN, "cached_tokens": cached}
