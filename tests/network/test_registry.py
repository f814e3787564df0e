"""The one test that leaves this machine: a small real package from the package index, through
the proxy, with its names allowed — and refused with them not allowed. Skipped when the index
cannot be reached from here."""

from __future__ import annotations

import socket

import pytest

from .conftest import PYTHON, connections

PACKAGE = "six==1.16.0"  # one small wheel (11 kB), no dependencies
# Listed exactly: on some networks (this project's machines among them) the index's names lead to
# addresses in a reserved range, which only a name listed exactly may reach.
INDEX = ["pypi.org", "files.pythonhosted.org"]


@pytest.fixture(scope="module")
def index_reachable():
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError as e:
        pytest.skip(f"the package index is not reachable from here: {e}")


def download(s, ws):
    return s.call("Bash", {"command": (
        f"{PYTHON} -m pip download --isolated --no-cache-dir --disable-pip-version-check --no-deps --retries 1 "
        f"--timeout 30 --only-binary :all: --index-url https://pypi.org/simple/ --dest {ws}/dl {PACKAGE}"),
        "timeout": 180_000})


def test_a_real_package_through_the_proxy(index_reachable, session_with, ws, tmp_path):
    s = session_with({"allowedDomains": INDEX})
    r = download(s, ws)
    wheels = list((ws / "dl").glob("six-1.16.0-*.whl"))
    assert wheels and wheels[0].stat().st_size > 5_000, r.text
    rows = connections(tmp_path, s)
    assert {row["host"] for row in rows} == set(INDEX)
    assert all(row["decision"] == "allowed" and row["protocol"] == "connect" for row in rows)
    assert sum(row["bytes_down"] for row in rows) > wheels[0].stat().st_size


def test_a_real_package_is_refused_without_its_names(index_reachable, session_with, ws, tmp_path):
    s = session_with({"allowedDomains": ["files.pythonhosted.org"]})
    r = download(s, ws)
    assert not list((ws / "dl").glob("*.whl")) if (ws / "dl").exists() else True
    assert "pypi.org" in r.data["sandboxNote"], r.text
    assert [row["decision"] for row in connections(tmp_path, s) if row["host"] == "pypi.org"][0] == "denied"
