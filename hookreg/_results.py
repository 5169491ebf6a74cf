"""What hooks return: HookResult, TurnAction, InvalidToolCallAction, RequestPatch, FinishReason."""

from __future__ import annotations

import enum
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, NoReturn, TypeVar, cast, final

from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log

__all__ = [
    "NO_ANSWER",
    "VALUE_CLASS",
    "Decision",
    "FinishReason",
    "HookResult",
    "InvalidToolCallAction",
    "Message",
    "RequestPatch",
    "ToolCallResolution",
    "TurnAction",
    "compile_function",
    "field",
    "replace",
    "value_class",
]

_K = TypeVar("_K")
_V = TypeVar("_V")
if TYPE_CHECKING:  # annotations only name it
    _T = TypeVar("_T")

_short = reprlib.Repr()
_short.maxother = 200  # a value's repr in an error message: a result's whole, a hostile one cut


class _Factory:
    """The default of a field that a factory fills in; it reads ``<factory>`` in a signature, as in a dataclass."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Final[Any] = _Factory()
"""What a written-out ``__init__`` takes as the default of a field with a ``default_factory``."""


def _frozen_setattr(self: object, name: str, value: object) -> NoReturn:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 -- on the error path: keeps the import light

    msg = f"cannot assign to field {name!r}"
    raise FrozenInstanceError(msg)


def _frozen_delattr(self: object, name: str) -> NoReturn:
    from dataclasses import FrozenInstanceError  # noqa: PLC0415 -- on the error path: keeps the import light

    msg = f"cannot delete field {name!r}"
    raise FrozenInstanceError(msg)


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    """A dataclass's repr: every field (a value class has no ``repr=False`` field)."""
    return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


def _getstate(self: Any) -> list[object]:
    return [getattr(self, name) for name in self.__slots__]


def _setstate(self: Any, state: list[object]) -> None:
    for name, value in zip(self.__slots__, state, strict=True):
        object.__setattr__(self, name, value)


class _DataclassAttribute:
    """A value class's ``__dataclass_fields__`` or ``__dataclass_params__``, made when first read.

    Reading either (as `fields`, `replace`, `asdict` and `is_dataclass` do)
    runs `dataclass` once, on a throwaway class with the value class's
    annotations and defaults, and stores both of its attributes on the value
    class, in place of these descriptors it shares with every value class:
    the dataclass machinery costs nothing at import.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type) -> object:
        from dataclasses import dataclass, field  # noqa: PLC0415 -- on first read: keeps the import light

        cls = next(c for c in owner.__mro__ if "_defaults" in vars(c))  # the value class itself, for a subclass
        body = vars(cls)
        defaults = {n: field(**d.options) if type(d) is _Field else d for n, d in body["_defaults"].items()}
        namespace = {"__annotations__": body["__annotations__"], "__module__": cls.__module__, **defaults}
        kw_only = body["__match_args__"] == ()
        made: type = dataclass(frozen=True, kw_only=kw_only)(type(cls.__name__, (), namespace))
        for name in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(cls, name, vars(made)[name])
        return vars(cls)[self.name]


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        compared = self._compared
        return compared(self) == compared(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self._compared(self))


VALUE_CLASS: Final = {
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__setattr__": _frozen_setattr,
    "__delattr__": _frozen_delattr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
    "__dataclass_fields__": _DataclassAttribute("__dataclass_fields__"),
    "__dataclass_params__": _DataclassAttribute("__dataclass_params__"),
}
"""What every value class shares: its written-out block adds these to its body (``vars().update(VALUE_CLASS)``)."""


def _value_class(
    *, frozen: Literal[True], slots: Literal[True], kw_only: bool = False
) -> Callable[[type[_T]], type[_T]]:
    """``@dataclass(frozen=True, slots=True)`` built from the declaration, with one compiled ``__init__`` per class.

    The class statement declares the fields (annotations and defaults), the
    docstring and any ``__post_init__``; this builds the slotted class from
    that declaration, as attrs does: ``__slots__`` from the fields, the
    shared methods (`VALUE_CLASS`: equality, repr, pickling, frozen
    assignment), and an ``__init__`` written from the fields as source and
    compiled once (registered with `linecache`, so a debugger steps through
    it). The ``__init__`` stores each slot through its setter, which skips
    the frozen ``__setattr__`` and the name's lookup, then calls
    ``__post_init__``. `dataclasses.dataclass` would write six methods per
    class and build it twice; its attributes are made when first read
    (`_DataclassAttribute`), so `fields`, `replace` and `asdict` work as on
    any frozen dataclass. Type checkers see `dataclass` itself.
    """
    del frozen, slots  # always: what type checkers are told, and what this builds

    def build(cls: type[_T]) -> type[_T]:
        body = dict(vars(cls))
        annotations: dict[str, str] = body["__annotations__"]
        names = tuple(n for n, kind in annotations.items() if not kind.startswith("ClassVar"))
        defaults = {name: body.pop(name) for name in names if name in body}
        for name, default in defaults.items():
            unsupported = sorted(default.options.keys() - _HONOURED) if type(default) is _Field else []
            if unsupported:
                msg = (
                    f"Cannot build {cls.__qualname__}: field {name!r} asks for {', '.join(unsupported)}, which a "
                    f"value class does not honour (every field is shown and set by __init__). "
                    f"Use only {', '.join(sorted(_HONOURED))}."
                )
                raise TypeError(msg)
        for spent in ("__dict__", "__weakref__"):
            body.pop(spent, None)
        body.update(VALUE_CLASS, __slots__=names, _defaults=defaults)
        body["__match_args__"] = () if kw_only else names
        built: Any = type(cls.__name__, cls.__bases__, body)  # every value class is a plain class
        built.__init__ = _Init(names, defaults, annotations, kw_only=kw_only)
        ignored = {n for n, d in defaults.items() if type(d) is _Field and not d.options.get("compare", True)}
        built._compared = attrgetter(*(n for n in names if n not in ignored))
        return cast("type[_T]", built)

    return build


@final
class _Init:
    """A value class's ``__init__`` until first read: then compiled from the fields, and put in its place.

    The source has one parameter and one slot store per field; it is
    compiled once, when the class is first built or inspected (not at
    import: 35 compilations were a quarter of ``import hookreg``), and
    registered with `linecache`, so a debugger steps through it. Storing
    through each slot's setter skips the frozen ``__setattr__`` and the
    name's lookup.
    """

    __slots__ = ("annotations", "defaults", "kw_only", "names")

    def __init__(
        self, names: tuple[str, ...], defaults: dict[str, object], annotations: dict[str, str], *, kw_only: bool
    ) -> None:
        self.names = names
        self.defaults = defaults
        self.annotations = annotations
        self.kw_only = kw_only

    def __get__(self, instance: object, owner: type) -> object:
        cls = next(c for c in owner.__mro__ if vars(c).get("__init__") is self)  # the value class, for a subclass
        init = self.compile(cls)
        setattr(cls, "__init__", init)  # noqa: B010 -- from now on, the plain function (mypy refuses an assignment)
        return init if instance is None else init.__get__(instance, owner)

    def compile(self, cls: type) -> Callable[..., None]:
        namespace: dict[str, object] = {"FACTORY": FACTORY}
        params, stores = [], []
        for name in self.names:
            namespace[f"set_{name}"] = vars(cls)[name].__set__
            value, default = name, self.defaults.get(name, _REQUIRED)
            if type(default) is _Field:
                if "default_factory" in default.options:
                    namespace[f"make_{name}"] = default.options["default_factory"]
                    default, value = FACTORY, f"make_{name}() if {name} is FACTORY else {name}"
                else:
                    default = default.options.get("default", _REQUIRED)
            if default is _REQUIRED:
                params.append(name)
            else:
                namespace[f"default_{name}"] = default
                params.append(f"{name}=default_{name}")
            stores.append(f"    set_{name}(self, {value})\n")
        if "__post_init__" in vars(cls):
            stores.append("    self.__post_init__()\n")
        star = ["*"] if self.kw_only else []
        source = f"def __init__({', '.join(['self', *star, *params])}):\n{''.join(stores)}"
        init = compile_function(source, f"{cls.__module__}.{cls.__qualname__}.__init__", namespace)
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        init.__annotations__ = {name: self.annotations[name] for name in self.names} | {"return": "None"}
        return init


def compile_function(source: str, qualname: str, namespace: dict[str, object]) -> Callable[..., Any]:
    """The function `source` defines (named as `qualname` ends), compiled in `namespace`, its source in `linecache`.

    How a value class gets the methods its fields make (``__init__``, a
    transform step's constructor): compiled once, on first use, from source
    built of the field names alone, so that a debugger steps through it.
    """
    import linecache  # noqa: PLC0415 -- at a value class's first build, not at import

    filename = f"<value class {qualname}>"
    code = compile(source, filename, "exec")
    exec(code, namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return cast("Callable[..., Any]", namespace[qualname.rpartition(".")[2]])


_REQUIRED: Final = object()
"""A field without a default."""
_HONOURED: Final = frozenset({"default", "default_factory", "compare"})
"""The `field` options a value class honours."""


@final
class _Field:
    """What `field` gives at runtime: its options, made a `dataclasses.field` when the dataclass attributes are read."""

    __slots__ = ("options",)

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options


def _field(**options: Any) -> Any:
    """`dataclasses.field` for a value class's body, without importing `dataclasses` (see `_value_class`)."""
    return _Field(options)


def replace(value: _T, /, **changes: Any) -> _T:
    """`dataclasses.replace` for a value class: a copy with `changes`, made by its ``__init__`` (so its checks run)."""
    fields: tuple[str, ...] = value.__slots__  # type: ignore[attr-defined]  # every value class has them
    return type(value)(**{name: getattr(value, name) for name in fields} | changes)


if TYPE_CHECKING:
    from dataclasses import dataclass as value_class
    from dataclasses import field
else:
    value_class, field = _value_class, _field


@final
class ReadOnlyDict(dict[_K, _V]):
    """hookreg's read-only mapping: a dict that refuses every change.

    Contexts, `ToolCallRequest`, `RequestPatch` and `ToolCallResolution` hold
    their mapping fields as one of these. Reading is a dict's (one object, no
    proxy: ``dict(m)``, ``json.dumps(m)`` and ``m | other`` work, the last
    two giving plain dicts); every write through the mapping raises
    `TypeError`. As with a frozen dataclass, dict's own methods called on it
    (``dict.__setitem__(m, k, v)``) are not stopped: that is no longer using
    hookreg. It pickles and deep-copies as itself, and ``copy.copy`` returns
    the same object, since it cannot change. A value that already is one is
    shared, not copied again, by the values that hold it.
    """

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        msg = (
            f"{type(self).__name__!r} object does not support item assignment: hookreg's mappings are "
            "read-only. Change a copy (dict(mapping)); a transform hook returns the new mapping."
        )
        raise TypeError(msg)

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyDict[_K, _V]], tuple[dict[_K, _V]]]:
        # A dict subclass pickles item by item through __setitem__, which refuses.
        return (ReadOnlyDict, (dict(self),))

    def __copy__(self) -> ReadOnlyDict[_K, _V]:
        return self


def wrong_type(owner: str, name: str, value: object, expected: str, hint: str) -> HookTypeError:
    """The error for a field of the wrong type: "Cannot build <owner> with <name>=<value>: …"."""
    msg = (
        f"Cannot build {owner} with {name}={_short.repr(value)}: {name} must be {expected}, "
        f"not {type(value).__name__}. {hint}"
    )
    return HookTypeError(msg)


def read_only(value: Mapping[_K, _V], owner: str, name: str) -> ReadOnlyDict[_K, _V]:
    """Return `value` as hookreg's read-only mapping: itself when it is one, else a shallow copy."""
    cls = value.__class__
    if cls is ReadOnlyDict:
        return cast("ReadOnlyDict[_K, _V]", value)
    if cls is dict or isinstance(value, Mapping):  # a dict first: the ABC check costs more
        return ReadOnlyDict(value)
    raise wrong_type(owner, name, value, "a Mapping", "Pass a dict.")


def _text(owner: str, name: str, value: object, hint: str) -> None:
    if not isinstance(value, str):
        raise wrong_type(owner, name, value, "a str", hint)


def _no_truth(value: object, read: str) -> HookTypeError:
    msg = (
        f"Cannot take the truth value of {_short.repr(value)}: a {type(value).__name__} has none, "
        f"since a refusal would count as true. Read {read} instead."
    )
    return HookTypeError(msg)


class Decision(enum.StrEnum):
    """What a gate decided."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@final
@value_class(frozen=True, slots=True, kw_only=True)
class HookResult:
    """The result of a gate: allow, deny or ask.

    Build it with `allow`, `deny` or `ask`. Equality ignores `decided_by`.
    Fields are checked when built: `decision` must be a `Decision` (its value
    string, such as ``"deny"``, is converted), `reason` and `message` must be
    `str`. It has no truth value: read `allowed`.

    ``HookResult.allow()`` without a message is one shared instance, but code
    must not rely on that identity: a copied or unpickled allow is an equal
    object, not the same one (its `decision` and `allowed` are those of the
    allow it copies).

    Attributes:
        decision: What was decided.
        reason: Why, for the model (empty for an allow).
        message: For the user or the log.
        decided_by: The name of the deciding hook, filled in by dispatch.
    """

    decision: Decision
    reason: str = ""
    message: str = ""
    decided_by: str | None = field(default=None, compare=False)

    _ALLOW: ClassVar[HookResult]

    def __post_init__(self) -> None:
        if self.decision.__class__ is not Decision:
            object.__setattr__(self, "decision", _as_decision(self.decision))
        if self.reason.__class__ is not str:
            _text("HookResult", "reason", self.reason, 'Pass the text the model reads (HookResult.deny("why")).')
        if self.message.__class__ is not str:
            _text("HookResult", "message", self.message, 'Pass the text for the user or the log ("" for none).')
        if self.decided_by is not None and self.decided_by.__class__ is not str:
            _text("HookResult", "decided_by", self.decided_by, "Pass a hook's name, or None (dispatch fills it in).")

    def __bool__(self) -> NoReturn:
        raise _no_truth(self, "`.allowed` (`if result.allowed:`)")

    @property
    def allowed(self) -> bool:
        """``True`` only for an allow."""
        return self.decision is Decision.ALLOW

    @classmethod
    def allow(cls, message: str = "") -> HookResult:
        """Let the action go ahead; without a message this is one shared instance."""
        # Only the empty str is the shared allow: any other value is checked as a message.
        return cls._ALLOW if message.__class__ is str and not message else cls(decision=Decision.ALLOW, message=message)

    @classmethod
    def deny(cls, reason: str) -> HookResult:
        """Refuse the action; `reason` is what the model is told."""
        return cls(decision=Decision.DENY, reason=reason)

    @classmethod
    def ask(cls, reason: str) -> HookResult:
        """Ask a human first (resolved by the harness through ``on_interaction``)."""
        return cls(decision=Decision.ASK, reason=reason)


def _as_decision(value: object) -> Decision:
    if not isinstance(value, str):
        raise wrong_type(
            "HookResult", "decision", value, "a Decision", "Use HookResult.allow(), deny(reason) or ask(reason)."
        )
    try:
        return Decision(value)
    except ValueError:
        choices = ", ".join(repr(d.value) for d in Decision)
        msg = f"Cannot build HookResult with decision={value!r}: it is not a decision. Use one of {choices}."
        raise HookValueError(msg) from None


HookResult._ALLOW = HookResult(decision=Decision.ALLOW)

NO_ANSWER: Final = HookResult(decision=Decision.ALLOW, reason="no answer")
"""What a gate returns to count as not having run (`hookreg.external` at ``on_interaction``): never a decision.

Private to hookreg: a question that only such hooks (and failed, ignored ones) saw is unanswered, so denied."""


_Schema = tuple[tuple[str, ...], tuple[tuple[str, bool], ...], Mapping[str, str]]


def _schema(cls: type[TurnAction | InvalidToolCallAction], needs: Mapping[str, str]) -> _Schema:
    """Read an action class's annotations: its kinds, its text fields (and whether they may be None).

    The annotations are strings (``from __future__ import annotations``): the
    text fields are read as such, and `kind`'s ``Literal[...]`` for its
    quoted names (evaluating the annotation, or `ast.literal_eval`, would
    cost an import of ast or more; a test holds the two readings equal).
    """
    by_name = {name: cls.__annotations__[name] for name in cls.__slots__}
    texts = tuple((name, hint == "str | None") for name, hint in by_name.items() if hint in ("str", "str | None"))
    return tuple(re.findall(r"""["'](\w+)["']""", by_name["kind"])), texts, needs


def _check_action(action: TurnAction | InvalidToolCallAction) -> None:
    owner = type(action).__name__
    # Keyed by the base class: the classes are final to type checkers, not at run time.
    kinds, texts, needs = _SCHEMAS[TurnAction if isinstance(action, TurnAction) else InvalidToolCallAction]
    kind = action.kind
    if not isinstance(kind, str):
        raise wrong_type(owner, "kind", kind, "a str", f"Use one of {kinds}, or {owner}'s classmethods.")
    if kind not in kinds:
        msg = f"Cannot build {owner} with kind={kind!r}: it is not a kind of {owner}. Use one of {kinds}."
        raise HookValueError(msg)
    for name, optional in texts:
        value = getattr(action, name)
        if not isinstance(value, str) and not (optional and value is None):
            expected = "a str or None" if optional else "a str"
            raise wrong_type(owner, name, value, expected, f"Build it with {owner}'s classmethods.")
    needed = needs.get(kind)
    if needed is not None and getattr(action, needed) is None:
        msg = f"Cannot build {owner} with kind={kind!r} and no {needed}: a {kind!r} needs one. Pass {needed}=..."
        raise HookTypeError(msg)


_SCHEMAS: dict[type[TurnAction | InvalidToolCallAction], _Schema] = {}


@final
@value_class(frozen=True, slots=True, kw_only=True)
class TurnAction:
    """What to do with a finished model turn.

    Attributes:
        kind: ``"continue"``, ``"repeat"`` or ``"feedback"``.
        feedback: The user message appended by ``retry_with_feedback``.
        decided_by: The name of the deciding hook; takes no part in equality.

    Fields are checked when built (``"feedback"`` needs a `feedback` text). It
    has no truth value: read `kind`.
    """

    kind: Literal["continue", "repeat", "feedback"]
    feedback: str | None = None
    decided_by: str | None = field(default=None, compare=False)

    _CONTINUE: ClassVar[TurnAction]

    def __post_init__(self) -> None:
        _check_action(self)

    def __bool__(self) -> NoReturn:
        raise _no_truth(self, '`.kind` (`if action.kind == "continue":`)')

    @classmethod
    def continue_run(cls) -> TurnAction:
        """Accept the turn (the pass value; one shared instance)."""
        return cls._CONTINUE

    @classmethod
    def repeat(cls) -> TurnAction:
        """Ask again with the same prompt and history, prepared afresh."""
        return cls(kind="repeat")

    @classmethod
    def retry_with_feedback(cls, text: str) -> TurnAction:
        """Keep the rejected answer and append `text` as a user message."""
        return cls(kind="feedback", feedback=text)


_SCHEMAS[TurnAction] = _schema(TurnAction, {"feedback": "feedback"})
TurnAction._CONTINUE = TurnAction(kind="continue")


@final
@value_class(frozen=True, slots=True, kw_only=True)
class InvalidToolCallAction:
    """What to do with a call to an unknown tool or with bad arguments.

    Attributes:
        kind: ``"fail"``, ``"retry"``, ``"repair"``, ``"skip"`` or ``"stop"``.
        feedback: What the model is told on ``retry``.
        tool_name: The tool to call instead, on ``repair``.
        reason: Why, on ``fail``, ``skip`` and ``stop``.
        decided_by: The name of the deciding hook; takes no part in equality.

    Fields are checked when built (``"retry"`` needs `feedback`, ``"repair"``
    a `tool_name`). It has no truth value: read `kind`.
    """

    kind: Literal["fail", "retry", "repair", "skip", "stop"]
    feedback: str | None = None
    tool_name: str | None = None
    reason: str = ""
    decided_by: str | None = field(default=None, compare=False)

    _FAIL: ClassVar[InvalidToolCallAction]

    def __post_init__(self) -> None:
        _check_action(self)

    def __bool__(self) -> NoReturn:
        raise _no_truth(self, '`.kind` (`if action.kind == "fail":`)')

    @classmethod
    def fail(cls, reason: str = "") -> InvalidToolCallAction:
        """Fail the call (the result when no hook decides)."""
        return cls._FAIL if reason.__class__ is str and not reason else cls(kind="fail", reason=reason)

    @classmethod
    def retry(cls, feedback: str) -> InvalidToolCallAction:
        """Send `feedback` to the model and let it try again."""
        return cls(kind="retry", feedback=feedback)

    @classmethod
    def repair(cls, tool_name: str) -> InvalidToolCallAction:
        """Call `tool_name` instead, with the same arguments."""
        return cls(kind="repair", tool_name=tool_name)

    @classmethod
    def skip(cls, reason: str) -> InvalidToolCallAction:
        """Skip the call, telling the model `reason`."""
        return cls(kind="skip", reason=reason)

    @classmethod
    def stop(cls, reason: str) -> InvalidToolCallAction:
        """End the run: the harness and the adapters raise ``StopRun(reason)``."""
        return cls(kind="stop", reason=reason)


_SCHEMAS[InvalidToolCallAction] = _schema(InvalidToolCallAction, {"retry": "feedback", "repair": "tool_name"})
InvalidToolCallAction._FAIL = InvalidToolCallAction(kind="fail")

_SCALARS = ("preamble", "temperature", "max_tokens", "tool_choice", "messages")


class FinishReason(enum.StrEnum):
    """Why a model turn ended, normalised across providers (the provider's spelling stays in ``raw_finish_reason``)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    OTHER = "other"

    @classmethod
    def from_raw(cls, raw: str | None) -> FinishReason | None:
        """Map a provider's spelling, case-insensitively: unknown spellings are `OTHER`, no reason is ``None``.

        Example:
            >>> FinishReason.from_raw("MAX_TOKENS")
            <FinishReason.LENGTH: 'length'>
        """
        if raw is None:
            return None
        return _FINISH_SPELLINGS.get(str(raw).lower(), cls.OTHER)


_FINISH_SPELLINGS: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "safety": FinishReason.CONTENT_FILTER,
    "recitation": FinishReason.CONTENT_FILTER,
    "error": FinishReason.ERROR,
}


@final
@value_class(frozen=True, slots=True)
class Message:
    """One message of the conversation history."""

    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None


@final
@value_class(frozen=True, slots=True, kw_only=True)
class RequestPatch:
    """Changes to one model request (per turn, never sticky); ``None`` means unset.

    Attributes:
        extra_context: Extra context blocks, appended in order.
        additional_params: Provider parameters, shallow-merged (later key wins).
        preamble: The system preamble.
        temperature: Sampling temperature.
        max_tokens: The output token cap.
        tool_choice: The provider's tool-choice setting.
        active_tools: The tools offered; patches intersect them.
        messages: The messages sent for this call instead of the history
            (the transcript is unchanged).

    Fields are checked when built: a wrong type is a `HookTypeError` naming
    the field. A bare `str` is one item of `extra_context` or `active_tools`
    (never split into characters); `temperature` takes an int or a float,
    `max_tokens` an int (neither takes a bool); `messages` takes `Message`s.
    """

    extra_context: tuple[str, ...] | None = None
    additional_params: Mapping[str, object] | None = None
    preamble: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    active_tools: frozenset[str] | None = None
    messages: tuple[Message, ...] | None = None

    def __post_init__(self) -> None:
        for name, check in _PATCH_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                checked = check(name, value)
                if checked is not value:
                    object.__setattr__(self, name, checked)

    def merge(self, other: RequestPatch) -> RequestPatch:
        """Return this patch with `other` applied on top.

        `extra_context` is concatenated; `additional_params` shallow-merged,
        later key wins; scalars and `messages` take `other`'s value when set, logging
        ``patch_conflict`` when both set different values; `active_tools` is
        intersected. An unset field never overwrites a set one.
        """
        changes: dict[str, object] = {}
        if other.extra_context is not None:
            changes["extra_context"] = (self.extra_context or ()) + other.extra_context
        if other.additional_params is not None:
            changes["additional_params"] = {**(self.additional_params or {}), **other.additional_params}
        for name in _SCALARS:
            value = getattr(other, name)
            if value is None:
                continue
            mine = getattr(self, name)
            if mine is not None and mine != value:
                log("warning", "patch_conflict", field=name)
            changes[name] = value
        if other.active_tools is not None:
            changes["active_tools"] = (
                other.active_tools if self.active_tools is None else self.active_tools & other.active_tools
            )
        if not changes:
            return self
        return replace(self, **changes)


def _strings(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable):
        raise wrong_type("RequestPatch", name, value, "a str or an iterable of str", "Pass a tuple of str.")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise wrong_type("RequestPatch", f"an item of {name}", item, "a str", "Pass a tuple of str.")
    return items


def _tool_set(name: str, value: object) -> frozenset[str]:
    items = _strings(name, value)
    # An exact frozenset is already what the field holds; a subclass might not behave as one.
    return cast("frozenset[str]", value) if value.__class__ is frozenset else frozenset(items)


def _messages(name: str, value: object) -> tuple[Message, ...]:
    if isinstance(value, str | Message) or not isinstance(value, Iterable):
        raise wrong_type("RequestPatch", name, value, "an iterable of Message", "Pass a tuple of Message.")
    items = tuple(value)
    for item in items:
        if not isinstance(item, Message):
            raise wrong_type("RequestPatch", f"an item of {name}", item, "a Message", "Pass a tuple of Message.")
    return items


def _params(name: str, value: object) -> Mapping[str, object]:
    params: Mapping[object, object] = read_only(value, "RequestPatch", name)  # type: ignore[arg-type]  # checked inside
    for key in params:
        if not isinstance(key, str):
            raise wrong_type(
                "RequestPatch", f"a key of {name}", key, "a str", "Name provider parameters with str keys."
            )
    return cast("Mapping[str, object]", params)


def _scalar(kind: type | tuple[type, ...], expected: str) -> Callable[[str, object], object]:
    def check(name: str, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, kind):
            raise wrong_type("RequestPatch", name, value, expected, f"Pass {expected}, or None to leave it unset.")
        return value

    return check


# How each field of a RequestPatch is checked (and converted) when it is set.
_PATCH_FIELDS: dict[str, Callable[[str, Any], object]] = {
    "extra_context": _strings,
    "additional_params": _params,
    "preamble": _scalar(str, "a str"),
    "temperature": _scalar((int, float), "a float"),
    "max_tokens": _scalar(int, "an int"),
    "tool_choice": _scalar(str, "a str"),
    "active_tools": _tool_set,
    "messages": _messages,
}


@final
@value_class(frozen=True, slots=True, kw_only=True)
class ToolCallResolution:
    """What `HookRegistry.resolve_tool_call` concluded about one tool call.

    Attributes:
        args: The effective arguments (after input transforms), also on a deny: a deep copy taken
            before the first gate ran, so what a gate changes in place is not in it (the caller's own
            mapping when neither point has a hook).
        result: The gate's decision on those arguments.
        rewritten: Whether any input transform returned a value.

    It has no truth value: read ``result.allowed``.
    """

    args: Mapping[str, object]
    result: HookResult
    rewritten: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", read_only(self.args, "ToolCallResolution", "args"))
        if self.result.__class__ is not HookResult:
            raise wrong_type("ToolCallResolution", "result", self.result, "a HookResult", "Pass the gate's decision.")

    def __bool__(self) -> NoReturn:
        raise _no_truth(self, "`.result.allowed` (`if resolution.result.allowed:`)")
