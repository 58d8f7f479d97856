"""Compose an AI persona's system prompt — its soul — from the bootstrap files in its home.

>>> from toolnexus.agents import compose_soul
>>> soul, found = compose_soul("examples/aster")  # doctest: +SKIP
"""

from .bundling import write_bundle
from .errors import BootstrapError
from .memory import MemoryTool, memory_tool
from .soul import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, TRUNCATION_NOTICE, FileReport, SoulReport
from .sources import BootstrapSource, DictSource, LayeredSource, SourceBase
from .surface import compose_soul, compose_soul_async, inspect_soul

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "BootstrapError",
    "BootstrapSource",
    "DictSource",
    "FileReport",
    "LayeredSource",
    "MemoryTool",
    "SoulReport",
    "SourceBase",
    "compose_soul",
    "compose_soul_async",
    "inspect_soul",
    "memory_tool",
    "write_bundle",
]
