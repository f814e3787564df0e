"""The workspace: its roots, path resolution, and which paths are protected.

Every path a tool touches goes through `Workspace.resolve`: `..` and symlinks are resolved
before any containment check, so a symlink pointing outside is outside.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PathError

# Names that configure the agent or make a program run later (the user's next commit, shell,
# editor, build or agent start): writing them, at any depth and case-folded, needs an explicit
# allow rule. A superset of what Claude Code protects, so a rule written for it means the same.
PROTECTED_DIRS: dict[str, str] = {
    ".codebelt": "holds agent configuration",
    ".claude": "holds agent configuration",
    ".git": "internals (hooks, config) can make git run programs",
    ".vscode": "editor tasks and settings can run programs",
    ".idea": "IDE run configurations can run programs",
    ".husky": "holds git hooks",
    ".cargo": "cargo's configuration can run programs",
}
PROTECTED_FILES: dict[str, str] = {
    **dict.fromkeys((".gitconfig", ".gitmodules"), "configures git"),
    **dict.fromkeys((".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshrc", ".zshenv",
                     ".zprofile", ".zlogin", ".profile"), "a shell runs it at start"),
    ".envrc": "direnv runs it on entering the directory",
    ".ripgreprc": "configures ripgrep",
    ".mcp.json": "configures the agent's MCP servers",
    ".claude.json": "holds agent configuration",
}


def _home() -> Path | None:
    try:
        return Path(os.path.realpath(os.path.expanduser("~")))
    except (OSError, RuntimeError):
        return None


@dataclass
class Workspace:
    root: Path
    additional_dirs: list[Path] = field(default_factory=list)
    # Directories tools may read without any rule (the session's results directory).
    internal_read_dirs: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.additional_dirs = [Path(os.path.realpath(d)) for d in self.additional_dirs]
        self.internal_read_dirs = [Path(os.path.realpath(d)) for d in self.internal_read_dirs]

    @property
    def roots(self) -> list[Path]:
        return [self.root, *self.additional_dirs]

    def resolve(self, path: str | os.PathLike[str], base: Path | None = None,
                dir_cache: dict[Path, Path] | None = None) -> Path:
        """Absolute, fully resolved path (symlinks followed as far as they exist).

        Relative paths are taken from `base` (default: the root). `~` is expanded.
        UNC paths are refused outright: they can make the OS reach out to a network host.
        `dir_cache` (the caller's, for many paths in few directories) remembers resolved parent
        directories, so only the last component is looked at again.
        """
        text = os.fspath(path)
        if "\x00" in text:
            raise PathError(f"path {text!r} contains a NUL byte")
        if not text.strip():
            raise PathError("path is empty")
        if text.startswith("\\\\") or text.startswith("//") and len(text) > 2 and text[2] != "/":
            raise PathError(f"path {text} is a UNC path; network paths are refused")
        if text.startswith("~"):
            text = os.path.expanduser(text)
        p = Path(text)
        if not p.is_absolute():
            p = (base or self.root) / p
        if dir_cache is None or p.name in ("", ".", ".."):
            return Path(os.path.realpath(p))
        parent = dir_cache.get(p.parent)
        if parent is None:
            parent = dir_cache[p.parent] = Path(os.path.realpath(p.parent))
        candidate = parent / p.name
        return Path(os.path.realpath(candidate)) if os.path.islink(candidate) else candidate

    def root_of(self, resolved: Path) -> Path | None:
        for r in self.roots:
            if resolved == r or r in resolved.parents:
                return r
        return None

    def is_inside(self, resolved: Path) -> bool:
        return self.root_of(resolved) is not None

    def is_internal_readable(self, resolved: Path) -> bool:
        return any(resolved == d or d in resolved.parents for d in self.internal_read_dirs)

    def relative(self, resolved: Path) -> str:
        """Path as shown to the model: relative to the root when inside it, else absolute."""
        try:
            rel = resolved.relative_to(self.root)
        except ValueError:
            return str(resolved)
        return str(rel) if str(rel) != "." else "."

    def protected_reason(self, resolved: Path) -> str | None:
        """Why writing this path needs an explicit allow rule, or None."""
        r = self.root_of(resolved)
        if r is None:
            return None
        parts = resolved.relative_to(r).parts
        if not parts:
            return None
        # At any depth (nested repositories and submodules have hooks too; an agent started in a
        # subdirectory reads its .claude/), and case-folded: on case-insensitive file systems
        # (macOS, Windows) `.GIT/hooks` is `.git/hooks`.
        folded = [p.casefold() for p in parts]
        for name in folded:
            if name in PROTECTED_DIRS:
                return f"{name}/ {PROTECTED_DIRS[name]}"
        if folded[-1] in PROTECTED_FILES:
            return f"{parts[-1]} {PROTECTED_FILES[folded[-1]]}"
        if folded[-1].startswith(".env"):
            return f"{parts[-1]} may hold secrets"
        return _home_config(resolved)


def _home_config(resolved: Path) -> str | None:
    """In a workspace that holds the home directory (`--root ~`), the home directory's dot
    entries (shell start-up files, ~/.ssh, ~/.config, ~/.local/bin, codebelt's own settings and
    state) and ~/bin configure every program the user runs: all protected."""
    home = _home()
    if home is None or home == Path("/") or home not in resolved.parents:
        return None
    first = resolved.relative_to(home).parts[0]
    if first.startswith(".") or first == "bin":
        return f"~/{first} in your home directory configures the programs you run"
    return None
