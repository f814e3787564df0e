"""Shared fixtures: a fresh workspace and a Session factory that cleans up after itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebelt import Session


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    # User-level settings and the default audit DB must never come from the developer's machine.
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(state / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(state / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(state / "cache"))
    monkeypatch.delenv("CODEBELT_AUDIT_DB", raising=False)
    # `codebelt` run by a test runs in its own process: no resident helper outlives the test
    # (tests/core/test_cli_helper.py turns it on where it is the subject).
    monkeypatch.setenv("CODEBELT_HELPER", "0")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def audit_db(tmp_path: Path) -> Path:
    return tmp_path / "audit.db"


@pytest.fixture
def make_session(ws: Path, audit_db: Path):
    sessions: list[Session] = []

    def factory(root: os.PathLike[str] | str | None = None, **kwargs) -> Session:
        kwargs.setdefault("audit", audit_db)
        kwargs.setdefault("load_user_settings", False)
        # No language server starts behind the edits of tests about other things (each would be a
        # node process per session); tests/intel/lsp/ runs them for real.
        settings = dict(kwargs.get("settings") or {})
        settings.setdefault("lsp", {"autoDetect": False})
        settings.setdefault("intel", {"startWithSession": False})  # nor an index build at every start
        kwargs["settings"] = settings
        s = Session(root=root if root is not None else ws, **kwargs)
        sessions.append(s)
        return s

    yield factory
    for s in sessions:
        s.close()


def pytest_collection_modifyitems(config, items):
    # Under pytest-xdist (`-n 3 --dist loadgroup`) a module's tests that share a module-scoped
    # fixture (a language server, an HTTP server, a built project) run in one worker, so that
    # fixture is built once, as in a serial run, rather than once per worker.
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture(params=["bwrap", "landlock", "unjailed"])
def confined(request):
    """Each way a helper program (ripgrep) can run: in the bwrap or Landlock jail, or unjailed."""
    if request.param != "unjailed":
        from .sandbox.conftest import backend_unusable

        why = backend_unusable(request.param)
        if why:
            pytest.skip(f"{request.param} cannot work here: {why}")
    return request.param
