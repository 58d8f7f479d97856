"""What every integration shares: no import cost until a framework's module is imported, one
``ImportError`` naming the extra when its framework is missing, and the extras that install them."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from tests.support.snippets import ROOT

FRAMEWORKS = {  # module: (the framework's top-level package, the extra)
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "langchain": ("langchain", "langchain"),
    "claude_agent_sdk": ("claude_agent_sdk", "claude-agent-sdk"),
}


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_importing_toolnexus_and_the_package_imports_no_framework() -> None:
    packages = sorted({package for package, _ in FRAMEWORKS.values()} | {"langchain_core", "mcp", "openai"})
    loaded = python(
        "import sys, toolnexus, toolnexus.integrations\n"
        f"print(sorted(p for p in {packages!r} if p in sys.modules))\n"
        "print(sorted(m for m in sys.modules if m.startswith('toolnexus')))"
    )
    assert loaded.stdout.splitlines() == ["[]", "['toolnexus', 'toolnexus.integrations']"], loaded.stderr


@pytest.mark.parametrize("module", FRAMEWORKS)
def test_a_missing_framework_is_one_import_error_naming_the_extra(module: str) -> None:
    package, extra = FRAMEWORKS[module]
    failed = python(
        f"import sys; sys.modules[{package!r}] = None\n"
        f"try:\n    import toolnexus.integrations.{module}\n"
        "except ImportError as error:\n    print(error)"
    )
    assert failed.stdout.strip().endswith(f"pip install 'toolnexus[{extra}]'"), failed.stderr


def test_each_framework_is_an_extra_and_the_tests_install_them_all() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    test = " ".join(extras["test"])
    for _, extra in FRAMEWORKS.values():
        (requirement,) = extras[extra]
        assert requirement.split(">=")[0].split("[")[0] in test
