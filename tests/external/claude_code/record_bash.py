"""The shell the Claude Code CLI runs its Bash tool through in these tests: it records the command, never runs it.

The CLI picks its Bash tool's shell from ``CLAUDE_CODE_SHELL`` (a path naming
bash or zsh) and runs each model command as ``<shell> -c -l "<setup> && eval
'<command>' < /dev/null && pwd -P >| <cwd file>"``. This program, installed as
``.../bash``, finds that ``eval`` word, appends the command to the JSON-lines
file ``RECORD_BASH_LOG`` names, writes the cwd file the CLI reads back, and
prints `output` — the text the hookreg side's recording tool returns too.
Anything else the CLI asks of its shell (the environment snapshot it takes at
start) goes to the real bash. Hook commands never come here: the CLI runs them
through ``/bin/sh``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

REAL_BASH = "/bin/bash"


def output(command: str) -> str:
    """What the recorded command "printed": the text the model reads back on both sides."""
    return f"recorded: {command}"


def model_command(words: list[str]) -> tuple[str, str | None] | None:
    """The model's command and the CLI's cwd file, when `words` is a Bash tool invocation; else ``None``."""
    script = next((w for w in words if "eval " in w and "pwd -P" in w), None)
    if script is None:
        return None
    tokens = shlex.split(script)
    command = tokens[tokens.index("eval") + 1]
    cwd_file = tokens[tokens.index(">|") + 1] if ">|" in tokens else None
    return command, cwd_file


def main() -> None:
    found = model_command(sys.argv[1:])
    if found is None:
        os.execv(REAL_BASH, [REAL_BASH, *sys.argv[1:]])
    command, cwd_file = found
    with open(os.environ["RECORD_BASH_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"command": command}) + "\n")
    if cwd_file is not None:
        with open(cwd_file, "w", encoding="utf-8") as cwd:
            cwd.write(os.getcwd())
    print(output(command))


if __name__ == "__main__":
    main()
