"""toolnexus: build an AI persona's system prompt from its bootstrap files, wherever they live.

The core (composing, inspecting, caching, budgets, profiles, bundles, sources to extend, skills,
searching memory, the error); :mod:`toolnexus.agents` adds the agent runtime, models, the memory
tool and audit. Each name is imported on first use, so ``import toolnexus`` stays cheap.
"""

import sys

TYPE_CHECKING = False  # not typing's: importing typing would cost more than this whole module
if TYPE_CHECKING:
    from typing import Any

    from toolnexus.composer.budget import PROFILES, Budget
    from toolnexus.composer.parts import Soul
    from toolnexus.composer.rules import (
        BOOTSTRAP_ORDER,
        MAX_BOOTSTRAP_FILE_BYTES,
        TRUNCATION_NOTICE,
        FileReport,
        SoulReport,
    )
    from toolnexus.errors import BootstrapError
    from toolnexus.recall.index import MemoryIndex, memory_index
    from toolnexus.skills import Skill, SkillSet, load_skills
    from toolnexus.soul.bundling import write_bundle
    from toolnexus.soul.cache import SoulCache
    from toolnexus.soul.compose import compose_soul, compose_soul_async, inspect_soul
    from toolnexus.soul.reading import BootstrapFile, read_bootstrap_file
    from toolnexus.sources.base import BootstrapSource, SourceBase
    from toolnexus.sources.layered import LayeredSource
    from toolnexus.sources.mapping import DictSource

__version__ = "0.1.0"

#: Each public name -> the module that defines it (imported on first use, by ``__getattr__``).
_HOMES = {
    "BOOTSTRAP_ORDER": "toolnexus.composer.rules",
    "MAX_BOOTSTRAP_FILE_BYTES": "toolnexus.composer.rules",
    "PROFILES": "toolnexus.composer.budget",
    "TRUNCATION_NOTICE": "toolnexus.composer.rules",
    "BootstrapError": "toolnexus.errors",
    "BootstrapFile": "toolnexus.soul.reading",
    "BootstrapSource": "toolnexus.sources.base",
    "Budget": "toolnexus.composer.budget",
    "DictSource": "toolnexus.sources.mapping",
    "FileReport": "toolnexus.composer.rules",
    "LayeredSource": "toolnexus.sources.layered",
    "MemoryIndex": "toolnexus.recall.index",
    "Skill": "toolnexus.skills",
    "SkillSet": "toolnexus.skills",
    "Soul": "toolnexus.composer.parts",
    "SoulCache": "toolnexus.soul.cache",
    "SoulReport": "toolnexus.composer.rules",
    "SourceBase": "toolnexus.sources.base",
    "compose_soul": "toolnexus.soul.compose",
    "compose_soul_async": "toolnexus.soul.compose",
    "inspect_soul": "toolnexus.soul.compose",
    "load_skills": "toolnexus.skills",
    "memory_index": "toolnexus.recall.index",
    "read_bootstrap_file": "toolnexus.soul.reading",
    "write_bundle": "toolnexus.soul.bundling",
}

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "PROFILES",
    "TRUNCATION_NOTICE",
    "BootstrapError",
    "BootstrapFile",
    "BootstrapSource",
    "Budget",
    "DictSource",
    "FileReport",
    "LayeredSource",
    "MemoryIndex",
    "Skill",
    "SkillSet",
    "Soul",
    "SoulCache",
    "SoulReport",
    "SourceBase",
    "__version__",
    "compose_soul",
    "compose_soul_async",
    "inspect_soul",
    "load_skills",
    "memory_index",
    "read_bootstrap_file",
    "write_bundle",
]


def __getattr__(name: str) -> "Any":
    if name not in _HOMES:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    __import__(_HOMES[name])
    value = getattr(sys.modules[_HOMES[name]], name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
