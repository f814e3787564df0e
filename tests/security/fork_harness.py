"""Run a real Session's process-starting calls with every child in the worst state a fork of a
multi-threaded process can leave it in: each module looks half-imported by a thread that no
longer exists (its module lock held, its spec initializing).

A child started with a `preexec_fn` runs Python between fork and exec, with copies of the
parent's locks in whatever state the parent's other threads had them: a background thread
importing a module (the LSP warm start, the checkpoints' baseline, the index) holds that
module's lock, and in the child no thread will ever release it. An `import` executed by the
child for that module then waits forever. The hook below puts every module in that state just
before the child's preexec runs, so a preexec that imports anything — whichever module a real
thread happened to be importing — hangs here deterministically instead of once in a while.

Usage: python fork_harness.py ROOT SANDBOX_MODE PDF; prints one line per step, `done` at the end.
"""

from __future__ import annotations

import os
import sys
import threading


def _poison_imports_in_child() -> None:
    from importlib import _bootstrap

    held = []
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if spec is None:
            continue
        lock = _bootstrap._ModuleLock(name)
        lock.owner = -1  # a thread of the parent that does not exist here
        lock.count = 1
        lock.wakeup.acquire()  # whoever waits for its release waits forever
        held.append(lock)
        _bootstrap._module_locks[name] = lambda lock=lock: lock  # what _get_module_lock looks up
        try:
            spec._initializing = True
        except Exception:  # noqa: BLE001 - a spec that refuses attributes is not imported by import
            pass
    _poison_imports_in_child.held = held  # type: ignore[attr-defined]


def main() -> None:
    root, mode, pdf = sys.argv[1], sys.argv[2], sys.argv[3]
    from codebelt import Session

    settings = {"lsp": {"autoDetect": False}, "intel": {"startWithSession": False},
                "sandbox": {"mode": mode} if mode != "off" else {"mode": "off"}}
    with Session(root=root, mode="bypassPermissions", settings=settings, load_user_settings=False,
                 audit=os.path.join(root, "..", "audit.db")) as s:
        # everything the calls below import is imported now: the parent is not under test here
        steps = [
            ("Bash read-only", "Bash", {"command": "ls"}),
            ("Bash writing", "Bash", {"command": "echo hi > out.txt && cat out.txt"}),
            ("Grep", "Grep", {"pattern": "hi", "output_mode": "files_with_matches"}),
            ("Glob", "Glob", {"pattern": "*.txt"}),
            ("Read pdf", "Read", {"file_path": pdf}),
            ("Bash background", "Bash", {"command": "echo bg", "run_in_background": True}),
        ]
        for label, tool, args in steps:  # once unpoisoned: imports on the parent's side done
            s.call(tool, args)
        helper = _helper(s, root)
        helper()
        os.register_at_fork(after_in_child=_poison_imports_in_child)
        print("start helper", flush=True)
        print("ok helper", helper(), flush=True)
        for label, tool, args in steps:
            print("start", label, flush=True)
            r = s.call(tool, args)
            if tool == "Bash" and args.get("run_in_background"):
                task = (r.data or {}).get("backgroundTaskId") or (r.data or {}).get("task_id")
                if task:
                    s.call("TaskOutput", {"task_id": task, "block": True, "timeout": 20000})
            print("ok", label, r.is_error, r.text[:200].replace("\n", " | "), flush=True)
    print("done", flush=True)


def _helper(s, root: str):
    """A language server's spawn: a long-lived helper in the jail (a subreaper under Landlock)."""
    import subprocess

    from codebelt.sandbox.helpers import HelperProfile

    wrap = s.sandbox().helper(HelperProfile("probe", long_lived=True))

    def run() -> str:
        if wrap is None:
            return "no jail"
        argv, env, preexec, *rest = wrap(["/bin/true"], root, dict(os.environ))
        try:
            return str(subprocess.run(argv, env=env, preexec_fn=preexec, cwd=root, timeout=60).returncode)
        finally:
            if rest and callable(rest[0]):
                rest[0]()

    return run


if __name__ == "__main__":
    threading.current_thread().name = "harness"
    main()
