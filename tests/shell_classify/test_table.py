"""Every row of tests/fixtures/commands.tsv through analyze + the permission engine."""

from __future__ import annotations

import pytest

from codebelt.permissions.requests import CommandRequest

from .conftest import load_table, make_engine

ROWS = load_table()


def test_table_is_big_and_mostly_attacks():
    assert len(ROWS) >= 400
    not_allowed = [r for r in ROWS if r[1] != "allow"]
    assert len(not_allowed) >= len(ROWS) // 2


@pytest.mark.parametrize("command,expected,note", ROWS, ids=[f"{i}:{r[2][:40]}" for i, r in enumerate(ROWS)])
def test_command_decision(layout, command, expected, note):
    engine = make_engine(layout)
    d = engine.decide("Bash", [CommandRequest(command, layout)])
    assert d.behavior == expected, f"{command!r} ({note}): got {d.behavior}: {d.reason}"
    assert d.reason
