"""The environment of every program codebelt starts for the model: its own, less what looks secret.

An API key in the agent's environment would otherwise reach the model through `printenv`, `env`,
`echo $OPENAI_API_KEY` or `cat /proc/self/environ` — read-only commands, run without asking. So a
variable is removed when its name looks like a secret's, or its value does:

- names holding KEY, SECRET, TOKEN, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, WEBHOOK,
  COOKIE or JWT anywhere, case-insensitively (Codex's default excludes are `*KEY*`, `*SECRET*`,
  `*TOKEN*`; these add the other usual spellings), and AUTH (OAUTH, AUTHORIZATION, SSH_AUTH_SOCK)
  except in AUTHOR and AUTHORITY (GIT_AUTHOR_NAME, XAUTHORITY are not secrets);
- names with PASS, PWD, PW, CREDS, DSN, SESSION or SALT as a whole `_`-separated part (MYSQL_PWD,
  SENTRY_DSN, BW_SESSION; not PWD or OLDPWD, not COMPASS_HOME);
- Kerberos' credential cache and keytab (KRB5CCNAME, KRB5_KTNAME);
- values that carry a credential whatever the name: a URL with a password
  (`postgres://user:pw@host`), a connection string with `Password=`/`AccountKey=`, a private
  key block, or a token in a well-known format (GitHub, GitLab, Slack, OpenAI/Anthropic, AWS key
  ids, Google API keys, npm, PyPI, Hugging Face, JWTs).

Prefixes that are secret by convention (AWS_, AZURE_, GOOGLE_, GITHUB_, ARM_, VAULT_) need no
rule of their own: their secret members carry one of the words (AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AZURE_CLIENT_SECRET, VAULT_TOKEN) and the rest are names of regions, profiles
and tenants a build may need.

`allow` (the user's `bash.envAllow`: names or globs, case-sensitive) passes a variable on even
when it looks secret. Nothing here decides what a command may do; it only decides what it sees.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Iterable, Mapping

from ...files.gitrepo import GIT_KEPT

_SECRET_NAME = re.compile(
    r"""
      KEY | SECRET | TOKEN | PASSWORD | PASSWD | PASSPHRASE | CREDENTIAL | PRIVATE | WEBHOOK
    | COOKIE | JWT
    | AUTH(?!OR(?!IZ))
    | (?:^|_) (?:PASS|PWD|PW|CREDS|DSN|SESSION|SALT) (?:_|$)
    | ^KRB5CCNAME$ | ^KRB5_KTNAME$
    """,
    re.X | re.I,
)
# Names the shell itself keeps up to date; they hold directories, never secrets.
_NEVER_SECRET = frozenset({"PWD", "OLDPWD"})

_SECRET_VALUE = re.compile(
    r"""
      [A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@          # scheme://user:password@host
    | (?i:(?:password|pwd|accountkey|sharedaccesskey|sharedaccesssignature)\s*=\s*[^;\s]+)
    | -----BEGIN\ [A-Z0-9 ]*PRIVATE\ KEY-----
    | \bgh[pousr]_[A-Za-z0-9]{20,} | \bgithub_pat_[A-Za-z0-9_]{20,}
    | \bglpat-[A-Za-z0-9_-]{20,}
    | \bxox[abposr]-[A-Za-z0-9-]{10,}
    | \bsk-[A-Za-z0-9_-]{20,} | \b[rs]k_live_[A-Za-z0-9]{20,}
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b
    | \bAIza[0-9A-Za-z_-]{35}
    | \bnpm_[A-Za-z0-9]{36}
    | \bpypi-AgE[A-Za-z0-9_-]{20,}
    | \bhf_[A-Za-z0-9]{30,}
    | \beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.
    """,
    re.X,
)


# git's configuration from the environment: GIT_CONFIG_KEY_<n> holds a key's name (`http.proxy`),
# never a secret, and without it git refuses to run at all ("missing config key"); its
# GIT_CONFIG_VALUE_<n> is judged by its value like any variable.
_CONFIG_KEY = re.compile(r"GIT_CONFIG_KEY_[0-9]+")


def secret_reason(name: str, value: str = "") -> str | None:
    """Why a variable is kept from commands ("name" or "value"), or None when it is not."""
    if name in _NEVER_SECRET or _CONFIG_KEY.fullmatch(name):
        return None
    if _SECRET_NAME.search(name):
        return "name"
    if _SECRET_VALUE.search(value):
        return "value"
    return None


def is_allowed(name: str, allow: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allow)


def scrubbed_environ(base: Mapping[str, str] | None = None, allow: Iterable[str] = ()) -> dict[str, str]:
    """`base` (default: this process's environment) without the variables that look secret,
    except those `allow` names (globs). What every program started for the model should get:
    shell commands, and the helpers (language servers, ripgrep) that may run workspace code."""
    source = os.environ if base is None else base
    allow = tuple(allow)
    return {k: v for k, v in source.items()
            if secret_reason(k, v) is None or is_allowed(k, allow)}


def removed_variables(base: Mapping[str, str] | None = None, allow: Iterable[str] = ()) -> dict[str, str]:
    """{name: why} of the variables `scrubbed_environ` leaves out (for `codebelt config`; never
    the values)."""
    source = os.environ if base is None else base
    allow = tuple(allow)
    out = {}
    for k, v in source.items():
        why = secret_reason(k, v)
        if why is not None and not is_allowed(k, allow):
            out[k] = why
    return dict(sorted(out.items()))


_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)|\bprintenv\s+([A-Za-z_][A-Za-z0-9_]*)")


def secret_references(command: str, allow: Iterable[str] = ()) -> list[str]:
    """Secret-looking variable names a command reads (`$OPENAI_API_KEY`, `printenv GH_TOKEN`) and
    does not set itself. Decided from the command text and the naming rule alone — never from
    this process's environment — so telling the model about them reveals nothing it did not
    write."""
    allow = tuple(allow)
    found: list[str] = []
    for m in _REFERENCE.finditer(command):
        name = m.group(1) or m.group(2)
        if (name not in found and _SECRET_NAME.search(name) and name not in _NEVER_SECRET
                and not is_allowed(name, allow) and not re.search(rf"(?:^|[\s;&|(]){re.escape(name)}=", command)):
            found.append(name)
    return found


# A command without a terminal (stdin /dev/null or a pipe) must never wait on an editor or a
# pager nobody can drive: git opens $GIT_EDITOR for a commit message or a rebase todo list,
# man and git log page through $PAGER. `true` as the editor accepts what the program proposes
# (git rebase --continue keeps the message; a commit without -m stops with "empty commit
# message"); `cat` as the pager prints everything. A command on a terminal (pty_session.py)
# keeps the user's editors, so an editor asked for there really opens; its pagers print too,
# since a model reads text, and `less` stays one command away.
NO_EDITOR = {"GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true", "EDITOR": "true", "VISUAL": "true"}
NO_PAGER = {"PAGER": "cat", "GIT_PAGER": "cat", "MANPAGER": "cat", "SYSTEMD_PAGER": "cat", "GH_PAGER": "cat",
            "AWS_PAGER": "", "PSQL_PAGER": "cat"}
NON_INTERACTIVE = {**NO_EDITOR, **NO_PAGER, "GIT_TERMINAL_PROMPT": "0"}  # git asks for passwords on a terminal only
TERMINAL = {**NO_PAGER, "TERM": "xterm-256color"}


def unasked_environ(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a command that runs without a person's approval (the read-only jail, sandboxed
    auto-allow): without the git variables outside GIT_KEPT, so that git does what the classifier
    judged — the repository found from the command's directory, its own configuration, git's own
    programs. The others choose another repository, index, object store, configuration
    (`GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`, `GIT_CONFIG_GLOBAL`, `GIT_CONFIG_SYSTEM`,
    `GIT_CONFIG_PARAMETERS`), pathspec meaning, program (`GIT_EXEC_PATH`, `GIT_EXTERNAL_DIFF`,
    `GIT_SSH_COMMAND`, `GIT_ASKPASS`), protocol or trace file: the environment's forms of the
    options the classifier refuses (`--git-dir`, `--work-tree`, `--exec-path`, `--config-env`).
    A command a person approved keeps them: it runs as in the user's shell."""
    return {k: v for k, v in env.items() if not k.startswith("GIT_") or k in GIT_KEPT}


def for_terminal(env: Mapping[str, str], terminal: bool) -> dict[str, str]:
    """`env` for a command run without a terminal (editors and pagers that never wait), or on
    one (a real terminal type; the user's editors)."""
    return {**env, **(TERMINAL if terminal else NON_INTERACTIVE)}


__all__ = ["GIT_KEPT", "NON_INTERACTIVE", "TERMINAL", "for_terminal", "is_allowed", "removed_variables",
           "scrubbed_environ", "secret_reason", "secret_references", "unasked_environ"]
