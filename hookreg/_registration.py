"""Registration and Inclusion (the handles), and the validation of a hook and its options."""

from __future__ import annotations

# inspect (which imports ast and dis: a third of `import hookreg`) and dis are imported where
# they are used, on first use; opcode holds the tables dis re-exports.
import functools
import itertools
import opcode
import re
import types
import warnings
from _thread import RLock  # threading's RLock, without importing threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, final

from hookreg._errors import DuplicateHookWarning, HookReturnError, HookSignatureError, HookTypeError, HookValueError
from hookreg._points import POINTS, HookPoint, HookStyle, PointSpec, unknown_point

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    class Owner(Protocol):
        """The registry a Registration or an Inclusion belongs to: hookreg._registry.RegistryCore."""

        def _drop(self, reg: Registration) -> None: ...
        def _exclude(self, inclusion: Inclusion[Any]) -> None: ...


__all__ = [
    "LOCK",
    "Inclusion",
    "Registration",
    "as_point",
    "detach",
    "filtered_out",
    "is_async",
    "name_of",
    "predecessor",
    "quoted_name",
    "replace_handle",
    "short_name",
    "validate",
    "wrong_return",
]


# One lock for every registry: an inclusion links two registries' plans, and
# registration is rare enough that one lock costs nothing.
LOCK: Final = RLock()
_ORDER: Final = itertools.count()
# The enclosing functions of a function defined inside another one: "make.<locals>.gate" shows as "gate".
# A pattern string: `re` compiles and caches it on first use, not at import.
_LOCALS: Final = r"[^\s()]*<locals>\."

_POLICIES: Final = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}


def as_point(point: object, doing: str) -> HookPoint:
    """Return `point` as a HookPoint, or raise naming what was being done."""
    if isinstance(point, HookPoint):
        return point
    if isinstance(point, str):
        try:
            return HookPoint(point)
        except HookValueError:
            raise unknown_point(point, doing) from None
    msg = f"Cannot {doing}: the point must be a HookPoint or its value string, not {type(point).__name__}."
    raise HookTypeError(msg)


@final
class Registration:
    """A registered hook; also a handle to remove it.

    Use it as a context manager to remove the hook on exit. Its attributes are
    read-only: to change an option, register again with the same `name`.

    Attributes:
        point: Where the hook is registered.
        name: Its name (by default the callable's qualified name; not unique).
        callback: The callable itself.
        priority: Higher runs first.
        tools: The ``tools=`` patterns, or ``None`` for every tool.
        on_error: The failure policy.
        timeout: Seconds an async hook may take, or ``None``.
        is_async: Whether the callable is async. A dual-path hook (sync
            ``__call__`` plus ``async def acall``) is not: a sync dispatch calls it.
    """

    __slots__ = (
        "_async_path",
        "_lambda_spot",
        "_matcher",
        "_order",
        "_registry",
        "_rerun_key",
        "_returns_none",
        "callback",
        "is_async",
        "name",
        "on_error",
        "point",
        "priority",
        "timeout",
        "tools",
    )

    point: HookPoint
    name: str
    callback: Callable[[Any], object]
    priority: int
    tools: tuple[str, ...] | None
    on_error: str
    timeout: float | None
    is_async: bool
    _async_path: Callable[[Any], Any] | None  # what the async surface awaits: see _async_path_of
    _lambda_spot: tuple[str, str, int, int] | None  # see _lambda_spot
    _matcher: Callable[[Any], bool] | None
    _order: int
    _registry: Owner | None
    _rerun_key: tuple[str, str] | None  # see _rerun_key: read once, compared at every later registration
    _returns_none: bool  # an observer whose code can return only None (see returns_only_none)

    def __init__(self, **values: object) -> None:
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        msg = f"Cannot set {name!r} on {self!r}: a Registration is read-only. Register again with the same name=."
        raise AttributeError(msg)

    @property
    def label(self) -> str:
        """The hook's name as tables show it: without the ``<locals>`` path of a function defined in a function.

        Example:
            >>> from hookreg import HookPoint, HookRegistry
            >>> def watch(registry):
            ...     def note(ctx):
            ...         print(ctx.message)
            ...     return registry.register(HookPoint.NOTIFICATION, note)
            >>> hook = watch(HookRegistry())
            >>> hook.name, hook.label
            ('watch.<locals>.note', 'note')
        """
        return short_name(self.name)

    def check_return(self, value: object, /) -> None:
        """Raise the `HookReturnError` dispatch raises when this hook returns `value`, if its point refuses it.

        The check is dispatch's own (`HookPoint.is_valid_return`); a coroutine
        returned by a sync hook is closed, so Python does not warn that it was
        never awaited. `hookreg.testing.call_hook` checks a hook's return with it.

        Example:
            >>> from hookreg import HookPoint, HookRegistry, HookReturnError
            >>> hook = HookRegistry().register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: False, name="gate")
            >>> try:
            ...     hook.check_return(False)
            ... except HookReturnError as exc:
            ...     print(str(exc).replace(": ", ":\\n"))
            Cannot use what hook 'gate' returned at pre_tool_call_decide:
            it returned bool; expected HookResult. Return a value of type HookResult instead.
        """
        if not POINTS[self.point].accepts(value):
            raise wrong_return(POINTS[self.point], self, value)

    def remove(self) -> bool:
        """Remove the hook; ``False`` when it was already gone (removed, replaced or cleared)."""
        with LOCK:
            registry = self._registry
            if registry is None:
                return False
            registry._drop(self)
            return True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<Registration {self.point.value} {self.name!r} priority={self.priority}>"


def wrong_return(spec: PointSpec, reg: Registration, value: object) -> HookReturnError:
    """Build the error for hook `reg` returning `value`, which its point `spec` does not accept."""
    import inspect  # noqa: PLC0415 -- on first use, see the imports

    hint = f"Return a value of type {spec.expected} instead."
    if inspect.isawaitable(value):
        if isinstance(value, Coroutine):  # a native one, or an a-method's (hookreg._dispatch.DispatchCoroutine)
            value.close()  # never awaited: close it so Python does not warn later
        hint = "It is an awaitable from a sync callable: make it an async def, or return the value itself."
    msg = (
        f"Cannot use what hook {reg.name!r} returned at {spec.point}: "
        f"it returned {type(value).__name__}; expected {spec.expected}. {hint}"
    )
    return HookReturnError(msg, point=spec.point, callback=reg.callback, returned_type=type(value))


_R = TypeVar("_R")  # the included registry's class: what `registry` gives back, its typed surface included


@final
class Inclusion(Generic[_R]):
    """A live inclusion of one registry into another; also a handle to undo it.

    Attributes:
        registry: The included registry.
        priority: Its position among the including registry's hooks.
    """

    __slots__ = ("_order", "_parent", "priority", "registry")

    def __init__(self, parent: Owner, registry: _R, priority: int) -> None:
        self._parent: Owner | None = parent
        self._order = next(_ORDER)
        self.registry: _R = registry
        self.priority: int = priority

    def remove(self) -> bool:
        """Undo the inclusion; ``False`` when it was already undone or cleared."""
        with LOCK:
            parent = self._parent
            if parent is None:
                return False
            parent._exclude(self)
            return True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<Inclusion of {self.registry!r} priority={self.priority}>"


_MAX_TIMEOUT: Final = 1e9  # seconds (about 31 years): asyncio cannot schedule much further


def name_of(fn: object) -> str:
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__qualname__", None)
    if not isinstance(name, str):
        name = type(target).__qualname__
    return f"partial({name})" if target is not fn else name


def short_name(name: str) -> str:
    """`name` as tables show it: without the ``outer.<locals>.`` path of a function defined in a function."""
    return re.sub(_LOCALS, "", name)


def quoted_name(fn: object) -> str:
    """How messages name a hook: its name when callable, else its repr."""
    return repr(name_of(fn)) if callable(fn) else repr(fn)


def is_async(fn: object) -> bool:
    import inspect  # noqa: PLC0415 -- on first use, see the imports

    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


# How far back each return instruction loads what it returns: RETURN_CONST (Python 3.12, 3.13) is its own load.
_RETURNS: Final = {
    opcode.opmap[name]: back for name, back in (("RETURN_VALUE", 2), ("RETURN_CONST", 0)) if name in opcode.opmap
}
_LOADS_CONST: Final = (opcode.opmap["LOAD_CONST"], opcode.opmap.get("RETURN_CONST", -1))
_EXTENDED_ARG: Final = opcode.opmap["EXTENDED_ARG"]
_JUMPS: Final = frozenset(opcode.hasjrel + opcode.hasjabs)
# Code object flags, as inspect names them (CO_VARARGS; CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
# CO_ASYNC_GENERATOR), written out so that `import hookreg` does not import inspect (a test holds them equal).
CO_VARARGS: Final = 0x4
CO_YIELDS: Final = 0x20 | 0x80 | 0x100 | 0x200


def returns_only_none(fn: object) -> bool:
    """Whether `fn` is a function (or bound method) whose code can return nothing but ``None``.

    True when every return in its bytecode returns the constant ``None`` and
    nothing jumps to a return with another value on the stack (``return x or
    None`` does): a ``def`` whose returns are all bare, or ``lambda _: None``.
    The observe loop calls such hooks without testing what they return.

    On Python 3.11, where ``return None`` is two instructions, a function with
    a ``try`` or ``with`` block is not proven (its returns are tested). A
    function whose ``__code__`` is reassigned after it is registered is not
    read again.
    """
    if type(fn) is types.MethodType:
        fn = fn.__func__
    if type(fn) is not types.FunctionType:
        return False
    code = fn.__code__
    if code.co_flags & CO_YIELDS:
        return False
    raw, consts = code.co_code, code.co_consts  # (opcode, argument) pairs; inline caches are zeros
    landings: list[int] = []  # where no jump may land: after a returned None is loaded, up to its return
    jumps = False
    for at in range(0, len(raw), 2):
        op = raw[at]
        if op in _JUMPS:
            jumps = True
        elif op in _RETURNS:
            loaded_at = at - _RETURNS[op]
            if not _loads_none(raw, consts, loaded_at):
                return False
            landings.extend(range(loaded_at + 2, at + 2, 2))
    if not landings:
        return True
    if code.co_exceptiontable:  # a handler could land there too: a try or with block is not read further
        return False
    # dis.findlabels costs 10-30 us on Python 3.11, so only a function with jumps pays it.
    return not jumps or _lands_nowhere(raw, landings)


def _lands_nowhere(raw: bytes, offsets: list[int]) -> bool:
    """Whether no jump in the bytecode `raw` lands on any of `offsets`."""
    import dis  # noqa: PLC0415 -- on first use, see the imports

    # typeshed types findlabels' argument as a code object; it takes the code's bytes.
    return set(offsets).isdisjoint(dis.findlabels(raw))  # type: ignore[arg-type]


def _loads_none(raw: bytes, consts: tuple[object, ...], at: int) -> bool:
    """Whether the instruction at offset `at` of `raw` loads (or returns) the constant ``None``."""
    if at < 0 or raw[at] not in _LOADS_CONST or (at >= 2 and raw[at - 2] == _EXTENDED_ARG):
        return False
    return consts[raw[at + 1]] is None


def _async_path_of(fn: Callable[..., object], fn_is_async: bool) -> Callable[..., Any] | None:
    """What the async surface awaits: `fn` itself when async, a dual-path hook's `acall`, else ``None`` (sync)."""
    if fn_is_async:
        return fn
    acall = getattr(fn, "acall", None)
    return acall if acall is not None and is_async(acall) else None


def _takes_one_argument(fn: Callable[..., object]) -> bool:
    """Whether `fn` can be called with one positional argument (builtins without a signature are trusted)."""
    if type(fn) is types.FunctionType and not hasattr(fn, "__wrapped__"):
        # The common case, read off the code object: inspect.signature costs ~15 us.
        code = fn.__code__
        required = code.co_argcount - len(fn.__defaults__ or ())
        accepts = code.co_argcount >= 1 or bool(code.co_flags & CO_VARARGS)
        return required <= 1 and accepts and code.co_kwonlyargcount == len(fn.__kwdefaults__ or ())
    import inspect  # noqa: PLC0415 -- on first use, see the imports

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(None)
    except TypeError:
        return False
    return True


def _same_method(a: object, b: types.MethodType) -> bool:
    """Whether `a` is the very same callable as the bound method `b`: the same function of the same object."""
    return isinstance(a, types.MethodType) and a.__self__ is b.__self__ and a.__func__ is b.__func__


def _rerun_key(fn: object) -> tuple[str, str] | None:
    """The ``(__module__, __qualname__)`` by which a re-run notebook cell's function replaces its predecessor.

    Only a plain function defined at module level has one: a lambda, a closure
    (a factory makes many distinct hooks, whatever their names), a nested
    function, a partial, a bound method or a callable object gives ``None`` and
    never replaces implicitly. A function decorated by a wrapper is a closure.
    """
    if not isinstance(fn, types.FunctionType) or fn.__closure__ is not None:
        return None
    module, qualname = fn.__module__, fn.__qualname__
    if not isinstance(module, str) or "<" in qualname:  # <locals>, <lambda>
        return None
    return module, qualname


def _lambda_spot(fn: object) -> tuple[str, str, int, int] | None:
    """A lambda's ``(__module__, __qualname__, line, column of its body)``: where a re-run cell defines it again.

    ``None`` for anything but a lambda. Two lambdas on one line differ by column.
    """
    if not isinstance(fn, types.LambdaType) or not fn.__qualname__.endswith("<lambda>"):
        return None
    # The first instruction is RESUME, at the lambda keyword; the body's first instruction comes next.
    _, (line, _, column, _) = itertools.islice(fn.__code__.co_positions(), 2)
    return str(fn.__module__), fn.__qualname__, line or 0, column or 0


def _warn_if_rerun_lambda(hooks: list[Registration], fn: types.FunctionType, stacklevel: int) -> None:
    """Warn when `fn` is a lambda a re-run cell made again: same place as a registered one, another code object.

    A loop or a factory makes its lambdas from one code object: those are distinct hooks, on purpose.
    """
    spot = _lambda_spot(fn)
    if spot is None:
        return
    code = fn.__code__
    same = (r for r in hooks if r._lambda_spot == spot)
    twin = next((r for r in same if getattr(r.callback, "__code__", None) is not code), None)
    if twin is not None:
        msg = (
            f"A lambda defined at the same place (line {spot[2]}) is already registered at {twin.point} as "
            f"{twin.name!r}: re-running its cell registers a second hook. Pass name= (the same on every run) "
            "to replace it instead, or a distinct name= to keep both."
        )
        warnings.warn(msg, DuplicateHookWarning, stacklevel=stacklevel)


def predecessor(hooks: list[Registration], fn: object, name: str | None, stacklevel: int) -> Registration | None:
    """The registration that registering `fn` as `name` replaces, if any (DESIGN §4, Replacement).

    An explicit `name` replaces the earliest hook of that name. Without one,
    a module-level function replaces the earliest hook whose callback is
    another function of the same ``__module__`` and ``__qualname__``: the
    same cell run again, edited or not. The very same callable registered
    again is not replaced but registered twice, with a warning; so is a lambda
    a re-run cell defined again (`_warn_if_rerun_lambda`).
    """
    if name is not None:
        return next((r for r in hooks if r.name == name), None)
    if isinstance(fn, types.MethodType):  # a new bound method object at each attribute read
        same = next((r for r in hooks if _same_method(r.callback, fn)), None)
    else:
        same = next((r for r in hooks if r.callback is fn), None)
    if same is not None:
        msg = (
            f"{same.name!r} is already registered at {same.point}; registering the same callable again "
            f"runs it twice. Pass name={same.name!r} to replace it instead, or a distinct name= to keep both."
        )
        warnings.warn(msg, DuplicateHookWarning, stacklevel=stacklevel)
        return None
    key = _rerun_key(fn)
    if key is None:
        if isinstance(fn, types.FunctionType):
            _warn_if_rerun_lambda(hooks, fn, stacklevel + 1)
        return None
    return next((r for r in hooks if r._rerun_key == key), None)


def signature_of(fn: Callable[..., object]) -> str:
    """`fn`'s signature as messages show it."""
    import inspect  # noqa: PLC0415 -- on first use, see the imports

    return str(inspect.signature(fn))


def validate(  # noqa: PLR0912, PLR0913, PLR0917 -- one check per option, each with its message
    owner: Owner,
    point: HookPoint,
    fn: object,
    name: str | None,
    priority: int,
    tools: str | Iterable[str] | None,
    on_error: str | None,
    timeout: float | None,
) -> Registration:
    what = f"register {quoted_name(fn)} at {point}"

    def type_error(msg: str) -> HookTypeError:
        return HookTypeError(f"Cannot {what}: {msg}", point=point, callback=fn)

    def value_error(msg: str) -> HookValueError:
        return HookValueError(f"Cannot {what}: {msg}", point=point, callback=fn)

    if not callable(fn):
        msg = f"Cannot {what}: it is not callable. Pass a function taking one {point.context.__name__}."
        raise HookSignatureError(msg, point=point, callback=fn)
    if not _takes_one_argument(fn):
        msg = (
            f"Cannot {what}: it must accept exactly one positional argument, the "
            f"{point.context.__name__}, but its signature is {signature_of(fn)}. "
            "Read what you need from that one context."
        )
        raise HookSignatureError(msg, point=point, callback=fn)
    if name is not None and not isinstance(name, str):
        raise type_error(f"name= must be a str, not {type(name).__name__}.")
    if name is not None and not name.strip():
        raise value_error(
            f"name={name!r} is empty or blank. Give a name with a visible character, or omit name= to use "
            "the function's name."
        )
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise type_error(f"priority= must be an int, not {type(priority).__name__}.")
    policies = _POLICIES[point.style]
    if on_error is not None and not isinstance(on_error, str):
        raise type_error(f"on_error= must be one of {policies}, not {type(on_error).__name__}.")
    if on_error is not None and on_error not in policies:
        raise value_error(f"on_error={on_error!r} does not apply to {point.style} hooks. Use one of {policies}.")
    patterns = matcher = None
    if tools is not None:
        if not point.is_tool_scoped:
            raise value_error(f"tools= applies only to tool-scoped points; {point} has no tool_name. Remove tools=.")
        if isinstance(tools, Mapping):  # an iterable of str, its keys, but its values would be dropped unread
            raise type_error(
                f"tools= must be a str or an iterable of str, not a mapping ({type(tools).__name__}): its values "
                f"would be ignored. Pass the tool names, as in tools={list(tools)!r}."
            )
        from hookreg._patterns import tools_matcher  # noqa: PLC0415 -- on first tools=: keeps the import light

        patterns, matcher = tools_matcher(tools, point.context, type_error, value_error)
    hook_is_async = is_async(fn)
    async_path = _async_path_of(fn, hook_is_async)
    if async_path is not None and async_path is not fn and not _takes_one_argument(async_path):
        msg = (
            f"Cannot {what}: its async path `acall` must accept exactly one positional argument, the "
            f"{point.context.__name__}, but its signature is {signature_of(async_path)}."
        )
        raise HookSignatureError(msg, point=point, callback=fn)
    if timeout is not None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool):
            raise type_error(f"timeout= must be a number of seconds, not {type(timeout).__name__}.")
        if async_path is None:
            raise value_error(
                "timeout= applies only to async callables (an async def, or an object with an "
                "`async def acall` beside its __call__). Make the hook async or drop timeout=."
            )
        if not 0 < timeout <= _MAX_TIMEOUT:  # compared exactly: no float conversion to overflow
            shown = repr(timeout) if isinstance(timeout, float) or abs(timeout) <= _MAX_TIMEOUT else "a huge int"
            raise value_error(f"timeout={shown} must be a positive, finite number of seconds, at most 1e9.")
    return Registration(
        point=point,
        name=name if name is not None else name_of(fn),
        callback=fn,
        priority=priority,
        tools=patterns,
        on_error=on_error if on_error is not None else policies[0],
        timeout=float(timeout) if timeout is not None else None,
        is_async=hook_is_async,
        _async_path=async_path,
        _matcher=matcher,
        _order=next(_ORDER),
        _registry=owner,
        _rerun_key=_rerun_key(fn),
        _lambda_spot=_lambda_spot(fn),
        _returns_none=point.style is HookStyle.OBSERVE and returns_only_none(fn),
    )


def filtered_out(reg: Registration, ctx: Any) -> bool:
    """Whether `reg`'s ``tools=`` patterns keep it from running on `ctx` (the rules ask before each call)."""
    matcher = reg._matcher
    return matcher is not None and not matcher(ctx)


# --- what the registry core changes on a handle -----------------------------------
# Registration and Inclusion keep these fields private (they are no part of the
# public handle); the core's modules read them directly (the layers test guards who may).


def replace_handle(old: Registration, new: Registration) -> None:
    """Give `new` the place of `old`, which no longer belongs to its registry."""
    object.__setattr__(new, "_order", old._order)
    object.__setattr__(old, "_registry", None)


def detach(handle: Registration | Inclusion[Any]) -> None:
    """Mark `handle` as removed: removing it again does nothing."""
    if isinstance(handle, Inclusion):
        handle._parent = None
    else:
        object.__setattr__(handle, "_registry", None)
