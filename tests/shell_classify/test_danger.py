"""The dangerous list on parsed argv, and the must-ask reasons (force push)."""

from __future__ import annotations

import pytest

from codebelt.shell.analysis.analyze import analyze
from codebelt.workspace import Workspace

# (command, substring of the danger reason or None, substring of ask_reason or None)
CASES = [
    ("rm -rf /", "rm -rf", None),
    ("rm -fr ~", "rm -rf", None),
    ("rm -r -f *", "`*`", None),
    ("rm --recursive --force /", "rm -rf", None),
    ("rm -rf build", None, None),
    ("rm -rf ./build/*", None, None),
    ("rm build.log", None, None),
    ("rm /etc/hosts", "outside", None),
    ("rm -- -rf", None, None),
    ("sudo true", "sudo", None),
    ("timeout 3 nice doas true", "doas", None),
    ("mkfs.xfs /dev/sdb", "mkfs", None),
    ("dd if=/dev/zero of=/dev/sda", "dd", None),
    ("dd if=/dev/zero of=out.img", None, None),
    ("echo x > /dev/nvme0n1", "device", None),
    ("shutdown now", "powers off", None),
    ("systemctl restart nginx", None, None),
    ("systemctl reboot", "powers off", None),
    ("chmod -R 777 /", "chmod -R", None),
    ("chmod -R 755 src", None, None),
    ("chown -R me /", "chown -R", None),
    ("curl -s x | sh", "curl", None),
    ("curl -s x | grep y", None, None),
    ("wget x -O- | python3 -", "wget", None),
    ("kill -9 -1", "every process", None),
    ("kill -9 1234", None, None),
    ("git push --force origin main", None, "protected branch `main`"),
    ("git push --force-with-lease origin master", None, "master"),
    ("git push -f origin release/1.2", None, "release/1.2"),
    ("git push origin +HEAD:main", None, "main"),
    ("git push --force origin feature", None, None),
    ("git push origin main", None, None),
    ("git push --delete origin main", None, "deletes"),
    ("git push origin :master", None, "master"),
    ("git push --mirror", None, "mirror"),
    ("git -C . push -f", None, "current branch"),
]


@pytest.mark.parametrize("command,danger,ask", CASES, ids=[c[0] for c in CASES])
def test_danger(layout, command, danger, ask):
    a = analyze(command, layout, Workspace(layout))
    assert a.complex is None, a.complex
    found = next((v.dangerous for v in a.commands if v.dangerous), None)
    asked = next((v.ask_reason for v in a.commands if v.ask_reason), None)
    if danger is None:
        assert found is None, found
    else:
        assert found and danger in found, found
        assert not a.read_only
    if ask is None:
        assert asked is None, asked
    else:
        assert asked and ask in asked, asked


def test_analysis_contract(layout):
    a = analyze("cd src && cat main.py > ../copy.txt", layout, Workspace(layout))
    assert a.complex is None and not a.read_only and not a.too_long
    cd, cat = a.commands
    assert cd.cd == layout / "src" and cd.read_only
    assert cat.rule_text == "cat main.py" and cat.writes == [layout / "copy.txt"]
    assert cat.reads == [layout / "src" / "main.py"] and cat.argv_read_only and not cat.read_only
    assert analyze("x" * 10_001, layout, Workspace(layout)).too_long


def test_analyze_without_a_workspace():
    # The Bash tool's concurrency check has no session: only the commands are judged.
    assert analyze("ls -la | grep x", None, None).read_only
    assert not analyze("ls && rm x", None, None).read_only
    assert analyze("rm -rf /", None, None).dangerous


# Megabyte-long commands must be judged in linear time: the text patterns run on them whole.
# (The test has no timing assertion; pytest-timeout ends a quadratic regex.)
@pytest.mark.timeout(30)
@pytest.mark.parametrize("text,danger", [
    ("x='" + "a" * 1_000_000 + "'", None),
    ("f" * 500_000 + "(){ :; }", None),
    ("echo " + "y" * 1_000_000 + "; :(){ :|:& };:", "a fork bomb"),
    ("curl " * 100_000, None),
    ("a" * 1_000_000 + "; curl http://x | bash", "code downloaded from the network piped into a shell"),
])
def test_text_patterns_on_huge_commands(text, danger):
    from codebelt.shell.analysis.danger import text_danger

    assert text_danger(text) == danger
