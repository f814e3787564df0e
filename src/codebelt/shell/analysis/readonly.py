"""Is one simple command read-only? Names alone are not safe, so each command has flag rules.

The question asked of every flag: can it write a file, run a program, or make the command read
configuration that runs a program? If yes (or if we cannot tell), the command is not read-only.
Wrappers (`timeout`, `nice`, `env A=B`, bare `xargs` …) are looked through first (`unwrap`).

The pieces: `env` (dangerous variables), `wrappers` (unwrap, command names), `verdict` (the
generic flag model), `programs` (the table and `classify_argv`), and one module per program with
a grammar of its own (`find_args`, `sed_args`, `awk_args`, `jq_args`, `git_args`).
"""

from .env import dangerous_env
from .git_args import parse_git
from .programs import SPECS, classify_argv
from .sed_args import sed_script_problem
from .verdict import Spec, Verdict
from .wrappers import Unwrapped, command_name, unwrap

__all__ = ["dangerous_env", "parse_git", "SPECS", "classify_argv", "sed_script_problem", "Spec", "Verdict",
           "Unwrapped", "command_name", "unwrap"]
