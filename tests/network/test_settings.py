"""`sandbox.network`: true, false or an object; the user's, and a workspace's own files may only
narrow it — remove names, deny more, stop asking, lower limits — unless the user trusts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebelt.errors import SettingsError
from codebelt.settings import load_settings

OBJ = {"allowedDomains": ["*.example.com", "pypi.org"], "askForNewDomains": True, "maxMB": 100}

# (the user's value, the workspace's value, the effective value (None: as the user's), a warning?)
CASES = [
    (False, {"allowedDomains": ["pypi.org"]}, False, True),
    (False, {"deniedDomains": ["evil.com"]}, False, False),
    (False, True, False, True),
    (True, False, False, False),
    (True, {"deniedDomains": ["evil.com"]}, {"allowedDomains": ["*"], "deniedDomains": ["evil.com"]}, False),
    (True, {"allowedDomains": ["pypi.org"]}, {"allowedDomains": ["pypi.org"]}, False),
    (OBJ, True, None, True),
    (OBJ, False, False, False),
    (OBJ, {"allowedDomains": ["docs.example.com", "github.com"], "deniedDomains": ["x.example.com"],
           "askForNewDomains": False, "maxMB": 1000},
     {"allowedDomains": ["docs.example.com"], "deniedDomains": ["x.example.com"], "askForNewDomains": False,
      "maxMB": 100}, True),
    (OBJ, {"maxMB": 10, "maxConnections": 5}, {**OBJ, "maxMB": 10, "maxConnections": 5}, False),
    ({"allowedDomains": ["pypi.org"]}, {"askForNewDomains": True}, None, True),
    ({"allowedDomains": ["pypi.org"], "askTimeoutSeconds": 30}, {"askTimeoutSeconds": 600, "maxConnectionSeconds": 60},
     {"askTimeoutSeconds": 30, "maxConnectionSeconds": 60}, True),
    (OBJ, {"deniedDomains": ["*"], "allowedDomains": ["*"]}, {**OBJ, "deniedDomains": ["*"]}, True),
]


def settings_for(tmp_path: Path, monkeypatch, user, workspace, trusted: bool = False):
    cfg = tmp_path / "cfg"
    (cfg / "codebelt").mkdir(parents=True)
    (cfg / "codebelt" / "settings.json").write_text(json.dumps({"sandbox": {"network": user}}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    ws = tmp_path / "ws"
    (ws / ".codebelt").mkdir(parents=True)
    (ws / ".codebelt" / "settings.json").write_text(json.dumps({"sandbox": {"network": workspace}}))
    return load_settings(ws, trust_workspace=trusted)


def effective(value):
    if isinstance(value, bool):
        return value
    return {k: v for k, v in value.model_dump(by_alias=True).items()}


@pytest.mark.parametrize("user,workspace,expected,warned", CASES)
def test_a_workspace_may_only_narrow_the_network(user, workspace, expected, warned, tmp_path, monkeypatch):
    s = settings_for(tmp_path, monkeypatch, user, workspace)
    got = effective(s.sandbox.network)
    want = user if expected is None else expected
    if isinstance(want, dict):
        assert isinstance(got, dict), got
        for key, value in want.items():
            assert got[key] == value, (key, got)
    else:
        assert got == want
    network_warnings = [w for w in s.warnings if "sandbox.network" in w and "ignored sandbox.network" in w]
    assert bool(network_warnings) == warned, s.warnings


def test_a_trusted_workspace_sets_it_as_the_user_would(tmp_path, monkeypatch):
    s = settings_for(tmp_path, monkeypatch, False, {"allowedDomains": ["github.com"]}, trusted=True)
    assert s.sandbox.network.allowed_domains == ["github.com"]


@pytest.mark.parametrize("value,message", [
    ("yes", 'sandbox.network must be true, false or an object'),
    ({"allowedDomains": ["ex*ample.com"]}, "sandbox.network.allowedDomains: 'ex*ample.com' is not a domain entry"),
    ({"allowedDomain": []}, "did you mean sandbox.network.allowedDomains"),
    ({"maxMB": 0}, "sandbox.network.maxMB must be > 0"),
])
def test_bad_values_stop_the_session_naming_the_key(value, message, tmp_path, monkeypatch):
    cfg = tmp_path / "cfg"
    (cfg / "codebelt").mkdir(parents=True)
    (cfg / "codebelt" / "settings.json").write_text(json.dumps({"sandbox": {"network": value}}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    (tmp_path / "ws").mkdir()
    with pytest.raises(SettingsError, match=message.replace("*", r"\*").replace("(", r"\(")):
        load_settings(tmp_path / "ws")


def test_every_network_key_says_how_a_workspace_may_narrow_it():
    """A key added later without a marker would be the user's alone (refused from a workspace);
    every key there is now has its own rule."""
    from codebelt.settings.narrowing import narrowing_of
    from codebelt.settings.schema import NetworkSettings

    kinds = {info.alias or name: getattr(narrowing_of(info), "kind", None)
             for name, info in NetworkSettings.model_fields.items()}
    assert kinds == {"allowedDomains": "custom", "deniedDomains": "add", "askForNewDomains": "off",
                     "askTimeoutSeconds": "lower", "maxConnections": "lower", "maxMB": "lower",
                     "maxConnectionSeconds": "lower"}
