"""Plain-text and HTML tables: how a registry and a trace show in a terminal and a notebook."""

from __future__ import annotations

import html
import re
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hookreg._registry import RegistryCore

__all__ = ["describe_registry", "empty_html", "html_table", "registry_html", "short_name", "text_table"]

_MARK = "*"
# Text colour set with the background, so the row reads in dark notebook themes too (their text is light).
_HIGHLIGHT = "background-color:#fff3cd;color:#1f2328;font-weight:bold"
# The enclosing functions of a function defined inside another one: "make.<locals>.gate" shows as "gate".
_LOCALS = re.compile(r"[^\s()]*<locals>\.")


def short_name(name: str) -> str:
    """`name` as tables show it: without the ``outer.<locals>.`` path of a function defined in a function."""
    return _LOCALS.sub("", name)


def empty_html(text: str) -> str:
    """What a notebook shows for a table with nothing in it: `text`, escaped."""
    return f"<p>{html.escape(text)}</p>"


_REGISTRY_HEADERS = ("point", "hook", "priority", "tools", "kind", "on_error")


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, marked: Container[int] = ()) -> str:
    """Lay `rows` out in aligned columns under `headers`; rows whose index is in `marked` start with ``*``."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(mark: str, cells: Sequence[str]) -> str:
        return f"{mark} " + "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(" ", headers), *(line(_MARK if i in marked else " ", row) for i, row in enumerate(rows))])


def html_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, caption: str, marked: Container[int] = ()
) -> str:
    """Render `rows` as an HTML table; rows whose index is in `marked` are highlighted. Every cell is escaped."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        (f'<tr style="{_HIGHLIGHT}">' if i in marked else "<tr>")
        + "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _registry_rows(registry: RegistryCore) -> list[tuple[str, ...]]:
    """One row per hook, points in HookPoint order and hooks in dispatch order (included registries flattened)."""
    rows: list[tuple[str, ...]] = []
    # An included hook sits at the position of the inclusion that brings it in: show that priority.
    placed = {
        reachable: inclusion.priority
        for inclusion in registry._inclusions
        for reachable in inclusion.registry._reachable()
    }
    for point, runners in registry._runners.items():
        for i, reg in enumerate(runners.hooks):
            kind = "async" if reg.is_async else "sync"
            if reg.timeout is not None:
                kind += f" ({reg.timeout:g}s)"
            if reg._registry is not registry and reg._registry is not None:
                kind += f", included at {placed[reg._registry]}"
            tools = ", ".join(reg.tools) if reg.tools else "all"
            name = short_name(reg.name)
            rows.append((point.value if i == 0 else "", name, str(reg.priority), tools, kind, reg.on_error))
    return rows


def describe_registry(registry: RegistryCore) -> str:
    """The text twin of `registry_html`: a heading, then one line per hook."""
    rows = _registry_rows(registry)
    if not rows:
        return f"{registry!r}: no hooks"
    return f"{registry!r}\n{text_table(_REGISTRY_HEADERS, rows)}"


def registry_html(registry: RegistryCore) -> str:
    """A notebook table of points to hooks, in dispatch order; an empty registry says so, as the text does."""
    rows = _registry_rows(registry)
    if not rows:
        return empty_html(f"{registry!r}: no hooks")
    return html_table(_REGISTRY_HEADERS, rows, caption=repr(registry))
