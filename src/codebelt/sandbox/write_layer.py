"""The Landlock layer that refuses every write inside a bwrap jail, shared by the programs that
run there: the one-shot stage (stage.py) and the resident jail (resident.py). Both run as
`python -I -S -c SOURCE` where codebelt's package need not be visible, so neither can import
this file: its source is put in front of theirs (`with_write_layer`). Standard library only.
"""

import ctypes
import os
import stat


def restrict_writes(abi, paths):
    """A Landlock layer handling every write right, granting only `paths` (and fds 1 and 2 when
    they are regular files: `echo x >/dev/stderr` reopens them by path), then restricting this
    process (no_new_privs first, as Landlock requires)."""
    layer = WriteLayer(abi, paths)
    layer.add_outputs()
    layer.restrict()


class WriteLayer:
    """The layer in three steps, so that the resident jail can build the part that depends only on
    the jail (the ruleset and its paths) before a command arrives, and add the command's own
    output files when it does: build (`paths`, which must exist), `add_outputs`, `restrict`."""

    def __init__(self, abi, paths):
        self.libc = libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long

        class Attr(ctypes.Structure):
            _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

        class Beneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

        self.Beneath = Beneath
        # write file; remove dir/file; make char/dir/reg/sock/fifo/block/sym
        self.write = write = 0x2 | (0x1FF << 4) | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0)
        self.file_rights = (0x2 | (1 << 14 if abi >= 3 else 0)) & write  # refer, truncate from ABI 2, 3
        attr = Attr(write, 0, 0)
        self.fd = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
        os.set_inheritable(self.fd, False)
        for path in paths:
            self._grant(path, True)

    def add_outputs(self):
        """The command's stdout and stderr when they are files (a pipe is not on a path Landlock
        checks; a terminal or device is refused)."""
        for n in (1, 2):
            self._grant(f"/proc/self/fd/{n}", False)

    def _grant(self, path, must):
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            if must:
                raise
            return
        try:
            mode = os.fstat(fd).st_mode
            if not must and not stat.S_ISREG(mode):
                return
            rule = self.Beneath(self.write if stat.S_ISDIR(mode) else self.file_rights, fd)
            if self.libc.syscall(445, ctypes.c_int(self.fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
        finally:
            os.close(fd)

    def restrict(self):
        if self.libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if self.libc.syscall(446, ctypes.c_int(self.fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        self.close()

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_SOURCES = {}


def with_write_layer(name):
    """Host side: the source of the jail program `name` (stage.py, resident.py) with this layer's
    in front, read once."""
    source = _SOURCES.get(name)
    if source is None:
        here = os.path.dirname(os.path.abspath(__file__))
        parts = []
        for part in (__name__.rpartition(".")[2] + ".py", name):
            with open(os.path.join(here, part), encoding="utf-8") as f:
                parts.append(f.read())
        source = _SOURCES[name] = "\n\n".join(parts)
    return source
