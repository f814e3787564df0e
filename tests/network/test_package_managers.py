"""pip, npm, git and curl inside the sandbox, each against its own kind of local HTTPS server
(a package index, a registry, a repository), through the proxy by the variables it reads
itself: installed when the server's name is allowed, refused when it is not — and the server
then saw nothing."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from .conftest import PYTHON, connections, start_server

ALLOWED = {"allowedDomains": ["allowed.test"]}


def wheel() -> tuple[str, bytes]:
    """A minimal pure-Python wheel of `tinypkg` 1.0."""
    name = "tinypkg-1.0-py3-none-any.whl"
    files = {
        "tinypkg/__init__.py": b"VALUE = 42\n",
        "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("tinypkg-1.0.dist-info/RECORD,,")
    files["tinypkg-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name, buf.getvalue()


def npm_tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, data in {"package/package.json": b'{"name": "tinypkg", "version": "1.0.0", "main": "index.js"}',
                           "package/index.js": b"module.exports = 42;\n"}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def index(pki):
    """A PEP 503 simple index serving tinypkg's wheel."""
    name, data = wheel()
    sha = hashlib.sha256(data).hexdigest()
    page = f'<html><body><a href="/files/{name}#sha256={sha}">{name}</a></body></html>'.encode()
    server, stop = start_server({"/simple/tinypkg/": (page, "text/html"), f"/files/{name}": data}, pki=pki)
    yield server
    stop()


@pytest.fixture
def registry(pki):
    """An npm registry serving tinypkg 1.0.0 (metadata names the tarball by its URL)."""
    tarball = npm_tarball()
    holder: dict[str, bytes] = {}

    def metadata(handler):
        host = handler.headers["Host"]
        doc = {"name": "tinypkg", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
            "name": "tinypkg", "version": "1.0.0",
            "dist": {"tarball": f"https://{host}/tinypkg/-/tinypkg-1.0.0.tgz",
                     "shasum": hashlib.sha1(tarball).hexdigest(),
                     "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}}}}
        handler._send(200, json.dumps(doc).encode(), "application/json")

    holder["tgz"] = tarball
    server, stop = start_server({"/tinypkg": metadata, "/tinypkg/-/tinypkg-1.0.0.tgz": tarball}, pki=pki)
    yield server
    stop()


@pytest.fixture
def repository(pki, tmp_path):
    """A git repository served over HTTPS the "dumb" way (static files)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    src = tmp_path / "src"
    src.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=src, check=True)
    (src / "README").write_text("the cloned file\n")
    subprocess.run([*git, "add", "README"], cwd=src, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=src, check=True)
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(served / "repo.git")], check=True)
    subprocess.run(["git", "update-server-info"], cwd=served / "repo.git", check=True)
    server, stop = start_server({}, pki=pki, static=served)
    yield server
    stop()


def pip_install(s, ws: Path, index, pki, host: str):
    command = (f"SSL_CERT_FILE={pki.ca} {PYTHON} -m pip install --isolated --no-cache-dir --disable-pip-version-check --no-deps "
               f"--retries 0 --timeout 10 --target {ws}/site --cert {pki.ca} "
               f"--index-url {index.url(host, '/simple/')} tinypkg")
    return s.call("Bash", {"command": command, "timeout": 120_000})


def test_pip_installs_through_the_proxy(session_with, ws, index, pki, tmp_path):
    s = session_with(ALLOWED)
    r = pip_install(s, ws, index, pki, "allowed.test")
    assert (ws / "site" / "tinypkg" / "__init__.py").exists(), r.text
    assert (ws / "site" / "tinypkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert [p for _, p in index.requests] == ["/simple/tinypkg/", f"/files/{wheel()[0]}"]
    rows = connections(tmp_path, s)
    assert {(row["host"], row["decision"], row["protocol"]) for row in rows} == {("allowed.test", "allowed", "connect")}


def test_pip_is_refused_a_name_not_allowed(session_with, ws, index, pki):
    s = session_with(ALLOWED)
    r = pip_install(s, ws, index, pki, "denied.test")
    assert not (ws / "site" / "tinypkg").exists() and index.requests == []
    assert "denied.test" in r.data["sandboxNote"] and "sandbox.network.allowedDomains" in r.data["sandboxNote"]


def npm_install(s, ws: Path, registry, pki, host: str):
    command = (f"npm install tinypkg --registry {registry.url(host, '/')} --cafile {pki.ca} --prefix {ws}/npm "
               f"--no-audit --no-fund --no-update-notifier --fetch-retries 0 --cache $TMPDIR/npm-cache")
    return s.call("Bash", {"command": command, "timeout": 120_000})


@pytest.fixture
def npm():
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")


def test_npm_installs_through_the_proxy(npm, session_with, ws, registry, pki, tmp_path):
    s = session_with(ALLOWED)
    r = npm_install(s, ws, registry, pki, "allowed.test")
    assert (ws / "npm" / "node_modules" / "tinypkg" / "index.js").read_text() == "module.exports = 42;\n", r.text
    assert "/tinypkg/-/tinypkg-1.0.0.tgz" in [p for _, p in registry.requests]
    assert {row["host"] for row in connections(tmp_path, s)} == {"allowed.test"}


def test_npm_is_refused_a_name_not_allowed(npm, session_with, ws, registry, pki):
    s = session_with(ALLOWED)
    r = npm_install(s, ws, registry, pki, "denied.test")
    assert not (ws / "npm" / "node_modules" / "tinypkg").exists() and registry.requests == []
    assert "denied.test" in r.data["sandboxNote"]


def git_clone(s, ws: Path, repository, pki, host: str):
    return s.call("Bash", {"command": f"GIT_SSL_CAINFO={pki.ca} git clone -q {repository.url(host, '/repo.git')} "
                                      f"{ws}/clone", "timeout": 120_000})


def test_git_clones_through_the_proxy(session_with, ws, repository, pki, tmp_path):
    s = session_with(ALLOWED)
    r = git_clone(s, ws, repository, pki, "allowed.test")
    assert (ws / "clone" / "README").read_text() == "the cloned file\n", r.text
    rows = connections(tmp_path, s)
    assert rows and {(row["host"], row["protocol"]) for row in rows} == {("allowed.test", "connect")}


def test_git_is_refused_a_name_not_allowed(session_with, ws, repository, pki):
    s = session_with(ALLOWED)
    r = git_clone(s, ws, repository, pki, "denied.test")
    assert not (ws / "clone" / "README").exists() and repository.requests == []
    assert "denied.test" in r.data["sandboxNote"]
