"""The adversarial-returns table: hostile values returned at every decide and transform point, both surfaces.

Each value is either of a type the point does not accept, or of an accepted
type that cannot be read: dunders that raise, subclasses of the (final)
result types overriding what dispatch reads, ``object.__new__`` instances
missing their slots, mappings that lie about their keys. Under every policy
the point allows, returning one is a failure of the hook (DESIGN §5): logged
once as ``hook_failed`` and nothing else, decided by the policy, and the
hostile value never reaches the caller or counts as a pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

import pytest
from structlog.testing import capture_logs

from hookreg import (
    Decision,
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookStyle,
    InvalidToolCallAction,
    RequestPatch,
    StopRun,
    TurnAction,
)

from ._support import make_context

POINTS = [point for point in HookPoint if point.style is not HookStyle.OBSERVE]
POLICIES = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}


class HostilityError(Exception):
    """What every hostile dunder raises."""


def hostile(*args: object) -> NoReturn:
    """A dunder body that refuses to answer."""
    raise HostilityError


class RaisingBool:
    """An object whose truth value raises."""

    __bool__ = hostile


class RaisingEq:
    """An object whose comparisons and hash raise."""

    __eq__ = __ne__ = __hash__ = hostile


class RaisingIter:
    """A sequence-like object whose iteration raises."""

    __iter__ = hostile


class RaisingGetitem:
    """A sequence-like object whose indexing raises."""

    __getitem__ = hostile


class RaisingLen:
    """A sized object whose length raises."""

    __len__ = hostile


class RaisingClass:
    """An object whose ``__class__`` raises, so ``isinstance`` against anything but its own type raises."""

    __class__ = property(hostile)


class RaisingStr(str):
    """A str whose conversion, truth value and comparisons raise."""

    __str__ = __bool__ = __eq__ = __ne__ = __hash__ = hostile


class MappingRaisingIter(Mapping[str, object]):
    """A Mapping whose iteration raises."""

    def __getitem__(self, key: str) -> object:
        return 1

    __iter__ = hostile

    def __len__(self) -> int:
        return 1


class MappingRaisingGetitem(Mapping[str, object]):
    """A Mapping whose lookups raise."""

    __getitem__ = hostile

    def __iter__(self) -> Iterator[str]:
        return iter(["command"])

    def __len__(self) -> int:
        return 1


class MappingLyingKeys(Mapping[str, object]):
    """A Mapping that lists a key it does not hold."""

    def __getitem__(self, key: str) -> object:
        if key == "ghost":
            raise KeyError(key)
        return 1

    def __iter__(self) -> Iterator[str]:
        return iter(["command", "ghost"])

    def __len__(self) -> int:
        return 1


class DictRaisingIter(dict[str, object]):
    """A dict subclass whose own iteration raises (its storage is fine)."""

    __iter__ = hostile


class DictRaisingGetitem(dict[str, object]):
    """A dict subclass whose own lookups raise (its storage is fine)."""

    __getitem__ = hostile


def subclass(base: type) -> type:
    """A subclass of a result type that overrides equality, truth and the attributes dispatch reads."""
    return type(f"Hostile{base.__name__}", (base,), {"__eq__": hostile, "__hash__": hostile, "__bool__": hostile})


def bare(cls: type, /, **fields: object) -> Any:
    """An instance of `cls` made without its constructor, holding only `fields`."""
    value: Any = object.__new__(cls)
    for name, field_value in fields.items():
        object.__setattr__(value, name, field_value)
    return value


# id -> factory; each factory runs per cell, so no cell sees another's object.
VALUES: dict[str, Callable[[], object]] = {
    "raising-bool": RaisingBool,
    "raising-eq": RaisingEq,
    "raising-iter": RaisingIter,
    "raising-getitem": RaisingGetitem,
    "raising-len": RaisingLen,
    "raising-class": RaisingClass,
    "raising-str": lambda: RaisingStr("gpt"),
    "mapping-raising-iter": MappingRaisingIter,
    "mapping-raising-getitem": MappingRaisingGetitem,
    "mapping-lying-keys": MappingLyingKeys,
    "dict-raising-iter": lambda: DictRaisingIter(command="ls"),
    "dict-raising-getitem": lambda: DictRaisingGetitem(command="ls"),
    "hookresult-subclass": lambda: subclass(HookResult)(decision=Decision.DENY, reason="sub"),
    "turnaction-subclass": lambda: subclass(TurnAction)(kind="repeat"),
    "invalid-action-subclass": lambda: subclass(InvalidToolCallAction)(kind="skip", reason="sub"),
    "requestpatch-subclass": lambda: subclass(RequestPatch)(preamble="sub"),
    "bare-hookresult": lambda: bare(HookResult),
    "bare-turnaction": lambda: bare(TurnAction),
    "bare-invalid-action": lambda: bare(InvalidToolCallAction),
    "bare-requestpatch": lambda: bare(RequestPatch),
    "allow-with-raising-message": lambda: bare(
        HookResult, decision=Decision.ALLOW, reason="", message=RaisingStr("hi"), decided_by=None
    ),
    "turnaction-with-raising-kind": lambda: bare(TurnAction, kind=RaisingEq(), feedback=None, decided_by=None),
}
CELLS = [
    (point, policy, value_id, is_async)
    for point in [*POINTS, HookPoint.POST_TOOL_CALL]  # and one observer: any return but None is wrong there
    for policy in POLICIES[point.style]
    for value_id in VALUES
    for is_async in (False, True)
]


def untouched(point: HookPoint, ctx: Any) -> object:
    """What the dispatch returns when the failing hook counts as a pass (or as not having run)."""
    subjects = {
        HookPoint.TRANSFORM_TOOL_INPUT: "args",
        HookPoint.MODEL_SELECT: "selected_model",
        HookPoint.ON_TOOL_ERROR: "message",
        HookPoint.TRANSFORM_TOOL_RESULT: "presentation",
        HookPoint.PRE_MODEL_CALL: "patch",
    }
    if point in subjects:
        return getattr(ctx, subjects[point])
    if point.style is HookStyle.OBSERVE:
        return None
    return {
        HookPoint.ON_INTERACTION: HookResult.deny("no interaction hook"),
        HookPoint.MODEL_TURN_FINISHED: TurnAction.continue_run(),
        HookPoint.INVALID_TOOL_CALL: InvalidToolCallAction.fail(),
    }.get(point, HookResult.allow())


def test_table_size() -> None:
    """Every decide and transform point and an observer, under each policy, meet every hostile value, both surfaces."""
    assert len(POINTS) == 12
    assert len(CELLS) == (7 * 3 + 5 * 2 + 2) * len(VALUES) * 2


@pytest.mark.parametrize(("point", "policy", "value_id", "is_async"), CELLS, ids=str)
def test_hostile_return(point: HookPoint, policy: str, value_id: str, *, is_async: bool) -> None:
    """The hostile value is one logged failure, decided by the policy, and never what the caller gets."""
    value = VALUES[value_id]()

    def sync_hook(ctx: object) -> Any:
        return value

    async def async_hook(ctx: object) -> Any:
        return value

    registry = HookRegistry()
    registry.register(point, async_hook if is_async else sync_hook, name="hostile", on_error=policy)
    ctx = make_context(point, tool_name="bash", patch=RequestPatch())
    method = {HookStyle.DECIDE: "decide", HookStyle.TRANSFORM: "transform", HookStyle.OBSERVE: "notify"}[point.style]
    raised: BaseException | None = None
    result: Any = None
    with capture_logs() as logs:
        try:
            if is_async:
                result = asyncio.run(getattr(registry, "a" + method)(point, ctx))
            else:
                result = getattr(registry, method)(point, ctx)
        except (HostilityError, HookReturnError, AttributeError, KeyError, StopRun) as exc:
            raised = exc

    assert [(e["event"], e["hook"]) for e in logs] == [("hook_failed", "hostile")]
    if policy == "raise":
        assert raised is not None
        assert isinstance(raised, HookReturnError) or "'hostile'" in raised.__notes__[0]
    elif policy == "ignore":
        assert raised is None
        assert result is not value
        assert result == untouched(point, ctx)
    elif point is HookPoint.MODEL_TURN_FINISHED:  # its failure stops the run
        assert isinstance(raised, StopRun)
        assert raised.hook == "hostile"
    else:
        assert raised is None
        assert result is not value
        assert type(result) in {HookResult, InvalidToolCallAction}
        assert result.decided_by == "hostile"
        if point is HookPoint.INVALID_TOOL_CALL:
            assert result.kind == "fail"
        else:
            assert result.allowed is (point is HookPoint.STOP)  # a failing STOP gate lets the run stop


def test_a_str_subclass_is_read_as_the_plain_str_it_holds() -> None:
    """A transform returning a str subclass (a StrEnum member) hands the caller a plain str of the same text."""
    import enum

    class Model(enum.StrEnum):
        SMALL = "small-model"

    registry = HookRegistry()
    registry.register(HookPoint.MODEL_SELECT, lambda ctx: Model.SMALL)
    chosen = registry.transform(HookPoint.MODEL_SELECT, make_context(HookPoint.MODEL_SELECT))
    assert (type(chosen), chosen) == (str, "small-model")


def test_a_dict_subclass_is_copied_through_its_own_methods() -> None:
    """A well-behaved dict subclass is read through its own methods into plain, read-only args."""

    class Upper(dict[str, object]):
        def __getitem__(self, key: str) -> object:
            return str(super().__getitem__(key)).upper()

    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: Upper(command="ls"))
    args = registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, make_context(HookPoint.TRANSFORM_TOOL_INPUT))
    assert dict(args) == {"command": "LS"}
