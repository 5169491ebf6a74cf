"""hookreg.policy: rule specificity, predicates that fail closed, defaults, bad rules, and the example."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hookreg import Decision, HookPoint, HookRegistry, HookResult, HookTypeError, HookValueError
from hookreg.policy import Policy, Rule, allow, ask, deny
from hookreg.testing import make_context

ROOT = Path(__file__).resolve().parent.parent
A, D, Q = Decision.ALLOW, Decision.DENY, Decision.ASK


def decide(registry: HookRegistry, tool: str, **args: object) -> HookResult:
    ctx = make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name=tool, args=args)
    return registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)


# (rules, default, tool, expected decision, the rule expected to decide — by its repr, or None for the default)
CASES: list[tuple[tuple[Rule, ...], str, str, Decision, str | None]] = [
    # a specific rule beats any wildcard, whatever the decisions and the order
    ((deny("*"), allow("bash")), "allow", "bash", A, "allow('bash')"),
    ((ask("b*"), allow("bash")), "deny", "bash", A, "allow('bash')"),
    ((allow("bash"), deny("*")), "allow", "ls", D, "deny('*')"),
    # at one level: deny beats ask beats allow, whatever the order
    ((allow("bash"), ask("bash"), deny("bash")), "allow", "bash", D, "deny('bash')"),
    ((allow("bash"), ask("bash")), "deny", "bash", Q, "ask('bash')"),
    ((allow("read_*"), deny("read_*")), "allow", "read_file", D, "deny('read_*')"),
    ((allow("*"), ask("write_*")), "allow", "write_file", Q, "ask('write_*')"),
    # overlapping globs: the wildcard deny wins over a broader or narrower wildcard allow
    ((allow("read_*"), deny("read_sec*")), "allow", "read_secrets", D, "deny('read_sec*')"),
    ((allow("read_*"), deny("read_sec*")), "deny", "read_file", A, "allow('read_*')"),
    ((deny("*_admin"), allow("db_*")), "allow", "db_admin", D, "deny('*_admin')"),
    ((ask("db_*"), allow("*_read")), "allow", "db_read", Q, "ask('db_*')"),
    ((allow("*"), allow("read_*")), "deny", "read_x", A, "allow('*')"),
    # within a level the first matching rule wins
    ((deny("shell_*", reason="first"), deny("*", reason="second")), "allow", "shell_ls", D, "deny('shell_*'"),
    ((deny("*", reason="first"), deny("shell_*", reason="second")), "allow", "shell_ls", D, "deny('*'"),
    # globs: ?, [] and case-sensitivity
    ((deny("tool_?"),), "allow", "tool_a", D, "deny('tool_?')"),
    ((deny("tool_?"),), "allow", "tool_ab", A, None),
    ((deny("[bz]sh"),), "allow", "zsh", D, "deny('[bz]sh')"),
    ((deny("Bash"),), "allow", "bash", A, None),
    # nothing matches: the default
    ((allow("read_*"),), "deny", "bash", D, None),
    ((deny("bash"),), "allow", "ls", A, None),
    ((), "deny", "anything", D, None),
]


@pytest.mark.parametrize(("rules", "default", "tool", "expected", "rule"), CASES)
def test_specificity_table(
    rules: tuple[Rule, ...], default: str, tool: str, expected: Decision, rule: str | None
) -> None:
    """Exact beats glob; at one level deny > ask > allow; among equals the first wins; no match gets the default."""
    policy = Policy(*rules, default=default)  # type: ignore[arg-type]  # the table holds valid defaults
    result = policy(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name=tool))
    assert result.decision is expected
    if rule is None:
        assert result.reason.endswith("is not allowed by the policy") if expected is D else result is HookResult.allow()
    else:
        (winner,) = [r for r in rules if repr(r).startswith(rule)]
        assert result == winner.result(tool)


def test_a_specific_deny_with_a_false_predicate_falls_through_to_the_next_rule() -> None:
    """A rule whose when= is false does not apply: the next rule in specificity order decides."""
    registry = HookRegistry()
    registry.use_policy(
        deny("bash", when=lambda ctx: "rm " in str(ctx.args.get("command", "")), reason="no rm"),
        allow("bash"),
        default="deny",
    )
    assert decide(registry, "bash", command="ls").allowed
    denied = decide(registry, "bash", command="rm -rf /")
    assert (denied.decision, denied.reason, denied.decided_by) == (D, "no rm", "policy")


def test_a_raising_predicate_denies_and_logs() -> None:
    """A predicate that raises fails closed: the call is denied, naming the rule, and policy_rule_failed is logged."""

    def broken(ctx: object) -> bool:
        raise KeyError("command")

    registry = HookRegistry()
    registry.use_policy(ask("bash", when=broken), allow("*"))
    with capture_logs() as logs:
        result = decide(registry, "bash")
    assert result.decision is D
    assert "ask('bash', when=...)" in result.reason
    assert {
        "event": "policy_rule_failed",
        "log_level": "error",
        "rule": "ask('bash', when=...)",
        "exc_type": "KeyError",
    } in logs


def test_an_allow_is_a_pass_so_later_gates_still_run() -> None:
    """The policy allowing a call does not stop a later gate from denying it."""
    registry = HookRegistry()
    registry.use_policy(allow("bash"), priority=10)
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("later gate"), name="later")
    result = decide(registry, "bash")
    assert (result.reason, result.decided_by) == ("later gate", "later")


def test_default_reasons_name_the_tool() -> None:
    """Without reason=, denies and asks tell the model which tool; the default deny says no rule allowed it."""
    policy = Policy(deny("bash"), ask("write_*"), default="deny")
    reasons = [
        policy(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name=t)).reason for t in ("bash", "write_x", "ls")
    ]
    assert reasons == [
        "the tool 'bash' is not allowed",
        "the tool 'write_x' needs approval",
        "the tool 'ls' is not allowed by the policy",
    ]


def test_use_policy_returns_the_registration_and_replaces_by_name() -> None:
    """use_policy registers one gate named "policy" (or name=); using it again replaces it in place."""
    registry = HookRegistry()
    first = registry.use_policy(deny("bash"))
    assert (first.point, first.name, first.on_error) == (HookPoint.PRE_TOOL_CALL_DECIDE, "policy", "deny")
    assert isinstance(first.callback, Policy)
    with capture_logs() as logs:
        second = registry.use_policy(allow("bash"))
    assert [e["event"] for e in logs] == ["hook_replaced"]
    assert first.remove() is False
    assert registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE) == (second,)
    assert decide(registry, "bash").allowed
    other = registry.use_policy(deny("ls"), name="second-policy", priority=5)
    assert registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE) == (other, second)


def test_an_allow_rule_reason_is_the_message() -> None:
    """A Rule built directly with a reason on an allow passes with that message, so the decider is named."""
    registry = HookRegistry()
    registry.use_policy(Rule(Decision.ALLOW, "ls", reason="listing is fine"))
    result = decide(registry, "ls")
    assert (result.allowed, result.message, result.decided_by) == (True, "listing is fine", "policy")


def test_reprs_read_like_the_rules_written() -> None:
    """A rule and a policy repr as the calls that built them."""
    policy = Policy(allow("read_*"), deny("bash", when=bool, reason="no"), default="deny")
    assert repr(policy) == "Policy(allow('read_*'), deny('bash', when=..., reason='no'), default='deny')"
    assert Rule(Decision.ASK, "x").is_specific
    assert not allow("x*").is_specific


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: allow(""), HookValueError, r"Cannot build allow\(''\): the tool pattern is empty"),
        (lambda: deny(3), HookTypeError, r"Cannot build deny\(3\): the tool pattern must be a str, not int"),  # type: ignore[arg-type]
        (lambda: ask("x", when="yes"), HookTypeError, r"Cannot build ask\('x'\): when= must be a callable"),  # type: ignore[arg-type]
        (lambda: deny("x", reason=1), HookTypeError, r"reason= must be a str, not int"),  # type: ignore[arg-type]
        (lambda: Rule("deny", "x"), HookTypeError, r"decision='deny' is not a Decision"),  # type: ignore[arg-type]
        (lambda: Policy(deny("x"), default="no"), HookValueError, r"default='no': it must be 'allow', 'ask' or 'deny'"),  # type: ignore[arg-type]
        (lambda: Policy(precedence="first"), HookValueError, r"precedence='first': it must be 'specificity' or"),  # type: ignore[arg-type]
        (lambda: deny("bash(command)"), HookValueError, r"Cannot build deny\('bash\(command\)'\): the tool pattern"),
        (lambda: Policy("bash"), HookTypeError, r"Cannot build a tool policy from 'bash': it is not a rule"),  # type: ignore[arg-type]
        (lambda: HookRegistry().use_policy(default="maybe"), HookValueError, r"default='maybe'"),  # type: ignore[arg-type]
    ],
)
def test_bad_rules_raise_where_they_are_written(build: object, error: type[Exception], match: str) -> None:
    """Empty or non-str patterns, a non-callable when=, a bad reason, decision or default raise at construction."""
    assert callable(build)
    with pytest.raises(error, match=match) as raised:
        build()
    assert isinstance(raised.value, ValueError | TypeError)


def test_the_policy_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/policy.py runs and prints each call's decision."""
    runpy.run_path(str(ROOT / "examples" / "policy.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "read_file: allow" in out
    assert "bash: deny (rm is not allowed; delete files one by one)" in out
    assert "write_file: ask" in out
    assert "deploy: deny" in out


def test_decision_precedence_ignores_specificity() -> None:
    """precedence="decision": any deny beats any ask beats any allow, whatever names a tool exactly."""
    policy = Policy(allow("bash"), ask("b*"), deny("*_admin"), precedence="decision")
    ask_result = policy(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash"))
    assert ask_result == ask("b*").result("bash")
    assert not policy(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="db_admin")).allowed
    assert repr(policy).endswith("default='allow', precedence='decision')")
    by_specificity = Policy(allow("bash"), ask("b*"))
    assert by_specificity(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash")).allowed


def test_default_ask_asks_naming_the_tool() -> None:
    """default="ask" turns a call no rule matches into an ask that names the tool."""
    result = Policy(allow("ls"), default="ask")(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="rm"))
    assert (result.decision, result.reason) == (Q, "the tool 'rm' needs approval: no policy rule allows it")
