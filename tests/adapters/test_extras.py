"""Each adapter, imported without its framework, raises an ImportError naming the extra to install."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from adapter_extras import ADAPTERS, ROOT, Adapter, read_adapters


def _normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _packages(distribution: str) -> list[str]:
    """The top-level packages `distribution` installs."""
    return sorted(
        package
        for package, owners in importlib.metadata.packages_distributions().items()
        if _normal(distribution) in map(_normal, owners)
    )


@pytest.mark.parametrize(
    ("adapter", "distribution"),
    [(adapter, name) for adapter in ADAPTERS for name, _ in adapter.floors],
    ids=lambda value: value.extra if isinstance(value, Adapter) else value,
)
def test_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: Adapter, distribution: str
) -> None:
    """With one of its framework's distributions hidden, importing the adapter says `pip install 'hookreg[extra]'`."""
    module = f"hookreg.adapters.{adapter.module}"
    importlib.import_module(module)  # loaded, so that the deletion below is undone after
    packages = _packages(distribution)
    assert packages, f"{distribution} (the {adapter.extra!r} extra) is not installed"
    for name in list(sys.modules):
        if name.partition(".")[0] in packages:
            monkeypatch.setitem(sys.modules, name, None)
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.delitem(sys.modules, module)
    with pytest.raises(ImportError, match=rf"pip install 'hookreg\[{re.escape(adapter.extra)}\]'") as info:
        importlib.import_module(module)
    assert info.value.name is not None
    assert info.value.name.partition(".")[0] in packages


def test_every_adapter_module_has_its_extra() -> None:
    """Each module of hookreg/adapters is an adapter: pyproject.toml has an extra of its name (the list's source)."""
    modules = {path.stem for path in (ROOT / "hookreg" / "adapters").glob("*.py") if path.stem != "__init__"}
    assert modules == {adapter.module for adapter in ADAPTERS}


def test_an_adapter_requirement_without_floor_and_cap_is_refused(tmp_path: Path) -> None:
    """An adapter extra's requirement that is not `name>=floor,<cap` stops the list from being read."""
    (tmp_path / "hookreg" / "adapters").mkdir(parents=True)
    (tmp_path / "hookreg" / "adapters" / "some_framework.py").touch()
    (tmp_path / "pyproject.toml").write_text(
        '[project.optional-dependencies]\ndocs = ["mkdocs"]\nsome-framework = ["some-framework>=1.2"]\n'
    )
    with pytest.raises(ValueError, match=r"Cannot read the floor of 'some-framework>=1.2' in the 'some-framework'"):
        read_adapters(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project.optional-dependencies]\nsome-framework = ["fw>=1.2,<2"]\n')
    assert read_adapters(tmp_path) == (Adapter("some-framework", (("fw", "1.2"),)),)
