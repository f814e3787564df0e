"""The first program inside a bwrap jail: it adds a Landlock layer that refuses every write, then
becomes the command.

Why: a read-only bind mount refuses writes to regular files, but opening an existing FIFO (or
socket) for writing is allowed on a read-only mount, so a jailed program could write into a
named pipe in the workspace that a process outside is reading. Landlock's write right covers
FIFOs. It cannot be applied before bwrap (a Landlocked process may not mount anything), so it is
applied here, after bwrap has built the jail's view and before the command runs.

This file runs as `python -I -S -c <write_layer.py + this source> ABI PATH… -- COMMAND…` (the
layer itself, `restrict_writes`, is shared with the resident jail) with the interpreter
codebelt runs on, inside the jail, where codebelt's package need not be visible: it imports
only the standard library and defines nothing codebelt uses. Writable afterwards: the PATHs
(the jail's scratch /tmp, /dev/null …) and the command's own stdout and stderr when they are
files (`echo x >/dev/stderr` reopens them by path). Any failure ends it with status 126 before
the command starts: never a command without the layer.
"""

import os
import signal
import sys


def main(argv):
    abi = int(argv[1])
    split = argv.index("--")
    paths, command = argv[2:split], argv[split + 1:]
    restrict_writes(abi, paths)  # from write_layer.py, whose source comes first
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)  # Python ignores them, and exec would keep that
    try:
        os.execvp(command[0], command)
    except OSError as e:  # as a shell says it: the layer is in place, the program is not there
        sys.stderr.write(f"{command[0]}: {e.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except BaseException as e:  # noqa: BLE001 - whatever failed, the command must not start
        sys.stderr.write(f"codebelt jail: cannot refuse writes inside the jail ({e}); the command did not run\n")
        os._exit(126)
