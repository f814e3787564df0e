"""The Bash permission decision: `CommandPolicy.decide(CommandRequest) -> (Decision, Analysis)`.

Policy, in order:
- a deny rule matching the whole text or any part denies;
- longer than 10,000 characters → ask;
- complex (not reducible to simple commands) → ask, unless a rule matches the whole text;
- per simple command: deny rule → deny; dangerous → deny unless an allow rule names it;
  ask rule or a must-ask reason (force push to a protected branch) → ask; allow rule → allow;
  read-only → allow (run in the read-only jail; where none can be built, or the command mixes
  read-only parts with others, only programs modelled exactly stay read-only, unless the write
  sandbox contains the command anyway); sandboxed auto-allow (see
  PermissionEngine.sandbox_auto_allow) → allow;
  otherwise the mode decides (bypassPermissions allow, plan/dontAsk deny, default/acceptEdits ask);
- files written by redirections are Edit requests and files read by read-only commands are
  Read requests, decided by the engine's path logic;
- any deny denies, any ask asks, else allow. The reason says which part decided.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import linear_regex
from .decision import Decision, by_mode
from .requests import CommandRequest, PathRequest
from .rules import Rule, RuleSet

if TYPE_CHECKING:
    from ..shell.analysis.analyze import Analysis, CommandVerdict, ObjectRead
    from ..workspace import Workspace
    from .confinement import ConfinementPolicy


class CommandPolicy:
    """Decides shell commands for the permission engine, from the rules, the mode and the
    workspace; `decide_path` and `sandbox_auto_allow` are the engine's (passed in, so this
    module never imports the engine)."""

    def __init__(self, rules: RuleSet, mode: str, workspace: "Workspace",
                 decide_path: Callable[[PathRequest], Decision], sandbox_auto_allow: Callable[[], bool],
                 jail_available: Callable[[], bool] = lambda: False,
                 confinement: "ConfinementPolicy | None" = None, allow_git_history: bool = False):
        self.rules = rules
        self.allow_git_history = allow_git_history
        self.mode = mode
        self.workspace = workspace
        self.decide_path = decide_path
        self.sandbox_auto_allow = sandbox_auto_allow
        self.jail_available = jail_available
        if confinement is None:
            from .confinement import ConfinementPolicy

            confinement = ConfinementPolicy(jail_available, "auto")
        self.confinement = confinement

    def analyze(self, request: CommandRequest) -> "Analysis":
        """The request's analysis: the one it carries, or made now from its parse (or text)."""
        if request.analysis is not None:
            return request.analysis
        from ..shell.analysis.analyze import analyze

        return analyze(request.script or request.command, Path(request.cwd), self.workspace)

    def decide(self, request: CommandRequest) -> tuple[Decision, "Analysis"]:
        analysis = self.analyze(request)
        return decide_analysis(self, analysis), analysis


def decide_analysis(engine: CommandPolicy, a: "Analysis") -> Decision:
    """The decision for a command, with its confinement: the read-only jail when every part of
    it was judged read-only (and a jail works here), else the write sandbox."""
    decision, all_read_only = _decide_analysis(engine, a)
    return decision.confined(engine.confinement.for_command(all_read_only))


def _decide_analysis(engine: CommandPolicy, a: "Analysis") -> tuple[Decision, bool]:
    text = a.command.strip()
    whole = engine.rules.match_command(text)
    if whole is not None and whole[0] == "deny":
        return Decision.from_rule(*whole), False
    for inner in a.inner_commands:  # literal commands inside a complex script: `(curl x)`
        m = engine.rules.match_command(inner)
        if m is not None and m[0] == "deny" and m[1].specifier is not None:
            return Decision.from_rule(*m), False
    if a.complex is not None or a.too_long:
        what = (f"the command is {len(a.command):,} characters long (over 10,000)" if a.too_long
                else f"complex command: {a.complex}")
        if a.dangerous and _strict_allow(engine, text, exact=True) is None:
            return Decision.deny(f"dangerous: {a.dangerous}", "danger"), False
        if whole is not None and whole[0] == "ask":
            return Decision.from_rule(*whole), False
        allow = _strict_allow(engine, text)
        if allow is not None:
            return Decision.from_rule("allow", allow), False
        if a.too_long:
            return _ask_or_mode(engine, what), False
        return _mode(engine, f"{what}; it cannot be checked part by part", None), False
    decisions = _unjailed(engine, a.commands, [_decide_part(engine, v) for v in a.commands])
    if not decisions:
        return Decision.allow("allowed: empty command", "read-only"), True
    for behavior in ("deny", "ask"):
        # a rule that decided is the most useful thing to name (`cat x | … ` asking because of
        # Read(./.env) rather than because the other parts then run outside the jail)
        for d in sorted((d for d in decisions if d.behavior == behavior), key=lambda d: d.decided_by != "rule"):
            return d, False
    if all(d.decided_by == "read-only" for d in decisions):
        return Decision.allow("allowed: read-only command", "read-only"), True
    return next((d for d in decisions if d.decided_by != "read-only"), decisions[0]), False


def _unjailed(engine: CommandPolicy, verdicts: list["CommandVerdict"], decisions: list[Decision]) -> list[Decision]:
    """A read-only verdict lets a command run unasked because the read-only jail backs it: the
    command runs there when every part of it is read-only and a jail works here. Otherwise only
    programs whose every argument is modelled (`exact`) keep that verdict — or any, when the
    write sandbox contains the command anyway (sandboxed auto-allow)."""
    loose = [i for i, d in enumerate(decisions) if d.decided_by == "read-only" and not verdicts[i].exact]
    if not loose:
        return decisions
    whole = all(d.decided_by == "read-only" for d in decisions)
    if whole and engine.jail_available():
        return decisions
    if engine.sandbox_auto_allow():
        return decisions
    why = ("no read-only jail works here" if whole
           else "it runs together with commands that are not read-only, so outside the read-only jail")
    out = list(decisions)
    for i in loose:
        v = verdicts[i]
        out[i] = _mode(engine, f"`{_short(v.rule_text)}` looks read-only, but {why}, and only programs "
                       "whose arguments are all modelled run unjailed without asking", v)
    return out


def _decide_part(engine: CommandPolicy, v: "CommandVerdict") -> Decision:
    texts = [t for t in dict.fromkeys((v.rule_text, v.full_text, v.env_text)) if t]
    # A variable that can make the program run other code is never stripped for allowing:
    # `Bash(git status)` does not allow `GIT_DIR=… git status` or `PATH=.; npm test`.
    allow_texts = [v.env_text] if v.env_risk else texts
    matches = {b: engine.rules.first_command_rule(b, texts) for b in ("deny", "ask")}
    matches["allow"] = engine.rules.first_command_rule("allow", allow_texts)
    if matches["deny"]:
        return Decision.from_rule("deny", matches["deny"])
    paths = _path_decisions(engine, v)
    if v.dangerous:
        # Only a rule naming this very command allows a dangerous one: `Bash(rm *)` (allowing
        # `rm -rf build`) must not allow `rm -rf /`.
        exact = engine.rules.first_command_rule("allow", allow_texts, exact=True)
        if exact is None:
            return Decision.deny(f"dangerous: {v.dangerous}", "danger",
                                 suggestion="only an allow rule naming this exact command (no wildcard) allows it")
        matches["allow"] = exact
    if matches["ask"]:
        argv_decision = Decision.from_rule("ask", matches["ask"])
    elif v.ask_reason:
        argv_decision = Decision.ask(f"ask: {v.ask_reason}", "danger")
    elif matches["allow"]:
        argv_decision = Decision.from_rule("allow", matches["allow"])
    elif v.argv_read_only:
        shown = v.rule_text or "(no command)"
        argv_decision = Decision.allow(f"allowed: read-only command (`{_short(shown)}`)", "read-only")
    elif engine.sandbox_auto_allow():
        history = _history_rule(engine)
        if history is None:
            argv_decision = Decision.allow(f"allowed: `{_short(v.rule_text)}` runs in the sandbox", "sandbox")
        else:
            argv_decision = _mode(engine, f"`{_short(v.rule_text)}` would run unasked in the sandbox, but {history}", v)
    else:
        what = v.reason if v.reason.startswith("`") else f"`{_short(v.rule_text or v.full_text)}`: {v.reason}"
        argv_decision = _mode(engine, what, v)
    for d in paths:
        if d.behavior == "deny":
            return d
    if argv_decision.behavior != "allow":
        return argv_decision
    for d in paths:
        if d.behavior == "ask":
            return d
    if argv_decision.decided_by == "read-only":
        # `ls > out.txt` allowed by acceptEdits or an Edit rule: say so rather than "read-only"
        for d in paths:
            if d.decided_by in ("rule", "mode", "sandbox"):
                return d
    return argv_decision


def _path_decisions(engine: CommandPolicy, v: "CommandVerdict") -> list[Decision]:
    out: list[Decision] = []
    for d in v.recursive_reads:
        rule = engine.rules.read_deny_under(d)
        if rule is not None:
            out.append(Decision.ask(
                f"`{_short(v.rule_text)}` reads every file under {engine.workspace.relative(d)}, where the rule "
                f"{rule.text} ({rule.source or 'settings'}) denies reading some", "rule", rule=rule.text,
                source=rule.source or None,
                suggestion="search with Grep (it leaves denied files out), or name the files to read"))
    for o in v.object_reads:
        rule = _object_read_rule(engine, o)
        if rule is not None:
            where = ("the repository's files" if o.paths is None
                     else ", ".join(engine.workspace.relative(p) for p in o.paths[:3]) + (" …" if len(o.paths) > 3 else ""))
            out.append(Decision.ask(
                f"{o.reason}, and git's object store keeps every committed, staged and stashed version of {where}; "
                f"the rule {rule.text} ({rule.source or 'settings'}) denies reading some of them",
                "rule", rule=rule.text, source=rule.source or None,
                suggestion="limit it to paths no Read deny rule covers (`git diff -- src/`, `git show HEAD:src/x.py`), "
                           "or print names and numbers only (`--stat`, `--name-only`)"))
    sandboxed = None
    for access, paths in (("write", v.writes), ("read", v.reads)):
        for p in paths:
            d = engine.decide_path(PathRequest(access, p))  # type: ignore[arg-type]
            if d.behavior == "ask" and d.decided_by in ("workspace", "mode"):
                if sandboxed is None:
                    sandboxed = engine.sandbox_auto_allow()
                # Only paths inside the workspace and not protected: the sandbox lets commands
                # read anything, so reads outside still ask, and protected paths ask.
                if sandboxed and engine.workspace.is_inside(p) and engine.workspace.protected_reason(p) is None:
                    # the sandbox enforces what the mode would have asked about
                    d = Decision.allow(f"allowed: {access} of {engine.workspace.relative(p)} inside the sandbox", "sandbox")
            if d.behavior != "allow" and access == "write":
                d = Decision(d.behavior, f"{d.reason} (output redirection of `{_short(v.rule_text)}`)",
                             d.decided_by, d.rule, d.source, d.suggestion)
            out.append(d)
    return out


def _history_rule(engine: CommandPolicy) -> str | None:
    """Why sandboxed auto-allow cannot stand, or None. The write sandbox masks the files Read
    deny rules cover, not git's object stores: a program it runs (a script the classifier never
    sees) can print every committed, staged and stashed version of a denied file from a
    repository it can read — and git needs its store for anything, so the store cannot be hidden
    without breaking git. So while a deny rule could match a file under a workspace root and a
    repository holds that root or lies inside it, such commands are decided as if the sandbox
    did not contain them (the mode, a rule or a person). Whether the denied file really is in a
    history is not looked up: an unreachable blob (`git add .env; git reset`) is in no tree."""
    from ..files.gitrepo import object_stores

    if engine.allow_git_history:  # the user's own choice to accept it
        return None
    for root in engine.workspace.roots:
        rule = engine.rules.read_deny_under(root)
        if rule is None:
            continue
        try:
            stores, short = object_stores(root, first=True)
        except OSError:
            stores, short = [], "the workspace could not be walked"
        if stores or short:
            where = (f"git's object store at {engine.workspace.relative(stores[0])}" if stores
                     else f"a repository in it perhaps ({short})")
            return (f"a program can read the old versions of files the rule {rule.text} ({rule.source or 'settings'}) "
                    f"denies from {where} (`sandbox.filesystem.allowGitHistory: true` in your own settings accepts that)")
    return None


def _object_read_rule(engine: CommandPolicy, o: "ObjectRead") -> Rule | None:
    """A Read deny rule that could match a file whose old versions the command can print: one
    under (or above) a path its output is limited to, else one anywhere in the repository.
    Whether a denied file really is in the history is not looked up: a rule that could match a
    tracked path is enough (history rewrites, stashes and the index all keep copies)."""
    for p in ([o.top] if o.paths is None else o.paths):
        rule = engine.rules.read_deny_under(p)
        if rule is not None:
            return rule
    return None


_META = r"[^;&|\n`$()<>]*"


def _strict_allow(engine: CommandPolicy, text: str, exact: bool = False) -> Rule | None:
    """An allow rule matching the whole text of a command we could not split, where no `*` of
    the rule swallows shell syntax: `Bash(npm test *)` must not allow `npm test; curl … | sh`.
    `exact`: only a rule without a wildcard (for dangerous commands)."""
    for rule in engine.rules.of("allow", ["Bash"]):
        if rule.specifier is None or (exact and rule.has_wildcard):
            continue
        strict = linear_regex.compile(rule.command_regex.pattern.replace(".*", _META), re.S)
        if strict.fullmatch(text):
            return rule
    return None


def suggest_rule(v: "CommandVerdict | None") -> str | None:
    """The allow rule a person would add for this command: the command itself, `Bash(rm -rf
    build)`, never a wildcard family (`Bash(rm *)` would also allow `rm -rf /`)."""
    if v is None or not v.rule_text:
        return None
    text = v.env_text if v.env_risk else v.rule_text
    return "Bash(" + text.replace("*", "\\*") + ")"


def _mode(engine: CommandPolicy, what: str, v: "CommandVerdict | None") -> Decision:
    rule = suggest_rule(v)
    suggestion = f"add {rule} to permissions.allow" if rule else "add an allow rule matching the whole command"
    return by_mode(engine.mode, what, "command", suggestion=suggestion, rule_hint=rule)


def _ask_or_mode(engine: CommandPolicy, what: str) -> Decision:
    if engine.mode in ("plan", "dontAsk"):
        return _mode(engine, what, None)
    return Decision.ask(f"ask: {what}", "default", suggestion="split the command into shorter calls")


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
