"""A refusal's suggested rule must really allow the call: the model (or the person reading the
denial) copies it into permissions.allow, and a rule that does not match would only teach them to
reach for bypassPermissions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# (label, path template; EXTRA is the additional directory, protected paths need their own rule)
CASES = [
    ("plain", "src/new.txt"),
    ("glob characters", "src/a[1]*?.txt"),
    ("parentheses", "src/f(1).txt"),
    ("protected", ".git/hooks/pre-commit"),
    ("nested protected", "vendor/.git/config"),
    ("additional dir", "EXTRA/new.txt"),
    ("additional dir protected", "EXTRA/.git/hooks/pre-commit"),
]


@pytest.mark.parametrize("label,template", CASES, ids=[c[0] for c in CASES])
def test_the_suggested_rule_allows_the_call(ws: Path, tmp_path: Path, make_session, label, template):
    extra = tmp_path / "extra"
    extra.mkdir()
    path = template.replace("EXTRA", str(extra))
    settings = {"permissions": {"additionalDirectories": [str(extra)]}}
    call = ("Write", {"file_path": path, "content": "x\n"})
    denied = make_session(mode="default", settings=settings).call(*call)
    assert denied.is_error
    rule = re.search(r"add (Edit\(.*\)) to permissions\.allow", denied.text).group(1)
    settings["permissions"]["allow"] = [rule]
    allowed = make_session(mode="default", settings=settings).call(*call)
    assert not allowed.is_error, (rule, allowed.text)
    target = Path(path) if Path(path).is_absolute() else ws / path
    assert target.read_text() == "x\n"
