"""What the recorders of scripts/claude_code/ and scripts/codex/ share around the program they
record: a private directory per case, one bounded run of the program that leaves nothing it
started behind, the cases recorded in parallel, and the results merged into each group's
goldens. Standard library only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable


def case_dir(prefix: str, private: Iterable[str]) -> Path:
    """A fresh directory for one case, holding the empty directories `private` (its HOME,
    config and TMPDIR)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    for name in private:
        (base / name).mkdir()
    return base


def done_with(base: Path, keep: bool, out: dict[str, Any]) -> None:
    """Remove a case's directory, or keep it and say where in `out`."""
    if keep:
        out["kept"] = str(base)
    else:
        shutil.rmtree(base, ignore_errors=True)


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr) of one run in a session of its own, killed at `timeout`;
    its whole process group is killed afterwards either way."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\n[recorder: killed after {timeout:g} s]"
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.returncode, stdout, stderr


def record_all(cases: list[Any], record: Callable[[Any], tuple[dict[str, Any], list[Any]]],
               jobs: int) -> tuple[dict[str, dict[str, Any]], list[Any]]:
    """Each case's `record(case)` → (result, tools sent), `jobs` at a time, saying how each
    went: (results by case id, the tools of the first case that saw any)."""
    results: dict[str, dict[str, Any]] = {}
    tools: list[Any] = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(record, c): c for c in cases}
        for fut, case in futures.items():
            out, case_tools = fut.result()
            results[case.id] = out
            tools = tools or case_tools
            missing = sum(1 for c in out["calls"] if "missing" in c)
            print(f"  {case.id}: {out['seconds']}s{' — MISSING ' + str(missing) if missing else ''}", file=sys.stderr)
    return results, tools


def write_goldens(cases: list[Any], results: dict[str, dict[str, Any]], header: dict[str, Any], *,
                  golden_path: Callable[[str], Path], known: Callable[[str], set[str]], partial: bool) -> None:
    """Each recorded group's golden file: `header` and its cases by name, sorted. A `partial`
    run (some cases only) keeps the other cases' recordings that are still cases (`known`)."""
    for group in sorted({c.group for c in cases}):
        path = golden_path(group)
        kept = json.loads(path.read_text())["cases"] if path.exists() and partial else {}
        names = known(group)
        merged = {k: v for k, v in kept.items() if k in names}
        for c in cases:
            if c.group == group:
                entry = dict(results[c.id])
                entry.pop("seconds", None)
                merged[c.name] = entry
        doc = {**header, "cases": dict(sorted(merged.items()))}
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
