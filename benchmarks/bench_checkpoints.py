"""Checkpoint benchmark: what a checkpoint costs, side by side with git's ways of keeping a tree.

    .venv/bin/python benchmarks/bench_checkpoints.py [--files 100000] [--repeat 7]

Builds a workspace of N small files (20 a directory, 200–4,000 bytes each) in a temp directory,
makes it a git repository, and times, each the median of R runs:

- file tool: the checkpoint of one Edit-sized write (pre-image kept, post-image kept, record);
- Bash, journal: the checkpoint of a command that changes nothing / changes 10 files (the
  checkpoint's own cost: the look before and after the command, not the command);
- Bash, scan: the same without inotify (the fallback: unsandboxed machines without inotify,
  the watch limit reached): the roots listed and stat'ed before and after;
- `git add -A && git commit` into a shadow repository (a separate git dir with the workspace
  as its work tree: how Cline and Codex keep checkpoints), after no change / 10 changes;
- `git stash` after no change / 10 changes (followed, untimed, by `git stash pop`);
- rewind of a command that changed 1,000 files; `reset()` after 50 changed files;
- the baseline: the first listing of the tree with every file kept (once per workspace), and
  a later session's (contents reused through the manifest);
- through a Session: a Bash call with checkpoints off and on; a session's first writing
  command in the workspace with a fresh store (the baseline begun in the background at the
  session's start: the command waits for its watches only);
- through the command line (`codebelt call`, a process per call, through the resident helper):
  `true` and a command that changes one file, checkpoints off, on with each call walking the
  tree, and on with the helper keeping the watches between calls (docs/checkpoints.md);
- an unprivileged overlay mount and unmount (the alternative design: see docs/checkpoints.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from codebelt.checkpoints import Checkpoints

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}


def make_tree(root: Path, n: int) -> None:
    rnd = random.Random(1)
    made = d = 0
    while made < n:
        sub = root / f"pkg{d // 50:03d}" / f"mod{d % 50:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(min(20, n - made)):
            (sub / f"f{i:02d}.py").write_bytes(rnd.randbytes(rnd.randint(200, 4000)))
            made += 1
        d += 1


def files(root: Path) -> list[Path]:
    return sorted(root.glob("pkg*/mod*/f*.py"))


def median_ms(fn: Callable[[], float], repeat: int) -> float:
    return statistics.median(fn() for _ in range(repeat)) * 1000


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def touch_files(paths: list[Path], tag: str) -> None:
    for p in paths:
        with open(p, "ab") as f:
            f.write(tag.encode())


def git(*args: str, cwd: Path, git_dir: Path | None = None) -> None:
    env = dict(GIT_ENV)
    if git_dir is not None:
        env.update(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(cwd))
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cli_rows(ws: Path, tmp: Path, target: str, R: int, row: Callable[..., None]) -> None:
    """The command line: a process per call. Without the sandbox (`--sandbox off`): what is
    measured is the checkpoint's share of a call, not the sandbox's set-up."""
    cli = Path(sys.executable).with_name("codebelt")
    if cli.exists():
        state = tmp / "cli-state"
        off = tmp / "cli-off.json"
        # no cgroups either: the measure is the checkpoint's share, not the process cap's set-up
        common = '"lsp": {"autoDetect": false}, "sandbox": {"limits": {"processes": 0, "memoryMB": 0}}'
        off.write_text('{"checkpoints": {"enabled": false}, ' + common + '}')
        on_ = tmp / "cli-on.json"
        on_.write_text('{' + common + '}')
        env = {**os.environ, "XDG_STATE_HOME": str(state)}

        # A copy of the tree that only calls keeping the watches touch: a call that walks saves
        # the manifest whole (a new stamp), after which a kept state's next call reads it whole.
        kept_ws = tmp / "ws-kept"
        shutil.copytree(ws, kept_ws, symlinks=True)

        def cli_call(settings: Path, command: str, keep: bool = True, root: Path = ws) -> Callable[[], float]:
            def run() -> float:
                argv = [str(cli), "call", "--root", str(root), "--mode", "bypassPermissions", "--sandbox", "off",
                        "--settings", str(settings), "Bash", json.dumps({"command": command})]

                def once() -> None:
                    r = subprocess.run(argv, env={**env, "CODEBELT_HELPER_WATCHES": "1" if keep else "0"},
                                       capture_output=True, text=True)
                    if r.returncode:
                        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr or r.stdout}")
                return timed(once)
            return run

        row("codebelt call, the first writing call in the workspace (every file kept)",
            cli_call(on_, f"echo x >> {target}")() * 1000)
        row("the same in the copy, the helper keeping its state afterwards",
            cli_call(on_, f"echo x >> {target}", root=kept_ws)() * 1000)
        # Side by side, interleaved (one call of each in turn, so the machine's load falls on all
        # alike): checkpoints off; on, each call walking the tree (CODEBELT_HELPER_WATCHES=0: as
        # before the helper kept the watches); on, the watches kept, with a walking call's
        # manifest save between each two (the same tree); on, the watches kept (the copy).
        variants = (("off", off, True, ws), ("on, each call walks", on_, False, ws),
                    ("on, kept, a walking call between", on_, True, ws), ("on, watches kept", on_, True, kept_ws))
        for label, command in (("`true`", "true"), ("appending to 1 file", f"echo x >> {target}")):
            runs = [cli_call(settings, command, keep, root) for _, settings, keep, root in variants]
            times: list[list[float]] = [[] for _ in variants]
            for _ in range(R):
                for i, fn in enumerate(runs):
                    times[i].append(fn())
            for (name, *_), t in zip(variants, times):
                row(f"codebelt call Bash {label}, checkpoints {name}", statistics.median(t) * 1000)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", choices=["all", "cli"], default="all",
                    help="cli: only the command line's rows (the workspace not a git repository)")
    args = ap.parse_args()
    R = args.repeat
    tmp = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    rows: list[tuple[str, float, str]] = []

    def row(name: str, ms: float, note: str = "") -> None:
        rows.append((name, ms, note))
        print(f"{name:<58} {ms:>10.1f} ms  {note}", flush=True)

    try:
        ws = tmp / "ws"
        ws.mkdir()
        t = time.perf_counter()
        make_tree(ws, args.files)
        all_files = files(ws)
        print(f"workspace: {len(all_files)} files in {time.perf_counter() - t:.1f} s", flush=True)
        rnd = random.Random(2)
        if args.only == "cli":
            cli_rows(ws, tmp, str(all_files[0].relative_to(ws)), R, row)
            return 0

        # -- baseline ---------------------------------------------------------------------
        store = tmp / "store"
        book = Checkpoints(store, [ws], "bench")
        row("baseline, first in this workspace (every file kept)", timed(book.start_tracking) * 1000,
            book.tracker.reason if book.tracker else "")
        book.close()
        book = Checkpoints(store, [ws], "bench")
        row("baseline, a later session (manifest: stat only)", timed(book.start_tracking) * 1000)

        # -- file tool --------------------------------------------------------------------
        def file_tool() -> float:
            p = rnd.choice(all_files)
            t0 = time.perf_counter()
            rec = book.begin_files("Edit", str(p), [str(p)])
            t1 = time.perf_counter()
            touch_files([p], "e")
            t2 = time.perf_counter()
            rec.finish()
            return (t1 - t0) + (time.perf_counter() - t2)

        row("file tool checkpoint (one file, ~2 KB)", median_ms(file_tool, R * 3))

        # -- Bash, journal ----------------------------------------------------------------
        def command(n_changed: int, b: Checkpoints) -> Callable[[], float]:
            def run() -> float:
                chosen = rnd.sample(all_files, n_changed)
                t0 = time.perf_counter()
                rec = b.begin_command("Bash", "bench")
                t1 = time.perf_counter()
                touch_files(chosen, "b")
                t2 = time.perf_counter()
                rec.finish()
                return (t1 - t0) + (time.perf_counter() - t2)
            return run

        row("Bash checkpoint, journal, nothing changed", median_ms(command(0, book), R))
        row("Bash checkpoint, journal, 10 files changed", median_ms(command(10, book), R))

        # -- rewind, reset ----------------------------------------------------------------
        chosen = rnd.sample(all_files, 1000)
        rec = book.begin_command("Bash", "1000 files")
        touch_files(chosen, "r")
        cid = rec.finish()
        assert cid is not None
        rewind_ms = timed(lambda: book.rewind(cid)) * 1000
        row("rewind of a command that changed 1,000 files", rewind_ms)

        def floor() -> None:  # what any atomic restore pays: a temp file and a rename per file
            for p in chosen:
                tmp_file = p.with_name(p.name + ".tmp")
                tmp_file.write_bytes(b"floor")
                os.replace(tmp_file, p)

        row("… floor: write a temp file and rename it, for the same 1,000", timed(floor) * 1000)
        rec = book.begin_command("Bash", "floor")
        rec.finish()  # the floor's writes are not a rewind's business
        session_book = Checkpoints(store, [ws], "reset-bench")
        session_book.tracker = book.tracker  # the same tracked state, a fresh session
        for i in range(5):
            r = session_book.begin_command("Bash", f"step {i}")
            touch_files(rnd.sample(all_files, 10), "s")
            r.finish()
        first = session_book.list(session="reset-bench")[0].id
        row("reset() after 50 changed files (5 commands)",
            timed(lambda: session_book.rewind(first, session="reset-bench")) * 1000)
        book.close()

        # -- Bash, scan fallback ----------------------------------------------------------
        scan = Checkpoints(store, [ws], "scan", use_journal=False)
        scan.start_tracking()
        row("Bash checkpoint, scan fallback, nothing changed", median_ms(command(0, scan), max(3, R // 2)))
        row("Bash checkpoint, scan fallback, 10 files changed", median_ms(command(10, scan), max(3, R // 2)))
        scan.close()

        # -- git baselines ----------------------------------------------------------------
        shadow = tmp / "shadow.git"
        git("init", "-q", cwd=ws, git_dir=shadow)
        row("git shadow: first add -A && commit", timed(lambda: (git("add", "-A", cwd=ws, git_dir=shadow),
                                                              git("commit", "-qm", "b", cwd=ws, git_dir=shadow))) * 1000)

        def shadow_commit(n_changed: int) -> Callable[[], float]:
            def run() -> float:
                touch_files(rnd.sample(all_files, n_changed), "g")
                return timed(lambda: (git("add", "-A", cwd=ws, git_dir=shadow),
                                      git("commit", "-qm", "c", "--allow-empty", cwd=ws, git_dir=shadow)))
            return run

        row("git shadow: add -A && commit, nothing changed", median_ms(shadow_commit(0), max(3, R // 2)))
        row("git shadow: add -A && commit, 10 files changed", median_ms(shadow_commit(10), max(3, R // 2)))
        git("init", "-q", cwd=ws)
        git("add", "-A", cwd=ws)
        git("commit", "-qm", "base", cwd=ws)

        def stash(n_changed: int) -> Callable[[], float]:
            def run() -> float:
                touch_files(rnd.sample(all_files, n_changed), "s")
                took = timed(lambda: git("stash", "-q", cwd=ws))
                if n_changed:
                    git("stash", "pop", "-q", cwd=ws)
                    git("commit", "-qam", "c", cwd=ws)
                return took
            return run

        row("git stash, nothing changed", median_ms(stash(0), max(3, R // 2)))
        row("git stash, 10 files changed", median_ms(stash(10), max(3, R // 2)))

        # -- through a Session: a Bash call with checkpoints off and on -------------------
        from codebelt import Session

        picks = [str(p.relative_to(ws)) for p in rnd.sample(all_files, 10)]
        ten = " && ".join(f"echo x >> {p}" for p in picks)
        for enabled in (False, True):
            with Session(ws, load_user_settings=False, audit=False, mode="bypassPermissions",
                         settings={"checkpoints": {"enabled": enabled, "directory": str(store)},
                                   "lsp": {"autoDetect": False}}) as s:
                s.call("Bash", {"command": "true"})  # the sandbox's probe, and the baseline
                on = "on" if enabled else "off"
                row(f"Session Bash `true`, checkpoints {on}",
                    median_ms(lambda: timed(lambda: s.call("Bash", {"command": "true"})), R))
                row(f"Session Bash appending to 10 files, checkpoints {on}",
                    median_ms(lambda: timed(lambda: s.call("Bash", {"command": ten})), R))

        # -- a session's first writing command: the baseline begun at the session's start ----
        # A fresh store (the first session ever in this workspace) against checkpoints off: the
        # command waits for the watches only; what it changes before the background fill
        # reached it is said "not kept".
        target = picks[0]
        for enabled in (False, True):
            fresh = tmp / f"store-first-{enabled}"
            t0 = time.perf_counter()
            with Session(ws, load_user_settings=False, audit=False, mode="bypassPermissions",
                         settings={"checkpoints": {"enabled": enabled, "directory": str(fresh)},
                                   "lsp": {"autoDetect": False}}) as s:
                first = timed(lambda: s.call("Bash", {"command": f"echo x >> {target}"}))
                on = "on" if enabled else "off"
                note = ""
                if enabled:
                    cps = s.checkpoints()
                    note = f"(not kept: {len(cps[-1]['notKept']) if cps else 0} of 1 changed file)"
                    book_s = s._checkpoints()
                    book_s.tracker.filled.wait(600)
                    note += f"; the whole baseline filled {time.perf_counter() - t0:.1f} s after the session began"
                row(f"Session's first writing Bash (fresh store), checkpoints {on}", first * 1000, note)

        cli_rows(ws, tmp, target, R, row)

        # -- overlay ----------------------------------------------------------------------
        unshare = shutil.which("unshare")
        if unshare:
            up, work = tmp / "up", tmp / "work"

            def overlay() -> float:
                up.mkdir()
                work.mkdir()
                script = (f"mount -t overlay overlay -o lowerdir={ws},upperdir={up},workdir={work},userxattr {ws} "
                          "&& umount " + str(ws))
                took = timed(lambda: subprocess.run([unshare, "-Urm", "sh", "-c", script], check=True))
                shutil.rmtree(up)
                shutil.rmtree(work)
                return took

            def plain() -> float:
                return timed(lambda: subprocess.run([unshare, "-Urm", "true"], check=True))

            try:
                ov = median_ms(overlay, R)
                pl = median_ms(plain, R)
                row("overlay: mount + umount in a user namespace", ov - pl, f"(unshare alone: {pl:.1f} ms)")
            except (subprocess.CalledProcessError, OSError) as e:
                print(f"overlay: not measured ({e})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
