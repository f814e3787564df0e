"""Each entry point imports only what it uses: the console scripts run as real processes under
`python -X importtime`, and the modules they must not load are looked for in its report.

A call of one tool imports that tool's module and the engines it runs, not the other tools', the
MCP SDK, image and PDF libraries, the language-server protocol, tree-sitter, the hooks runner or
the checkpoint store (which a read-only call never opens).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from codebelt.tools import INDEX, STARTS_PROGRAMS, TOOL_MODULES, module_tools

SCRIPTS = Path(sysconfig.get_path("scripts"))
# Libraries no plain text call needs.
HEAVY = ("mcp", "PIL", "pypdf", "lsprotocol", "tree_sitter", "tree_sitter_language_pack", "tree_sitter_bash",
         "charset_normalizer", "pyte", "urllib.request", "asyncio")
# codebelt's own machinery that a call loads only when it needs it.
MACHINERY = ("codebelt.intel", "codebelt.hooks", "codebelt.checkpoints", "codebelt.sandbox.manager",
             "codebelt.shell.execution.runner", "codebelt.shell.analysis.parse", "codebelt.mcp", "codebelt.adapters")
JAILED = tuple(m for m in MACHINERY if m != "codebelt.sandbox.manager")
TOOLS = tuple(f"codebelt.tools.{m}" for m in TOOL_MODULES)
PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n hello\n-world\n+there\n*** End Patch\n"


def _loaded(argv: list[str], cwd: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules a process imported, from its `-X importtime` report."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "self [us]" not in line}
    return names, proc


def _under(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def _call(tool: str, args: dict) -> list[str]:
    return [str(SCRIPTS / "codebelt"), "call", "--mode", "acceptEdits", tool, json.dumps(args)]


CASES = [
    # (id, argv, modules that must load, modules that must not)
    # no pydantic: Read's input is a DeclaredInput and plain settings need no model (settings/plain.py)
    ("call Read", _call("Read", {"file_path": "a.txt"}), ("codebelt.tools.read",),
     HEAVY + MACHINERY + ("pydantic",) + tuple(t for t in TOOLS if t != "codebelt.tools.read")),
    # Glob and Grep run ripgrep in the read-only jail: they load the sandbox, nothing else of it
    ("call Glob", _call("Glob", {"pattern": "*.txt"}), ("codebelt.tools.glob", "codebelt.sandbox.manager"),
     HEAVY + JAILED + ("pydantic",) + tuple(t for t in TOOLS if t != "codebelt.tools.glob")),
    # the writing tools' inputs are declared too: their calls pay for the checkpoint, not for pydantic
    ("call Edit", _call("Edit", {"file_path": "b.txt", "old_string": "", "new_string": "there\\n"}),
     ("codebelt.tools.edit",), ("pydantic",)),
    ("call Write", _call("Write", {"file_path": "new.txt", "content": "x\n"}), ("codebelt.tools.write",), ("pydantic",)),
    ("call Grep", _call("Grep", {"pattern": "hello"}), ("codebelt.tools.grep", "codebelt.sandbox.manager"),
     HEAVY + JAILED + tuple(t for t in TOOLS if t not in ("codebelt.tools.grep", "codebelt.tools.glob"))),
    ("apply_patch", [str(SCRIPTS / "apply_patch"), PATCH], ("codebelt.patch.apply",),
     HEAVY + MACHINERY + ("pydantic", "codebelt.session", "codebelt.settings", "codebelt.tools", "codebelt.tool")),
    ("codebelt --help", [str(SCRIPTS / "codebelt"), "--help"], ("codebelt.cli",),
     HEAVY + MACHINERY + ("pydantic", "codebelt.session", "codebelt.settings", "codebelt.tools")),
    ("import codebelt", ["-c", "import codebelt"], ("codebelt",),
     HEAVY + MACHINERY + ("pydantic", "codebelt.session", "codebelt.settings", "codebelt.tools")),
]


@pytest.mark.parametrize("argv,needed,forbidden", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_entry_point_imports_only_what_it_uses(ws: Path, argv, needed, forbidden):
    (ws / "a.txt").write_text("hello\nworld\n")
    names, proc = _loaded(argv, ws)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert set(needed) <= names, f"the report is missing {sorted(set(needed) - names)}: is -X importtime read right?"
    assert _under(names, forbidden) == []


def test_settings_of_plain_values_need_no_pydantic_and_still_bind(ws: Path, tmp_path: Path):
    """User settings with rules and limits are read without pydantic, and their deny rules hold
    on that path; settings it does not model (hooks) are read by pydantic, as before."""
    (ws / "a.txt").write_text("hello\n")
    (ws / "secret.txt").write_text("key\n")
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(./secret.txt)"], "allow": ["Bash(ls)"]},
                                    "read": {"maxTokens": 1000}, "sandbox": {"filesystem": {"denyRead": ["~/.aws"]}}}))
    names, proc = _loaded([*_call("Read", {"file_path": "secret.txt"}), "--settings", str(settings)], ws)
    assert proc.returncode == 1 and "key" not in proc.stdout and "denied" in proc.stderr.lower(), proc.stderr[-2000:]
    assert "codebelt.tools.read" in names and _under(names, ("pydantic",)) == []
    names, proc = _loaded([*_call("Read", {"file_path": "a.txt"}), "--settings", str(settings)], ws)
    assert proc.returncode == 0 and "hello" in proc.stdout
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": "exit 0"}]}]}}))
    names, proc = _loaded([*_call("Read", {"file_path": "a.txt"}), "--settings", str(settings)], ws)
    assert proc.returncode == 0 and "pydantic" in names, proc.stderr[-2000:]
    settings.write_text(json.dumps({"read": {"maxTokens": "many"}}))
    names, proc = _loaded([*_call("Read", {"file_path": "a.txt"}), "--settings", str(settings)], ws)
    assert proc.returncode == 2 and "read.maxTokens must be an integer" in proc.stderr, proc.stderr[-2000:]


def test_read_only_call_does_not_open_the_checkpoint_store(ws: Path, tmp_path: Path):
    """Checkpoints are on by default; a Read must still not open (or create) their store."""
    (ws / "a.txt").write_text("hello\n")
    store = tmp_path / "checkpoints"
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"checkpoints": {"directory": str(store)}}))

    def call(tool: str, args: dict) -> None:
        proc = subprocess.run([*_call(tool, args), "--settings", str(settings)], cwd=ws, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr

    call("Read", {"file_path": "a.txt"})
    assert not store.exists()
    call("Write", {"file_path": "b.txt", "content": "x\n"})
    assert store.exists()  # a writing call does record, where the settings say


def test_index_names_every_tool_of_every_module():
    """The registry's index must agree with the classes: a tool module missing from it is still
    usable, but imported by every session (add its tools to codebelt.tools.INDEX)."""
    indexed_modules = {module for module, _ in INDEX.values()}
    assert sorted(set(TOOL_MODULES) - indexed_modules) == [], "add these modules' tools to codebelt.tools.INDEX"
    for module in TOOL_MODULES:
        for cls in module_tools(module):
            assert INDEX.get(cls.name) == (module, cls.permission_family), (
                f"codebelt.tools.INDEX[{cls.name!r}] should be ({module!r}, {cls.permission_family!r})")
            assert (cls.name in STARTS_PROGRAMS) == cls.starts_programs, (
                f"{cls.name} {'belongs' if cls.starts_programs else 'does not belong'} in codebelt.tools.STARTS_PROGRAMS")
    defined = {cls.name for module in TOOL_MODULES for cls in module_tools(module)}
    assert sorted(set(INDEX) - defined) == []


def test_session_loads_a_tool_when_it_is_first_used(make_session, ws: Path):
    (ws / "a.txt").write_text("hello\n")
    s = make_session()
    assert "Bash" in s.tools and "Read" in s.tools and "Nope" not in s.tools
    assert s._tools.loaded() == []
    assert not s.call("Read", {"file_path": "a.txt"}).is_error
    assert s._tools.loaded() == ["Read"]
    names = [spec["name"] for spec in s.tool_specs()]  # a spec asked: every tool is loaded
    assert names == list(s.tools) and set(s._tools.loaded()) == set(names)
