"""Record what the real Claude Code returns for every compatibility case.

    python scripts/claude_code/record.py                 # every case, the pinned version
    python scripts/claude_code/record.py --only 'read/*' # some cases (others keep their goldens)
    python scripts/claude_code/record.py --version 2.1.400   # re-pin and re-record everything
    python scripts/claude_code/record.py --profile claude-code-2.0   # an older release's profile

The pinned version (tests/fixtures/claude_code/VERSION) is installed from the npm registry into
a cache directory (`npm install --prefix`; the native binary is an optional dependency). Each
case runs `claude -p` in a fresh workspace built from tests/fixtures/claude_code/workspaces.json
(fixed mtimes) with its own config dir, HOME and TMPDIR, against the scripted Messages API of
mock_api.py on 127.0.0.1: the calls of the case are sent one per turn, and the tool_result
Claude Code builds for each is recorded — normalised as tests/compat/harness.py describes — in
tests/fixtures/claude_code/goldens/<group>.json, with what the calls changed in the workspace.
The tool definitions Claude Code sends (descriptions, input schemas) go to tools.json.

An older release is the one its profile names (`release` in src/codebelt/texts/<profile>.toml);
its goldens and tools.json go to tests/fixtures/claude_code/<version>/, and it also records the
cases of that folder's `cases/` (the tools only that release had).

How Claude Code runs here, so that results are deterministic:
- `--dangerously-skip-permissions` (bypassPermissions, which needs IS_SANDBOX=1 as root): no
  call is ever asked about, so a result is the tool's own text;
- `--allowedTools Glob,Grep`: Claude Code leaves its Glob and Grep tools out of the default set
  (the model is pointed at search through Bash) unless they are allowed by name;
- an empty CLAUDE_CONFIG_DIR and HOME per case (no user settings, memory or history), no
  auto-updater, no non-essential traffic, no session persistence, ENABLE_TOOL_SEARCH=false
  (every tool's definition is sent up front), LANG=C.UTF-8 and TZ=UTC;
- the workspace is the cwd, and TMPDIR a per-case directory (task output files live there).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npm_release import cache_dir, install  # noqa: E402
from recording import case_dir, done_with, record_all, run, write_goldens  # noqa: E402
from mock_api import PROMPT, MockMessagesAPI, Recording  # noqa: E402

from tests.compat import harness  # noqa: E402

PACKAGE = "@anthropic-ai/claude-code"
# The tools codebelt implements (of any release): their definitions are kept in tools.json.
TOOLS_KEPT = ("Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "MultiEdit", "NotebookEdit", "Read",
              "TaskOutput", "TaskStop", "Write")
RUN_TIMEOUT_S = int(os.environ.get("CC_RECORD_TIMEOUT", "180"))


def _options(binary: Path) -> tuple[str, ...]:
    """The command-line options of this release that keep a run private, where it has them
    (older releases lack `--no-session-persistence`; their session file goes to the per-case
    config dir, removed with it)."""
    helped = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tempfile.gettempdir()}).stdout
    return tuple(o for o in ("--no-session-persistence",) if o in helped)


def _env(base: Path, api: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(base / "home"),
        "CLAUDE_CONFIG_DIR": str(base / "config"),
        "TMPDIR": str(base / "tmp"),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "ANTHROPIC_BASE_URL": api,
        "ANTHROPIC_API_KEY": "sk-ant-mock-recording",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "IS_SANDBOX": "1",
        "ENABLE_TOOL_SEARCH": "false",
    }


def record_case(binary: Path, case: harness.Case, keep: bool, options: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    base = case_dir("cc-record-", ("home", "config", "tmp"))  # the workspace and everything private to the run
    ws = base / "ws"
    harness.build_workspace(case.workspace, ws)
    ws_path = str(ws)
    before = harness.snapshot(ws)
    tasks = harness.Placeholders((str(base),))
    steps = [[(tool, data)] for tool, data in case.calls]

    def resolve(step: int, turn: list, recording: Recording) -> list:
        for k in range(step):  # learn task ids from every reply so far, in order
            for block in recording.replies.get(k, []):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    texts = [content] if isinstance(content, str) else [
                        b.get("text", "") for b in content or [] if isinstance(b, dict)]
                    for t in texts:
                        tasks.learn(t)
        return [(name, harness.substitute(data, ws_path, tasks)) for name, data in turn]

    started = time.monotonic()
    with MockMessagesAPI(steps, resolve) as api:
        code, stdout, stderr = run(
            [str(binary), "-p", PROMPT, "--dangerously-skip-permissions", "--output-format", "stream-json",
             "--verbose", "--allowedTools", "Glob,Grep", *options],
            ws, _env(base, api.base_url), RUN_TIMEOUT_S)
        recording = api.recording
    if keep:
        (base / "stream.jsonl").write_text(stdout)
        (base / "stderr.txt").write_text(stderr)
    tasks = harness.Placeholders((str(base),))
    calls = []
    for i, (tool, data) in enumerate(case.calls):
        sent = recording.sent.get(i)
        entry: dict[str, Any] = {"tool": tool, "input": data}
        reply = recording.replies.get(i)
        if sent is None or reply is None:
            entry["missing"] = f"no reply (claude exit code {code}): {stderr.strip()[-500:]}"
        else:
            entry.update(harness.result_of(reply, ws_path, tasks))
        calls.append(entry)
    out: dict[str, Any] = {"calls": calls, "files": harness.normalise_files(harness.changes(ws, before), ws_path, tasks)}
    if recording.trailing:
        out["after"] = [[harness.normalise_block(b, ws_path, tasks) for b in reply] for reply in recording.trailing]
    out["seconds"] = round(time.monotonic() - started, 1)
    done_with(base, keep, out)
    return out, recording.tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=harness.DEFAULT_PROFILE,
                        help="the profile whose release to record (default: the current release's)")
    parser.add_argument("--version", help="Claude Code version to install and record (re-pins VERSION; default profile only)")
    parser.add_argument("--cache", type=Path, default=cache_dir("claude-code"), help="where Claude Code versions are installed")
    parser.add_argument("--only", action="append", help="record only cases whose group/id matches (fnmatch)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep each case's directory (stream-json, stderr)")
    args = parser.parse_args(argv)

    release = harness.release(args.profile)
    if args.version and not release.default and args.version != release.version:
        parser.error(f"{release.profile} follows Claude Code {release.version}; another release is another profile")
    version = args.version or release.version
    binary = install(PACKAGE, version, "claude", args.cache)
    cases = harness.load_cases(release=release)
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatch(c.id, p) for p in args.only)]
    print(f"Claude Code {version} ({release.profile}): recording {len(cases)} cases with {args.jobs} jobs", file=sys.stderr)

    options = _options(binary)
    results, tools = record_all(cases, lambda c: record_case(binary, c, args.keep, options), args.jobs)

    release.goldens_dir.mkdir(parents=True, exist_ok=True)
    write_goldens(cases, results, {"claude_code": version},
                  golden_path=lambda group: harness.golden_path(group, release),
                  known=lambda group: {c.name for c in harness.load_cases([group], release)},
                  partial=bool(args.only))
    if tools:
        kept_tools = {t["name"]: {"description": t.get("description"), "input_schema": t.get("input_schema")}
                      for t in tools if t.get("name") in TOOLS_KEPT}
        doc = {"claude_code": version, "all_tools": sorted(t.get("name") for t in tools), "tools": kept_tools}
        release.tools_file.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if release.default:
        harness.VERSION_FILE.write_text(version + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
