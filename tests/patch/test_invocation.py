"""Which shell commands are apply_patch invocations (intercepted) and which are not: one table."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codebelt.shell.analysis.patch_call import PatchInvocation, find_invocation

P = "*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch"
HD = f"<<'EOF'\n{P}\nEOF"


def heredoc(prefix: str = "", suffix: str = "", start: str = "<<'EOF'", name: str = "apply_patch") -> str:
    return f"{prefix}{name} {start}\n{P}\nEOF{suffix}"


# (command, expected patch or None, expected workdir)
CASES = [
    # --- intercepted -------------------------------------------------------------------------
    (heredoc(), P + "\n", None),
    (heredoc() + "\n", P + "\n", None),
    (heredoc(name="applypatch"), P + "\n", None),
    (heredoc(start="<<EOF"), P + "\n", None),
    (heredoc(start='<<"EOF"'), P + "\n", None),
    (heredoc(prefix="cd foo && "), P + "\n", "foo"),
    (heredoc(prefix="cd 'foo bar' && "), P + "\n", "foo bar"),
    (heredoc(prefix='cd "foo bar" && '), P + "\n", "foo bar"),
    (heredoc(prefix="cd src/pkg && "), P + "\n", "src/pkg"),
    (f"apply_patch '{P}'", P, None),
    (f'apply_patch "{P}"', P, None),
    (f"applypatch '{P}'", P, None),
    (f"cd sub && apply_patch '{P}'", P, "sub"),
    ("bash -lc " + "'" + heredoc(start="<<EOF") + "'", P + "\n", None),
    ("bash -c " + "'" + heredoc(start="<<EOF") + "'", P + "\n", None),
    ("bash -l -c " + "'" + heredoc(start="<<EOF") + "'", P + "\n", None),
    ("/bin/bash -lc " + "'" + heredoc(start="<<EOF") + "'", P + "\n", None),
    ("sh -c " + "'" + heredoc(start='<<"EOF"') + "'", P + "\n", None),
    ("zsh -lc " + "'" + heredoc(start="<<EOF") + "'", P + "\n", None),
    ('bash -lc "' + heredoc(prefix="cd foo && ") + '"', P + "\n", "foo"),
    ('bash -c "' + heredoc(prefix="cd foo && ") + '"', P + "\n", "foo"),
    ("bash -lc " + "'" + heredoc(prefix="cd foo && ", start="<<EOF") + "'", P + "\n", "foo"),
    ("bash -lc " + "'" + heredoc(prefix='cd "a b" && ', start="<<EOF") + "'", P + "\n", "a b"),
    # double-quoted script: \" and \\ and \$ are unescaped by bash before the inner shell sees them
    ('bash -lc "apply_patch \\"*** Begin Patch\n*** Add File: a\n+say \\\\\\"hi\\\\\\" \\\\\\$HOME\n*** End Patch\\""',
     '*** Begin Patch\n*** Add File: a\n+say "hi" $HOME\n*** End Patch', None),
    # unquoted heredoc: \$ is an escaped dollar, other backslashes stay
    ("apply_patch <<EOF\n*** Begin Patch\n*** Add File: r\n+cost \\$5 \\d+\n*** End Patch\nEOF",
     "*** Begin Patch\n*** Add File: r\n+cost $5 \\d+\n*** End Patch\n", None),
    # quoted heredoc: everything literal
    ("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: r\n+$HOME `x` \\$\n*** End Patch\nEOF",
     "*** Begin Patch\n*** Add File: r\n+$HOME `x` \\$\n*** End Patch\n", None),
    # <<- strips leading tabs
    ("apply_patch <<-EOF\n\t*** Begin Patch\n\t*** Add File: t\n\t+x\n\t*** End Patch\n\tEOF",
     "*** Begin Patch\n*** Add File: t\n+x\n*** End Patch\n", None),
    # a different delimiter
    ("apply_patch <<'PATCH'\n" + P + "\nPATCH", P + "\n", None),

    # --- not intercepted -------------------------------------------------------------------------
    (heredoc(prefix="echo x; "), None, None),
    (heredoc(prefix="echo foo && "), None, None),
    (heredoc(prefix="cd foo; "), None, None),
    (heredoc(prefix="cd bar || "), None, None),
    (heredoc(prefix="cd bar | "), None, None),
    (heredoc(prefix="cd foo && cd bar && "), None, None),
    (heredoc(prefix="cd foo bar && "), None, None),
    (heredoc(prefix="cd $HOME && "), None, None),
    (heredoc(prefix='cd "$DIR" && '), None, None),
    (heredoc(prefix="cd $(pwd) && "), None, None),
    (heredoc(prefix="cd ~ && "), None, None),
    (heredoc(prefix="cd - && "), None, None),
    (heredoc(prefix="cd *.d && "), None, None),
    (heredoc(prefix="FOO=1 "), None, None),
    (heredoc(suffix=" && echo done"), None, None),
    (heredoc(suffix="\necho after"), None, None),
    (heredoc(suffix="\n# a comment"), None, None),
    (f"apply_patch foo {HD}", None, None),
    (f"apply_patch {HD} > out.txt", None, None),
    (f"apply_patch {HD} | cat", None, None),
    (f"apply_patch '{P}' > log", None, None),
    (f"apply_patch '{P}' extra", None, None),
    (f'apply_patch "$PATCH"', None, None),
    (f'apply_patch "{P} $(rm -rf x)"', None, None),
    ("apply_patch <<EOF\n*** Begin Patch\n*** Add File: $NAME\n+x\n*** End Patch\nEOF", None, None),
    ("apply_patch <<EOF\n*** Begin Patch\n*** Add File: a\n+$(whoami)\n*** End Patch\nEOF", None, None),
    ("apply_patch", None, None),
    ("apply_patch <<'EOF'\n*** Begin Patch\n", None, None),  # heredoc never closed
    ("./apply_patch " + HD, None, None),
    ("sudo apply_patch " + HD, None, None),
    ("echo apply_patch", None, None),
    ("git apply patch.diff", None, None),
    ("bash -lc 'echo hi; " + heredoc(start="<<EOF") + "'", None, None),
    ("bash -lc " + "'" + heredoc(start="<<EOF") + "' extra", None, None),
    ("bash -x -c " + "'" + heredoc(start="<<EOF") + "'", None, None),
    ("python -c " + "'" + heredoc(start="<<EOF") + "'", None, None),
    ("bash -lc " + "'" + heredoc() + "'", None, None),  # quotes broken: not one clean script
    ('bash -lc "bash -lc \\"apply_patch x\\""', None, None),  # only one level of shell nesting
    ("bash -lc \"$SCRIPT\"", None, None),
    # the outer double quotes would expand $HOME before the inner shell runs: not intercepted
    ('bash -lc "apply_patch \\"*** Begin Patch\n*** Add File: a\n+\\\\$HOME\n*** End Patch\\""', None, None),
    ("", None, None),
    ("((", None, None),
]


@pytest.mark.parametrize("command, patch, workdir", CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_find_invocation(command, patch, workdir):
    got = find_invocation(command)
    if patch is None:
        assert got is None, got
    else:
        assert got == PatchInvocation(patch=patch, workdir=workdir)


FAKE_APPLY_PATCH = """#!/bin/sh
printf '%s\\0' "$PWD"
if [ $# -gt 0 ]; then printf '%s' "$1"; else cat; fi
"""


@pytest.mark.parametrize("command, patch, workdir", [c for c in CASES if c[1] is not None],
                         ids=[f"{i:02d}" for i, c in enumerate(CASES) if c[1] is not None])
def test_intercepted_commands_mean_the_same_to_bash(command, patch, workdir, tmp_path: Path):
    """What we extract is exactly what a real shell would hand to apply_patch, in the same directory."""
    shell = command.split()[0]
    if shell in ("sh", "zsh", "bash", "/bin/bash") and shutil.which(os.path.basename(shell)) is None:
        pytest.skip(f"{shell} is not installed")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("apply_patch", "applypatch"):
        (bindir / name).write_text(FAKE_APPLY_PATCH)
        (bindir / name).chmod(0o755)
    work = tmp_path / "work"
    (work / (workdir or ".")).mkdir(parents=True, exist_ok=True)
    # A login shell (-l) may reset PATH from /etc/profile; -c runs the same script without that.
    script = command.replace(" -lc ", " -c ").replace(" -l -c ", " -c ")
    proc = subprocess.run(["/bin/bash", "-c", script], cwd=work, capture_output=True, timeout=30,
                          env={**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"})
    assert proc.returncode == 0, proc.stderr
    pwd, _, body = proc.stdout.decode().partition("\0")
    assert body == patch
    assert Path(pwd).resolve() == (work / (workdir or ".")).resolve()
