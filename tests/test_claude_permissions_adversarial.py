"""Claude Code deny and ask rules cannot be dodged by spelling: generated spellings of what they name are never allowed.

For each rule shape, a call the rule names is respelled — quoting, escapes,
blanks, prefixes, wrappers, compound commands, substitutions, path and URL
tricks — and the policy must not allow any spelling. The spellings the
normalisations of DESIGN §11 cover are denied even beside an allow rule for
the whole tool; the others (a substitution's value, a brace expansion) are at
least never allowed by an allow rule as narrow as written. The other
direction too: plainly different calls are still allowed, so the promise is
not met by denying everything.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hookreg import Decision, HookPoint
from hookreg.policy import Policy, from_claude_permissions
from hookreg.testing import make_context


def decision(policy: Policy, tool: str, args: Mapping[str, object]) -> Decision:
    return policy(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name=tool, args=dict(args))).decision


# --- Bash ----------------------------------------------------------------------------------------


class Shape(NamedTuple):
    deny: str  # the deny rule
    allow: list[str]  # allow rules as narrow as a user writes them, matching the command as written
    words: list[str]  # a command the deny rule names


BASH = {
    "prefix": Shape("Bash(git push:*)", ["Bash(git:*)", "Bash(echo:*)"], ["git", "push", "--force", "origin"]),
    "exact": Shape("Bash(rm -rf build)", ["Bash(rm:*)", "Bash(echo:*)"], ["rm", "-rf", "build"]),
    "glob": Shape("Bash(git push * --force)", ["Bash(git:*)", "Bash(echo:*)"], ["git", "push", "origin", "--force"]),
}


def word_spellings(word: str) -> list[str]:
    """One word as the shell reads it, spelled with quotes and backslashes."""
    head, tail = word[:1], word[1:]
    return [
        word,
        f'"{word}"',
        f"'{word}'",
        f'{head}"{tail}"',
        f"{head}''{tail}",
        f'{head}""{tail}',
        f"{head}\\{tail}",
        f"\\{word}",
        f"'{head}'\"{tail}\"",
        f"{head}\\\n{tail}",  # a backslash-newline joins the word's two halves
    ]


SEPARATORS = [" ", "  ", "\t", " \t ", " \\\n"]
PREFIXES = [
    "FOO=1 ",
    "TZ=UTC A=b ",
    "X+=1 ",
    "sudo ",
    "sudo -u root ",
    "sudo -- ",
    "/usr/bin/sudo -n ",
    "env ",
    "env -i FOO=1 ",
    "/usr/bin/env ",
    "command ",
    "exec ",
    "exec -a name ",
    "nohup ",
    "time ",
    "time -p ",
    "timeout 5 ",
    "timeout -s KILL 5 ",
    "timeout --signal=KILL 5s ",
    "xargs ",
    "xargs -n 1 ",
    "xargs -I {} ",
    "! ",
    "{ ",
    "then ",
    "sudo env FOO=1 timeout 5 nohup ",
]


def _double_quoted(command: str) -> str:
    return '"' + "".join("\\" + char if char in '"\\$`' else char for char in command) + '"'


CONTEXTS: list[Callable[[str], str]] = [
    lambda c: f"true && {c}",
    lambda c: f"true || {c}",
    lambda c: f"true; {c}",
    lambda c: f"true;{c}",
    lambda c: f"true | {c}",
    lambda c: f"true|{c}",
    lambda c: f"true |& {c}",
    lambda c: f"true & {c}",
    lambda c: f"true\n{c}",
    lambda c: f"{c} && true",
    lambda c: f"{c};true",
    lambda c: f"{c} 2>&1 | tee log",
    lambda c: f">log {c} 2>/dev/null",
    lambda c: f"{c} > log < /dev/null",
    lambda c: f"{c} &>>log",
    lambda c: f"{c} >|log <&0",
    lambda c: f"bash -c {shlex.quote(c)}",
    lambda c: f"sh -c {_double_quoted(c)}",
    lambda c: f"bash -lc {shlex.quote(c)}",
    lambda c: f"bash -o pipefail -c {shlex.quote(c)} name",
    lambda c: f"/bin/sh -e -c {shlex.quote(c)}",
    lambda c: f"echo $({c})",
    lambda c: f'echo "$({c})"',  # inside "...", $(...) is read afresh
    lambda c: "echo `" + c.replace("\\", "\\\\").replace("`", "\\`") + "`",  # nested: escaped
    lambda c: f"({c})",
    lambda c: f"{{ {c}; }}",
    lambda c: f"cat <({c})",
    lambda c: f"if true; then {c}; fi",
    lambda c: f"while true; do {c}; done",
    lambda c: f"echo ok # it's fine\n{c}",
]


def normalised_spellings(words: list[str]) -> Iterator[str]:
    """Spellings every normalisation of DESIGN §11 sees through, one family at a time."""
    command = " ".join(words)
    for i, word in enumerate(words):
        for spelt in word_spellings(word):
            yield " ".join([*words[:i], spelt, *words[i + 1 :]])
    for separator in SEPARATORS:
        yield separator.join(words)
    yield f"  {command}\t"
    for prefix in PREFIXES:
        yield prefix + command
    yield " ".join([f"/usr/bin/{words[0]}", *words[1:]])
    yield " ".join([f"./bin/{words[0]}", *words[1:]])
    for context in CONTEXTS:
        yield context(command)
    # a command the shell cannot split (an unclosed quote) matches every deny rule
    yield f"{command} 'x"
    yield f'{command} "x'
    yield f"{command} $(x"
    yield f"{command} `x"
    yield f"({command}"
    yield f"echo {command})"


def evaluated_spellings(words: list[str]) -> list[str]:
    """Spellings whose words the shell computes: no allow rule may allow them (a deny rule need not see them)."""
    program, word, rest = words[0], words[1], " ".join(words[2:])
    return [
        f"{program} $(echo {word}) {rest}",
        f"{program} `echo {word}` {rest}",
        f"{program} $P {rest}",
        f"{program} ${{P:-{word}}} {rest}",
        f"P={word}; {program} $P {rest}",
        f"{program} {{{word},}} {rest}",
        f"{program} {word[:1]}{{{word[1:]},x}} {rest}",
        f"{program} $'{word}' {rest}",
        f'{program} $"{word}" {rest}',
        f"{program} $'\\x{ord(word[0]):02x}{word[1:]}' {rest}",
        f"{program} {word}$IFS{rest}",
        f"{program}${{IFS}}{word} {rest}",
        f"{program} $({word}) {rest}",
        f"eval {program} {word} {rest}",
        f"{program} {word} {rest} > >(cat)",
    ]


def _cases(family: Callable[[list[str]], Iterator[str] | list[str]]) -> list[tuple[str, str]]:
    return [(name, spelling) for name, shape in BASH.items() for spelling in dict.fromkeys(family(shape.words))]


@pytest.mark.parametrize(("shape", "command"), _cases(normalised_spellings))
def test_a_normalised_spelling_is_denied(shape: str, command: str) -> None:
    """A spelling the normalisations cover is denied, even where an allow rule allows every Bash command."""
    deny, allow, _ = BASH[shape]
    for allowed in (["Bash"], allow):
        policy = from_claude_permissions({"permissions": {"deny": [deny], "allow": allowed}})
        assert decision(policy, "Bash", {"command": command}) is Decision.DENY, (allowed, command)


@pytest.mark.parametrize(("shape", "command"), _cases(evaluated_spellings))
def test_an_evaluated_spelling_is_never_allowed(shape: str, command: str) -> None:
    """A spelling whose words the shell computes is not allowed by allow rules as narrow as written."""
    deny, allow, _ = BASH[shape]
    policy = from_claude_permissions({"permissions": {"deny": [deny], "allow": allow}})
    assert decision(policy, "Bash", {"command": command}) is not Decision.ALLOW


def test_the_bash_table_is_large() -> None:
    """The generated table keeps hundreds of spellings per deny rule shape."""
    assert len(_cases(normalised_spellings)) >= 3 * 90
    assert len(_cases(evaluated_spellings)) >= 3 * 15


@st.composite
def composed(draw: st.DrawFn, shape: Shape) -> str:
    """A spelling built of several normalisations at once: word spellings, blanks, prefixes and nested contexts."""
    words = [draw(st.sampled_from(word_spellings(word))) for word in shape.words]
    command = words[0]
    for word in words[1:]:
        command += draw(st.sampled_from(SEPARATORS)) + word
    for prefix in draw(st.lists(st.sampled_from(PREFIXES), max_size=3)):
        command = prefix + command
    for context in draw(st.lists(st.sampled_from(CONTEXTS), max_size=2)):
        command = context(command)
    return command


@pytest.mark.parametrize("shape", sorted(BASH))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_composed_spellings_are_denied(shape: str, data: st.DataObject) -> None:
    """Normalisations combined (a quoted word under a wrapper in a subshell of a compound...) are still denied."""
    deny, allow, _ = BASH[shape]
    command = data.draw(composed(BASH[shape]))
    for allowed in (["Bash"], allow):
        policy = from_claude_permissions({"permissions": {"deny": [deny], "allow": allowed}})
        assert decision(policy, "Bash", {"command": command}) is Decision.DENY


# --- Read / Edit / Write paths ---------------------------------------------------------------------


class Layout(NamedTuple):
    project: Path
    home: Path
    outside: Path  # a directory outside both


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """A project, a home directory and a directory elsewhere, each holding the files the path rules name."""
    here = Layout(tmp_path / "project", tmp_path / "home", tmp_path / "abs")
    for target in (
        here.outside / "secret" / "key",
        here.home / ".ssh" / "id_rsa",
        here.project / "conf" / "secret.txt",
    ):
        target.parent.mkdir(parents=True)
        target.write_text("x")
    (here.project / ".env").write_text("x")
    (here.project / "sub").mkdir()
    monkeypatch.setenv("HOME", str(here.home))
    return here


# form: (the rule's specifier, the file it names) — the four forms of Claude Code's path specifiers
PATH_FORMS: dict[str, Callable[[Layout], tuple[str, Path]]] = {
    "//abs": lambda at: (f"/{at.outside}/secret/**", at.outside / "secret" / "key"),
    "~/p": lambda at: ("~/.ssh/**", at.home / ".ssh" / "id_rsa"),
    "/p": lambda at: ("/conf/secret.txt", at.project / "conf" / "secret.txt"),
    "./p": lambda at: ("./.env", at.project / ".env"),
}
# The tools each rule's tool covers, as in Claude Code.
COVERED = {
    "Read": ["Read", "Grep", "Glob", "LS"],
    "Edit": ["Edit", "MultiEdit", "Write", "NotebookEdit"],
    "Write": ["Write"],
}


def _link(at: Layout, name: str, target: Path) -> str:
    link = at.project / name
    if not link.is_symlink():
        link.symlink_to(target)
    return str(link)


# trick: how a path names the file, given the layout and the file
PATH_TRICKS: dict[str, Callable[[Layout, Path], str]] = {
    "absolute": lambda at, path: str(path),
    "relative": lambda at, path: os.path.relpath(path, at.project),
    "dot-slash": lambda at, path: "./" + os.path.relpath(path, at.project),
    "dot-dot": lambda at, path: f"{path.parent}/sub/../{path.name}",
    "from a subdirectory": lambda at, path: "sub/../" + os.path.relpath(path, at.project),
    "doubled slashes": lambda at, path: str(path).replace("/", "//"),
    "dot segments": lambda at, path: f"{path.parent}/./{path.name}",
    "tilde": lambda at, path: "~/" + os.path.relpath(path, at.home),
    "symlinked directory": lambda at, path: _link(at, "dir_link", path.parent) + "/" + path.name,
    "symlinked directory, relative": lambda at, path: (
        os.path.relpath(_link(at, "dir_link", path.parent), at.project) + "/" + path.name
    ),
    "symlinked file": lambda at, path: _link(at, "file_link", path),
    "symlink chain": lambda at, path: _link(at, "chain", Path(_link(at, "file_link", path))),
}


def placements(path: str) -> list[dict[str, object]]:
    """Every path-bearing argument holding `path`, alone or after a harmless path."""
    harmless = "README.md"
    return [
        {"file_path": path},
        {"path": path},
        {"notebook_path": path},
        {"paths": [harmless, path]},
        {"target": path},  # named by path_args=
        {"target": [harmless, path]},
        {"file_path": harmless, "path": path},
        {"file_path": harmless, "notebook_path": path},
        {"pattern": "*", "path": path},
    ]


@pytest.mark.parametrize("trick", sorted(PATH_TRICKS))
@pytest.mark.parametrize("form", sorted(PATH_FORMS))
@pytest.mark.parametrize("tool", sorted(COVERED))
def test_a_path_spelling_is_denied(tool: str, form: str, trick: str, layout: Layout) -> None:
    """Each spelling of a denied path, in each path argument of each tool the rule covers, is denied."""
    specifier, target = PATH_FORMS[form](layout)
    rule = f"{tool}({specifier})"
    settings_ = {"permissions": {"deny": [rule], "allow": ["Read", "Edit", "Write"]}}
    policy = from_claude_permissions(settings_, project_dir=layout.project, path_args=["target"])
    path = PATH_TRICKS[trick](layout, target)
    missed = [
        (covered, args)
        for covered in COVERED[tool]
        for args in placements(path)
        if decision(policy, covered, args) is not Decision.DENY
    ]
    assert missed == []


@pytest.mark.parametrize("path", ["~/.ssh", "~/.ssh/", "~//.ssh", "~/./.ssh", "~/x/../.ssh", "home_link"])
@pytest.mark.parametrize("tool", ["Grep", "Glob", "LS"])
def test_searching_a_denied_directory_is_denied(tool: str, path: str, layout: Layout) -> None:
    """A search or listing of a directory a Read rule denies all of reads what it holds: denied."""
    _link(layout, "home_link", layout.home / ".ssh")
    policy = from_claude_permissions(
        {"permissions": {"deny": ["Read(~/.ssh/**)"], "allow": ["Read"]}}, project_dir=layout.project
    )
    assert decision(policy, tool, {"pattern": "BEGIN", "path": path}) is Decision.DENY


def test_a_symlinked_project_is_the_same_project(layout: Layout, tmp_path: Path) -> None:
    """Through a symlinked project directory, './.env' is still the project's .env, written either way."""
    linked = tmp_path / "project_link"
    linked.symlink_to(layout.project)
    for project in (layout.project, linked):
        policy = from_claude_permissions(
            {"permissions": {"deny": ["Read(./.env)"], "allow": ["Read"]}}, project_dir=project
        )
        for path in (".env", str(layout.project / ".env"), str(linked / ".env")):
            assert decision(policy, "Read", {"file_path": path}) is Decision.DENY, (project, path)


# --- WebFetch domains ------------------------------------------------------------------------------

# Each URL reaches evil.com in some parser (urlsplit, or a browser's or Node's WHATWG parser).
EVIL_URLS = [
    "https://evil.com/",
    "https://EVIL.com/x",
    "HTTPS://EVIL.COM",
    "https://evil.com./x",
    "https://evil.com../x",
    "https://evil.com:443/x",
    "https://evil.com:8080",
    "https://user@evil.com/",
    "https://user:pw@evil.com/",
    "https://example.com@evil.com/",
    "https://evil.com\\@example.com/",
    "https://evil.com\\.example.com/",
    "https://ev%69l.com/",
    "https://evil.com%2e/",
    "https://\uff45\uff56\uff49\uff4c.com/",  # fullwidth letters
    "https://evil\u3002com/",  # an ideographic full stop
    "https://ev\til.com/",
    "https://ev\nil.com/",
    "https://evil.com\t/",
    " https://evil.com/",
    "\x00https://evil.com/",
    "https://evil.com#.example.com",
    "https://evil.com?.example.com",
    "//evil.com/x",
    "https:evil.com/x",
    "https:/evil.com/x",
    "https:///evil.com/x",
    "https:\\\\evil.com/x",
    "https://ev\u00adil.com/",  # a soft hyphen, which IDNA maps to nothing
    "https://evil\uff0ecom/",  # a fullwidth full stop
    "https://a.evil.com/",  # *.evil.com
]


@pytest.mark.parametrize("url", EVIL_URLS)
def test_a_denied_domain_is_denied_however_the_url_is_spelt(url: str) -> None:
    """Case, a trailing dot, IDNA and percent forms, ports, user info, backslashes and controls: denied."""
    rules = ["WebFetch(domain:evil.com)", "WebFetch(domain:*.evil.com)"]
    policy = from_claude_permissions({"permissions": {"deny": rules, "allow": ["WebFetch"]}})
    assert decision(policy, "WebFetch", {"url": url}) is Decision.DENY


# URLs parsers read differently, though not all of them as evil.com: no domain rule allows them.
ODD_URLS = [
    "https://evil.com\x00.example.com/",
    "https://example.com\\",
    "https://exa\tmple.com/",
    "https://example.com/\x7f",
    "https://ex%61mple.com/",
    "https://user@example.com/",
    "https://[::1/",
    "example.com/x",
    "https://a..example.com/",
]


@pytest.mark.parametrize("url", EVIL_URLS + ODD_URLS)
def test_a_domain_allow_rule_never_allows_another_host(url: str) -> None:
    """An allow rule for example.com allows none of the URLs that reach evil.com in some parser."""
    policy = from_claude_permissions({"permissions": {"allow": ["WebFetch(domain:example.com)"]}})
    assert decision(policy, "WebFetch", {"url": url}) is not Decision.ALLOW


@pytest.mark.parametrize(
    ("domain", "url"),
    [
        ("b\u00fccher.de", "https://xn--bcher-kva.de/"),
        ("xn--bcher-kva.de", "https://b\u00fccher.de/"),
        ("xn--bcher-kva.de", "https://B\u00dcCHER.de./"),
        ("EVIL.com.", "https://evil.com/"),
    ],
)
def test_domains_compare_as_idna(domain: str, url: str) -> None:
    """A rule's domain and a URL's host are compared in one form: IDNA, lower case, no trailing dot."""
    policy = from_claude_permissions({"permissions": {"deny": [f"WebFetch(domain:{domain})"], "allow": ["WebFetch"]}})
    assert decision(policy, "WebFetch", {"url": url}) is Decision.DENY


# --- a generic tool --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        {"target": "prod"},
        {"target": "production"},
        {"note": "ship it", "target": "prod-eu"},  # not the first key
        {"force": True, "env": "prod"},
        {"target": ["staging"], "env": "prod"},
        {"cmd": "prod"},
    ],
)
def test_a_generic_deny_rule_tests_every_string_argument(args: Mapping[str, object]) -> None:
    """A deny rule for a tool hookreg does not know matches when any top-level string argument matches."""
    policy = from_claude_permissions({"permissions": {"deny": ["Deploy(prod*)"], "allow": ["Deploy"]}})
    assert decision(policy, "Deploy", args) is Decision.DENY


def test_a_generic_allow_rule_allows_nothing_without_a_schema() -> None:
    """A generic allow rule needs the tool's first declared parameter, which a call's context does not carry."""
    policy = from_claude_permissions({"permissions": {"allow": ["Deploy(staging)"]}})
    for args in ({"target": "staging"}, {"target": "staging", "extra": "prod"}, {"extra": "prod", "target": "staging"}):
        assert decision(policy, "Deploy", args) is Decision.ASK


# --- the other direction: allow rules stay as narrow as written, no wider and no narrower -----------


@pytest.mark.parametrize(
    ("permissions", "tool", "args"),
    [
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "Bash", {"command": "git status"}),
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "Bash", {"command": "git log --oneline | git tag"}),
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "Bash", {"command": "git pushy --force"}),
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "Bash", {"command": 'git commit -m "push it"'}),
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(echo:*)"]}, "Bash", {"command": "echo git push --force"}),
        ({"deny": ["Bash(git push:*)"], "allow": ["Bash(echo:*)"]}, "Bash", {"command": "echo 'a; git push'"}),
        ({"deny": ["Bash(rm -rf build)"], "allow": ["Bash(rm:*)"]}, "Bash", {"command": "rm -rf dist"}),
        ({"deny": ["Bash(rm -rf build)"], "allow": ["Bash(rm:*)"]}, "Bash", {"command": "rm -rf build.log"}),
        ({"deny": ["Bash(git push * --force)"], "allow": ["Bash(git:*)"]}, "Bash", {"command": "git push origin"}),
        ({"deny": ["Bash(rm:*)"], "allow": ["Bash(npm test)"]}, "Bash", {"command": "npm test"}),
        ({"deny": ["Read(./.env)"], "allow": ["Read"]}, "Read", {"file_path": ".env.example"}),
        ({"deny": ["Read(./.env)"], "allow": ["Read"]}, "Read", {"file_path": "sub/.env"}),
        ({"deny": ["Read(./.env)"], "allow": ["Read"]}, "Grep", {"pattern": "x", "path": "."}),
        ({"deny": ["Read(~/.ssh/**)"], "allow": ["Read"]}, "LS", {"path": "~"}),
        ({"deny": ["Edit(/conf/secret.txt)"], "allow": ["Edit"]}, "Write", {"file_path": "conf/other.txt"}),
        ({"allow": ["Read(src/**)"]}, "Read", {"paths": ["src/a.py", "src/b/c.py"]}),
        ({"allow": ["Read(src/**)", "Read(docs/**)"]}, "Read", {"file_path": "src/a.py", "path": "docs/x.md"}),
        ({"deny": ["WebFetch(domain:evil.com)"], "allow": ["WebFetch"]}, "WebFetch", {"url": "https://notevil.com/"}),
        ({"allow": ["WebFetch(domain:example.com)"]}, "WebFetch", {"url": "https://example.com/evil.com"}),
        ({"allow": ["WebFetch(domain:example.com)"]}, "WebFetch", {"url": "https://Example.COM./a"}),
        ({"allow": ["WebFetch(domain:example.com)"]}, "WebFetch", {"url": "https://example.com:8443/?u=a@b"}),
        ({"deny": ["Deploy(prod*)"], "allow": ["Deploy"]}, "Deploy", {"target": "staging"}),
    ],
)
def test_plainly_different_calls_are_still_allowed(
    permissions: Mapping[str, Sequence[str]], tool: str, args: Mapping[str, object], layout: Layout
) -> None:
    """A call no deny rule names is allowed by its allow rule: the rules are not met by denying everything."""
    (layout.project / "src" / "b").mkdir(parents=True)
    policy = from_claude_permissions({"permissions": permissions}, project_dir=layout.project)
    assert decision(policy, tool, args) is Decision.ALLOW


@pytest.mark.parametrize(
    ("permissions", "tool", "args"),
    [
        ({"allow": ["Bash(git status)"]}, "Bash", {"command": "sudo git status"}),
        ({"allow": ["Bash(git status)"]}, "Bash", {"command": "FOO=1 git status"}),
        ({"allow": ["Bash(git status)"]}, "Bash", {"command": "bash -c 'git status'"}),
        ({"allow": ["Bash(git status:*)"]}, "Bash", {"command": "git status; rm -rf /"}),
        ({"allow": ["Read(src/**)"]}, "Read", {"file_path": "src/escape/passwd"}),  # a symlink out of src
        ({"allow": ["Read(src/**)"]}, "Read", {"file_path": "src/a.py", "path": "secrets/k"}),
        ({"allow": ["Read(src/**)"]}, "Read", {"file_path": "src/a\x00.py"}),
    ],
)
def test_allow_rules_allow_no_more_than_written(
    permissions: Mapping[str, Sequence[str]], tool: str, args: Mapping[str, object], layout: Layout
) -> None:
    """Wrappers, prefixes and shells before an allowed command, or a path escaping it, are not allowed."""
    (layout.project / "src").mkdir()
    (layout.project / "src" / "escape").symlink_to("/etc")
    policy = from_claude_permissions({"permissions": permissions}, project_dir=layout.project)
    assert decision(policy, tool, args) is not Decision.ALLOW
