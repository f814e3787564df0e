"""The first program inside a bwrap jail: it adds a Landlock layer that refuses every write, then
becomes the command.

Why: a read-only bind mount refuses writes to regular files, but opening an existing FIFO (or
socket) for writing is allowed on a read-only mount, so a jailed program could write into a
named pipe in the workspace that a process outside is reading. Landlock's write right covers
FIFOs. It cannot be applied before bwrap (a Landlocked process may not mount anything), so it is
applied here, after bwrap has built the jail's view and before the command runs.

This file runs as `python -I -S -c <this source> ABI PATH… -- COMMAND…` with the interpreter
codebelt runs on, inside the jail, where codebelt's package need not be visible: it imports
only the standard library and defines nothing codebelt uses. Writable afterwards: the PATHs
(the jail's scratch /tmp, /dev/null …) and the command's own stdout and stderr when they are
files (`echo x >/dev/stderr` reopens them by path). Any failure ends it with status 126 before
the command starts: never a command without the layer.
"""

import ctypes
import os
import stat
import sys


def main(argv):
    abi = int(argv[1])
    split = argv.index("--")
    paths, command = argv[2:split], argv[split + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    write = 0x2 | (0x1FF << 4)  # write file; remove dir/file; make char/dir/reg/sock/fifo/block/sym
    if abi >= 2:
        write |= 1 << 13  # refer
    if abi >= 3:
        write |= 1 << 14  # truncate
    file_rights = 0x2 | (1 << 14 if abi >= 3 else 0)

    class Attr(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    attr = Attr(write, 0, 0)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    targets = [(p, True) for p in paths] + [(f"/proc/self/fd/{n}", False) for n in (1, 2)]
    for path, must in targets:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            if must:
                raise
            continue
        mode = os.fstat(fd).st_mode
        if not must and not stat.S_ISREG(mode):
            os.close(fd)
            continue  # a pipe is not on a path Landlock checks; a terminal or device is refused
        rights = write if stat.S_ISDIR(mode) else file_rights
        rule = Beneath(rights & write, fd)
        if libc.syscall(445, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
        os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(446, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(ruleset)
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
