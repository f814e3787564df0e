"""Interactive programs driven through the tools: Bash run_in_background puts a command on a
pseudo-terminal, TaskInput types into it, TaskOutput reads it. Real programs throughout:
python3 -i, git rebase -i in vi, a password prompt, less, a dev server queried with curl, a
full-screen program. The `shell` fixture fails a test that leaves any process behind."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time

import pytest

from tests.sandbox.conftest import backend_unusable


def start(s, command: str) -> str:
    r = s.call("Bash", {"command": command, "run_in_background": True})
    assert not r.is_error, r.text
    return r.data["backgroundTaskId"]


def send(s, tid: str, text: str = "", wait_ms: int = 10_000):
    r = s.call("TaskInput", {"task_id": tid, "input": text, "wait_ms": wait_ms})
    assert not r.is_error, r.text
    return r


def until(s, tid: str, needle: str, within: float = 15.0, seen: str = "") -> str:
    """Everything the task printed until `needle` shows up (reading as it comes; `seen`: what
    was already read)."""
    deadline = time.monotonic() + within
    while needle not in seen:
        assert time.monotonic() < deadline, f"{needle!r} never came; got {seen!r}"
        seen += send(s, tid, "", 500).data["stdout"]
    return seen


def test_python_repl_define_call_interrupt_and_eof(shell):
    s = shell.session()
    tid = start(s, "python3 -i -q")
    assert ">>> " in until(s, tid, ">>> ")
    r = send(s, tid, "def double(x):\n    return 2 * x\n\n")
    assert r.data["waitingForInput"] and r.data["stdout"].endswith(">>> ")
    r = send(s, tid, "double(21)\n")
    assert "42\n>>> " in r.data["stdout"], r.text
    assert "is waiting for input" in r.text
    r = send(s, tid, "print('looping'); exec('while True: pass')\n", 300)
    until(s, tid, "looping", seen=r.data["stdout"])
    r = send(s, tid, "", 300)  # busy: not waiting for input, so the wait runs out
    assert r.data["status"] == "running" and not r.data["waitingForInput"]
    r = send(s, tid, "\u0003")  # Ctrl-C through the terminal: SIGINT to the foreground job
    assert "KeyboardInterrupt" in until(s, tid, ">>> ", seen=r.data["stdout"])
    assert "42" in send(s, tid, "double(21)\n").data["stdout"]  # the interpreter survived
    r = send(s, tid, "\u0004")  # Ctrl-D: end of input, the REPL exits
    assert r.data["status"] == "completed" and r.data["exitCode"] == 0, r.text


def test_a_program_its_shell_waits_for_is_seen_waiting_for_input(shell):
    # Not the command line's last command: bash forks it and waits, so the terminal's foreground
    # group is led by bash, asleep in wait4 throughout; the program that reads is its child,
    # whose going back to sleep is what says the answer is complete.
    s = shell.session()
    tid = start(s, "python3 -i -q; echo after")
    until(s, tid, ">>> ")
    for i in range(3):
        r = send(s, tid, f"{i} + 40\n")
        assert r.data["waitingForInput"] and r.data["stdout"].endswith(f"{i + 40}\n>>> "), r.text
    r = send(s, tid, "\u0004")
    assert r.data["status"] == "completed" and "after" in r.data["stdout"], r.text


# A command that answers only after a process below the shell that reads the input (its child,
# a pipeline's member, a subshell's or another shell's child, one exec'd by a wrapper, one
# writing to the disk) computed for a second without printing: after the echo of the input,
# half a second of quiet output is not the end of the answer. The answer is printed by another
# process once the computing one has exited — work passing from a child to its parent, the
# moment a walk of the processes can read the parent asleep and then the child gone — so each
# task answers several rounds. {c}: the computing program, given the round's input.
COMPUTE = """
import sys, time
t = time.monotonic()
while time.monotonic() - t < 1.0:
    pass
print("answer", *sys.argv[1:])
"""
ON_DISK = """
import os, sys, time
t = time.monotonic()
with open(sys.argv[1], "wb") as f:
    while time.monotonic() - t < 1.0:
        f.write(os.urandom(1 << 16))
        os.fsync(f.fileno())
print("answer", *sys.argv[2:])
"""
WRAPPER = """#!/bin/sh
# like a pyenv shim: works out what to run with a command substitution, then execs it
here=$(dirname "$0")
exec "$PYTHON" "$here/compute.py" "$@"
"""
COMPUTING_CHILDREN = {  # the answer is printed by another process once the computing one has exited
    "command substitution": ('x=$({c} "$a"); echo "got $x"', "got answer {a}"),
    "pipeline": ('{c} "$a" | tac', "answer {a}"),
    "subshell": ('({c} "$a" > {out}; cat {out})', "answer {a}"),
    "grandchild": ("sh -c '{c} \"$1\" > {out}; cat {out}' sh \"$a\"", "answer {a}"),
    "exec through a wrapper": ('x=$({wrapper} "$a"); echo "got $x"', "got answer {a}"),
    "disk I/O": ('x=$({disk} "$a"); echo "got $x"', "got answer {a}"),
    # one short command after another (a build script): each one's exit hands the work back
    "a loop of short commands": ('for i in $(seq 1000); do {true}; done; echo "looped $a"', "looped {a}"),
    # nothing printed but the echo: the shell then reads its next line, which is what ends the wait
    "silent, then reads": ('{c} "$a" > /dev/null', ""),
}


@pytest.mark.parametrize("case", COMPUTING_CHILDREN)
def test_a_command_computing_below_the_shell_is_not_quiet(shell, tmp_path, case):
    body, expected = COMPUTING_CHILDREN[case]
    (tmp_path / "compute.py").write_text(COMPUTE)
    (tmp_path / "disk.py").write_text(ON_DISK)
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    py = shlex.quote(sys.executable)  # by its path: no shim in between, the child is the interpreter
    body = body.format(c=f"{py} {shlex.quote(str(tmp_path / 'compute.py'))}",
                       disk=f"{py} {shlex.quote(str(tmp_path / 'disk.py'))} {shlex.quote(str(tmp_path / 'written'))}",
                       wrapper=f"PYTHON={py} {shlex.quote(str(wrapper))}",
                       out=shlex.quote(str(tmp_path / "out")), true=shlex.quote(shutil.which("true")))
    s = shell.session()
    tid = start(s, f"while read -r a; do {body}; done")
    for i in range(3):
        r = send(s, tid, f"r{i}\n", 30_000)
        assert r.data["waitingForInput"] and expected.format(a=f"r{i}") in r.data["stdout"], (case, i, r.text)
    s.call("TaskStop", {"task_id": tid})


def test_a_program_that_sleeps_is_quiet(shell):
    # asleep is not computing: the wait ends on the quiet, long before the sleep does
    s = shell.session()
    tid = start(s, "read -r a; echo \"napping $a\"; sleep 60; echo woke")
    r = send(s, tid, "r0\n", 30_000)
    assert "napping r0" in r.data["stdout"] and "woke" not in r.data["stdout"], r.text
    assert r.data["status"] == "running" and not r.data["waitingForInput"]
    assert "still running after waiting" not in r.text, r.text  # quiet, not the wait's end
    s.call("TaskStop", {"task_id": tid})


def test_a_background_job_computing_while_the_foreground_reads_input(shell):
    # The foreground program asking for input ends its turn, whatever a background job of the
    # shell does meanwhile (it may run for ever: a server, a watcher); what the job prints
    # shows in a later read. While the foreground sleeps instead, the job's computing keeps
    # the wait from ending on quiet: output may still come from it.
    py = shlex.quote(sys.executable)
    s = shell.session()
    tid = start(s, f"read -r a; {py} -c 'while True: pass' & echo \"background started\"; read -r b; "
                   f"echo \"foreground sleeps\"; sleep 60")
    r = send(s, tid, "go\n", 30_000)
    assert r.data["waitingForInput"] and "background started" in r.data["stdout"], r.text
    r = send(s, tid, "\n", 3_000)
    assert "foreground sleeps" in r.data["stdout"] and not r.data["waitingForInput"], r.text
    assert "still running after waiting 3s" in r.text, r.text  # computing below: not quiet
    s.call("TaskStop", {"task_id": tid})


ANSWER_IN_PIECES = r"""
import os
os.write(1, b"> ")
while True:
    line = os.read(0, 100)
    if not line:
        break
    for c in b"answer " + line.strip() + b"\n> ":
        os.write(1, bytes([c]))
"""


def test_a_wait_for_input_ends_only_after_the_whole_answer_came_through(shell, tmp_path):
    # A program's writes reach our side of the terminal asynchronously (a kernel worker pushes
    # them, late under load): seeing the program asleep in its read again is not enough, the
    # answer it wrote before must all be there. Many small writes per answer, many rounds.
    script = tmp_path / "pieces.py"
    script.write_text(ANSWER_IN_PIECES)
    s = shell.session()
    tid = start(s, f"python3 {script}")
    # its first prompt: started (`python3` may be a pyenv shim, which takes over 0.5 s under
    # load, silent and at times asleep: a wait may end on that quiet; the answers are the subject)
    until(s, tid, "> ")
    for i in range(300):
        r = send(s, tid, f"{i}\n")
        assert r.data["waitingForInput"] and r.data["stdout"].endswith(f"answer {i}\n> "), (i, r.text)


def test_a_password_prompt_reads_with_echo_off(shell):
    s = shell.session()
    tid = start(s, "read -r -s -p 'Password: ' pw; echo; echo \"got ${#pw} characters\"; "
                   "python3 -c 'import getpass; print(\"second:\", len(getpass.getpass(\"Again: \")))'")
    assert until(s, tid, "Password: ")
    r = send(s, tid, "hunter22\n")
    assert "hunter22" not in r.data["stdout"]  # not echoed: the terminal's echo is off
    text = until(s, tid, "Again: ", seen=r.data["stdout"])
    assert "got 8 characters" in text
    r = send(s, tid, "secret!\n")  # getpass opens /dev/tty: the controlling terminal is ours
    assert "second: 7" in r.data["stdout"] and "secret!" not in r.data["stdout"]


def test_less_on_a_long_file_shows_its_screen(shell):
    if not shutil.which("less"):
        pytest.skip("less is not installed")
    (shell.ws / "long.txt").write_text("".join(f"line {i:04d}\n" for i in range(1, 2001)))
    s = shell.session()
    tid = start(s, "less long.txt")
    r = send(s, tid, "")
    while "line 0001" not in r.data["stdout"]:
        r = send(s, tid, "", 1000)
    assert r.data["screen"] and "<screen>" in r.text and "\x1b" not in r.text
    first = r.data["stdout"].splitlines()
    assert first[0] == "line 0001" and "line 0023" in r.data["stdout"] and "line 0030" not in r.data["stdout"]
    r = send(s, tid, " ")  # next page
    assert r.data["screen"] and "line 0024" in r.data["stdout"] and "line 0001" not in r.data["stdout"]
    r = send(s, tid, "/line 1500\n")  # search
    assert "line 1500" in r.data["stdout"]
    r = send(s, tid, "G")
    assert "line 2000" in r.data["stdout"]
    r = send(s, tid, "q")
    assert r.data["status"] == "completed", r.text


def test_a_full_screen_program_is_rendered_as_its_screen(shell):
    # Draws with absolute cursor addressing on the alternate screen, then overwrites a cell.
    script = ("import sys, time\n"
              "w = sys.stdout.write\n"
              "w('\\x1b[?1049h\\x1b[2J\\x1b[H')\n"
              "w('\\x1b[1;31m+--------+\\x1b[0m\\x1b[2;1H| status |\\x1b[3;1H+--------+')\n"
              "w('\\x1b[5;10Hcount: 1\\x1b[5;17H7')\n"
              "sys.stdout.flush(); input(); w('\\x1b[?1049l'); print('bye')\n")
    (shell.ws / "tui.py").write_text(script)
    s = shell.session()
    tid = start(s, "python3 tui.py")
    r = send(s, tid, "")
    while "count" not in r.data["stdout"]:
        r = send(s, tid, "", 1000)
    assert r.data["screen"]
    assert r.data["stdout"].splitlines()[:5] == ["+--------+", "| status |", "+--------+", "", "         count: 7"]
    assert "\x1b" not in r.text
    r = send(s, tid, "\n")
    assert r.data["status"] == "completed" and "bye" in r.data["stdout"] and not r.data["screen"]


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(shell):
    if not shutil.which("git") or not shutil.which("vi"):
        pytest.skip("git and vi are needed")
    r = shell.ws
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    for i in (1, 2, 3):
        (r / f"f{i}.txt").write_text(f"{i}\n")
        git(r, "add", ".")
        git(r, "commit", "-qm", f"commit {i}")
    return r


def test_git_rebase_interactive_in_a_real_editor(shell, repo):
    s = shell.session()
    tid = start(s, "EDITOR=vi git rebase -i HEAD~2")
    r = send(s, tid, "")
    while "pick" not in r.data["stdout"]:
        r = send(s, tid, "", 1000)
    assert r.data["screen"] and "commit 2" in r.data["stdout"] and "commit 3" in r.data["stdout"]
    # squash the last commit into the one before: line 2, word 1 → "squash"; save and quit
    r = send(s, tid, "2Gcwsquash\u001b:wq\n")
    while "This is a combination of 2 commits" not in r.data["stdout"]:
        r = send(s, tid, "", 1000)  # the commit message editor opens next
    assert r.data["screen"] and r.data["waitingForInput"]
    send(s, tid, ":wq\n")
    for _ in range(20):
        if s.tasks()[0]["status"] != "running":
            break
        send(s, tid, "", 500)
    assert s.tasks()[0]["status"] == "completed", s.tasks()
    log = git(repo, "log", "--format=%s")
    assert log.splitlines()[0] == "commit 2" and len(log.splitlines()) == 2


def test_git_rebase_interactive_in_plain_bash_does_not_wait_for_an_editor(shell, repo):
    s = shell.session()
    began = time.monotonic()
    r = s.call("Bash", {"command": "git rebase -i HEAD~2 && git commit --allow-empty 2>&1; echo status $?",
                        "timeout": 20_000})
    assert time.monotonic() - began < 15 and not r.is_error, r.text
    assert "empty commit message" in r.text or "Aborting commit" in r.text, r.text
    assert len(git(repo, "log", "--format=%s").splitlines()) == 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dev_server_started_in_one_call_answers_curl_in_another(shell):
    if not shutil.which("curl"):
        pytest.skip("curl is not installed")
    (shell.ws / "index.html").write_text("hello from the dev server\n")
    port = free_port()
    s = shell.session()
    tid = start(s, f"python3 -m http.server {port} --bind 127.0.0.1")
    until(s, tid, "Serving HTTP")
    r = s.call("Bash", {"command": f"curl -s http://127.0.0.1:{port}/index.html"})
    assert r.text.strip() == "hello from the dev server", r.text
    assert "GET /index.html" in send(s, tid, "", 2000).data["stdout"]  # the server's log line
    assert s.call("TaskStop", {"task_id": tid}).data["wasRunning"]


def test_a_session_left_idle_past_its_timeout_is_stopped(shell):
    s = shell.session(bash={"interactiveIdleTimeoutMs": 400})
    tid = start(s, "python3 -i -q")
    until(s, tid, ">>> ")
    deadline = time.monotonic() + 10
    while s.tasks()[0]["status"] == "running":
        assert time.monotonic() < deadline, "the idle session was not stopped"
        time.sleep(0.1)
    task = s.tasks()[0]
    assert task["status"] == "killed" and "idle timeout" in task["status_text"]
    r = s.call("TaskInput", {"task_id": tid, "input": "1\n"})
    assert r.is_error and "not running" in r.text


def test_reading_and_writing_keep_a_session_alive(shell):
    s = shell.session(bash={"interactiveIdleTimeoutMs": 1500})
    tid = start(s, "python3 -i -q")
    until(s, tid, ">>> ")
    for i in range(6):  # 3 s in all, each call well inside the idle timeout
        time.sleep(0.5)
        until(s, tid, f"{i * 1111 * 3}\n>>> ", seen=send(s, tid, f"{i * 1111} * 3\n").data["stdout"])
    assert s.tasks()[0]["status"] == "running"


def test_input_to_unknown_finished_and_foreground_tasks_is_refused(shell):
    s = shell.session(bash={"autoBackground": True, "autoBackgroundMs": 300})
    r = s.call("TaskInput", {"task_id": "bash_9", "input": "x"})
    assert r.is_error and "No background shell with id 'bash_9'" in r.text
    done = start(s, "true")
    s.call("TaskOutput", {"task_id": done})
    r = s.call("TaskInput", {"task_id": done, "input": "x"})
    assert r.is_error and "not running" in r.text
    moved = s.call("Bash", {"command": "sleep 20"}).data["backgroundTaskId"]
    r = s.call("TaskInput", {"task_id": moved, "input": "x"})
    assert r.is_error and "takes no input" in r.text
    s.call("TaskStop", {"task_id": moved})


def test_every_write_is_audited(shell, audit_db):
    import sqlite3

    s = shell.session()
    tid = start(s, "cat")
    send(s, tid, "typed line\n")
    s.call("TaskStop", {"task_id": tid})
    s.close()
    rows = sqlite3.connect(audit_db).execute("SELECT tool, input FROM calls WHERE tool = 'TaskInput'").fetchall()
    assert rows and "typed line" in rows[0][1]


def test_a_read_is_bounded_however_much_the_program_printed(shell):
    s = shell.session()
    tid = start(s, "python3 -i -q")
    until(s, tid, ">>> ")
    r = send(s, tid, "print('x' * 300_000)\n")
    assert len(r.text) < 40_000 and r.data["truncated"], len(r.text)
    assert "output skipped" in r.data["stdout"] and r.data["outputPath"] in r.data["stdout"]
    s.call("TaskStop", {"task_id": tid})


def test_live_sessions_are_capped(shell):
    s = shell.session(bash={"maxInteractive": 2})
    a, b = start(s, "cat"), start(s, "cat")
    r = s.call("Bash", {"command": "cat", "run_in_background": True})
    assert r.is_error and "2 processes that take input" in r.text
    s.call("TaskStop", {"task_id": a})
    start(s, "cat")  # a slot is free again
    s.call("TaskStop", {"task_id": b})


def test_the_output_file_reads_as_a_pipes_output(shell):
    """The model is told to Read a background task's output file, as in Claude Code, whose
    commands write to a pipe: on a terminal, colours, `\r\n` and cursor moves stay out of it."""
    s = shell.session()
    (shell.ws / "a.txt").write_text("hi there\n")
    tid = start(s, "printf '\\033[1;31mred\\033[0m\\n'; grep --color=always hi a.txt; printf 'tab\\tx\\n'; "
                   "printf '1%%\\r100%%\\n'; python3 -c 'import sys; print(sys.stdout.isatty())'")
    done = s.call("TaskOutput", {"task_id": tid, "block": True, "timeout": 30_000})
    assert "True" in done.data["stdout"], done.text  # it did run on a terminal
    path = done.data["outputPath"]
    with open(path, "rb") as f:
        data = f.read()
    assert data.startswith(b"red\nhi there\ntab\tx\n1%\r100%\nTrue\n"), data
    assert b"\x1b" not in data and b"\r\n" not in data
    read = s.call("Read", {"file_path": path}).text
    assert "red" in read and "\x1b" not in read


@pytest.mark.parametrize("sandbox", ["off", "bwrap", "landlock"])
def test_nothing_is_left_running_after_close_in_every_backend(shell, sandbox):
    if sandbox != "off" and (why := backend_unusable(sandbox)):
        pytest.skip(f"{sandbox}: {why}")
    token = shell.token(f"cbpty{sandbox}")
    s = shell.session(sandbox=sandbox)
    assert s.sandbox().status.backend == (None if sandbox == "off" else sandbox)
    repl = start(s, f"python3 -i -q -c 'import sys; sys.argv.append(\"{token}\")'")
    until(s, repl, ">>> ")
    assert "3" in send(s, repl, "1 + 2\n").data["stdout"]
    until(s, repl, "looping", seen=send(s, repl, "print('looping'); exec('while True: pass')\n", 200).data["stdout"])
    assert "KeyboardInterrupt" in until(s, repl, ">>> ", seen=send(s, repl, "\u0003").data["stdout"])
    # a child that ignores SIGHUP and SIGTERM, in the background of the terminal's shell
    shell_tid = start(s, f"trap '' HUP TERM; sleep 300 & echo {token} started; wait")
    until(s, shell_tid, "started")
    s.close()  # the `shell` fixture fails the test if anything of either is still alive


@pytest.mark.timeout(120)
async def test_mcp_clients_drive_a_background_task_the_same_way(ws):
    import sys

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "codebelt.cli", "serve", "--root", str(ws), "--sandbox", "off", "--mode", "bypassPermissions"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"TaskInput", "TaskOutput", "TaskStop"} <= set(tools)
        assert tools["TaskInput"].input_schema["required"] == ["task_id"]
        r = await client.call_tool("Bash", {"command": "python3 -i -q", "run_in_background": True})
        tid = r.structured_content["backgroundTaskId"]
        seen = ""
        while ">>> " not in seen:
            seen += (await client.call_tool("TaskInput", {"task_id": tid, "wait_ms": 2000})).structured_content["stdout"]
        r = await client.call_tool("TaskInput", {"task_id": tid, "input": "6 * 7\n"})
        assert "42" in r.structured_content["stdout"] and r.structured_content["waitingForInput"]
        await client.call_tool("TaskStop", {"task_id": tid})
