"""`codebelt` command line. Each subcommand is a module `codebelt.cli.<name>` with
`add_arguments(parser)` and `run(args) -> int`, imported only when that subcommand runs,
so `codebelt call Read …` stays light.

Exit codes: 0 success, 1 the tool reported an error, 2 usage error.
"""

from __future__ import annotations

import importlib
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (the helper's caller stays light)

if TYPE_CHECKING:
    import argparse

SUBCOMMANDS = {
    "call": "run one tool call and print its result",
    "tools": "list the tools and their schemas",
    "check": "explain the permission decision for a shell command",
    "audit": "show the audit log",
    "serve": "run the MCP server (stdio, or streamable HTTP with --http)",
    "config": "show the merged settings and the file each value came from (--schema: their JSON Schema)",
    "checkpoints": "list the workspace's checkpoints (what each call changed)",
    "rewind": "put the workspace back as it was before a checkpoint (--dry-run: show the diff)",
    "undo": "undo the last checkpoint (undoing a rewind redoes it)",
}
# The same choices the settings schema declares (kept literal here: `--help` must not import pydantic).
MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
SANDBOX_MODES = ("auto", "bwrap", "landlock", "off", "required")


class UsageError(Exception):
    pass


def add_common(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("session options")
    g.add_argument("--root", default=".", help="workspace root (default: current directory)")
    g.add_argument("--mode", choices=MODES, default=None, help="permission mode")
    g.add_argument("--settings", default=None, metavar="FILE", help="extra settings file (highest priority)")
    g.add_argument("--sandbox", choices=SANDBOX_MODES, default=None, help="sandbox for Bash commands")
    g.add_argument("--profile", choices=("claude-code", "claude-code-1.0", "codex"), default=None,
                   help="whose tool set and texts to offer (setting compat.profile; default claude-code)")
    g.add_argument("--trust-workspace", "--trust-workspace-hooks", dest="trust_workspace", action="store_true",
                   help="honour this workspace's own settings files in full (allow rules, modes, hooks, program "
                   "paths): only for a checkout you trust. Without it they may only narrow access")


def build_parser() -> argparse.ArgumentParser:
    import argparse  # here: a call the resident helper runs never needs it in this process

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # type: ignore[override]
            self.print_usage(sys.stderr)
            sys.stderr.write(f"{self.prog}: error: {message}\n")
            raise SystemExit(2)

    parser = _Parser(prog="codebelt", description="The tool layer of a coding agent.")
    parser.add_argument("--version", action="version", version="codebelt 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, help_text in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_common(p)
        p.set_defaults(_module=name)
    return parser


def _exit_cleanly_on_sigterm() -> None:
    """SIGTERM (a service manager, `kill`, a client closing the server) unwinds like Ctrl-C, so
    sessions close: background commands are killed and the temp directory is removed."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt()

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (embedded use): leave signals alone
        pass


def main(argv: list[str] | None = None, *, use_helper: bool = True) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if use_helper and argv[:1] == ["call"]:
        from .helper import call

        code = call(argv)  # None: run here
        if code is not None:
            return code
    parser = build_parser()
    # Parse the subcommand name first, then let its module add its own arguments.
    pre = [a for a in argv if not a.startswith("-")]
    if pre and pre[0] in SUBCOMMANDS:
        module = importlib.import_module(f"{__name__}.{pre[0]}")
        sub_parser = parser._subparsers._group_actions[0].choices[pre[0]]  # type: ignore[union-attr]
        module.add_arguments(sub_parser)
    args = parser.parse_args(argv)
    module = importlib.import_module(f"{__name__}.{args._module}")
    from ..errors import CodebeltError

    _exit_cleanly_on_sigterm()
    try:
        code = module.run(args)
    except (CodebeltError, UsageError, ValueError) as e:
        sys.stderr.write(f"codebelt {args._module}: {e}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `codebelt … | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0
    return int(code or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
