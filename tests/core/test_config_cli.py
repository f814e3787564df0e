"""`codebelt config`: the merged settings with their sources, the schema, and bad values named
by file and key for every kind of settings file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codebelt.cli import main

BAD = {"grep": {"headLimit": "many"}}  # a key every kind of settings file may set
BAD_KEY = "grep.headLimit must be an integer"


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def run_config(capsys, *args) -> tuple[int, str, str]:
    code = main(["config", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("where", [
    ".codebelt/settings.json", ".codebelt/settings.local.json", "user", "--settings",
])
def test_bad_value_is_named_with_its_file(ws, tmp_path, monkeypatch, capsys, where):
    args = ["--root", str(ws)]
    if where == "user":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
        write(tmp_path / "cfg/codebelt/settings.json", BAD)
        label = "~/" if str(tmp_path).startswith(str(Path.home())) else str(tmp_path / "cfg/codebelt/settings.json")
    elif where == "--settings":
        write(tmp_path / "extra.json", BAD)
        args += ["--settings", str(tmp_path / "extra.json")]
        label = str(tmp_path / "extra.json")
    else:
        write(ws / where, BAD)
        label = where
    code, out, err = run_config(capsys, *args)
    assert code == 2 and out == ""
    assert label in err and BAD_KEY in err and '"many"' in err


@pytest.mark.parametrize("where", [".claude/settings.json", ".claude/settings.local.json"])
def test_bad_permissions_in_claude_files_are_named(ws, capsys, where):
    write(ws / where, {"permissions": {"defaultMode": "yolo"}, "model": "opus"})  # other keys are Claude Code's
    code, _, err = run_config(capsys, "--root", str(ws))
    assert code == 2 and where in err and "permissions.defaultMode must be" in err and '"yolo"' in err


def test_bad_api_settings_raise_settings_error(ws):
    from codebelt import Session
    from codebelt.errors import SettingsError

    with pytest.raises(SettingsError, match=r"session settings: unknown setting sandbox\.netwrk; did you mean sandbox\.network\?"):
        Session(ws, settings={"sandbox": {"netwrk": False}}, audit=False, load_user_settings=False)


def test_values_and_their_sources(ws, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write(tmp_path / "cfg/codebelt/settings.json", {"grep": {"headLimit": 50}, "permissions": {"deny": ["Read(./.env)"]}})
    write(ws / ".codebelt/settings.json", {"bash": {"defaultTimeoutMs": 5000}, "search": {"ripgrepPath": "/evil/rg"},
                                           "sandbox": {"network": True, "mode": "off", "autoAllowBash": True},
                                           "permissions": {"allow": ["Bash(make *)"], "deny": ["Bash(curl *)"]}})
    code, out, _ = run_config(capsys, "--root", str(ws), "--json", "--mode", "plan")
    assert code == 0
    report = json.loads(out)
    assert report["trusted"] is False and "--trust-workspace" in report["trust"]
    assert {(i["key"], i["why"]) for i in report["ignored"]} == {
        ("search.ripgrepPath", "untrusted"), ("sandbox.network", "limited"), ("sandbox.mode", "untrusted"),
        ("sandbox.autoAllowBash", "untrusted"), ("permissions.allow", "untrusted")}
    assert report["settings"]["bash"]["defaultTimeoutMs"] == 5000
    assert report["sources"]["bash.defaultTimeoutMs"] == ".codebelt/settings.json"
    # nor weaken the sandbox: the sandbox section is the user's alone
    assert report["settings"]["sandbox"]["network"] is False and report["settings"]["sandbox"]["mode"] == "auto"
    assert report["settings"]["sandbox"]["autoAllowBash"] is None
    assert all(any(key in w for w in report["warnings"]) for key in ("sandbox.network", "sandbox.mode", "sandbox.autoAllowBash"))
    assert report["settings"]["grep"]["headLimit"] == 50 and report["sources"]["grep.headLimit"].endswith("settings.json")
    assert report["sources"]["permissions.defaultMode"] == "session arguments"
    assert report["sources"]["glob.maxResults"] == "default"
    # a workspace cannot name a program for itself: dropped, with a warning
    assert report["settings"]["search"]["ripgrepPath"] is None
    assert any("search.ripgrepPath" in w for w in report["warnings"])
    rules = {(r["behavior"], r["rule"], r["source"]) for r in report["rules"]}
    assert ("deny", "Bash(curl *)", ".codebelt/settings.json") in rules
    assert not any(r == "Bash(make *)" for _, r, _ in rules)  # an allow rule needs a trusted workspace
    assert any(b == "deny" and r == "Read(./.env)" for b, r, _ in rules)
    # the text form says the same, and how to trust the workspace
    code, text, _ = run_config(capsys, "--root", str(ws))
    assert code == 0 and "bash.defaultTimeoutMs" in text and "(.codebelt/settings.json)" in text
    assert "not trusted" in text and "permissions.allow (.codebelt/settings.json)" in text
    # trusted, the same file is taken in full
    code, out, _ = run_config(capsys, "--root", str(ws), "--json", "--trust-workspace")
    report = json.loads(out)
    assert report["trusted"] is True and report["settings"]["search"]["ripgrepPath"] == "/evil/rg"
    assert ("allow", "Bash(make *)", ".codebelt/settings.json") in {
        (r["behavior"], r["rule"], r["source"]) for r in report["rules"]}


def test_schema_describes_every_section_and_the_workspace_allow_list(capsys):
    code, out, _ = run_config(capsys, "--schema")
    schema = json.loads(out)
    assert code == 0 and schema["additionalProperties"] is False
    assert {"permissions", "sandbox", "bash", "search", "grep", "glob", "read"} <= set(schema["properties"])
    search = schema["$defs"]["SearchSettings"]["properties"]
    assert "x-workspace" not in search["ripgrepPath"] and search["timeoutMs"]["x-workspace"] == "lower"
    mode = schema["$defs"]["PermissionsSettings"]["properties"]["defaultMode"]
    assert mode["x-workspace"] == "order" and mode["x-workspace-order"][:2] == ["dontAsk", "plan"]


def test_schema_validates_what_the_loader_accepts(ws, tmp_path):
    """A file the schema describes loads; the schema is what editors check files against."""
    from codebelt.settings import json_schema, load_settings

    example = {"$schema": "https://example/codebelt.schema.json", "permissions": {"allow": ["Edit(src/**)"]},
               "sandbox": {"mode": "bwrap", "limits": {"fileSizeMB": 10}}, "grep": {"exclude": "*.min.js"}}
    write(tmp_path / "user.json", example)
    s = load_settings(ws, settings_file=tmp_path / "user.json", load_user=False)
    assert s.sandbox.limits.file_size_mb == 10 and s.grep.exclude == ["*.min.js"]
    assert set(example) - {"$schema"} <= set(json_schema()["properties"])


def test_config_is_a_console_command(ws):
    out = subprocess.run([sys.executable, "-m", "codebelt.cli", "config", "--root", str(ws), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["settings"]["permissions"]["defaultMode"] == "default"
