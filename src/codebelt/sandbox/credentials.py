"""The user's credential files, masked by default wherever a command runs unasked.

A command the model runs without a person's approval — in the read-only jail, or auto-allowed in
the write sandbox — has no business with the user's tokens, keys and passwords; programs that need
them (`git push`, `docker login`, `npm publish`, `kubectl`) are not read-only and, in the
sandbox, have no network unless the user allows it. So these paths are masked for such commands
whatever the permission rules say. A command a person approved sees them: it may be the push
that needs them.

The table is data: a path relative to the home directory (or to `$XDG_CONFIG_HOME`, which
defaults to `~/.config`), and what it holds. Directories are masked whole.

Git's global configuration is not only a credential store (it holds the identity commits need),
but it can hold tokens: `url.https://TOKEN@host/.insteadOf`, `http.extraHeader = Authorization: …`,
a credential helper with an inline password, `github.token`. Where it is visible, an unasked
command sees a copy that keeps only sections known to hold no secret (`filtered_gitconfig`), and
within them no key or value that looks like one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from .jail import resolved_outside

# (path under HOME, what it holds). "xdg:" paths are under $XDG_CONFIG_HOME (default ~/.config).
CREDENTIAL_FILES: tuple[tuple[str, str], ...] = (
    (".git-credentials", "git's credential store: https passwords and tokens in clear"),
    ("xdg:git/credentials", "git's credential store (XDG location)"),
    (".git-credential-cache", "git's credential cache daemon socket"),
    ("xdg:gh/hosts.yml", "GitHub CLI OAuth tokens"),
    ("xdg:glab-cli/config.yml", "GitLab CLI tokens"),
    ("xdg:hub", "hub's GitHub token"),
    (".netrc", "logins and passwords for ftp, curl, git over https"),
    (".docker/config.json", "registry auths (base64 user:password) and credential helpers"),
    (".npmrc", "npm registry tokens (_authToken)"),
    (".yarnrc.yml", "yarn registry tokens (npmAuthToken)"),
    (".pypirc", "PyPI upload passwords and tokens"),
    ("xdg:pip/pip.conf", "index URLs with credentials"),
    (".cargo/credentials", "crates.io token"),
    (".cargo/credentials.toml", "crates.io token"),
    (".gem/credentials", "RubyGems API key"),
    (".composer/auth.json", "Composer repository credentials"),
    ("xdg:composer/auth.json", "Composer repository credentials"),
    (".m2/settings.xml", "Maven server passwords"),
    (".m2/settings-security.xml", "Maven master password"),
    (".gradle/gradle.properties", "Gradle repository and signing passwords"),
    (".nuget/NuGet/NuGet.Config", "NuGet feed passwords"),
    (".kube/config", "Kubernetes cluster credentials and tokens"),
    (".aws/credentials", "AWS access keys"),
    (".aws/config", "AWS profiles (may hold keys and SSO settings)"),
    (".aws/sso/cache", "AWS SSO access tokens"),
    (".azure", "Azure CLI tokens"),
    ("xdg:gcloud", "Google Cloud credentials and access tokens"),
    (".config/gcloud", "Google Cloud credentials and access tokens"),
    (".oci", "Oracle Cloud API keys"),
    (".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    (".vault-token", "HashiCorp Vault token"),
    (".ssh", "SSH private keys, agent sockets, known hosts"),
    (".gnupg", "GnuPG private keys"),
    (".password-store", "pass: encrypted passwords"),
    (".local/share/keyrings", "GNOME keyring"),
    (".pgpass", "PostgreSQL passwords"),
    (".my.cnf", "MySQL passwords"),
    (".s3cfg", "s3cmd keys"),
    (".boto", "boto/gsutil keys"),
    ("xdg:rclone/rclone.conf", "rclone remotes' credentials"),
    (".huggingface/token", "Hugging Face token"),
    (".cache/huggingface/token", "Hugging Face token"),
    ("xdg:op", "1Password CLI sessions"),
    (".config/op", "1Password CLI sessions"),
    (".claude/.credentials.json", "Claude Code's credentials"),
    (".codex/auth.json", "Codex's credentials"),
)
# Git's global configuration files: shown filtered (`filtered_gitconfig`), never as they are.
GITCONFIG_FILES = (".gitconfig", "xdg:git/config")


def _resolve(entry: str, home: Path, xdg: Path) -> Path:
    return xdg / entry[4:] if entry.startswith("xdg:") else home / entry


def _homes() -> tuple[Path, Path]:
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return home, xdg


def credential_paths(consult: "Callable[[str], None] | None" = None) -> list[Path]:
    """The credential files of the table that exist now (symlinks included: masks land on their
    targets), plus git's global configuration files. `consult`: told each directory the answer
    depends on, before it is looked in (watched.py)."""
    home, xdg = _homes()
    if home == Path("/"):
        return []
    if consult is not None:
        _consult_all(home, xdg, consult)
    # by string, and a lstat only where the entry's first name is in its directory's listing:
    # this runs as every jailed command starts, and most homes hold few of these
    out: dict[str, None] = {}
    listed: dict[str, set[str] | None] = {}
    for entry in [*(e for e, _ in CREDENTIAL_FILES), *GITCONFIG_FILES]:
        base, rest = (str(xdg), entry[4:]) if entry.startswith("xdg:") else (str(home), entry)
        if base not in listed:
            try:
                listed[base] = set(os.listdir(base))
            except OSError:
                listed[base] = None  # unlistable: each entry looked up
        names = listed[base]
        if names is not None and rest.split("/", 1)[0] not in names:
            continue
        p = os.path.join(base, rest)
        if os.path.lexists(p):
            out[p] = None
    return [Path(p) for p in out]


def _consult_all(home: Path, xdg: Path, consult: "Callable[[str], None]") -> None:
    """Every directory `credential_paths` looks in: those its two bases resolve through, the
    bases themselves (listed), and those each entry of the table resolves through (a missing
    one's directory included: its creation there is a change)."""
    for base in (home, xdg):
        real = resolved_outside(str(base), (), consult=consult)
        if real is not None:
            consult(real)
    for entry in [*(e for e, _ in CREDENTIAL_FILES), *GITCONFIG_FILES]:
        resolved_outside(str(_resolve(entry, home, xdg)), (), directory=False, consult=consult)


def gitconfig_paths() -> list[Path]:
    home, xdg = _homes()
    return [p for p in (_resolve(e, home, xdg) for e in GITCONFIG_FILES) if os.path.isfile(p)]


# Sections of git's configuration that configure how git behaves and hold no credential. Others
# (credential, url, http, include, includeIf, sendemail, github, gitlab, hub, remote-specific
# tool sections…) are left out of the copy.
SAFE_SECTIONS = frozenset({
    "user", "author", "committer", "core", "init", "color", "alias", "diff", "difftool", "merge",
    "mergetool", "pull", "push", "fetch", "rebase", "status", "log", "branch", "commit", "tag",
    "advice", "format", "help", "pager", "gc", "rerere", "submodule", "blame", "grep", "column",
    "interactive", "safe", "feature", "transfer", "filter", "lfs", "gpg", "am", "apply", "index",
    "pack", "maintenance", "checkout", "clone", "worktree", "stash", "notes", "protocol", "web",
})
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]')
_SECRET_KEY = re.compile(r"token|passw|secret|auth|cookie|header|credential|apikey|api_key|private", re.I)
_URL_USERINFO = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s@]+@", re.I)
MAX_GITCONFIG = 1 << 20


def filtered_gitconfig(text: str) -> str:
    """`text` (a git configuration file) less every section not in SAFE_SECTIONS and every
    line whose key or value has a secret-looking word or a URL with a user part. Continued lines
    (ending in a backslash) go with their first line."""
    out: list[str] = []
    keep = False
    skipping_continuation = False
    for line in text[:MAX_GITCONFIG].splitlines():
        if skipping_continuation:
            skipping_continuation = line.rstrip().endswith("\\")
            continue
        m = _SECTION.match(line)
        if m:
            keep = m.group(1).split(".", 1)[0].lower() in SAFE_SECTIONS
            if keep:
                out.append(line)
            continue
        if not keep:
            skipping_continuation = line.rstrip().endswith("\\")
            continue
        if _SECRET_KEY.search(line) or _URL_USERINFO.search(line):  # the key's name or its value
            skipping_continuation = line.rstrip().endswith("\\")
            continue
        out.append(line)
    return "\n".join(out) + "\n"
