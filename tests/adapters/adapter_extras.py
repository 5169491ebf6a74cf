"""The frameworks hookreg adapts, read from pyproject.toml: each extra with a module in hookreg/adapters.

The one list of adapters: noxfile.py, the adapter tests and the docs tests all read it (stdlib only, so
that nox imports it without the test dependencies).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# An adapter's requirement names its floor and its cap: `name>=floor,<cap` (pyproject.toml says why).
_REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9._-]+)>=(?P<floor>[^,;\s]+),<[^,;\s]+")


@dataclass(frozen=True)
class Adapter:
    """One adapter: its extra, which is also its docs page's name, and what the extra installs.

    Attributes:
        extra: The extra (``pip install 'hookreg[extra]'``), also ``docs/adapters/<extra>.md``.
        floors: Each distribution the extra requires, with the oldest release allowed.
    """

    extra: str
    floors: tuple[tuple[str, str], ...]

    @property
    def module(self) -> str:
        """The adapter's module name in `hookreg.adapters` (and ``tests/adapters/test_<module>.py``)."""
        return self.extra.replace("-", "_")


def _floor(extra: str, requirement: str) -> tuple[str, str]:
    match = _REQUIREMENT.fullmatch(requirement)
    if match is None:
        msg = (
            f"Cannot read the floor of {requirement!r} in the {extra!r} extra: an adapter's requirement is "
            "written `name>=floor,<cap`. Write it so in pyproject.toml."
        )
        raise ValueError(msg)
    return match["name"], match["floor"]


def read_adapters(root: Path = ROOT) -> tuple[Adapter, ...]:
    """The adapters of the project at `root`, in the order of its extras."""
    extras: dict[str, list[str]] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    return tuple(
        Adapter(extra, tuple(_floor(extra, requirement) for requirement in requirements))
        for extra, requirements in extras.items()
        if (root / "hookreg" / "adapters" / f"{extra.replace('-', '_')}.py").is_file()
    )


ADAPTERS = read_adapters()
"""Every adapter, in the order of pyproject.toml's extras."""
