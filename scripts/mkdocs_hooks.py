"""mkdocs hooks for the documentation site: table pipes written for GitHub, read by Python-Markdown."""

from __future__ import annotations

import re
from typing import Any

_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _unescape(match: re.Match[str]) -> str:
    return match.group(0).replace("\\|", "|")


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    r"""Turn ``\|`` back into ``|`` inside code spans of table rows.

    GitHub needs a pipe inside a table cell escaped even in a code span
    (`str \| None`), and shows it unescaped; Python-Markdown keeps the
    backslash but needs no escape there. The pages are written for GitHub.
    """
    lines = markdown.split("\n")
    return "\n".join(_CODE_SPAN.sub(_unescape, line) if line.startswith("|") else line for line in lines)
