"""Loading configs: format detection, malformed entries refused by name, unmapped ones skipped or refused."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from hookreg import HookPoint, HookRegError, HookRegistry, HookTypeError, HookValueError
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)


def _command(text: str = "true") -> dict[str, object]:
    return {"type": "command", "command": text}


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"hooks": []}, "hooks"),
        ({"hooks": {"PreToolUse": {}}}, "hooks.PreToolUse"),
        ({"hooks": {"PreToolUse": ["Bash"]}}, "hooks.PreToolUse[0]"),
        ({"hooks": {"PreToolUse": [{"matcher": "Bash"}]}}, "hooks.PreToolUse[0].hooks"),
        ({"hooks": {"PreToolUse": [{"hooks": [_command(), {"type": "command"}]}]}}, "hooks.PreToolUse[0].hooks[1]"),
        (
            {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "  "}]}]}},
            "hooks.PreToolUse[0].hooks[0]",
        ),
        ({"hooks": {"PreToolUse": [{"hooks": [{"command": 3}]}]}}, "hooks.PreToolUse[0].hooks[0]"),
        ({"hooks": {"PreToolUse": [{"hooks": [{"url": "http://x"}]}]}}, "hooks.PreToolUse[0].hooks[0]"),
        ({"hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "ftp://x"}]}]}}, "hooks.PreToolUse[0].hooks[0]"),
        ({"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": [_command()]}]}}, "hooks.PreToolUse[0].matcher"),
        ({"hooks": {"PreToolUse": [{"matcher": ["Bash"], "hooks": [_command()]}]}}, "hooks.PreToolUse[0].matcher"),
        (
            {"hooks": {"Stop": [{"hooks": [_command(), {**_command(), "timeout": -1}]}]}},
            "hooks.Stop[0].hooks[1].timeout",
        ),
        ({"hooks": {"Stop": [{"hooks": [{**_command(), "timeout": True}]}]}}, "hooks.Stop[0].hooks[0].timeout"),
        ({"hooks": {"Stop": [{"hooks": [{**_command(), "onFailure": "maybe"}]}]}}, "hooks.Stop[0].hooks[0].onFailure"),
        ({"hooks": {"Stop": [{"hooks": [{**_command(), "onFailure": []}]}]}}, "hooks.Stop[0].hooks[0].onFailure"),
        (
            {"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://x", "headers": {"A": 1}}]}]}},
            "hooks.Stop[0].hooks[0].headers",
        ),
        (
            {"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://x", "allowedEnvVars": "HOME"}]}]}},
            "hooks.Stop[0].hooks[0].allowedEnvVars",
        ),
        ({"PreToolCall": [{"command": "echo 'unclosed"}]}, "PreToolCall[0]"),
        ({"PreToolCall": [{"command": "x", "matcher": "Bash(git *"}]}, "PreToolCall[0].matcher"),
        ({"PreToolCall": [{"command": "x", "matcher": "(git *)"}]}, "PreToolCall[0].matcher"),
        ({"PreToolCall": [{"command": "x", "once": "yes"}]}, "PreToolCall[0].once"),
        ({"PreToolCall": [{"command": "x", "fail_mode": "shut"}]}, "PreToolCall[0].fail_mode"),
        ({"PreToolCall": "x"}, "PreToolCall"),
    ],
)
def test_malformed_entries_are_refused_naming_the_entry(config: dict[str, object], named: str) -> None:
    """A malformed config is a HookValueError (also a ValueError) naming the entry; nothing is loaded."""
    registry = HookRegistry()
    with pytest.raises(HookValueError) as info:
        load_hooks_config(registry, config)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, HookRegError)
    assert f"Cannot load hook config entry {named}: " in str(info.value)
    assert len(registry) == 0


def test_unmapped_events_and_hook_types_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """An event or hook type hookreg does not map is skipped, logged by its entry path; the rest loads."""
    config = {
        "hooks": {
            "PostToolBatch": [{"hooks": [_command()]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "judge"}, {"type": "agent"}, _command()]}],
            "PreToolUse": [{"hooks": [{"type": "mcp_tool", "tool": "x"}]}],
        }
    }
    registry = HookRegistry()
    with caplog.at_level(logging.WARNING, logger="hookreg"):
        load_hooks_config(registry, config)
    skipped = [record.getMessage() for record in caplog.records if "config_entry_skipped" in record.getMessage()]
    assert len(skipped) == 4
    for entry in (
        "hooks.PostToolBatch",
        "hooks.Stop[0].hooks[0]",
        "hooks.Stop[0].hooks[1]",
        "hooks.PreToolUse[0].hooks[0]",
    ):
        assert any(entry in message for message in skipped)
    assert "judge" not in " ".join(skipped)
    assert [reg.name for reg in registry.callbacks(HookPoint.STOP)] == ["claude:Stop"]
    assert not registry.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)


@pytest.mark.parametrize(
    "config",
    [
        {"hooks": {"PostToolBatch": [{"hooks": [_command()]}]}},
        {"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "judge"}]}]}},
        {"PreToolCall": [{"command": "x"}], "Elicitation": []},
    ],
)
def test_strict_refuses_what_it_would_skip(config: dict[str, object]) -> None:
    """Under strict=True an unmapped event or hook type is a HookValueError, and nothing is loaded."""
    registry = HookRegistry()
    with pytest.raises(HookValueError, match="strict=False"):
        load_hooks_config(registry, config, strict=True)
    assert len(registry) == 0


def test_format_detection_and_explicit_format() -> None:
    """A top-level "hooks" (or another settings key) means Claude Code, Recursive's event names Recursive."""
    registry = HookRegistry()
    load_hooks_config(registry, {"hooks": {"Stop": [{"hooks": [_command()]}]}})
    load_hooks_config(registry, {"STOP": [{"command": "true"}]})
    assert [reg.name for reg in registry.callbacks(HookPoint.STOP)] == ["claude:Stop", "recursive:Stop"]
    with pytest.raises(HookValueError, match="neither"):
        load_hooks_config(registry, {"theme": "dark"})
    empty = load_hooks_config(HookRegistry(), {"permissions": {"allow": ["Bash"]}})  # a settings file without hooks
    assert len(empty.registry) == 0
    with pytest.raises(HookValueError, match="format="):
        load_hooks_config(registry, {"hooks": {}}, format="codex")  # type: ignore[arg-type]  # the mistake tested
    load_hooks_config(registry, {"Stop": [{"hooks": [_command()]}]}, format="recursive")
    assert len(registry.callbacks(HookPoint.STOP)) == 3


def test_a_settings_file_loads_from_its_path(kit: Kit, tmp_path: Path) -> None:
    """A path (str or Path) is read as JSON; other keys of a settings file are ignored."""
    settings = tmp_path / "settings.json"
    config = kit.claude("PreToolUse", kit.shell("exit 2"))
    settings.write_text(json.dumps({"permissions": {"allow": []}, **config}))
    for source in (settings, str(settings)):
        registry = HookRegistry()
        load_hooks_config(registry, source)
        assert not registry.resolve_tool_call(kit.call()).result.allowed


def test_bad_sources_are_refused(tmp_path: Path) -> None:
    """A file that is not a JSON object, or a source that is neither a path nor a mapping, is refused."""
    registry = HookRegistry()
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(HookValueError, match="not valid JSON"):
        load_hooks_config(registry, broken)
    broken.write_text("[]")
    with pytest.raises(HookValueError, match="not an object"):
        load_hooks_config(registry, broken)
    with pytest.raises(HookTypeError, match="path or a mapping"):
        load_hooks_config(registry, 42)  # type: ignore[arg-type]  # the mistake tested
    with pytest.raises(HookTypeError, match="not a HookRegistry"):
        load_hooks_config(object(), {"hooks": {}})  # type: ignore[arg-type]  # the mistake tested


def test_loading_registers_nothing_into_the_registry_itself(kit: Kit) -> None:
    """The hooks live in an included registry of their own: the target's own hooks are untouched."""
    registry = HookRegistry()
    inclusion = load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 0")))
    assert registry.unregister("claude:PreToolUse") == 0
    assert [reg.name for reg in registry.callbacks(HookPoint.TRANSFORM_TOOL_INPUT)] == [
        "claude:transcript",  # records the call before the config's hooks read the transcript
        "claude:PreToolUse",
    ]
    assert [reg.name for reg in inclusion.registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)] == ["claude:PreToolUse"]
