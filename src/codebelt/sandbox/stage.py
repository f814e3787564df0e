"""The first program inside a one-shot bwrap jail or write sandbox: it checks that the masks bwrap
mounted by path cover what codebelt meant them to cover, adds (in the jail) a Landlock layer that
refuses every write, then becomes the command.

Why the check: a masked path under a directory a command may write (a workspace `.env`) is found
by codebelt, then covered by bwrap by path a few milliseconds later. A command running meanwhile
in the write sandbox cannot move the file itself (a mount point in its own view) but can rename a
directory above it, or swap it with a decoy: the cover then lands on the decoy and the real file
is readable under the other name. Each such cover comes with the identity (st_dev, st_ino) of the
directory codebelt found the path in; here, after bwrap's last mount and before the command, that
directory is opened by its path and must be the one, and the name in it must show the cover (the
identity of /dev/null for a file, a read-only mount of another filesystem for a directory), else
the command is refused. Once verified it stays so: the cover is a mount on the file's own entry
in that directory, and whoever moves the directory afterwards moves the covered entry with it.

Why the layer: a read-only bind mount refuses writes to regular files, but opening an existing
FIFO (or socket) for writing is allowed on a read-only mount, so a jailed program could write into
a named pipe in the workspace that a process outside is reading. Landlock's write right covers
FIFOs. It cannot be applied before bwrap (a Landlocked process may not mount anything), so it is
applied here, after bwrap has built the jail's view and before the command runs.

This file runs as `python -I -S -c <[write_layer.py +] this source> ABI PATH… -- COVER… --
COMMAND…` with the interpreter codebelt's environment was made from (stage_python.py: never one a
sandboxed command could change), inside the jail, where codebelt's package need
not be visible: it imports only the standard library and defines nothing codebelt uses. ABI 0: no
layer (the write sandbox, or a jail where Landlock does not work; the source then comes without
write_layer.py). Writable afterwards: the PATHs (the jail's scratch /tmp, /dev/null …) and the
command's own stdout and stderr when they are files (`echo x >/dev/stderr` reopens them by path).
A COVER is `null:DEV:INO` (the identity of the /dev/null bwrap binds over files), `f:DEV:INO:PATH`
or `d:DEV:INO:PATH` (a file or directory cover at PATH, in the directory of that identity), or
`g:DEV:INO:PATH` (a path codebelt was given but bwrap had nothing to cover at: it must be gone
from that directory, not moved away with it). Any
failure ends it with status 126 before the command starts: never a command without its checks and
layer.
"""

import _signal  # not `signal`: its enum wrappers import enum, functools, collections (a few ms per start)
import os
import stat
import sys

ST_RDONLY = 1


class Moved(Exception):
    """A cover that is not where codebelt found the path it hides."""


def check_covers(specs):
    null = None
    for spec in specs:
        kind, dev, ino, *path = spec.split(":", 3)
        where = (int(dev), int(ino))
        if kind == "null":
            null = where
        elif not (gone(path[0], where) if kind == "g" else covered(path[0], where, kind == "d", null)):
            raise Moved(path[0])


def gone(path, where):
    """Whether `path`'s name is absent from the directory of identity `where`, which is still at
    `path`'s parent (the file was deleted: it cannot have been moved, being a mount point in the
    view of any command that could move it)."""
    parent, name = os.path.split(path)
    try:
        dfd = os.open(parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        here = os.fstat(dfd)
        if (here.st_dev, here.st_ino) != where:
            return False
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
        return False
    except FileNotFoundError:
        return True
    except OSError:
        return False
    finally:
        os.close(dfd)


def covered(path, where, is_dir, null):
    """Whether the entry of `path`'s name, in the directory now at `path`'s parent, is the cover
    and that directory is the one of identity `where`. Through one descriptor of the directory:
    a rename racing this check cannot make the two steps look at different directories."""
    parent, name = os.path.split(path)
    try:
        dfd = os.open(parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False  # moved away: its name leads nowhere
    try:
        here = os.fstat(dfd)
        if (here.st_dev, here.st_ino) != where:
            return False
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return False
        if not is_dir:
            return null is not None and (st.st_dev, st.st_ino) == null
        if not stat.S_ISDIR(st.st_mode) or st.st_dev == here.st_dev:
            return False  # the directory itself, not an empty tmpfs over it
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        except OSError:
            return False
        try:
            now = os.fstat(fd)
            return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and bool(os.fstatvfs(fd).f_flag & ST_RDONLY)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


def main(argv):
    abi = int(argv[1])
    split = argv.index("--")
    paths = argv[2:split]
    end = argv.index("--", split + 1)
    covers, command = argv[split + 1:end], argv[end + 1:]
    try:
        check_covers(covers)
    except Moved as e:
        sys.stderr.write(f"codebelt: {e} was moved while the command started (a directory above it was renamed); "
                         "the command did not run: run it again\n")
        os._exit(126)
    if abi:
        restrict_writes(abi, paths)  # from write_layer.py, whose source comes first
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(sig, _signal.SIG_DFL)  # Python ignores them, and exec would keep that
    try:
        os.execvp(command[0], command)
    except OSError as e:  # as a shell says it: the layer is in place, the program is not there
        sys.stderr.write(f"{command[0]}: {e.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except BaseException as e:  # noqa: BLE001 - whatever failed, the command must not start
        sys.stderr.write(f"codebelt jail: cannot check the masks or refuse writes inside the jail ({e}); "
                         "the command did not run\n")
        os._exit(126)
