"""The reaper: the program between codebelt and a long-lived helper under Landlock, with its
watcher (reaper.py starts both; this imports nothing of codebelt):
  `python -I -S reaper_program.py reap HELPER WATCHER`, the control pipe's read end as fd 3;
  `python -I -S reaper_program.py watch`, a pidfd of the reaper as fd 3.

The reaper runs in a Landlock domain of its own that scopes signals, and the helper, its child,
in a domain nested in it. So the helper and everything it starts can neither signal nor trace
the reaper, while the reaper's `kill(-1, SIGKILL)` reaches exactly the processes of its domain
and the nested ones — everything the helper started, whatever its parent or session is now, and
nothing else. The kernel sends a kill(-1) to every process under the task-list lock, and a fork
that has not yet added its child fails when a fatal signal is pending: no child is born after
it. As a child subreaper it receives whatever is orphaned below it, so once that kill is sent,
waitpid saying ECHILD means nothing below is left.

It ends that way when codebelt asks (a byte on the control pipe, or SIGTERM), when codebelt is
gone (the pipe's end: only codebelt holds its write end), and when the helper exits by itself —
then with the helper's status. The watcher, started before the helper in the same domain and a
session of its own, does the same kill when the reaper dies (killed outright, say); the reaper
does it when the watcher dies. Nothing is left either way.
"""

import os
import select
import sys
import time

import _signal as signal  # the C module: `signal` imports enum, a third of the start-up

CONTROL_FD = 3
END_TIMEOUT = 5.0  # a process stuck in the kernel (D state) dies when it leaves it: no code runs


def watch() -> None:
    """Wait for the reaper's end (its pidfd, fd 3, becomes readable), then kill the domain."""
    try:
        os.closerange(CONTROL_FD + 1, 1 << 20)  # whatever the spawn passed on besides
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        poller = select.poll()
        poller.register(CONTROL_FD, select.POLLIN)
        while not poller.poll():
            pass
    finally:
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)


class Reaper:
    def __init__(self, helper: int, watcher: int):
        self.helper = helper
        self.watcher = watcher
        self.status = -signal.SIGKILL  # the helper's status, as Popen gives it, once known
        self.ending: list[str] = []

    def reap(self) -> bool:
        """Reap what has exited; False once no child is left at all."""
        while True:
            try:
                pid, how = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.helper:
                self.status = os.waitstatus_to_exitcode(how)
                self.ending.append("helper exited")
            elif pid == self.watcher:
                self.ending.append("watcher gone")  # nothing would end the domain if the reaper died now

    def run(self, wake: int) -> None:
        """Until codebelt asks, is gone, or the helper or the watcher exits."""
        signal.signal(signal.SIGTERM, lambda *_: self.ending.append("asked"))
        poller = select.poll()
        poller.register(CONTROL_FD, select.POLLIN)
        poller.register(wake, select.POLLIN)
        # reaped before each wait: a child that exited before the handler was set sent no wake-up
        while self.reap() and not self.ending:
            for fd, _ in poller.poll():
                if fd == CONTROL_FD:
                    self.ending.append("control")  # a byte, or the end: codebelt asks, or is gone
                elif fd == wake:
                    _drain(wake)

    def end(self, wake: int) -> None:
        """Kill the domain until no child is left (bounded: one stuck in the kernel dies as it leaves)."""
        deadline = time.monotonic() + END_TIMEOUT
        poller = select.poll()
        poller.register(wake, select.POLLIN)
        while True:
            try:
                os.kill(-1, signal.SIGKILL)  # the domain: never the reaper itself, nothing outside
            except ProcessLookupError:
                pass
            if not self.reap() or time.monotonic() >= deadline:
                return
            poller.poll(50)
            _drain(wake)


def _drain(fd: int) -> None:
    try:
        os.read(fd, 512)
    except BlockingIOError:
        pass


def main() -> int:
    if sys.argv[1] == "watch":
        watch()
    reaper = Reaper(int(sys.argv[2]), int(sys.argv[3]))
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    wake, wake_w = os.pipe()
    os.set_blocking(wake, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        reaper.run(wake)
    finally:  # whatever happened: nothing is left running
        reaper.end(wake)
    return reaper.status


if __name__ == "__main__":
    try:
        code = main()
    except BaseException:  # noqa: BLE001 - its end ran already; say how it went and exit
        import traceback

        traceback.print_exc()
        code = 125
    if code < 0:  # the helper was killed by a signal: the reaper ends the same way
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)
