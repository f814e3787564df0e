"""The settings schema: one pydantic model per section, with defaults, validation and docs.

Every setting codebelt reads is declared here, and read through these models. Each field says
how an untrusted workspace's own settings files (`.codebelt/…`, `.claude/…` in the repository) may
narrow it: `workspace=LOWER` (a limit it may lower), `OFF`, `ORDER`, `RULES`, `ADD`, `ANY`, or
nothing: then only the user's files, `--settings`, the API or a trusted workspace set it
(`narrowing.py`; `x-workspace` in the JSON Schema). A new key is the user's until someone
decides how a workspace may narrow it.

Attribute names are snake_case; the JSON keys are Claude Code's camelCase (the aliases), and
files are read by those keys alone.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..domains import check_entries, narrower_list
from .modes import MODES, MODES_NARROWEST_FIRST, SANDBOX_MODES  # noqa: F401 - re-exported
from .narrowing import ADD, ANY, LOWER, LOWER_OR_0, NEVER, OFF, RULES, Narrowing, narrowing_of



def setting(default: Any, description: str, *, workspace: Narrowing | None = None, **kw: Any) -> Any:
    """A field with its documentation and how an untrusted workspace's own files may narrow it
    (None: they may not set it)."""
    if workspace is not None and not isinstance(workspace, Narrowing):
        raise TypeError("workspace= takes how a workspace may narrow the setting (LOWER, OFF, ORDER, RULES, ADD, "
                        "ANY), or None when only the user may set it")
    return Field(default, description=description, json_schema_extra=workspace, **kw)


class Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True,
        validate_default=True,
    )


def _str_list(value: Any) -> Any:
    """One glob may be given as a string instead of a list of one."""
    return [value] if isinstance(value, str) else value


Globs = Annotated[list[str], BeforeValidator(_str_list)]


class PermissionsSettings(Section):
    allow: list[str] = setting([], "Rules that allow a call without asking, e.g. `Bash(npm run test *)`, `Edit(src/**)`.")
    ask: list[str] = setting([], "Rules that always ask, e.g. `Bash(git push *)`.", workspace=RULES)
    deny: list[str] = setting([], "Rules that always deny, e.g. `Read(./.env)`, `Bash(curl *)`.", workspace=RULES)
    default_mode: Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"] = setting(
        "default",
        "What happens to a call no rule settles. An untrusted workspace's own files may only choose a narrower mode.",
        workspace=Narrowing("order", order=MODES_NARROWEST_FIRST))
    additional_directories: list[str] = setting(
        [], "More directories tools may read and write, as if inside the workspace (relative to the root, or absolute).")


class LimitsSettings(Section):
    processes: int = setting(512, "Most processes the session's sandboxed commands may run at once (0 turns the cap off).", ge=0)
    file_size_mb: int = setting(8192, "Largest file a sandboxed command may write, in MB (0 turns the limit off).", ge=0,
                                alias="fileSizeMB")
    core_dumps: bool = setting(False, "Allow core dumps from sandboxed commands.")
    memory_mb: int | None = setting(
        None,
        "Most memory the session's sandboxed commands may use together, in MB (a memory cgroup; without "
        "one, a per-process address-space limit). Default: half of the machine's RAM; 0 turns it off.",
        ge=0, alias="memoryMB",
    )


class SandboxFilesystemSettings(Section):
    deny_read: list[str] = setting(
        [], "Paths no command may read, as in Claude Code: each entry is also a `Read(...)` deny rule "
        "(`~/.aws`, `//srv/keys/**`, `./secrets/**`), so the file tools refuse it and the jail and the write "
        "sandbox mask it.", workspace=ADD)
    allow_git_history: bool = setting(
        False, "Let commands run unasked in the write sandbox even while a Read deny rule could match a file "
        "under the workspace and a git repository is there: a program such a command runs can print the denied "
        "file's committed, staged or stashed versions from git's object store. Off, such commands are decided "
        "by the mode (they ask). Only from the user's settings.", workspace=OFF)


DomainList = Annotated[list[str], BeforeValidator(_str_list)]


def _narrow_allowed(value: list[str], base: list[str]) -> tuple[list[str], str | None]:
    """A workspace's allowedDomains keeps only what the user's list allows too."""
    kept = narrower_list(base, value)
    dropped = sorted(set(value) - set(kept))
    return kept, (f"allowedDomains {dropped} (not allowed by the user's settings)" if dropped else None)


class NetworkSettings(Section):
    """`sandbox.network` as an object (Claude Code's shape): commands reach only these domains,
    through codebelt's proxy; WebFetch obeys the same lists."""

    allowed_domains: DomainList = setting(
        [], "Names sandboxed commands and WebFetch may reach: `pypi.org`, `*.example.com` (the names below it), "
        "`*` (every name), an address, each optionally with `:port`. Only the user's settings add domains.",
        workspace=Narrowing("custom", custom=_narrow_allowed))
    denied_domains: DomainList = setting(
        [], "Names never reached, whatever allowedDomains says (same forms).", workspace=ADD)
    ask_for_new_domains: bool = setting(
        False, "Ask the person (MCP elicitation, terminal prompt, library approver) the first time a name on "
        "neither list is wanted, once per name per session; the connection waits for the answer.", workspace=OFF)
    ask_timeout_seconds: int = setting(120, "How long a connection waits for that answer before it is refused.",
                                       gt=0, le=3600, workspace=LOWER)
    max_connections: int = setting(10_000, "Most connections a session's commands and WebFetch may open.", gt=0,
                                   workspace=LOWER)
    max_mb: int = setting(16_384, "Most data a session's connections may move, both directions, in MB.", gt=0,
                          alias="maxMB", workspace=LOWER)
    max_connection_seconds: int = setting(1_800, "Longest a single connection may stay open, in seconds.", gt=0,
                                          workspace=LOWER)

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return check_entries(value)


def _narrow_network(value: Any, base: Any) -> tuple[Any, str | None]:
    """What an untrusted workspace's `sandbox.network` amounts to over the user's: each key as its
    field's marker says (allowedDomains: only what both lists allow; deniedDomains: added; asking:
    only off; limits: only lower); a key without one is the user's. `true` (every connection, no
    proxy) counts as `{"allowedDomains": ["*"]}` here, which anything proxied narrows; `false` as
    nothing allowed."""
    if value is False or value == base:
        return value, None
    if value is True:
        return base, "sandbox.network=true would allow every connection; a workspace may only narrow the network"
    if base is False:
        wider = value.get("allowedDomains") or value.get("askForNewDomains")
        return False, ("sandbox.network allows no connection; a workspace may not allow or ask for domains"
                       if wider else None)
    mine = (NetworkSettings(allowed_domains=["*"]) if base is True else base).model_dump(by_alias=True)
    fields = {info.alias or name: info for name, info in NetworkSettings.model_fields.items()}
    out = dict(mine)
    refused = []
    for key, given in value.items():
        how = narrowing_of(fields[key]) if key in fields else None
        if how is None or how.kind == "never":
            refused.append(f"{key} (only the user's settings set it)")
            continue
        if how.kind == "custom" and how.custom is not None:
            out[key], why = how.custom(given, mine.get(key))
            if why:
                refused.append(why)
            continue
        out[key], wider = how.narrow(given, mine.get(key))
        if wider:
            refused.append(f"{key}=true" if how.kind == "off" else f"{key}={given} (above {mine.get(key)})")
    why = (f"sandbox.network: a workspace may only narrow the network; not taken: {'; '.join(refused)}"
           if refused else None)
    return out, why


NETWORK = Narrowing("custom", custom=_narrow_network)


def _network_form(value: Any) -> str | None:
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, (dict, NetworkSettings)):
        return "<object>"
    return None


# One form or the other, chosen by the value's type: an error then names the one meant.
NetworkValue = Annotated[
    Annotated[bool, Tag("<bool>")] | Annotated[NetworkSettings, Tag("<object>")],
    Discriminator(_network_form, custom_error_type="choice_type",
                  custom_error_message="must be true, false or an object (allowedDomains, deniedDomains, …)"),
]


class SandboxSettings(Section):
    mode: Literal["auto", "bwrap", "landlock", "off", "required"] = setting(
        "auto",
        "auto: the strongest backend that works, else unsandboxed; bwrap / landlock: that backend or refuse; "
        "required: any backend or refuse; off: no sandbox.",
    )
    network: NetworkValue = setting(
        False, "false: sandboxed commands have no network; true: all of it; an object (allowedDomains, "
        "deniedDomains, askForNewDomains, limits): only those names, through codebelt's proxy (bubblewrap only). "
        "WebFetch follows the same lists.", workspace=NETWORK)
    jail: bool = setting(
        True,
        "Run commands judged read-only (which run without asking) in the read-only jail: nothing writable, "
        "no network, only the workspace and system directories visible. It works whatever the mode; off, "
        "only programs whose arguments are all modelled run without asking.",
    )
    allow_unix_sockets: bool = setting(
        False,
        "With the network off, whether sandboxed commands may still create Unix sockets (a path socket "
        "reaches host services such as docker.sock or ssh-agent through the filesystem).",
    )
    auto_allow_bash: bool | None = setting(
        None,
        "Run commands the classifier cannot prove read-only without asking, because the sandbox contains "
        "them (only under a backend that keeps protected paths read-only).",
    )
    limits: LimitsSettings = setting(LimitsSettings(), "Resource limits for sandboxed commands.")
    filesystem: SandboxFilesystemSettings = setting(SandboxFilesystemSettings(), "What sandboxed commands may not read.")


class BashSettings(Section):
    env: Literal["inherit", "clean"] = setting(
        "inherit", "inherit: commands get codebelt's environment; clean: only a minimal set plus envAllow. "
        "Either way, variables that look secret (names with KEY, SECRET, TOKEN, PASSWORD, AUTH …, or "
        "values holding a credential) are removed unless envAllow names them.")
    env_allow: list[str] = setting(
        [], "Variables (names or globs) passed on to commands even when they look secret; under env: "
        "clean, also kept. From the user's own settings (or a workspace they trust).")
    default_timeout_ms: int = setting(120_000, "Timeout of a foreground command when the call gives none.", gt=0, workspace=LOWER)
    max_timeout_ms: int = setting(600_000, "Largest timeout a call may ask for.", gt=0, workspace=LOWER)
    background_timeout_ms: int = setting(600_000, "Timeout of a background command when the call gives none, and how "
                                         "long a foreground command moved there at its timeout may still run (0: none).", ge=0,
                                         workspace=LOWER_OR_0)
    background_tasks: bool = setting(
        True, "Whether commands may run in the background (off in `codebelt call`, whose process ends with the call).", workspace=OFF)
    max_background_timeout_ms: int = setting(7_200_000, "Largest timeout a background command may ask for.", gt=0,
                                             workspace=LOWER)
    auto_background: bool = setting(False, "Move a foreground command still running after autoBackgroundMs to the "
                                    "background, before its timeout.", workspace=OFF)
    auto_background_ms: int = setting(15_000, "How long a foreground command runs before it is moved to the background.", ge=0, workspace=ANY)
    kill_grace_ms: int = setting(2_000, "Between SIGTERM and SIGKILL when a command is stopped.", ge=0, workspace=LOWER)
    max_output_bytes: int = setting(4 << 30, "A command whose output passes this is stopped (0: no limit).", ge=0,
                                    workspace=LOWER_OR_0)
    max_session_output_bytes: int = setting(
        8 << 30, "All the session's command output on disk (foreground and background, kept until the session ends "
        "or shown inline) may total this much; a command writing past it is stopped (0: no limit).", ge=0,
        workspace=LOWER_OR_0)
    interactive_idle_timeout_ms: int = setting(
        3_600_000, "A process that takes input (a background task on a terminal, a Codex exec session) is "
        "stopped when nothing was written to it or read from it this long (0: never).", ge=0, workspace=LOWER_OR_0)
    max_interactive: int = setting(64, "Processes that take input running at once in a session.", gt=0, workspace=LOWER)


class SearchSettings(Section):
    ripgrep_path: str | None = setting(None, "The rg binary to run instead of the bundled one.")
    use_system_ripgrep: bool = setting(False, "Use the rg found on PATH instead of the bundled one.")
    timeout_ms: int = setting(20_000, "Timeout of one ripgrep run (Glob and Grep).", gt=0, workspace=LOWER)
    exclude: Globs = setting([], "Globs Glob and Grep always leave out.", workspace=ADD)


class GrepSettings(Section):
    timeout_ms: int | None = setting(None, "Timeout of one Grep; default search.timeoutMs.", gt=0,
                                     workspace=Narrowing("lower", fallback="search.timeoutMs"))
    head_limit: int = setting(250, "Entries Grep returns when the call gives no head_limit (0: all).", ge=0,
                              workspace=LOWER_OR_0)
    max_result_chars: int = setting(20_000, "Largest Grep result, in characters.", gt=0, workspace=LOWER)
    max_columns: int = setting(500, "Longer matching lines are clipped to this many characters.", gt=0, workspace=LOWER)
    include_hidden: bool = setting(True, "Search hidden files and directories.", workspace=ANY)
    include_ignored: bool = setting(False, "Search files that .gitignore / .ignore rules leave out.", workspace=ANY)
    exclude: Globs = setting([], "Globs Grep always leaves out.", workspace=ADD)


class GlobSettings(Section):
    timeout_ms: int | None = setting(None, "Timeout of one Glob; default search.timeoutMs.", gt=0,
                                     workspace=Narrowing("lower", fallback="search.timeoutMs"))
    max_results: int = setting(100, "Paths Glob returns at most.", gt=0, workspace=LOWER)
    include_hidden: bool = setting(True, "List hidden files and directories.", workspace=ANY)
    include_ignored: bool = setting(False, "List files that .gitignore / .ignore rules leave out.", workspace=ANY)
    exclude: Globs = setting([], "Globs Glob always leaves out.", workspace=ADD)


class ReadSettings(Section):
    max_tokens: int = setting(25_000, "Largest text page Read returns, in tokens (about 4 characters each).", gt=0, workspace=LOWER)
    max_image_edge: int = setting(2000, "Images are scaled down to at most this many pixels on their longer edge (as Claude Code).", gt=0, workspace=LOWER)
    max_image_pixels: int = setting(4_000_000, "…and to at most this many pixels in all.", gt=0, workspace=LOWER)


class EditSettings(Section):
    max_file_mb: int = setting(256, "Largest file an Edit or MultiEdit may produce, in MB (checked before writing).",
                               gt=0, alias="maxFileMB", workspace=LOWER)


class CompatSettings(Section):
    profile: Literal["claude-code", "claude-code-1.0", "codex"] = setting(
        "claude-code", "Whose tools and texts a session offers, each as its program words them (result and error "
        "texts, tool descriptions), as recorded from the real program: `claude-code` (Read, Edit, Bash …, Claude "
        "Code's current release), `claude-code-1.0` (its last 1.0 release, 1.0.128: Read's padded number and "
        "arrow, BashOutput and KillShell, no TaskStop) or `codex` (exec_command, write_stdin, apply_patch, "
        "view_image, update_plan).", workspace=ANY)


class IntelSettings(Section):
    diagnostics: bool = setting(True, "After Edit, MultiEdit, Write and ApplyPatch, report the problems the change introduced.", workspace=OFF)
    diagnostics_wait_ms: int = setting(2_000, "How long a language server may take to report those problems.", ge=0, le=10_000, workspace=LOWER)
    max_files: int = setting(20_000, "Most files the code index reads (it says so when it stops there).", gt=0, workspace=LOWER)
    cache_dir: str | None = setting(None, "Where code indexes are kept (default: $XDG_CACHE_HOME/codebelt/intel).")
    start_with_session: bool = setting(
        True, "At session start, bring the code index up to date and start the language servers of the "
        "languages the workspace holds, in the background (calls never wait for them).", workspace=OFF)


class LspServerModel(BaseModel):
    """One language server: codebelt's shape, or Claude Code's `.lsp.json` shape
    (`extensionToLanguage`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)  # Claude Code's plugins carry more keys

    command: str = Field(min_length=1, description="The server program")
    args: list[str] = Field([], description="Its arguments, e.g. [\"--stdio\"]")
    extensions: list[str] = Field([], description="File extensions it serves, e.g. [\".py\"]")
    extension_to_language: dict[str, str] = Field({}, alias="extensionToLanguage",
                                                  description="Claude Code's shape: {\".py\": \"python\"}")
    env: dict[str, str] = Field({}, description="Extra environment variables")
    initialization_options: dict[str, Any] | None = Field(None, alias="initializationOptions")
    settings: dict[str, Any] = Field({}, description="Answers to the server's workspace/configuration requests")

    @model_validator(mode="after")
    def _serves_something(self) -> "LspServerModel":
        if not self.extensions and not self.extension_to_language:
            raise ValueError("a language server needs `extensions` (or `extensionToLanguage`)")
        return self


class LspSettings(Section):
    enabled: bool = setting(True, "Ask language servers (precise answers, diagnostics after edits); off: tree-sitter only.",
                            workspace=OFF)
    servers: dict[str, LspServerModel] = setting(
        {}, "Language servers by name: {command, args, extensions} or Claude Code's .lsp.json shape. Programs: "
        "only from the user's settings."
    )
    auto_detect: bool = setting(True, "Use basedpyright-langserver and typescript-language-server when installed.",
                                workspace=OFF)
    request_timeout_ms: int = setting(5_000, "Longest wait for one answer from a language server (then it is "
                                      "cancelled and tree-sitter answers).", gt=0, le=120_000, workspace=LOWER)
    start_timeout_ms: int = setting(30_000, "Longest wait for a language server to start.", gt=0, le=300_000,
                                    workspace=LOWER)


class CheckpointsSettings(Section):
    enabled: bool = setting(
        True, "Keep a checkpoint before every call that may change the workspace (file tools and Bash commands "
        "that are not read-only), so it can be rewound (Session.rewind, `codebelt rewind`).")
    directory: str | None = setting(None, "Where checkpoints are kept (default: $XDG_STATE_HOME/codebelt/checkpoints).")
    max_store_mb: int = setting(2048, "Most content the checkpoint store keeps, in MB (oldest checkpoints go first).",
                                gt=0, alias="maxStoreMB", workspace=LOWER)
    max_age_days: float = setting(7, "Checkpoints older than this are removed.", gt=0, workspace=LOWER)
    max_file_mb: int = setting(64, "Larger files are recorded as not kept (a rewind says so).", gt=0,
                               alias="maxFileMB", workspace=LOWER)
    max_call_mb: int = setting(1024, "Most new content one call's checkpoint may keep, in MB; past it the rest is "
                               "recorded as not kept.", gt=0, alias="maxCallMB", workspace=LOWER)
    max_files: int = setting(500_000, "Largest tree (files and directories in the writable roots) whose Bash changes "
                             "are tracked; past it they are not recorded, and each checkpoint says so.", gt=0, workspace=LOWER)
    model_tool: bool = setting(False, "Give the model the Checkpoints tool (list, rewind, undo). A person's feature "
                               "first: off unless the user turns it on.")
    exclude: Globs = setting(
        ["node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
         "target", "dist", "build", ".next", ".gradle", ".parcel-cache", ".turbo"],
        "Directories whose contents Bash checkpoints do not keep (a name, or a path below the root when it has a "
        "`/`), unless git tracks files in them: what a command changes there is said (\"not kept, excluded\", with "
        "a count), not kept. Regenerable trees: packages, virtual environments, build output.", workspace=ADD)
    git_objects: bool = setting(
        True, "In a git repository, record a tracked file whose stat matches git's index by its blob id instead of "
        "copying it (read back from the repository, verified, when a call changes it). Off: copy every file — for a "
        "repository whose .git someone else may have written.", workspace=OFF)
    baseline_at_start: bool = setting(
        True, "Begin the baseline Bash checkpoints need when the session starts, in the background at a lower "
        "priority (off: on the first writing command). `codebelt call` never does: a read-only call pays nothing.",
        workspace=ANY)


HOOK_EVENTS = (
    "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
    "SessionStart", "SessionEnd", "Notification", "CwdChanged",
)
PLAIN_MATCHER = re.compile(r"^[A-Za-z0-9_|]*$")


class HandlerModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)  # Claude Code adds fields over time

    type: Literal["command", "http"]
    command: str | None = None
    url: str | None = None
    timeout: float | None = Field(None, gt=0, le=24 * 3600, description="Seconds before the hook is ended")
    if_: str | None = Field(None, alias="if", description="One permission rule the call must match, e.g. Bash(git *)")
    headers: dict[str, str] | None = None

    @model_validator(mode="after")
    def _target(self) -> "HandlerModel":
        if self.type == "command" and not (self.command and self.command.strip()):
            raise ValueError("a command hook needs a non-empty `command`")
        if self.type == "http" and not self.url:
            raise ValueError("an http hook needs a `url`")
        return self


class MatcherGroupModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    matcher: str | None = None
    hooks: list[HandlerModel]

    @field_validator("matcher")
    @classmethod
    def _valid_matcher(cls, value: str | None) -> str | None:
        if value and not PLAIN_MATCHER.match(value) and value != "*":
            from ..linear_regex import RegexError, compile

            try:
                compile(value)
            except RegexError as e:
                raise ValueError(f"matcher {value!r}: {e}") from None
        return value





HookEvent = Literal[
    "PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
    "SessionStart", "SessionEnd", "Notification", "CwdChanged",
]


class SettingsModel(Section):
    """A settings file, and the merged settings of a session."""

    schema_: str | None = Field(None, alias="$schema", description="The JSON Schema this file follows (for editors).",
                                json_schema_extra=ANY)
    permissions: PermissionsSettings = setting(PermissionsSettings(), "Permission rules, the mode, extra directories.")
    sandbox: SandboxSettings = setting(SandboxSettings(), "The OS sandbox for Bash commands.")
    bash: BashSettings = setting(BashSettings(), "Running shell commands.")
    search: SearchSettings = setting(SearchSettings(), "Glob and Grep (ripgrep).")
    grep: GrepSettings = setting(GrepSettings(), "Grep.")
    glob: GlobSettings = setting(GlobSettings(), "Glob.")
    read: ReadSettings = setting(ReadSettings(), "Read.")
    edit: EditSettings = setting(EditSettings(), "Edit and MultiEdit.")
    compat: CompatSettings = setting(CompatSettings(), "Which program's tool set and texts a session offers.")
    intel: IntelSettings = setting(IntelSettings(), "Code intelligence: the LSP and RepoMap tools, diagnostics after edits.")
    lsp: LspSettings = setting(LspSettings(), "Language servers behind the LSP tool and diagnostics.")
    checkpoints: CheckpointsSettings = setting(CheckpointsSettings(), "Checkpoints before calls that may write, and rewind.")
    hooks: dict[HookEvent, list[MatcherGroupModel]] = setting(
        {}, "Claude Code's hooks: programs run around tool calls. A workspace's own hooks run only in a "
        "trusted workspace.")
    disable_all_hooks: bool = setting(False, "Run no hooks at all.")
    trusted_workspaces: list[str] = setting(
        [], "Workspace roots (absolute paths, each matched exactly by its real path) whose own settings files are "
        "honoured in full: allow rules, modes, hooks, program paths. Only the user's settings can trust a workspace.",
        workspace=NEVER,
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a settings file (publishable for editors)."""
    schema = SettingsModel.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "codebelt settings"
    return schema
