"""Compose an AI persona's system prompt — its soul — from the bootstrap files in its home.

>>> from toolnexus.agents import compose_soul
>>> soul, found = compose_soul("examples/aster")  # doctest: +SKIP
"""

from .bundling import write_bundle
from .cache import SoulCache
from .errors import BootstrapError
from .memory import MemoryTool, memory_tool
from .soul import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, TRUNCATION_NOTICE, FileReport, SoulReport
from .sources import BootstrapSource
from .surface import compose_soul, compose_soul_async, inspect_soul

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "BootstrapError",
    "BootstrapSource",
    "FileReport",
    "MemoryTool",
    "SoulCache",
    "SoulReport",
    "compose_soul",
    "compose_soul_async",
    "inspect_soul",
    "memory_tool",
    "write_bundle",
]
