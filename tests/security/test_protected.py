"""Protected paths through every write tool: an agent must not be able to give itself more power
(settings files), make git run its code (hooks, config, gitfiles), or touch secrets (.env*), by any
spelling: nested, case variants, or through a symlink inside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

PATCH = "*** Begin Patch\n{}\n*** End Patch"

# Targets as the model spells them. `h` is a symlink to .git/hooks, `cfg` one to .codebelt.
TARGETS = [
    ".git/hooks/pre-commit",
    "h/pre-commit",
    ".git/config",
    ".git",  # a gitfile pointing git at another directory
    "vendor/lib/.git/hooks/post-checkout",  # a nested repository's hooks
    "sub/.git",
    ".GIT/hooks/pre-commit",  # the same directory on case-insensitive file systems
    ".codebelt/settings.local.json",
    "cfg/settings.json",
    ".Codebelt/settings.json",
    ".claude/settings.local.json",
    "pkg/.claude/settings.json",
    ".env",
    ".ENV.local",
    "app/.env.production",
    # Files and directories that make a program run later, as Claude Code protects them.
    ".vscode/tasks.json",
    "web/.VSCode/settings.json",
    ".idea/runConfigurations/x.xml",
    ".husky/pre-commit",
    ".cargo/config.toml",
    ".gitmodules",
    "sub/.gitconfig",
    ".bashrc",
    ".Zshrc",
    ".profile",
    ".envrc",
    "tools/.ripgreprc",
    ".mcp.json",
    ".claude.json",
]


def write_calls(target: str) -> list[tuple[str, dict]]:
    return [
        ("Write", {"file_path": target, "content": "#!/bin/sh\necho pwned\n"}),
        ("Edit", {"file_path": target, "old_string": "", "new_string": "#!/bin/sh\n"}),
        ("MultiEdit", {"file_path": target, "edits": [{"old_string": "", "new_string": "x"}]}),
        ("ApplyPatch", {"input": PATCH.format(f"*** Add File: {target}\n+#!/bin/sh")}),
        ("ApplyPatch", {"input": PATCH.format(f"*** Update File: plain.txt\n*** Move to: {target}\n@@\n-plain\n+x")}),
    ]


CASES = [(t, tool, inp) for t in TARGETS for tool, inp in write_calls(t)]


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".codebelt").mkdir()
    (ws / "h").symlink_to(".git/hooks")
    (ws / "cfg").symlink_to(".codebelt")
    (ws / "plain.txt").write_text("plain\n")
    return ws


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (None if p.is_dir() or p.is_symlink() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("mode", ["acceptEdits", "dontAsk", "plan"])
@pytest.mark.parametrize("target,tool,inp", CASES, ids=[f"{c[1]}:{c[0]}" for c in CASES])
def test_protected_paths_are_never_written_without_a_rule(project, make_session, mode, target, tool, inp):
    before = snapshot(project)
    s = make_session(mode=mode)
    r = s.call(tool, inp)
    assert r.is_error, r.text
    assert "Permission to use" in r.text, r.text
    assert snapshot(project) == before


@pytest.mark.parametrize("target,tool,inp", CASES[:5], ids=[c[1] for c in CASES[:5]])
def test_an_explicit_allow_rule_opens_a_protected_path(project, make_session, target, tool, inp):
    s = make_session(mode="acceptEdits", settings={"permissions": {"allow": ["Edit(./.git/hooks/**)"]}})
    r = s.call(tool, inp)
    assert not r.is_error, r.text
    assert (project / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("rel", [".gitignore", ".github/workflows/ci.yml", "src/git/x.py", "envs/a.txt", "my.git.txt"])
def test_lookalikes_are_not_protected(project, make_session, rel):
    s = make_session(mode="acceptEdits")
    r = s.call("Write", {"file_path": rel, "content": "ok\n"})
    assert not r.is_error, r.text
