"""Run inside the sandbox, before the command: the way out of an empty network namespace.

Started as `python -I -S -c <this source> FD NAMES -- COMMAND…` inside bubblewrap (same
namespaces, same seccomp filter, same limits as the command, which it becomes). It makes a TCP
listener on the namespace's own loopback, hands that listening socket to codebelt's proxy
through FD (one end of a socketpair codebelt made: no socket with an address is ever created,
so the filter that refuses Unix sockets stays as it is), writes the port into the proxy
variables listed in NAMES, and execs the command. codebelt then accepts the command's
connections on that listener itself, outside the sandbox; nothing of the stage stays running.

No codebelt import: it runs with `-I -S` (no site, no environment, no current directory on the
path), so nothing in the workspace or the environment can stand in for a module it imports.
"""

import array
import os
import sys

# The C module itself: `socket` would also import enum, selectors and io (milliseconds on every
# command, for nothing the stage uses).
import _socket

PLACEHOLDER = "@CODEBELT_PROXY_PORT@"


def main() -> None:
    fd, names, sep, *argv = sys.argv[1:]
    if sep != "--" or not argv:
        sys.exit("codebelt network stage: bad arguments")
    channel = None
    try:
        channel = _socket.socket(fileno=int(fd))
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        port = listener.getsockname()[1]
        channel.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", [listener.fileno()]))])
        channel.close()
        listener.close()
    except OSError as e:  # the command still runs: without a way out, it simply has no network
        print(f"codebelt: no network proxy in this sandbox ({e}); the command runs without network",
              file=sys.stderr)
        port = 9  # the discard port: nothing listens there, connections are refused
    finally:  # whatever happened, the command does not inherit the channel
        if channel is not None:
            channel.close()
        else:
            try:
                os.close(int(fd))
            except (OSError, ValueError):
                pass
    for name in names.split(","):
        value = os.environ.get(name)
        if value:
            os.environ[name] = value.replace(PLACEHOLDER, str(port))
    os.execvp(argv[0], argv)


if __name__ == "__main__":  # `python -c` runs it as __main__; importing it runs nothing
    main()
