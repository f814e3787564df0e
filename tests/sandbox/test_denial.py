"""explain_denial wording: which failures are blamed on the sandbox, and which setting is named.

The outputs are the real messages these tools print (the backend tests above produce several of
them live); expected is a phrase the sentence must contain, or None for "not the sandbox".
"""

from __future__ import annotations

import pytest

from codebelt.sandbox import denial

# (id, output tail, exit code, backend, network allowed, expected phrase or None)
CASES = [
    ("erofs", "touch: cannot touch '/etc/x': Read-only file system", 1, "bwrap", False,
     "permissions.additionalDirectories"),
    ("eacces-landlock", "touch: cannot touch '/etc/x': Permission denied", 1, "landlock", False,
     "permissions.additionalDirectories"),
    ("python-erofs", "OSError: [Errno 30] Read-only file system: '/usr/lib/x'", 1, "bwrap", False,
     "sandbox.mode: off"),
    ("protected-bwrap", "bash: .git/hooks/pre-commit: Read-only file system", 1, "bwrap", False,
     ".git/hooks"),
    ("dns", "curl: (6) Could not resolve host: pypi.org", 6, "bwrap", False, "sandbox.network: true"),
    ("pip-dns", "Temporary failure in name resolution", 1, "bwrap", False, "sandbox.network: true"),
    ("unreachable", "connect: Network is unreachable", 1, "bwrap", False, "sandbox.network: true"),
    ("refused-in-netns", "ConnectionRefusedError: [Errno 111] Connection refused", 1, "bwrap", False,
     "sandbox.network: true"),
    ("landlock-connect", "    sock.connect(sa)\nPermissionError: [Errno 13] Permission denied", 1,
     "landlock", False, "sandbox.network: true"),
    ("file-size", "bash: line 1: 42 File size limit exceeded head -c 3000000 /dev/zero > big", 153,
     "landlock", False, "sandbox.limits.fileSizeMB"),
    ("fork", "bash: fork: retry: Resource temporarily unavailable", 254, "bwrap", False,
     "sandbox.limits.processes"),
    ("success", "touch: cannot touch '/etc/x': Read-only file system", 0, "bwrap", False, None),
    ("unrelated-failure", "error: test failed, 3 assertions", 1, "bwrap", False, None),
    ("network-allowed", "curl: (6) Could not resolve host: pypi.org", 6, "bwrap", True, None),
    ("empty-output", "", 1, "bwrap", False, None),
]


@pytest.mark.parametrize("case_id,tail,code,backend,network,expected", CASES, ids=[c[0] for c in CASES])
def test_explain(case_id, tail, code, backend, network, expected):
    message = denial.explain(tail, code, backend=backend, network=network, temp_dir="/tmp/s/tmp")
    if expected is None:
        assert message is None
    else:
        assert message is not None and expected in message, message
        assert f"sandbox ({backend})" in message


def test_protected_paths_are_only_named_for_bwrap():
    tail = "bash: .git/hooks/pre-commit: Permission denied"
    assert ".git/hooks" not in denial.explain(tail, 1, backend="landlock", network=False, temp_dir=None)


# A pipeline's exit status is its last part's: the denial of an earlier part is found from that
# part's status (PIPESTATUS, recorded by the runner) and the output, whatever the last part did.
PIPELINES = [
    ("network, stderr not piped", "python3 -c \"import urllib.request; urllib.request.urlopen('http://example.com', timeout=10)\" | head -c 100",
     "sandbox.network: true"),
    ("read-only, output piped", "python3 -c \"open('/usr/codebelt-denied', 'w')\" 2>&1 | tail -n 3",
     "permissions.additionalDirectories"),
    ("a reader that stops early is no failure", "yes | head -n 1", None),
    ("a denial-looking line of a command that succeeded", "printf 'Permission denied\\n' | cat", None),
]


@pytest.mark.parametrize("command,expected", [c[1:] for c in PIPELINES], ids=[c[0] for c in PIPELINES])
def test_denials_in_any_part_of_a_pipeline(make_session, backend, command, expected):
    s = make_session(sandbox=backend, mode="bypassPermissions")
    r = s.call("Bash", {"command": command})
    assert r.data["exitCode"] == 0  # the command's own status is untouched
    note = r.data.get("sandboxNote")
    if expected is None:
        assert note is None, note
    else:
        assert note and expected in note and expected in r.text, r.text[-1500:]
