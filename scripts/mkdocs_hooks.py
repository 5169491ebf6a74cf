"""mkdocs hooks for the documentation site: GitHub-style pages read by Python-Markdown, and readable references.

- Table pipes written for GitHub are unescaped inside code spans.
- A code span naming a file or folder of the repository (`examples/quickstart.py`,
  `benchmarks/`) links to a copy of it published with the site, under ``_repo/``.
- "DESIGN §N" (the design contract's sections, which readers of the site do
  not have) becomes a link to the page that says the same in words.
- The hook-point table gets the whole width of its page.
- `ExampleSections`, a griffe extension the API reference loads, reads a
  Google-style ``Example:`` section as the ``Examples:`` section griffe
  knows, so its ``>>>`` lines render as code rather than one paragraph.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parent.parent
REPO_DIR = "_repo"  # where the site publishes the repository files its pages name
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_PATHS = r"(?:examples|benchmarks|tests|scripts|stubs)/[^`<\s]*"
_REPO_PATH = re.compile(rf"`({_PATHS})`")  # in the sources: a code span naming a repository path
_REPO_CODE = re.compile(rf'(?<!">)<code>({_PATHS})</code>')  # in a page: one not already inside a link
_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
# The design contract's sections, by the page of this site that explains each to users.
_DESIGN_PAGES = {
    "1": ("hook-points/", "the hook points"),
    "2": ("reference/hookreg/", "the API reference"),
    "3": ("hook-points/#styles", "how hooks are dispatched"),
    "4": ("guides/registration/", "the registration guide"),
    "5": ("guides/failures/", "the failures guide"),
    "6": ("guides/async/", "the async guide"),
    "7": ("guides/logging/", "the logging guide"),
    "8": ("guides/embedding/#the-run-contract", "the run contract"),
    "9": ("guides/speed/", "the speed guide"),
    "10": ("guides/external/", "the hook-config guide"),
    "11": ("guides/otel/", "the OpenTelemetry guide"),
}
_DESIGN = re.compile(r"DESIGN §(\d+)")
_FULL_WIDTH = {"hook-points.md"}  # pages whose wide table needs the room of both sidebars


def _unescape(match: re.Match[str]) -> str:
    return match.group(0).replace("\\|", "|")


def _published(path: str) -> str:
    """What the site publishes for a repository path a page names: the path, or for a glob the folder of its files."""
    if "*" in path and any(ROOT.glob(path)):
        path = path.rpartition("/")[0]
    return path.rstrip("/") + "/" if (ROOT / path).is_dir() else path


def _repo_target(path: str) -> str | None:
    """The published copy a repository path links to, or ``None`` when the repository has no such file or folder.

    A glob (`tests/adapters/test_langchain*.py`) links to the folder it matches files in.
    """
    path = _published(path)
    found = ROOT / path
    if found.is_dir():
        return f"{REPO_DIR}/{path.rstrip('/')}/"
    if found.is_file():
        return f"{REPO_DIR}/{path}.txt"
    return None


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    r"""Turn ``\|`` back into ``|`` inside code spans of table rows; give a wide table's page its whole width.

    GitHub needs a pipe inside a table cell escaped even in a code span
    (`str \| None`), and shows it unescaped; Python-Markdown keeps the
    backslash but needs no escape there. The pages are written for GitHub.
    """
    if page.file.src_uri in _FULL_WIDTH:
        page.meta["hide"] = ["navigation", "toc"]
    lines = markdown.split("\n")
    return "\n".join(_CODE_SPAN.sub(_unescape, line) if line.startswith("|") else line for line in lines)


def on_page_content(content: str, page: Any, **kwargs: Any) -> str:
    """Link what a reader cannot follow as text: "DESIGN §N", and code naming a repository path.

    Done on the rendered page, so that the changelog (included from the root)
    and the API reference's docstrings are linked as the pages are.
    """
    up = "../" * page.url.count("/")

    def design(match: re.Match[str]) -> str:
        where, words = _DESIGN_PAGES[match.group(1)]
        return f'<a href="{up}{where}">{html.escape(words)}</a>'

    def repo(match: re.Match[str]) -> str:
        target = _repo_target(match.group(1))
        return match.group(0) if target is None else f'<a href="{up}{target}">{match.group(0)}</a>'

    return _REPO_CODE.sub(repo, _DESIGN.sub(design, content))


def _named_paths() -> set[str]:
    """Every repository path the pages, the changelog and the docstrings name in a code span."""
    sources = [*(ROOT / "docs").rglob("*.md"), ROOT / "CHANGELOG.md", *(ROOT / "hookreg").rglob("*.py")]
    return {m.group(1) for source in sources for m in _REPO_PATH.finditer(source.read_text(encoding="utf-8"))}


def on_files(files: Any, config: Any) -> Any:
    """Publish each repository file or folder a page names, as text (a folder as a list of its files)."""
    from mkdocs.structure.files import File  # noqa: PLC0415 -- mkdocs is there when mkdocs runs the hooks

    published: set[str] = set()

    def publish(path: Path) -> None:
        relative = path.relative_to(ROOT).as_posix()
        if relative not in published:
            published.add(relative)
            files.append(File.generated(config, f"{REPO_DIR}/{relative}.txt", abs_src_path=str(path)))

    for named in sorted({_published(path) for path in _named_paths()}):
        found = ROOT / named
        if found.is_file():
            publish(found)
        elif found.is_dir():
            entries = sorted(p for p in found.iterdir() if p.is_file() and p.suffix not in {".pyc"})
            for entry in entries:
                publish(entry)
            items = "".join(f'<li><a href="{html.escape(p.name)}.txt">{html.escape(p.name)}</a></li>' for p in entries)
            title = html.escape(named.rstrip("/") + "/")
            page = f"<!doctype html><title>{title}</title><h1><code>{title}</code></h1><ul>{items}</ul>"
            files.append(File.generated(config, f"{REPO_DIR}/{named.rstrip('/')}/index.html", content=page))
    return files


class ExampleSections(griffe.Extension):
    """Read each ``Example:`` docstring section as ``Examples:``, the section griffe renders as code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rename the section in `obj`'s docstring before griffe parses it."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
