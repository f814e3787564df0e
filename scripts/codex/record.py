"""Record what the real Codex returns for every Codex compatibility case.

    python scripts/codex/record.py                   # every case, the pinned version
    python scripts/codex/record.py --only 'exec/*'   # some cases (the others keep their goldens)
    python scripts/codex/record.py --version 0.170.0 # re-pin and re-record everything

The pinned version (tests/fixtures/codex/VERSION) of the `@openai/codex` npm package — which
ships the native binary per platform as an optional dependency — is installed into a cache
directory. Each case runs `codex exec` in a fresh workspace built from
tests/fixtures/codex/workspaces.json, with its own CODEX_HOME, HOME and TMPDIR, against the
scripted Responses API of mock_responses.py on 127.0.0.1: the calls of the case are sent one
per turn, and the output item Codex sends back for each — what a model reads — is recorded,
normalised as tests/compat/codex_harness.py says, in tests/fixtures/codex/goldens/<group>.json
with what the calls changed on disk. The `tools` array of the request goes to tools.json.

How Codex runs here, so that results are deterministic:
- a custom model provider (`model_providers.mock`, `wire_api = "responses"`, base URL the mock)
  and a model catalog (`model_catalog_json`) holding one model, `codebelt-mock`: the metadata
  of the bundled catalog's gpt-5.5 entry (its one model whose tools are not in code mode:
  freeform apply_patch, exec_command/write_stdin), read from the binary at record time;
- `[tools.update_plan] enabled = true` (Codex offers update_plan only when configured);
- `--dangerously-bypass-approvals-and-sandbox`: no call is asked about or sandboxed, so a
  result is the tool's own text (codebelt replays with its sandbox off);
- `--ephemeral --skip-git-repo-check`, no update check, no analytics, LANG=C.UTF-8, TZ=UTC.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npm_release import cache_dir, install  # noqa: E402
from recording import case_dir, done_with, record_all, run, write_goldens  # noqa: E402
from mock_responses import MockResponsesAPI, Recording  # noqa: E402

from tests.compat import codex_harness as ch  # noqa: E402
from tests.compat import harness  # noqa: E402

PACKAGE = "@openai/codex"
MODEL = "codebelt-mock"
BASE_MODEL = "gpt-5.5"
PROMPT = "codebelt compatibility recording: run the scripted tool calls."
# The tools codebelt's Codex profile offers: their definitions are kept in tools.json.
TOOLS_KEPT = ("exec_command", "write_stdin", "apply_patch", "view_image", "update_plan")
RUN_TIMEOUT_S = int(os.environ.get("CODEX_RECORD_TIMEOUT", "180"))


def native_binary(launcher: Path) -> Path:
    found = sorted(launcher.parents[1].glob("@openai/codex-*/vendor/*/bin/codex"))  # node_modules/.bin/codex
    if not found:
        raise SystemExit("the native Codex binary was not found next to the npm launcher")
    return found[0]


def model_catalog(launcher: Path) -> dict[str, Any]:
    """A one-model catalog: the bundled catalog's BASE_MODEL entry, renamed."""
    data = native_binary(launcher).read_bytes()
    for m in re.finditer(rb'\{\s*"models"\s*:\s*\[', data):
        try:
            catalog, _ = json.JSONDecoder().raw_decode(data[m.start():m.start() + 4_000_000].decode("utf-8", "replace"))
        except ValueError:
            continue
        for model in catalog.get("models", []):
            if model.get("slug") == BASE_MODEL:
                return {"models": [{**model, "slug": MODEL, "display_name": MODEL, "upgrade": None}]}
    raise SystemExit(f"no {BASE_MODEL} entry in the catalog bundled with Codex")


def write_config(home: Path, api: str, catalog: Path) -> None:
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "mock"\n'
        f'model_catalog_json = "{catalog}"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\nenabled = false\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{api}"\n'
        'wire_api = "responses"\n'
        "[tools.update_plan]\nenabled = true\n"
    )


def _env(base: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(base / "home"),
        "CODEX_HOME": str(base / "codex"),
        "TMPDIR": str(base / "tmp"),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "NO_PROXY": "127.0.0.1",
    }


def record_case(launcher: Path, catalog: dict[str, Any], case: ch.Case, keep: bool) -> tuple[dict[str, Any], list]:
    base = case_dir("codex-record-", ("home", "codex", "tmp"))
    ws = base / "ws"
    catalog_path = base / "catalog.json"
    catalog_path.write_text(json.dumps(catalog))
    ch.build_workspace(case.workspace, ws)
    ws_path = str(ws)
    before = harness.snapshot(ws)
    sessions = ch.Sessions()

    def resolve(step: int, call: tuple[str, Any], recording: Recording) -> tuple[str, Any]:
        for k in range(step):  # session ids from every output so far, in order
            out = recording.outputs.get(k)
            if isinstance(out, str):
                sessions.learn(out)
        return call[0], ch.substitute(call[1], ws_path, sessions)

    started = time.monotonic()
    with MockResponsesAPI(list(case.calls), resolve) as api:
        write_config(base / "codex", api.base_url, catalog_path)
        code, stdout, stderr = run(
            [str(launcher), "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never",
             "--dangerously-bypass-approvals-and-sandbox", "-C", ws_path, PROMPT],
            ws, _env(base), RUN_TIMEOUT_S)
        recording = api.recording
    if keep:
        (base / "stdout.txt").write_text(stdout)
        (base / "stderr.txt").write_text(stderr)
    seen = ch.Sessions()
    calls = []
    for i, (tool, data) in enumerate(case.calls):
        entry: dict[str, Any] = {"tool": tool, "input": data}
        if i not in recording.outputs:
            entry["missing"] = f"no output (codex exit code {code}): {stderr.strip()[-500:]}"
        else:
            entry["output"] = ch.normalise_output(recording.outputs[i], ws_path, seen)
        calls.append(entry)
    files = harness.changes(ws, before)
    out: dict[str, Any] = {"calls": calls,
                           "files": {k: ch.normalise_text(v, ws_path, seen) if isinstance(v, str) else v
                                     for k, v in files.items()},
                           "seconds": round(time.monotonic() - started, 1)}
    done_with(base, keep, out)
    return out, recording.tools


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", help="Codex version to install and record (re-pins VERSION)")
    parser.add_argument("--cache", type=Path, default=cache_dir("codex"), help="where Codex versions are installed")
    parser.add_argument("--only", action="append", help="record only cases whose group/id matches (fnmatch)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep each case's directory (stdout, stderr)")
    args = parser.parse_args(argv)

    version = args.version or ch.VERSION_FILE.read_text().strip()
    launcher = install(PACKAGE, version, "codex", args.cache)
    catalog = model_catalog(launcher)
    cases = ch.load_cases()
    if args.only:
        cases = [c for c in cases if any(fnmatch.fnmatch(c.id, p) for p in args.only)]
    print(f"Codex {version}: recording {len(cases)} cases with {args.jobs} jobs", file=sys.stderr)

    results, tools = record_all(cases, lambda c: record_case(launcher, catalog, c, args.keep), args.jobs)

    ch.GOLDENS_DIR.mkdir(parents=True, exist_ok=True)
    write_goldens(cases, results, {"codex": version}, golden_path=ch.golden_path,
                  known=lambda group: {c.name for c in ch.load_cases([group])}, partial=bool(args.only))
    if tools:
        ch.TOOLS_FILE.write_text(json.dumps({
            "codex": version, "model_metadata_from": BASE_MODEL,
            "all_tools": [t.get("name") or t.get("type") for t in tools],
            "tools": [t for t in tools if t.get("name") in TOOLS_KEPT],
        }, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.version:
        ch.VERSION_FILE.write_text(version + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
