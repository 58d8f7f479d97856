"""Recall: daily notes and a search over a persona's memory, kept outside the home.

:mod:`.daily` names today's note and builds the session prelude; :mod:`.index` is
:func:`memory_index`; :mod:`.tools` are ``memory_search`` and ``memory_get`` for a model. The
files are read through the home's source, so every backend (bundles too) can be searched.
"""

from toolnexus.recall.chunking import Chunk, chunks
from toolnexus.recall.daily import DAILY_NOTE, PRIVATE_PROFILES, Clock, Today, daily_day, daily_prelude
from toolnexus.recall.index import MAX_GET_CHARS, Embed, Hit, MemoryIndex, memory_index, memory_path
from toolnexus.recall.tools import MemoryGetTool, MemorySearchTool, recall_tools

__all__ = [
    "DAILY_NOTE",
    "MAX_GET_CHARS",
    "PRIVATE_PROFILES",
    "Chunk",
    "Clock",
    "Embed",
    "Hit",
    "MemoryGetTool",
    "MemoryIndex",
    "MemorySearchTool",
    "Today",
    "chunks",
    "daily_day",
    "daily_prelude",
    "memory_index",
    "memory_path",
    "recall_tools",
]
