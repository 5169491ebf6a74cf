"""Plain-text and HTML tables from the rows they are given: how a registry and a trace show."""

from __future__ import annotations

import html
from collections.abc import Container, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hookreg._points import HookPoint
    from hookreg._registration import Registration

__all__ = ["describe_registry", "empty_html", "html_table", "registry_html", "text_table"]

_MARK = "*"
# Text colour set with the background, so the row reads in dark notebook themes too (their text is light).
_HIGHLIGHT = "background-color:#fff3cd;color:#1f2328;font-weight:bold"


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


def _self_chosen(callback: object) -> str:
    """What the tools column shows for a hook without ``tools=``: ``"all"``, unless the hook picks its calls itself.

    Such a hook (``hookreg.external``'s config hooks, whose matchers are the
    config's) says which in a ``hookreg_tools`` string attribute.
    """
    chosen = getattr(callback, "hookreg_tools", None)
    return chosen if isinstance(chosen, str) else "all"


def _registry_rows(hooks: Iterable[tuple[HookPoint, Registration, str | None]]) -> list[tuple[str, ...]]:
    """One row of text per hook row ``(point, registration, placed)``; a point is named on its first row only."""
    rows: list[tuple[str, ...]] = []
    last = None
    for point, reg, placed in hooks:
        # A dual-path hook (sync __call__, async acall) is one hook that both surfaces call directly (DESIGN §6).
        kind = "async" if reg.is_async else "sync" if reg._async_path is None else "sync + async"
        if reg.timeout is not None:
            kind += f" ({reg.timeout:g}s)"
        if placed is not None:  # an included hook sits at the position of the inclusion that brings it in
            kind += f", included at {placed}"
        tools = ", ".join(reg.tools) if reg.tools else _self_chosen(reg.callback)
        shown = point.value if point is not last else ""
        last = point
        rows.append((shown, reg.label, str(reg.priority), tools, kind, reg.on_error))
    return rows


def describe_registry(title: str, hooks: Iterable[tuple[HookPoint, Registration, str | None]]) -> str:
    """The text twin of `registry_html`: `title`, then one line per hook."""
    rows = _registry_rows(hooks)
    if not rows:
        return f"{title}: no hooks"
    return f"{title}\n{text_table(_REGISTRY_HEADERS, rows)}"


def registry_html(title: str, hooks: Iterable[tuple[HookPoint, Registration, str | None]]) -> str:
    """A notebook table of points to hooks, in dispatch order; an empty registry says so, as the text does."""
    rows = _registry_rows(hooks)
    if not rows:
        return empty_html(f"{title}: no hooks")
    return html_table(_REGISTRY_HEADERS, rows, caption=title)
