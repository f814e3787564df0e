"""Environment variables that make a program load code, run a program, or read configuration that
does: setting one makes a command not read-only, and an allow rule never matches past it."""

from __future__ import annotations

import re

# Variables that make a program load code, run a program, or read config that does.
_DANGEROUS_ENV = re.compile(
    r"""^(
      LD_\w* | DYLD_\w* | GIT_\w* | PYTHON\w* | PERL\w* | RUBY\w* | NODE_\w* | NPM_CONFIG_\w* |
      BASH_\w* | BASH | ENV | SHELLOPTS | BASHOPTS | PS4 | PROMPT_COMMAND | IFS | CDPATH | GLOBIGNORE |
      \w*PATH | \w*_OPTIONS | \w*OPTS | \w*OPT | HOME | XDG_\w* | SHELL | \w*PAGER | EDITOR | VISUAL |
      BROWSER | LESS\w* | GCONV_PATH | LOCPATH | GLIBC_TUNABLES | MALLOC_\w* | RIPGREP_CONFIG_PATH |
      \w*_CONFIG\w* | \w*RC | JAVA_TOOL_OPTIONS | _JAVA_OPTIONS | TERMINFO\w* | MAGIC | SSH_\w* |
      HOSTALIASES | RES_OPTIONS | TMPDIR | JQ_\w* | AWK\w* | SED\w* | TAR_\w* | XARGS\w* |
      TEXTDOMAINDIR | NLSPATH | ACK\w* | TZDIR
    )$""",
    re.X | re.I,
)


# Locale variables whose value may be a path: glibc loads locale data / message catalogs from it.
_LOCALE_ENV = re.compile(r"^(?:LANG|LANGUAGE|LC_\w+)$", re.I)


def dangerous_env(name: str, value: str = "") -> bool:
    if _LOCALE_ENV.match(name):
        return "/" in value or ".." in value
    return bool(_DANGEROUS_ENV.match(name))
