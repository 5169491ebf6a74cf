"""Concurrency: dispatch in every style while other threads and tasks register, replace, remove and include.

DESIGN §4: registration and removal are thread-safe, and a dispatch runs on the
snapshot it started with. A pair of hooks that enters and leaves together
(through ``include()`` / ``Inclusion.remove()`` of a registry holding both) is
therefore seen by every dispatch together, adjacent and in order, or not at
all; a permanent deny gate is never missed (no dispatch fails open); no
registration is lost or doubled; and no exception escapes. The dispatch rate
held under that load is printed, never asserted.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    PostToolCallContext,
    PreToolCallDecideContext,
)

from ._support import STRESS

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
REWRITE: Final = HookPoint.TRANSFORM_TOOL_INPUT
AUDIT: Final = HookPoint.POST_TOOL_CALL
POINTS = (GATE, REWRITE, AUDIT)
GATE_CTX = PreToolCallDecideContext(tool_name="bash", args={"cmd": "ls"}, call_id="c1")
AUDIT_CTX = PostToolCallContext(
    tool_name="bash", args={}, call_id="c1", result="ok", raw_result=None, duration_ms=1.0, metadata={}
)
TRACE: contextvars.ContextVar[list[str]] = contextvars.ContextVar("TRACE")


@pytest.fixture(autouse=True)
def fine_thread_switching() -> Iterator[None]:
    """Switch threads far more often than usual, so that races have every chance to show."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def recorder(tag: str, point: HookPoint) -> Callable[[Any], Any]:
    """A hook that appends `tag` to the current dispatch's trace and passes."""

    def hook(ctx: Any) -> object:
        TRACE.get().append(tag)
        return HookResult.allow() if point is GATE else None

    hook.__qualname__ = tag
    return hook


def async_recorder(tag: str, point: HookPoint) -> Callable[[Any], Any]:
    """An async hook that yields to the loop mid-dispatch, then records `tag` and passes."""

    async def hook(ctx: Any) -> object:
        await asyncio.sleep(0)
        TRACE.get().append(tag)
        return HookResult.allow() if point is GATE else None

    hook.__qualname__ = tag
    return hook


def deny_gate(ctx: Any) -> HookResult:
    """The permanent gate: it must decide every dispatch."""
    TRACE.get().append("G")
    return HookResult.deny("always")


def pair_registry(
    make: Callable[[str, HookPoint], Callable[[Any], Any]] = recorder, tags: tuple[str, str] = ("A", "B")
) -> HookRegistry:
    """A registry holding hooks A then B at each point: they enter and leave together."""
    pair = HookRegistry()
    for point in POINTS:
        for tag in tags:
            pair.register(point, make(tag, point), name=tag, priority=5)
    return pair


def base_registry() -> HookRegistry:
    """A root registry with the permanent gate and one steady hook per point."""
    root = HookRegistry()
    root.register(GATE, deny_gate, name="G", priority=-100)
    root.register(REWRITE, recorder("T", REWRITE), name="T")
    root.register(AUDIT, recorder("O", AUDIT), name="O")
    return root


class Problems:
    """Collects every consistency violation and escaped exception, from any thread."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.lock = threading.Lock()

    def add(self, problem: str) -> None:
        with self.lock:
            self.found.append(problem)


def check_trace(point: HookPoint, trace: list[str], result: object, problems: Problems) -> None:
    """One dispatch's trace is consistent with one snapshot."""
    for first, second in (("A", "B"), ("A2", "B2")):
        if first in trace or second in trace:
            ok = trace.count(first) == trace.count(second) == 1
            ok = ok and trace.index(second) == trace.index(first) + 1
            if not ok:
                problems.add(f"{point}: pair {first}/{second} torn: {trace}")
    if sum(trace.count(tag) for tag in ("R1", "R2")) > 1:
        problems.add(f"{point}: replaced hook seen twice: {trace}")
    if trace.count("C") > 1:
        problems.add(f"{point}: churned hook doubled: {trace}")
    if point is GATE:
        if not isinstance(result, HookResult) or result.allowed or result.decided_by != "G" or trace[-1:] != ["G"]:
            problems.add(f"gate missed or overridden: {result!r} after {trace}")
    elif point is REWRITE:
        if result is not GATE_CTX.args:
            problems.add(f"transform changed args: {result!r}")
        if trace.count("T") != 1:
            problems.add(f"steady transform seen {trace.count('T')} times: {trace}")
    elif trace.count("O") != 1:
        problems.add(f"steady observer seen {trace.count('O')} times: {trace}")


def dispatch_once(registry: HookRegistry, point: HookPoint) -> tuple[list[str], object]:
    """Dispatch `point` once on `registry`, returning its trace and result."""
    trace: list[str] = []
    TRACE.set(trace)
    if point is GATE:
        return trace, registry.decide(GATE, GATE_CTX)
    if point is REWRITE:
        return trace, registry.transform(REWRITE, GATE_CTX)
    registry.notify(AUDIT, AUDIT_CTX)
    return trace, None


async def adispatch_once(registry: HookRegistry, point: HookPoint) -> tuple[list[str], object]:
    """The async twin of `dispatch_once`."""
    trace: list[str] = []
    TRACE.set(trace)
    if point is GATE:
        return trace, await registry.adecide(GATE, GATE_CTX)
    if point is REWRITE:
        return trace, await registry.atransform(REWRITE, GATE_CTX)
    await registry.anotify(AUDIT, AUDIT_CTX)
    return trace, None


def mutators(root: HookRegistry, stop: threading.Event, problems: Problems) -> list[Callable[[], None]]:
    """The threads' jobs: include/remove pairs, churn, replace and unregister, until `stop` is set."""
    pair = pair_registry()
    middle = HookRegistry()
    root.include(middle, priority=3)
    inner_pair = pair_registry(recorder, ("A2", "B2"))

    def guarded(job: Callable[[random.Random], None]) -> Callable[[], None]:
        def run() -> None:
            rng = random.Random(id(job))
            try:
                while not stop.is_set():
                    job(rng)
            except BaseException as exc:  # noqa: BLE001 -- any escape is a finding
                problems.add(f"mutator {job.__name__} raised {exc!r}")

        return run

    def include_pair(rng: random.Random) -> None:
        inclusion = root.include(pair, priority=rng.choice((-200, 0, 5, 200)))
        if not inclusion.remove():
            problems.add("Inclusion.remove() of a live inclusion returned False")

    def include_inner(rng: random.Random) -> None:
        with middle.include(inner_pair, priority=rng.randint(-3, 3)):
            pass

    def churn(rng: random.Random) -> None:
        point = rng.choice(POINTS)
        with root.register(point, recorder("C", point), name="C", priority=rng.randint(-5, 5)):
            pass

    def replace(rng: random.Random) -> None:
        point = rng.choice(POINTS)
        tag = rng.choice(("R1", "R2"))
        root.register(point, recorder(tag, point), name="R", priority=rng.randint(-5, 5))
        if rng.random() < 0.3:
            root.unregister("R", point)

    return [guarded(job) for job in (include_pair, include_inner, churn, replace)]


def test_threads_dispatch_consistent_snapshots() -> None:
    """Threads dispatching all three styles while others mutate the registry always see one whole snapshot."""
    root = base_registry()
    problems = Problems()
    stop = threading.Event()
    iterations = 10_000 * STRESS
    counts: list[int] = []

    def dispatcher(seed: int) -> None:
        done = 0
        try:
            for point in itertools.islice(itertools.cycle(POINTS), seed, seed + iterations):
                trace, result = dispatch_once(root, point)
                check_trace(point, trace, result, problems)
                done += 1
        except BaseException as exc:  # noqa: BLE001 -- any escape is a finding
            problems.add(f"dispatcher raised {exc!r}")
        counts.append(done)

    jobs = mutators(root, stop, problems)
    workers = [threading.Thread(target=job) for job in jobs]
    dispatchers = [threading.Thread(target=dispatcher, args=(seed,)) for seed in range(4)]
    started = time.perf_counter()
    for thread in workers + dispatchers:
        thread.start()
    for thread in dispatchers:
        thread.join()
    elapsed = time.perf_counter() - started
    stop.set()
    for thread in workers:
        thread.join()
    print(f"\nthreads: {sum(counts)} dispatches under mutation in {elapsed:.2f}s = {sum(counts) / elapsed:,.0f}/s")
    assert not problems.found, problems.found[:10]
    assert sum(counts) == 4 * iterations
    # Every mutator undid what it did (but the replaced hook "R", which may stay): only the steady hooks remain.
    root.unregister("R")
    assert [r.name for r in root.callbacks(GATE)] == ["G"]
    assert [r.name for r in root.callbacks(REWRITE)] == ["T"]


def test_async_tasks_dispatch_consistent_snapshots() -> None:
    """Tasks awaiting async hooks mid-dispatch while other tasks mutate the registry see one whole snapshot."""
    root = base_registry()
    problems = Problems()
    iterations = 2000 * STRESS

    async def dispatcher(seed: int) -> int:
        done = 0
        for point in itertools.islice(itertools.cycle(POINTS), seed, seed + iterations):
            trace, result = await adispatch_once(root, point)
            check_trace(point, trace, result, problems)
            done += 1
        return done

    async def mutator(stop: asyncio.Event, seed: int) -> None:
        rng = random.Random(seed)
        # Its own pair: one registry may be included in one place only.
        pair = pair_registry(async_recorder, ("A", "B") if seed == 1 else ("A2", "B2"))
        while not stop.is_set():
            inclusion = root.include(pair, priority=rng.choice((-200, 0, 200)))
            await asyncio.sleep(0)
            point = rng.choice(POINTS)
            with root.register(point, async_recorder("C", point), name="C"):
                await asyncio.sleep(0)
            root.register(point, recorder(rng.choice(("R1", "R2")), point), name="R")
            await asyncio.sleep(0)
            inclusion.remove()
            root.unregister("R")
            await asyncio.sleep(0)

    async def main() -> tuple[int, float]:
        stop = asyncio.Event()
        mutating = asyncio.gather(mutator(stop, 1), mutator(stop, 2))
        started = time.perf_counter()
        counts = await asyncio.gather(*(dispatcher(seed) for seed in range(4)))
        elapsed = time.perf_counter() - started
        stop.set()
        await mutating
        return sum(counts), elapsed

    total, elapsed = asyncio.run(main())
    print(f"\ntasks: {total} async dispatches under mutation in {elapsed:.2f}s = {total / elapsed:,.0f}/s")
    assert not problems.found, problems.found[:10]
    assert total == 4 * iterations


def test_async_dispatch_in_threads_while_async_hooks_come_and_go() -> None:
    """Event loops in several threads keep dispatching while another thread includes and removes async hooks.

    A point flips between "all sync" and "holds an async hook"; an ``a``-dispatch
    must take either whole state, never refuse with AsyncHookError.
    """
    root = base_registry()
    pair = pair_registry(async_recorder)
    problems = Problems()
    stop = threading.Event()
    iterations = 5000 * STRESS
    counts: list[int] = []

    def toggler() -> None:
        try:
            while not stop.is_set():
                root.include(pair).remove()
        except BaseException as exc:  # noqa: BLE001 -- any escape is a finding
            problems.add(f"toggler raised {exc!r}")

    def dispatcher(seed: int) -> None:
        async def loop() -> int:
            done = 0
            for point in itertools.islice(itertools.cycle(POINTS), seed, seed + iterations):
                try:
                    trace, result = await adispatch_once(root, point)
                except BaseException as exc:  # noqa: BLE001 -- any escape is a finding
                    problems.add(f"{point}: {exc!r}")
                    continue
                check_trace(point, trace, result, problems)
                done += 1
            return done

        counts.append(asyncio.run(loop()))

    threads = [threading.Thread(target=dispatcher, args=(seed,)) for seed in range(3)]
    toggling = threading.Thread(target=toggler)
    started = time.perf_counter()
    toggling.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    stop.set()
    toggling.join()
    print(f"\nloops in threads: {sum(counts)} dispatches in {elapsed:.2f}s = {sum(counts) / elapsed:,.0f}/s")
    assert not problems.found, problems.found[:10]


@pytest.mark.slow
def test_no_registration_lost_or_doubled() -> None:
    """Threads registering, replacing and removing at once leave exactly the hooks the sequence implies."""
    registry = HookRegistry()
    child = HookRegistry()
    registry.include(child)
    per_thread = 200 * STRESS
    threads = 8
    barrier = threading.Barrier(threads)
    problems = Problems()
    handles: dict[int, list[Any]] = {}

    def worker(n: int) -> None:
        try:
            barrier.wait()
            mine = []
            for i in range(per_thread):
                target = registry if i % 2 else child
                mine.append(target.register(AUDIT, recorder(f"w{n}-{i}", AUDIT), name=f"w{n}-{i}"))
                # Everyone fights over one name: replacement, never a second copy.
                registry.register(AUDIT, recorder("shared", AUDIT), name="shared")
            handles[n] = mine
            # Remove every third hook by handle and every third by name; keep the rest.
            for i, handle in enumerate(mine):
                if i % 3 == 0 and not handle.remove():
                    problems.add(f"remove() of live hook w{n}-{i} returned False")
                elif i % 3 == 1:
                    owner = registry if i % 2 else child
                    if owner.unregister(f"w{n}-{i}") != 1:
                        problems.add(f"unregister of w{n}-{i} did not remove exactly one hook")
        except BaseException as exc:  # noqa: BLE001 -- any escape is a finding
            problems.add(f"worker {n} raised {exc!r}")

    workers = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert not problems.found, problems.found[:10]
    names = [r.name for r in registry.callbacks(AUDIT)]
    expected = {f"w{n}-{i}" for n in range(threads) for i in range(per_thread) if i % 3 == 2} | {"shared"}
    assert sorted(names) == sorted(expected)
    assert len(registry) == len(expected)
    # A dispatch runs each surviving hook exactly once.
    trace, _ = dispatch_once(registry, AUDIT)
    assert sorted(trace) == sorted(expected)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_hooks_changing_the_registry_mid_dispatch_affect_only_the_next_one(mode: str) -> None:
    """A hook that removes a later hook, registers one and un-includes a registry changes only later dispatches."""
    root = base_registry()
    pair = pair_registry()
    inclusion = root.include(pair, priority=-50)  # after the meddler, before the gate
    later = root.register(GATE, recorder("L", GATE), name="L", priority=-10)

    def meddler(ctx: Any) -> HookResult:
        TRACE.get().append("M")
        later.remove()
        inclusion.remove()
        root.register(GATE, recorder("N", GATE), name="N", priority=-20)
        root.unregister(meddler)
        return HookResult.allow()

    root.register(GATE, meddler, name="M", priority=100)

    def dispatch() -> tuple[list[str], object]:
        return asyncio.run(adispatch_once(root, GATE)) if mode == "async" else dispatch_once(root, GATE)

    trace, result = dispatch()
    assert trace == ["M", "L", "A", "B", "G"]
    assert isinstance(result, HookResult)
    assert result.decided_by == "G"
    trace, result = dispatch()
    assert trace == ["N", "G"]
