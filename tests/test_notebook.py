"""Re-running notebook cells, through a real Jupyter kernel (DESIGN §4, "Re-running a notebook cell replaces")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

import hookreg

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

SETUP = """\
import json, warnings
import hookreg
from hookreg import DuplicateHookWarning, HookPoint, HookRegistry, HookResult, PreToolCallDecideContext

warned = []  # every warning the cells raise, reported and emptied by the report cells
warnings.simplefilter("always")
warnings.showwarning = lambda message, category, *args, **kwargs: warned.append(category.__name__)
registry = HookRegistry()
print(hookreg.__file__)
"""

GATE = """\
@registry.pre_tool_call_decide
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.deny({reason!r})
"""

REPORT = """\
ctx = PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")
reason = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx).reason
print(json.dumps({"hooks": len(registry), "reason": reason, "warnings": warned}))
warned.clear()
"""

SAME_OBJECT_AGAIN = "registry.pre_tool_call_decide(no_rm)"

# A lambda cannot be replaced by name on a re-run (it has none of its own): the re-run warns.
LAMBDA_CELL = "registry.register(HookPoint.POST_TURN, lambda ctx: None)"

LAMBDA_REPORT = """\
print(json.dumps({"hooks": len(registry.callbacks(HookPoint.POST_TURN)), "warnings": warned}))
warned.clear()
"""

# The cells, run in order in one kernel: the gate cell, then the same cell edited and re-run,
# then re-run unchanged, then the very same function object registered a second time; after
# each, a cell prints how many hooks there are, which reason decides and what warned.
CELLS = {
    "setup": SETUP,
    "first run": GATE.format(reason="old"),
    "after first run": REPORT,
    "edited re-run": GATE.format(reason="new"),
    "after edited re-run": REPORT,
    "unchanged re-run": GATE.format(reason="new"),
    "after unchanged re-run": REPORT,
    "same object again": SAME_OBJECT_AGAIN,
    "after same object again": REPORT,
    "lambda cell": LAMBDA_CELL,
    "after lambda cell": LAMBDA_REPORT,
    "lambda cell re-run": LAMBDA_CELL,
    "after lambda cell re-run": LAMBDA_REPORT,
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Run the cells in one fresh kernel importing this hookreg; return what each cell printed to stdout.

    A cell that raises fails here (nbclient raises CellExecutionError). The kernel's
    connection file and IPython's profile go to a temporary directory, not the home one.
    """
    v4: Any = nbformat.v4  # its builders are unannotated
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell(source) for source in CELLS.values()]
    scratch = tmp_path_factory.mktemp("jupyter")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "IPYTHONDIR": str(scratch / "ipython"),
    }
    client = NotebookClient(notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_RUNTIME_DIR", str(scratch / "runtime"))
        client.execute(env=env)
    return {
        label: "".join(
            out.text for out in executed.outputs if out.output_type == "stream" and out.name == "stdout"
        ).strip()
        for label, executed in zip(CELLS, notebook.cells, strict=True)
    }


def report(outputs: dict[str, str], label: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(outputs[label])
    return result


def test_the_kernel_runs_this_hookreg(outputs: dict[str, str]) -> None:
    """The kernel imports the hookreg under test, not another installed copy."""
    assert Path(outputs["setup"]) == Path(hookreg.__file__)


def test_an_edited_and_rerun_cell_leaves_one_hook_the_new_one(outputs: dict[str, str]) -> None:
    """Re-running an edited registration cell replaces the old hook, silently: the new reason decides."""
    assert report(outputs, "after first run") == {"hooks": 1, "reason": "old", "warnings": []}
    assert report(outputs, "after edited re-run") == {"hooks": 1, "reason": "new", "warnings": []}


def test_an_unchanged_rerun_leaves_one_hook(outputs: dict[str, str]) -> None:
    """Re-running a registration cell unchanged still leaves exactly one hook."""
    assert report(outputs, "after unchanged re-run") == {"hooks": 1, "reason": "new", "warnings": []}


def test_the_same_function_object_again_registers_twice_with_a_warning(outputs: dict[str, str]) -> None:
    """Registering the very function object already registered adds a second hook and warns."""
    after = report(outputs, "after same object again")
    assert after == {"hooks": 2, "reason": "new", "warnings": ["DuplicateHookWarning"]}


def test_a_rerun_cell_registering_a_lambda_warns(outputs: dict[str, str]) -> None:
    """A lambda registered by a cell run again stacks a second hook, never silently: it warns, suggesting name=."""
    assert report(outputs, "after lambda cell") == {"hooks": 1, "warnings": []}
    assert report(outputs, "after lambda cell re-run") == {"hooks": 2, "warnings": ["DuplicateHookWarning"]}
