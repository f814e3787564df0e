"""The user's credential files never reach the model through a command that runs unasked: in the
read-only jail (with the home directory visible, `--root ~`) and auto-allowed in the write
sandbox, every path of the table is masked, and git's global configuration is shown without
its tokens. A command a person approved still sees them (it may be the `git push` that needs
them). Checked by effect, per path of the table, with a planted secret."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.sandbox.credentials import CREDENTIAL_FILES, GITCONFIG_FILES

from ..sandbox.conftest import backend_unusable, spawn, write_sandbox

GITCONFIG = """[user]
\tname = Ada Example
\temail = ada@example.org
[url "https://ghp_GITTOKEN111@github.com/"]
\tinsteadOf = https://github.com/
[credential]
\thelper = "!f() { echo password=GITTOKEN222; }; f"
[http "https://git.example.org/"]
\textraHeader = Authorization: Bearer GITTOKEN333
[github]
\ttoken = GITTOKEN444
[alias]
\tst = status
\tpublish = !curl -H 'PRIVATE-TOKEN: GITTOKEN555' https://x
[remote "origin"]
\turl = https://user:GITTOKEN666@example.org/r.git
[include]
\tpath = ~/.gitsecret
"""


def _secret(entry: str) -> str:
    return "SECRET-" + entry.replace("/", "_").replace(":", "_").replace(".", "")


def _plant(h: Path) -> None:
    xdg = h / ".config"
    for entry, _ in CREDENTIAL_FILES:
        p = xdg / entry[4:] if entry.startswith("xdg:") else h / entry
        if p.suffix or "." in p.name[1:] or entry.endswith(("credentials", "token", "config", "hosts.yml")) \
                or p.name in (".netrc", ".npmrc", ".pypirc", ".pgpass", ".my.cnf", ".s3cfg", ".boto",
                              ".git-credentials", ".vault-token"):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(_secret(entry) + "\n")
        else:  # a directory of secrets
            p.mkdir(parents=True, exist_ok=True)
            (p / "secret").write_text(_secret(entry) + "\n")
    (h / ".gitconfig").write_text(GITCONFIG)
    (h / ".gitsecret").write_text("[credential]\n\thelper = store\n")
    (h / "project").mkdir()
    (h / "project" / "a.txt").write_text("plain\n")


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """A home directory holding every credential file of the table (a directory entry holds a
    file), and a git configuration with tokens."""
    h = tmp_path / "home"
    _plant(h)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return h


@pytest.fixture(scope="module", params=["bwrap", "landlock"])
def jail_at_home(request, tmp_path_factory):
    """One jail per backend over a planted home directory as the workspace (`--root ~`)."""
    if backend_unusable(request.param):
        pytest.skip(f"{request.param} cannot work here")
    base = tmp_path_factory.mktemp("credjail")
    h = base / "home"
    _plant(h)
    (base / "t").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(h))
        mp.delenv("XDG_CONFIG_HOME", raising=False)
        sb = Sandbox(SandboxConfig((h.resolve(),), base / "t", mode=request.param, name="codebelt-test"))
        try:
            if sb.jail.backend != request.param:
                pytest.skip(f"no {request.param} jail here: {sb.jail.reason}")
            yield h, sb.jail_wrapper([])
        finally:
            sb.close()


@pytest.mark.parametrize("entry", [e for e, _ in CREDENTIAL_FILES])
def test_each_credential_file_is_masked_in_the_jail(entry, jail_at_home, monkeypatch):
    h, wrap = jail_at_home
    monkeypatch.setenv("HOME", str(h))  # the masks are found as the command starts
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    p = h / ".config" / entry[4:] if entry.startswith("xdg:") else h / entry
    target = p / "secret" if p.is_dir() else p
    out = _run(wrap, f"cat '{target}'; ls -la '{p}'; grep -r SECRET '{p.parent}' 2>/dev/null", h)
    assert _secret(entry) not in out, out


def _cat_all(home: Path) -> str:
    """A command reading every credential path (files, and everything in directories)."""
    paths = []
    for entry, _ in CREDENTIAL_FILES:
        p = home / ".config" / entry[4:] if entry.startswith("xdg:") else home / entry
        paths.append(str(p / "secret") if p.is_dir() else str(p))
    return "for f in " + " ".join(f"'{p}'" for p in paths) + "; do cat \"$f\" 2>/dev/null; done; " \
        "cat ~/.gitconfig 2>/dev/null; git config --global -l 2>&1; git config --get credential.helper; true"


def _run(wrap, command: str, cwd: Path) -> str:
    argv, env, preexec, *cleanup = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ))
    try:
        return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              start_new_session=True).stdout
    finally:
        for done in cleanup:
            done()


def _sandboxed(wrap, command: str, cwd: Path) -> str:
    """A write sandbox command, started as the Bash runner starts it (resident or one-shot)."""
    return spawn(wrap(["/bin/bash", "-c", command], cwd, dict(os.environ)), cwd).stdout


def _leaks(out: str) -> list[str]:
    found = [e for e, _ in CREDENTIAL_FILES if _secret(e) in out]
    return found + [f"gitconfig:{t}" for t in ("GITTOKEN111", "GITTOKEN222", "GITTOKEN333", "GITTOKEN444",
                                               "GITTOKEN555", "GITTOKEN666") if t in out]


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_the_jail_masks_every_credential_file_of_a_visible_home(backend, home, tmp_path):
    """`--root ~`: the home directory is the workspace, so everything in it is visible to the
    jail but the masked paths."""
    if backend_unusable(backend):
        pytest.skip(f"{backend} cannot work here")
    tmpd = tmp_path / "t"
    tmpd.mkdir()
    sb = Sandbox(SandboxConfig((home.resolve(),), tmpd, mode=backend, name="codebelt-test"))
    try:
        if sb.jail.backend != backend:
            pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
        out = _run(sb.jail_wrapper([]), _cat_all(home), home)
        assert not _leaks(out), (_leaks(out), out[-3000:])
        assert _run(sb.jail_wrapper([]), "cat project/a.txt", home).strip() == "plain"
    finally:
        sb.close()


@pytest.mark.parametrize("how", ["bwrap", "bwrap-one-shot"])
def test_unasked_sandbox_commands_see_no_credential_and_a_filtered_gitconfig(how, home, tmp_path, monkeypatch):
    write_sandbox(how, monkeypatch)  # sandboxed auto-allow needs bwrap
    ws = home / "project"
    tmpd = tmp_path / "t"
    tmpd.mkdir()
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd, mode="bwrap", name="codebelt-test"))
    try:
        out = _sandboxed(sb.wrapper(lambda: [], unasked=True), _cat_all(home), ws)
        assert not _leaks(out), (_leaks(out), out[-3000:])
        # git still knows who commits, and its harmless settings
        ident = _sandboxed(sb.wrapper(lambda: [], unasked=True),
                           "git config --global user.name; git config --global alias.st", ws)
        assert ident.split("\n")[:2] == ["Ada Example", "status"], ident
        # an approved command sees them: the person approved it (a push needs them)
        approved = _sandboxed(sb.wrapper(lambda: []), "cat ~/.git-credentials; git config --global github.token", ws)
        assert _secret(".git-credentials") in approved and "GITTOKEN444" in approved, approved
    finally:
        sb.close()
    assert (home / ".gitconfig").read_text() == GITCONFIG  # the original, untouched


@pytest.mark.parametrize("how", ["bwrap", "bwrap-one-shot"])
def test_a_linked_gitconfig_is_shown_filtered(how, home, tmp_path, monkeypatch):
    """~/.gitconfig a link to a dotfiles repository: masked at its target, and the filtered copy
    shown there (the command starts, git still knows who commits, no token)."""
    write_sandbox(how, monkeypatch)
    (home / "dotfiles").mkdir()
    (home / ".gitconfig").rename(home / "dotfiles" / "gitconfig")
    (home / ".gitconfig").symlink_to(home / "dotfiles" / "gitconfig")
    ws = home / "project"
    tmpd = tmp_path / "t"
    tmpd.mkdir()
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd, mode="bwrap", name="codebelt-test"))
    try:
        out = _sandboxed(sb.wrapper(lambda: [], unasked=True),
                         "git config --global user.name; cat ~/dotfiles/gitconfig ~/.gitconfig", ws)
    finally:
        sb.close()
    assert out.startswith("Ada Example\n") and not _leaks(out), out


@pytest.mark.parametrize("how", ["bwrap", "bwrap-one-shot"])
def test_the_filtered_copy_follows_the_original_and_nothing_else(how, home, tmp_path, monkeypatch):
    """The copy is written when its text changed, not for every command (a rename over it costs a
    flush), and whatever else changed it — in place, or by putting a link there — is undone
    before the next command sees it."""
    write_sandbox(how, monkeypatch)
    ws = home / "project"
    tmpd = tmp_path / "t"
    tmpd.mkdir()
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd, mode="bwrap", name="codebelt-test"))

    def name() -> str:
        return _sandboxed(sb.wrapper(lambda: [], unasked=True), "git config --global user.name", ws).strip()

    try:
        assert name() == "Ada Example"
        copy = sb._private / "gitconfig-0"
        first = copy.stat().st_ino
        assert name() == "Ada Example" and copy.stat().st_ino == first  # unchanged: not written again
        (home / ".gitconfig").write_text(GITCONFIG.replace("Ada Example", "Bea Example"))
        assert name() == "Bea Example"  # the original changed: so does the copy
        text = copy.read_text()
        with open(copy, "r+") as f:  # rewritten in place, same size
            f.write(text.replace("Bea Example", "Mal Example"))
        assert name() == "Bea Example"
        elsewhere = tmp_path / "planted"
        elsewhere.write_text(text)  # the very text, where another may change it later
        copy.unlink()
        copy.symlink_to(elsewhere)
        assert name() == "Bea Example" and not copy.is_symlink()
    finally:
        sb.close()


@pytest.mark.parametrize("how", ["bwrap", "bwrap-one-shot"])
def test_a_denied_directory_above_the_gitconfig_hides_it(how, home, tmp_path, monkeypatch):
    """`Read(~/.config/**)` with git's configuration in ~/.config/git: no filtered copy is shown
    through the deny rule, and the command still runs."""
    write_sandbox(how, monkeypatch)
    (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").rename(home / ".config" / "git" / "config")
    ws = home / "project"
    tmpd = tmp_path / "t"
    tmpd.mkdir()
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd, mode="bwrap", name="codebelt-test"))
    try:
        out = _sandboxed(sb.wrapper(lambda: [home / ".config"], unasked=True),
                         "git config --global user.name; cat ~/.config/git/config; echo ran", ws)
    finally:
        sb.close()
    assert out.strip().endswith("ran") and "Ada" not in out and not _leaks(out), out


@pytest.mark.parametrize("how", ["bwrap", "bwrap-one-shot"])
def test_through_a_session_auto_allowed_in_the_sandbox(how, home, make_session, monkeypatch):
    write_sandbox(how, monkeypatch)  # sandboxed auto-allow needs bwrap
    s = make_session(home / "project", settings={"sandbox": {"mode": "bwrap", "autoAllowBash": True}})
    command = ("touch made.txt && python3 -c \"import os,subprocess; h=os.path.expanduser('~')\n"
               "for p in ('.git-'+'credentials', '.ne'+'trc', '.ss'+'h/secret'):\n"
               "  try: print(open(os.path.join(h, p)).read())\n"
               "  except OSError as e: print(e)\n"
               "print(subprocess.run(['git','config','--global','-l'], capture_output=True, text=True).stdout)\"")
    result = s.call("Bash", {"command": command})
    assert "Permission to use Bash" not in result.text, result.text
    assert (home / "project" / "made.txt").exists()  # it ran in the write sandbox, unasked
    assert "user.name=Ada Example" in result.text, result.text
    assert not _leaks(result.text), result.text


def test_every_gitconfig_location_is_in_the_table():
    assert ".gitconfig" in GITCONFIG_FILES and "xdg:git/config" in GITCONFIG_FILES


@pytest.mark.parametrize("xdg", [None, "set"])
def test_the_table_is_looked_up_in_the_home_and_xdg_directories(home, monkeypatch, xdg):
    """Every planted entry is found, each once and in the table's order (masks are mounted in
    it); none with no home to look in."""
    from codebelt.sandbox.credentials import credential_paths

    if xdg:
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    expected = [home / ".config" / e[4:] if e.startswith("xdg:") else home / e
                for e in (*(e for e, _ in CREDENTIAL_FILES), *GITCONFIG_FILES)]
    assert all(os.path.lexists(p) for p in expected[:len(CREDENTIAL_FILES)])  # control: all planted
    assert credential_paths() == list(dict.fromkeys(p for p in expected if os.path.lexists(p)))
    for nowhere in ("/", ""):
        monkeypatch.setenv("HOME", nowhere)
        assert credential_paths() == []


# A credential file reached through a linked directory (a dotfiles manager folds `~/.aws` into
# one link), the link's target in the workspace: the jail shows the workspace, not the home, so
# the file is visible there at its real path alone. name -> (the home's link, the real directory
# in the workspace, the file inside, its table entry)
FOLDED = {
    "a credential directory": (".aws", "dotfiles/aws", "credentials", ".aws/credentials"),
    "a directory holding one": (".docker", "dotfiles/docker", "config.json", ".docker/config.json"),
    "the XDG directory": (".config", "dotfiles/config", "gh/hosts.yml", "xdg:gh/hosts.yml"),
    "a directory of secrets": (".ssh", "dotfiles/ssh", "id_ed25519", ".ssh"),
}


@pytest.mark.parametrize("name", sorted(FOLDED))
@pytest.mark.parametrize("how", ["jail", "jail-one-shot", "jail-landlock", "sandbox", "sandbox-one-shot"])
def test_a_credential_file_through_a_linked_directory_into_the_workspace_is_masked(name, how, tmp_path, monkeypatch):
    from ..sandbox.conftest import jailed

    backend = "landlock" if how == "jail-landlock" else "bwrap"
    if how.startswith("sandbox"):
        write_sandbox("bwrap-one-shot" if how.endswith("one-shot") else "bwrap", monkeypatch)
    elif backend_unusable(backend):
        pytest.skip(f"{backend} cannot work here")
    link, real, inner, entry = FOLDED[name]
    home, ws, tmpd = tmp_path / "home", tmp_path / "ws", tmp_path / "t"
    for d in (home, ws / real / os.path.dirname(inner), tmpd):
        d.mkdir(parents=True, exist_ok=True)
    (ws / real / inner).write_text(_secret(entry) + "\n")
    (ws / "plain.txt").write_text("plain\n")
    (home / link).symlink_to(ws / real)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    sb = Sandbox(SandboxConfig((ws.resolve(),), tmpd, mode=backend, name="codebelt-test"))
    try:
        command = f"cat plain.txt {real}/{inner}; grep -r SECRET . 2>/dev/null; true"
        if how.startswith("sandbox"):
            out = _sandboxed(sb.wrapper(lambda: [], unasked=True), command, ws)
        else:
            if sb.jail.backend != backend:
                pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
            sb.one_shot = how == "jail-one-shot"
            out = jailed(sb, command, ws).stdout
    finally:
        sb.close()
    assert out.startswith("plain\n"), out  # the command ran and read the workspace
    assert _secret(entry) not in out, out
