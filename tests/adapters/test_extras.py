"""Each adapter, imported without its framework, raises an ImportError naming the extra to install."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("adapter", "hidden", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("strands", "strands.hooks", "strands"),
        ("langchain", "langchain.agents.middleware", "langchain"),
    ],
)
def test_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: str, hidden: str, extra: str
) -> None:
    """With the framework's module hidden, importing the adapter fails with `pip install 'hookreg[extra]'`."""
    importlib.import_module(f"hookreg.adapters.{adapter}")  # loaded, so that the deletion below is undone after
    monkeypatch.setitem(sys.modules, hidden, None)
    monkeypatch.delitem(sys.modules, f"hookreg.adapters.{adapter}")
    with pytest.raises(ImportError, match=rf"pip install 'hookreg\[{extra}\]'") as info:
        importlib.import_module(f"hookreg.adapters.{adapter}")
    assert info.value.name == hidden
