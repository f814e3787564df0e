"""Every exception codebelt raises on purpose, in one tree.

    CodebeltError                 base: `Session.call` turns any of these into an is_error result
    ├── SettingsError             a settings file or value that cannot be used (names file and key)
    │   └── RuleError             a permission rule that does not parse
    ├── PathError                 a path that cannot be used at all (UNC, NUL byte, empty)
    ├── UnknownToolError          a call named a tool that is not registered
    ├── SessionClosed             a call on a session that was closed
    ├── ToolError                 a tool ends its call with a message for the model (+ data)
    ├── Cancelled                 the caller cancelled the call
    ├── ApprovalRefused           an approver could not ask anyone (the message says why)
    ├── RegexError                a regular expression that is invalid or cannot run in linear time
    ├── FileToolError             the file engine refuses an operation
    │   ├── BinaryFile            the file is not text
    │   ├── EditError             an edit that cannot be applied (no match, several matches …)
    │   ├── MediaError            an image or PDF that cannot be read
    │   └── NotebookError         a notebook that cannot be read
    ├── PatchError                the patch engine refuses a patch
    │   ├── PatchParseError       the patch text does not parse (names the line)
    │   └── PatchApplyError       the patch does not fit the files
    │       └── PatchPathError    a path the patch may not touch
    ├── ShellError                a command could not be started
    ├── SandboxUnavailable        the settings require a sandbox that does not work here
    ├── ServeError                the MCP server cannot listen on the address it was given
    ├── RipgrepError              ripgrep could not run
    │   └── RipgrepNotFound       no rg binary
    └── IntelError                code intelligence could not answer
        ├── UnknownLanguage       no grammar or server for this file
        ├── PositionError         a cursor position outside the file
        ├── ParseTooSlow          a file's parse passed its time budget
        └── IndexStoreError       the index cache cannot be used

The message of each is what the model (or the user) reads: it says what happened and what to do
next. Engines raise these; only a genuine bug surfaces as anything else. OS-level failures keep
their OSError nature (`files.atomic.AtomicWriteError`, `sandbox.landlock.LandlockError`).
"""

from __future__ import annotations

from typing import Any


class CodebeltError(Exception):
    """Base of every codebelt exception."""


class SettingsError(CodebeltError):
    """A settings file or value that cannot be understood."""


class RuleError(SettingsError):
    """A permission rule that cannot be parsed."""


class PathError(CodebeltError):
    """A path that cannot be used at all (UNC, NUL byte, empty)."""


class UnknownToolError(CodebeltError):
    """A call named a tool that is not registered."""


class SessionClosed(CodebeltError):
    """A call reached a session after `close()`: nothing new may start there."""

    def __init__(self, message: str = "This session is closed; start a new session to run tools."):
        super().__init__(message)


class ToolError(CodebeltError):
    """Raised inside a tool's `validate`/`run` to end the call with an `is_error` result.

    The message is what the model reads: say what happened and what to do next. `data` goes
    into the result's data next to the error text.
    """

    def __init__(self, message: str, **data: Any):
        super().__init__(message)
        self.message = message
        self.data = data


class RegexError(CodebeltError, ValueError):
    """A regular expression that is invalid, or that the linear-time engine cannot run
    (backreferences, lookaround, …); the message says which and what to write instead."""


class Cancelled(CodebeltError):
    """Raised by `ToolContext.check_cancelled` once the caller has cancelled the call."""


class ApprovalRefused(CodebeltError):
    """Raised by an approver that cannot ask anyone (e.g. an MCP client without elicitation).

    The message says why; the call is denied with it and the rule or mode that would allow it.
    """


class FileToolError(CodebeltError):
    """The file engine refuses an operation. `reason` names the case ("not_found", "several" …)
    and `facts` what a tool's text may quote, so the tool can word it as its profile does; the
    message is the engine's own wording, used where no profile has one."""

    def __init__(self, message: str = "", reason: str | None = None, **facts: Any):
        super().__init__(message)
        self.reason = reason
        self.facts = facts


class BinaryFile(FileToolError):
    """The bytes are not text. `kind` says what they look like ("PNG image", "binary data")."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class EditError(FileToolError):
    """An edit that cannot be applied; the message says why and what to do."""


class MediaError(FileToolError):
    """An image or PDF that cannot be read."""


class NotebookError(FileToolError):
    """A notebook that cannot be read."""


class PatchError(CodebeltError):
    """Base class of patch errors; str(e) is the message shown to the model."""


class PatchParseError(PatchError):
    """The patch text does not follow the grammar. `line` is the 1-based line of the patch text."""

    def __init__(self, message: str, line: int | None = None, *, hunk: bool = True):
        self.message = message
        self.line = line
        # Codex's two wordings, so tools that grep for them keep working.
        if hunk and line is not None:
            text = f"Invalid patch hunk on line {line}: {message}"
        elif line is not None:
            text = f"Invalid patch: {message} (line {line})"
        else:
            text = f"Invalid patch: {message}"
        super().__init__(text)


class PatchApplyError(PatchError):
    """The patch is well-formed but does not fit the files (nothing was changed)."""


class PatchPathError(PatchApplyError):
    """A path the patch may not touch (outside the workspace, a directory, …)."""


class ShellError(CodebeltError):
    """A command could not be started (bash missing, fork failed, session closed)."""


class SandboxUnavailable(CodebeltError):
    """The settings require a sandbox (`required`, `bwrap`, `landlock`) that does not work here.

    The message says what to change.
    """


class ServeError(CodebeltError):
    """The MCP server cannot listen on the address it was given (in use, not this machine's)."""


class RipgrepError(CodebeltError):
    """ripgrep could not run."""


class RipgrepNotFound(RipgrepError):
    """No rg binary was found."""


class IntelError(CodebeltError):
    """Code intelligence could not answer: bad input, unknown language, unusable cache."""


class UnknownLanguage(IntelError):
    """No grammar (or language server) for this file."""


class PositionError(IntelError):
    """A cursor position outside the file."""


class ParseTooSlow(IntelError):
    """A file took longer than its time budget to parse (some grammars have inputs that take
    minutes); the file is skipped rather than stopping the session."""


class IndexStoreError(IntelError):
    """The index cache cannot be used."""
