"""The engine without a session: spool readers, the runner's seams, concurrency safety."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from codebelt.shell.execution import spool
from codebelt.shell.execution.runner import MAX_ARGV_SCRIPT, ShellProcess, build_env, wrap_script
from codebelt.tools.bash import Bash, BashInput


def _run(tmp_path: Path, command: str, **kw) -> ShellProcess:
    env = build_env("inherit", [], tmp_path, "engine-test.1")
    p = ShellProcess(command, cwd=tmp_path, env=env, spool_path=tmp_path / "out.log",
                     record_cwd=True, marker="engine-test.1", grace_s=0.3, **kw).start()
    assert p.wait(20)
    assert p.cleaned.wait(20)
    return p


def test_incremental_reader_keeps_split_utf8_characters(tmp_path):
    path = tmp_path / "s.log"
    data = "héllo → wörld\n".encode()
    reader = spool.IncrementalReader(path)
    texts = []
    with open(path, "wb") as f:
        for i in range(len(data)):  # one byte at a time: every split point
            f.write(data[i : i + 1])
            f.flush()
            texts.append(reader.read(i + 1, finished=False, max_bytes=1000)[0])
    assert "".join(texts) == data.decode()


def test_incremental_reader_bounds_a_huge_read(tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(b"x" * 500_000 + b"\nEND\n")
    reader = spool.IncrementalReader(path)
    text, consumed, truncated = reader.read(path.stat().st_size, True, 10_000)
    assert truncated and consumed == 500_005 and len(text) < 11_000
    assert text.endswith("END\n") and "bytes of output skipped" in text and str(path) in text


@pytest.mark.parametrize("content, max_chars, inline", [
    (b"", 100, True),
    (b"a\nb\n", 100, True),
    ("é".encode() * 100, 100, True),  # 200 bytes but 100 characters
    (b"x" * 101, 100, False),
    (b"line\n" * 1000, 100, False),
])
def test_render_inline_or_summary(tmp_path, content, max_chars, inline):
    path = tmp_path / "r.log"
    path.write_bytes(content)
    r = spool.render(path, max_chars)
    assert r.truncated is (not inline)
    if inline:
        assert r.text == content.decode().rstrip("\n")
    else:
        assert "Tool result too large" in r.text and str(path) in r.text
        assert r.total_lines == content.count(b"\n") + (0 if content.endswith(b"\n") else 1)


def test_spool_tail_counts_incrementally(tmp_path):
    path = tmp_path / "t.log"
    tail = spool.SpoolTail(path, keep_lines=2)
    path.write_bytes(b"a\nb\nc")
    p = tail.update()
    assert (p.total_lines, p.total_bytes, p.last_lines) == (3, 5, ["b", "c"])
    with open(path, "ab") as f:
        f.write(b"d\ne\n")
    p = tail.update()
    assert (p.total_lines, p.total_bytes, p.last_lines) == (4, 9, ["cd", "e"])


def test_wrap_seam_rewrites_argv_env_and_runs_preexec(tmp_path):
    seen = {}

    def wrap(argv, cwd, env):
        seen["argv"], seen["cwd"] = list(argv), cwd
        marker = tmp_path / "preexec-ran"
        return (["/usr/bin/env", "WRAPPED=yes", *argv], {**env, "FROM_WRAP": "1"},
                lambda: marker.write_text("x"))

    p = _run(tmp_path, 'echo "$WRAPPED $FROM_WRAP"', wrap=wrap)
    assert (tmp_path / "out.log").read_text() == "yes 1\n"
    assert seen["argv"][1] == "-c" and seen["cwd"] == tmp_path
    assert (tmp_path / "preexec-ran").exists()
    assert p.outcome.exit_code == 0


def test_long_script_goes_through_a_file_and_keeps_exit_code_and_cwd(tmp_path):
    (tmp_path / "d").mkdir()
    command = f": '{'y' * (MAX_ARGV_SCRIPT + 10)}'\ncd d\nexit 7"
    p = _run(tmp_path, command)
    assert p.outcome.exit_code == 7
    assert p.outcome.final_cwd == str(tmp_path.resolve() / "d")
    assert not list(tmp_path.glob("*.sh"))  # the script file is removed


def test_trap_prefix_keeps_line_numbers():
    script = wrap_script("echo one\nbad_cmd_xyz", 201)
    assert script.count("\n") == 1  # the trap shares the first line


def test_line_numbers_in_errors(tmp_path):
    _run(tmp_path, "true\nno_such_command_qq")
    assert "line 2: no_such_command_qq" in (tmp_path / "out.log").read_text()


def test_clean_env_drops_and_marks(monkeypatch, tmp_path):
    base = {"PATH": "/bin", "SECRET": "s", "LC_ALL": "C", "CODEBELT_SHELL_ID": "forged", "KEEP_ME": "1"}
    env = build_env("clean", ["KEEP_*"], tmp_path, "m.1", base=base)
    assert env == {"PATH": "/bin", "LC_ALL": "C", "KEEP_ME": "1", "TMPDIR": str(tmp_path),
                   "CODEBELT_SHELL_ID": "m.1"}


@pytest.mark.parametrize("command, background, safe", [
    ("ls -la", False, True),
    ("git status && cat README.md", False, True),
    ("rm -rf build", False, False),
    ("echo hi > out.txt", False, False),
    ("ls", True, False),  # background tasks always run on their own
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n+a\n*** End Patch\nEOF", False, False),
    ("$(echo rm) x", False, False),
])
def test_concurrency_safe_only_when_read_only(command, background, safe):
    assert Bash().is_concurrency_safe(BashInput(command=command, run_in_background=background)) is safe


def test_filter_regex_is_checked():
    from codebelt.tool import ToolError
    from codebelt.tools.bash_output import compile_filter

    assert compile_filter("err|warn").search("a warn") is not None
    with pytest.raises(ToolError, match="Invalid filter regex"):
        compile_filter("[")
    assert compile_filter(None) is None and compile_filter("x").search("axb") is not None


def test_a_child_tied_to_its_parent_outlives_the_thread_that_asked_for_it(tmp_path):
    """bwrap --die-with-parent (PR_SET_PDEATHSIG) kills the child when the *thread* that forked
    it ends: a background command started by an executor worker must not die with the worker."""
    import ctypes
    import signal
    import threading

    from codebelt.shell.execution.tasks import TaskManager

    libc = ctypes.CDLL(None, use_errno=True)

    def wrap(argv, cwd, env):
        return argv, env, lambda: libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    manager = TaskManager(tmp_path / "spool", "pdeath-test.", build_env("inherit", [], tmp_path, ""),
                          wrapper=lambda: wrap)
    try:
        started: list[ShellProcess] = []
        worker = threading.Thread(target=lambda: started.append(manager.spawn("sleep 0.5; echo done", tmp_path, 20)))
        worker.start()
        worker.join()
        [proc] = started
        assert proc.wait(20)
        assert proc.outcome.exit_code == 0 and proc.spool_path.read_text() == "done\n"
    finally:
        manager.close()


@pytest.mark.parametrize("command,expected", [
    ("false | true", (1, 0)),
    ("true | (exit 3) | cat", (0, 3, 0)),
    ("true; false | true", (1, 0)),
    ("false | true; echo after", (0,)),  # the last pipeline is a single command
])
def test_pipeline_statuses_are_recorded_without_changing_the_command(tmp_path, command, expected):
    proc = ShellProcess(command=command, cwd=tmp_path, env=dict(os.environ), spool_path=tmp_path / "out.log",
                        record_status=True).start()
    assert proc.wait(30)
    assert proc.outcome.pipe_status == expected
    plain = ShellProcess(command=command, cwd=tmp_path, env=dict(os.environ), spool_path=tmp_path / "plain.log").start()
    assert plain.wait(30)
    assert proc.outcome.exit_code == plain.outcome.exit_code
    assert (tmp_path / "out.log").read_bytes() == (tmp_path / "plain.log").read_bytes()
