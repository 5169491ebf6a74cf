"""Write out the slots and ``__init__`` of every value class (``@value_class``) in hookreg/_results.py and _context.py.

`dataclasses.dataclass` compiles each ``__init__`` with `exec` when the class
is created, and builds a slotted class twice, which made up most of
``import hookreg``. The value classes keep their fields as dataclass fields
(the one declaration of each), and this script writes what those fields
imply into the class body, right after them, inside ``if not TYPE_CHECKING:``
(type checkers read the fields, as for any dataclass): ``__slots__``, the
defaults moved aside, and ``__init__``. Run it after changing a value class's
fields:

    python scripts/generate_values.py

tests/test_static.py fails when a committed class body differs from this output.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = [ROOT / "hookreg" / "_results.py", ROOT / "hookreg" / "_context.py"]
MARKER = "# written out from the fields by scripts/generate_values.py"
MAX_ARGS = 5  # ruff's PLR0913 default
TOO_MANY = "# noqa: PLR0913 -- one parameter per field"
# What value_class honours (the other methods are shared: every field is shown, compared unless compare=False).
SUPPORTED = frozenset({"default", "default_factory", "compare"})


def is_value_class(node: ast.ClassDef) -> bool:
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "value_class"
        for d in node.decorator_list
    )


def is_kw_only(node: ast.ClassDef) -> bool:
    return any(
        isinstance(d, ast.Call)
        and any(k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value for k in d.keywords)
        for d in node.decorator_list
    )


def is_generated(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.Name)
        and test.operand.id == "TYPE_CHECKING"
    )


def init_of(source: str, node: ast.ClassDef) -> list[str]:
    """The generated block's lines for the class `node`: its slots, and one parameter and one slot store per field.

    The block declares the fields' ``__slots__``, so that the class statement
    builds the class once, slotted; moves the fields' defaults out of the class
    namespace into ``_defaults`` (a slot and a class attribute cannot share a
    name), adds the methods every value class shares, and defines ``_init``,
    which `value_class` calls with the slot setters (they exist only once the
    class does) to make ``__init__``: a setter stores a slot without the
    frozen ``__setattr__`` and without looking the name up.
    """
    params, setters, stores, defaulted = [], [], [], []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.get_source_segment(source, stmt.annotation) or ""
        if annotation.startswith("ClassVar"):
            continue
        name = value = stmt.target.id
        default = stmt.value
        if default is not None:
            defaulted.append(name)
        if isinstance(default, ast.Call) and isinstance(default.func, ast.Name) and default.func.id == "field":
            given = {k.arg: k.value for k in default.keywords}
            unsupported = sorted(str(k) for k in given.keys() - SUPPORTED)
            if unsupported or default.args:
                where = f"{node.name}.{name}"
                sys.exit(f"{where}: field() takes only {sorted(SUPPORTED)} in a value class, not {unsupported}.")
            default = given.get("default")
            if "default_factory" in given:
                factory = ast.get_source_segment(source, given["default_factory"])
                default, value = ast.Name("FACTORY"), f"{factory}() if {name} is FACTORY else {name}"
        written = "" if default is None else f" = {ast.get_source_segment(source, default) or ast.unparse(default)}"
        params.append(f"{name}: {annotation}{written}")
        setters.append(f"set_{name}")
        stores.append(f"set_{name}(self, {value})")
    if any(isinstance(s, ast.FunctionDef) and s.name == "__post_init__" for s in node.body):
        stores.append("self.__post_init__()")
    star = ["*"] if is_kw_only(node) else []
    if 1 + len(params) > MAX_ARGS:  # one per line, the linter told why there are so many
        signature = [
            f"        def init(  {TOO_MANY}",
            *(f"            {p}," for p in ["self: Any", *star, *params]),
            "        ) -> None:",
        ]
    else:
        signature = [f"        def init({', '.join(['self: Any', *star, *params])}) -> None:"]
    slots = ", ".join(f'"{s[4:]}"' for s in setters) + ("," if len(setters) == 1 else "")
    moved = ", ".join(f'"{name}": {name}' for name in defaulted)
    return [
        f"if not TYPE_CHECKING:  {MARKER}",
        f"    __slots__ = ({slots})",
        "    # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.",
        f"    _defaults = {{{moved}}}",
        *([f"    del {', '.join(defaulted)}"] if defaulted else []),
        "    vars().update(VALUE_CLASS)",
        "",
        "    def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:",
        f"        {', '.join(setters)}{',' if len(setters) == 1 else ''} = setters",
        *signature,
        *(f"            {line}" for line in stores),
        "        return init",
    ]


def generate(source: str) -> str:
    """`source` with every value class's generated block written anew after its last field."""
    lines = source.splitlines()
    classes = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and is_value_class(n)]
    for node in sorted(classes, key=lambda n: n.lineno, reverse=True):
        block = init_of(source, node)
        indent = " " * node.body[0].col_offset
        for stmt in reversed(node.body):  # drop the block written before
            if is_generated(stmt):
                del lines[stmt.lineno - 1 : stmt.end_lineno]
        last = max(s.end_lineno or s.lineno for s in node.body if isinstance(s, ast.AnnAssign))
        lines[last:last] = ["", *(indent + line for line in block), ""]
    return "\n".join(lines) + "\n"


def formatted(text: str, target: Path) -> str:
    command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(target), "-"]
    return subprocess.run(command, input=text, capture_output=True, text=True, check=True).stdout


def main() -> None:
    stale = []
    for target in TARGETS:
        current = target.read_text()
        text = formatted(generate(current), target)
        if "--check" in sys.argv:
            if text != current:
                stale.append(target)
        elif text != current:
            target.write_text(text)
    if stale:
        sys.exit(f"stale: {', '.join(str(p.relative_to(ROOT)) for p in stale)}; run python scripts/generate_values.py")


if __name__ == "__main__":
    main()
